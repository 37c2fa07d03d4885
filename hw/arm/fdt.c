// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The virt board's device tree, written with libfdt's sequential-write
 * API (fdt_create, fdt_begin_node, fdt_property..., fdt_finish).  It says
 * what hw/arm/virt.h lays out; the bindings followed are Linux's
 * (Documentation/devicetree/bindings: arm/cpus, arm/psci, timer/arm,arch_timer,
 * interrupt-controller/arm,gic-v3, serial/pl011, rtc/arm,pl031,
 * pci/host-generic-pci, pci/pci-msi) and QEMU's pvpanic-mmio.
 */
#include <libfdt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hw/arm/virt.h"
#include "hw/misc/debug-exit.h"
#include "hw/misc/pvpanic.h"
#include "hw/pci/pci.h"
#include "util/compiler.h"
#include "util/log.h"

enum { PHANDLE_GIC = 1, PHANDLE_ITS, PHANDLE_CLK };

#define GIC_SPI 0
#define GIC_PPI 1
#define IRQ_LEVEL_HIGH 4
#define PCI_SPACE_MEM32 0x02000000u

/* libfdt's calls return negative on error; keep the first one. */
struct fdt_w {
	void *fdt;
	int err;
};

static void w(struct fdt_w *f, int ret)
{
	if (ret < 0 && !f->err)
		f->err = ret;
}

static void prop_u32(struct fdt_w *f, const char *name, uint32_t v)
{
	w(f, fdt_property_u32(f->fdt, name, v));
}

/* A property of n 32-bit cells. */
static void prop_cells(struct fdt_w *f, const char *name, const uint32_t *c,
		       unsigned n)
{
	fdt32_t *be;
	int ret = fdt_property_placeholder(f->fdt, name, n * sizeof(*be),
					   (void **)&be);

	w(f, ret);
	for (unsigned i = 0; ret == 0 && i < n; i++)
		be[i] = cpu_to_fdt32(c[i]);
}

/* reg = <base size> with two cells each. */
static void prop_reg(struct fdt_w *f, uint64_t base, uint64_t size)
{
	uint32_t c[4] = { base >> 32, (uint32_t)base, size >> 32, (uint32_t)size };

	prop_cells(f, "reg", c, 4);
}

static void begin(struct fdt_w *f, const char *name, uint64_t unit)
{
	char node[64];

	snprintf(node, sizeof(node), "%s@%llx", name, (unsigned long long)unit);
	w(f, fdt_begin_node(f->fdt, node));
}

static void end(struct fdt_w *f)
{
	w(f, fdt_end_node(f->fdt));
}

static void chosen(struct fdt_w *f, const struct arm_fdt_params *p)
{
	char stdout_path[32];

	w(f, fdt_begin_node(f->fdt, "chosen"));
	w(f, fdt_property_string(f->fdt, "bootargs", p->bootargs ? p->bootargs : ""));
	snprintf(stdout_path, sizeof(stdout_path), "/pl011@%llx",
		 (unsigned long long)ARM_UART_BASE);
	w(f, fdt_property_string(f->fdt, "stdout-path", stdout_path));
	if (p->initrd_size) {
		w(f, fdt_property_u64(f->fdt, "linux,initrd-start", p->initrd_start));
		w(f, fdt_property_u64(f->fdt, "linux,initrd-end",
				      p->initrd_start + p->initrd_size));
	}
	w(f, fdt_property_u64(f->fdt, "kaslr-seed", p->seed));
	end(f);
}

static void cpus(struct fdt_w *f, unsigned n)
{
	w(f, fdt_begin_node(f->fdt, "cpus"));
	prop_u32(f, "#address-cells", 1);
	prop_u32(f, "#size-cells", 0);
	for (unsigned i = 0; i < n; i++) {
		uint32_t mpidr = kvm_arm_vcpu_mpidr(i);

		begin(f, "cpu", mpidr);
		w(f, fdt_property_string(f->fdt, "device_type", "cpu"));
		w(f, fdt_property_string(f->fdt, "compatible", "arm,arm-v8"));
		prop_u32(f, "reg", mpidr);
		w(f, fdt_property_string(f->fdt, "enable-method", "psci"));
		end(f);
	}
	end(f);
}

static void psci_timer(struct fdt_w *f)
{
	static const char psci_compat[] = "arm,psci-1.0\0arm,psci-0.2";
	const uint32_t ppis[] = {
		GIC_PPI, ARM_TIMER_PPI_SEC, IRQ_LEVEL_HIGH,
		GIC_PPI, ARM_TIMER_PPI_PHYS, IRQ_LEVEL_HIGH,
		GIC_PPI, ARM_TIMER_PPI_VIRT, IRQ_LEVEL_HIGH,
		GIC_PPI, ARM_TIMER_PPI_HYP, IRQ_LEVEL_HIGH,
	};

	w(f, fdt_begin_node(f->fdt, "psci"));
	w(f, fdt_property(f->fdt, "compatible", psci_compat, sizeof(psci_compat)));
	w(f, fdt_property_string(f->fdt, "method", "hvc"));
	end(f);
	w(f, fdt_begin_node(f->fdt, "timer"));
	w(f, fdt_property_string(f->fdt, "compatible", "arm,armv8-timer"));
	prop_cells(f, "interrupts", ppis, ARRAY_SIZE(ppis));
	w(f, fdt_property(f->fdt, "always-on", NULL, 0));
	end(f);
}

static void gic(struct fdt_w *f, unsigned ncpus)
{
	const uint32_t reg[] = {
		ARM_GICD_BASE >> 32, (uint32_t)ARM_GICD_BASE, 0, KVM_ARM_GICD_SIZE,
		ARM_GICR_BASE >> 32, (uint32_t)ARM_GICR_BASE,
		0, ncpus * KVM_ARM_GICR_STRIDE,
	};
	const uint32_t maint[] = { GIC_PPI, ARM_GIC_MAINT_PPI, IRQ_LEVEL_HIGH };

	begin(f, "intc", ARM_GICD_BASE);
	w(f, fdt_property_string(f->fdt, "compatible", "arm,gic-v3"));
	w(f, fdt_property(f->fdt, "interrupt-controller", NULL, 0));
	prop_u32(f, "#interrupt-cells", 3);
	prop_u32(f, "#address-cells", 2);
	prop_u32(f, "#size-cells", 2);
	w(f, fdt_property(f->fdt, "ranges", NULL, 0));
	prop_cells(f, "reg", reg, ARRAY_SIZE(reg));
	prop_cells(f, "interrupts", maint, ARRAY_SIZE(maint));
	prop_u32(f, "phandle", PHANDLE_GIC);
	begin(f, "msi-controller", ARM_GITS_BASE);
	w(f, fdt_property_string(f->fdt, "compatible", "arm,gic-v3-its"));
	w(f, fdt_property(f->fdt, "msi-controller", NULL, 0));
	prop_u32(f, "#msi-cells", 1);
	prop_reg(f, ARM_GITS_BASE, KVM_ARM_GITS_SIZE);
	prop_u32(f, "phandle", PHANDLE_ITS);
	end(f);
	end(f);
}

static void devices(struct fdt_w *f, const struct arm_fdt_params *p)
{
	static const char primecell_uart[] = "arm,pl011\0arm,primecell";
	static const char primecell_rtc[] = "arm,pl031\0arm,primecell";
	static const char uart_clocks[] = "uartclk\0apb_pclk";
	const uint32_t uart_irq[] = { GIC_SPI, ARM_UART_SPI, IRQ_LEVEL_HIGH };
	const uint32_t clks[] = { PHANDLE_CLK, PHANDLE_CLK };

	/* PrimeCell devices want the APB clock their bus runs at. */
	w(f, fdt_begin_node(f->fdt, "apb-pclk"));
	w(f, fdt_property_string(f->fdt, "compatible", "fixed-clock"));
	prop_u32(f, "#clock-cells", 0);
	prop_u32(f, "clock-frequency", 24000000);
	w(f, fdt_property_string(f->fdt, "clock-output-names", "clk24mhz"));
	prop_u32(f, "phandle", PHANDLE_CLK);
	end(f);

	begin(f, "pl011", ARM_UART_BASE);
	w(f, fdt_property(f->fdt, "compatible", primecell_uart, sizeof(primecell_uart)));
	prop_reg(f, ARM_UART_BASE, 0x1000);
	prop_cells(f, "interrupts", uart_irq, ARRAY_SIZE(uart_irq));
	prop_cells(f, "clocks", clks, 2);
	w(f, fdt_property(f->fdt, "clock-names", uart_clocks, sizeof(uart_clocks)));
	end(f);

	begin(f, "pl031", ARM_RTC_BASE);
	w(f, fdt_property(f->fdt, "compatible", primecell_rtc, sizeof(primecell_rtc)));
	prop_reg(f, ARM_RTC_BASE, 0x1000);
	prop_cells(f, "clocks", clks, 1);
	w(f, fdt_property_string(f->fdt, "clock-names", "apb_pclk"));
	end(f);

	begin(f, "pvpanic", ARM_PVPANIC_BASE);
	w(f, fdt_property_string(f->fdt, "compatible", "qemu,pvpanic-mmio"));
	prop_reg(f, ARM_PVPANIC_BASE, 2);
	end(f);

	if (p->debug_exit) {
		begin(f, "debug-exit", ARM_DEBUG_EXIT_BASE);
		w(f, fdt_property_string(f->fdt, "compatible", "brisk,debug-exit"));
		prop_reg(f, ARM_DEBUG_EXIT_BASE, DEBUG_EXIT_MMIO_SIZE);
		end(f);
	}
}

/*
 * INTx of slot s, pin p (1-4) reaches SPI ARM_PCI_INTX_SPI + (s + p - 1) % 4,
 * the usual swizzle; brisk's devices use MSI-X, but a binding without the
 * map would leave an INTx-only driver nothing to ask for.
 */
static void pci_intx_map(struct fdt_w *f)
{
	uint32_t map[4 * 4 * 10], *m = map;
	const uint32_t mask[] = { 0x1800, 0, 0, 7 };

	for (unsigned slot = 0; slot < 4; slot++) {
		for (unsigned pin = 1; pin <= 4; pin++) {
			const uint32_t e[] = {
				slot << 11, 0, 0, pin, PHANDLE_GIC, 0, 0,
				GIC_SPI, ARM_PCI_INTX_SPI + (slot + pin - 1) % 4,
				IRQ_LEVEL_HIGH,
			};

			memcpy(m, e, sizeof(e));
			m += ARRAY_SIZE(e);
		}
	}
	prop_cells(f, "interrupt-map", map, ARRAY_SIZE(map));
	prop_cells(f, "interrupt-map-mask", mask, ARRAY_SIZE(mask));
}

static void pci(struct fdt_w *f)
{
	const uint32_t bus_range[] = { 0, 0 };
	const uint32_t ranges[] = {
		PCI_SPACE_MEM32, ARM_PCI_MMIO_BASE >> 32, (uint32_t)ARM_PCI_MMIO_BASE,
		ARM_PCI_MMIO_BASE >> 32, (uint32_t)ARM_PCI_MMIO_BASE,
		ARM_PCI_MMIO_SIZE >> 32, (uint32_t)ARM_PCI_MMIO_SIZE,
	};
	/* Requester id r is ITS device id r: the identity over bus 0. */
	const uint32_t msi_map[] = { 0, PHANDLE_ITS, 0, 0x100 };

	begin(f, "pcie", ARM_PCI_ECAM_BASE);
	w(f, fdt_property_string(f->fdt, "compatible", "pci-host-ecam-generic"));
	w(f, fdt_property_string(f->fdt, "device_type", "pci"));
	prop_u32(f, "#address-cells", 3);
	prop_u32(f, "#size-cells", 2);
	prop_u32(f, "#interrupt-cells", 1);
	prop_reg(f, ARM_PCI_ECAM_BASE, PCI_ECAM_BUS_SIZE);
	prop_cells(f, "bus-range", bus_range, 2);
	prop_u32(f, "linux,pci-domain", 0);
	w(f, fdt_property(f->fdt, "dma-coherent", NULL, 0));
	prop_cells(f, "ranges", ranges, ARRAY_SIZE(ranges));
	prop_cells(f, "msi-map", msi_map, ARRAY_SIZE(msi_map));
	pci_intx_map(f);
	end(f);
}

int arm_fdt_build(const struct arm_fdt_params *p, void *buf, size_t size)
{
	struct fdt_w f = { .fdt = buf };

	w(&f, fdt_create(buf, size));
	w(&f, fdt_finish_reservemap(buf));
	w(&f, fdt_begin_node(buf, ""));
	w(&f, fdt_property_string(buf, "compatible", "linux,dummy-virt"));
	w(&f, fdt_property_string(buf, "model", "brisk arm64 virt"));
	prop_u32(&f, "#address-cells", 2);
	prop_u32(&f, "#size-cells", 2);
	prop_u32(&f, "interrupt-parent", PHANDLE_GIC);
	chosen(&f, p);
	begin(&f, "memory", ARM_RAM_BASE);
	w(&f, fdt_property_string(buf, "device_type", "memory"));
	prop_reg(&f, ARM_RAM_BASE, p->ram_size);
	end(&f);
	cpus(&f, p->ncpus);
	psci_timer(&f);
	gic(&f, p->ncpus);
	devices(&f, p);
	pci(&f);
	end(&f);
	w(&f, fdt_finish(buf));
	if (f.err) {
		error_report("cannot build the device tree: %s", fdt_strerror(f.err));
		return -1;
	}
	return 0;
}

/*
 * libfdt 1.6.1's fdt_next_tag() adds a property's length to its offset
 * in 32 bits: a length of -12 ends the property where it began, and
 * fdt_check_full() walks it for ever; -1 to -3 end it just past its
 * header with a length no reader can use.  No property is longer than
 * the structure block that holds it (libfdt 1.7 refuses the same), and
 * then every tag ends past its start, so this walk ends too.  5.4.2:
 * the block begins with the root node, which 1.6.1 does not ask for.
 */
static int check_tags(const void *dtb)
{
	const struct fdt_property *prop;
	int offset = 0, next;
	bool root = false;
	uint32_t tag;

	do {
		tag = fdt_next_tag(dtb, offset, &next);
		if (next < 0)
			return next;
		if (!root && tag != FDT_NOP && tag != FDT_BEGIN_NODE)
			return -FDT_ERR_BADSTRUCTURE;
		root |= tag == FDT_BEGIN_NODE;
		if (tag == FDT_PROP) {
			prop = fdt_offset_ptr(dtb, offset, sizeof(*prop));
			if (!prop || fdt32_to_cpu(prop->len) > fdt_size_dt_struct(dtb))
				return -FDT_ERR_BADSTRUCTURE;
		}
		offset = next;
	} while (tag != FDT_END);
	return 0;
}

/* libfdt 1.6.1's fdt_strerror() predates its FDT_ERR_ALIGNMENT. */
static const char *dtb_strerror(int err)
{
	return err == -FDT_ERR_ALIGNMENT ? "FDT_ERR_ALIGNMENT" : fdt_strerror(err);
}

/*
 * libfdt trusts the header's sizes and offsets: check them against the
 * bytes read before anything walks the tree, then walk all of it once,
 * so a truncated or corrupt blob is refused here and not found out past
 * the end of the buffer.
 */
static int check_blob(const void *dtb, size_t size)
{
	int err;

	if (size < sizeof(struct fdt_header))
		return -FDT_ERR_TRUNCATED;
	err = fdt_check_header(dtb);
	if (!err && fdt_totalsize(dtb) > size)
		err = -FDT_ERR_TRUNCATED;
	/*
	 * Version 17 (the specification's, dtc's since 2007) has the sizes
	 * the walk relies on; libfdt 1.6.1's fdt_check_full() dereferences
	 * NULL on some older-version blobs.
	 */
	if (!err && fdt_version(dtb) < 17)
		err = -FDT_ERR_BADVERSION;
	/* The specification's alignment, which libfdt's loads assume. */
	if (!err && (fdt_off_mem_rsvmap(dtb) % 8 || fdt_off_dt_struct(dtb) % 4))
		err = -FDT_ERR_ALIGNMENT;
	if (!err)
		err = check_tags(dtb);
	return err ? err : fdt_check_full(dtb, fdt_totalsize(dtb));
}

int arm_fdt_check_user(const void *dtb, size_t size, const char *name)
{
	int err = check_blob(dtb, size);

	if (err)
		error_report("-dtb '%s': not a usable device tree blob: %s", name,
			     dtb_strerror(err));
	return err ? -1 : 0;
}

/*
 * A user's tree (-dtb) is the user's, except for what only brisk knows:
 * the command line and where the initrd went, as QEMU does.
 */
int arm_fdt_patch_user(const void *dtb, size_t dtb_size, void *buf,
		       size_t size, const struct arm_fdt_params *p)
{
	int chosen, err;

	err = check_blob(dtb, dtb_size);
	if (err) {
		error_report("-dtb: not a usable device tree blob: %s",
			     dtb_strerror(err));
		return -1;
	}
	err = fdt_open_into(dtb, buf, size);
	if (err < 0) {
		error_report("-dtb: does not fit in %zu bytes: %s", size,
			     fdt_strerror(err));
		return -1;
	}
	chosen = fdt_path_offset(buf, "/chosen");
	if (chosen < 0)
		chosen = fdt_add_subnode(buf, 0, "chosen");
	err = chosen;
	if (chosen >= 0 && p->bootargs)
		err = fdt_setprop_string(buf, chosen, "bootargs", p->bootargs);
	if (err >= 0 && p->initrd_size) {
		err = fdt_setprop_u64(buf, chosen, "linux,initrd-start",
				      p->initrd_start);
		if (err >= 0)
			err = fdt_setprop_u64(buf, chosen, "linux,initrd-end",
					      p->initrd_start + p->initrd_size);
	}
	if (err >= 0)
		err = fdt_pack(buf);
	if (err < 0) {
		error_report("-dtb: cannot update /chosen: %s", fdt_strerror(err));
		return -1;
	}
	return 0;
}
