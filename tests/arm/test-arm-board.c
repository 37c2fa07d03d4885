// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The arm64 virt board without KVM: its device tree, read back with libfdt
 * node by node against the bindings Linux follows (values from the
 * documented map in hw/arm/virt.h and booting.rst, not from fdt.c), and
 * the arm64 Image boot protocol (header checks and placement).
 *
 *   test-arm-board            run the checks
 *   test-arm-board FILE       write a typical tree to FILE (for dtc)
 */
#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/arm/virt.h"
#include "util/compiler.h"
#include "util/guest-mem.h"

#include "capture.h"
#include "check.h"

static uint8_t fdt[ARM_FDT_MAX];

static const struct arm_fdt_params params = {
	.ram_size = 512ull << 20, .ncpus = 18,
	.bootargs = "console=ttyAMA0 root=/dev/vda a.b=c,d",
	.initrd_start = 0x5f000000, .initrd_size = 0x123456,
	.debug_exit = true, .seed = 0x1234,
};

static int node(const char *path)
{
	int off = fdt_path_offset(fdt, path);

	if (off < 0)
		fprintf(stderr, "no node %s: %s\n", path, fdt_strerror(off));
	return off;
}

static bool prop_is(int off, const char *name, const char *want)
{
	int len;
	const char *v = fdt_getprop(fdt, off, name, &len);

	return v && len == (int)strlen(want) + 1 && !memcmp(v, want, len);
}

/* Cell i of a property, or ~0 when it has no such cell. */
static uint32_t cell(int off, const char *name, int i)
{
	int len;
	const fdt32_t *v = fdt_getprop(fdt, off, name, &len);

	return v && len >= (i + 1) * 4 ? fdt32_to_cpu(v[i]) : ~0u;
}

static uint64_t cell64(int off, const char *name, int i)
{
	return (uint64_t)cell(off, name, i) << 32 | cell(off, name, i + 1);
}

static int cells(int off, const char *name)
{
	int len;

	return fdt_getprop(fdt, off, name, &len) ? len / 4 : -1;
}

/* The node a phandle names must exist and hold compatible. */
static bool phandle_is(uint32_t ph, const char *compatible)
{
	int off = fdt_node_offset_by_phandle(fdt, ph);

	return off >= 0 && fdt_node_check_compatible(fdt, off, compatible) == 0;
}

static void test_root_chosen_memory(void)
{
	int root = node("/"), chosen = node("/chosen"), mem;
	const char *path;

	CHECK(fdt_check_header(fdt) == 0);
	CHECK(fdt_totalsize(fdt) <= ARM_FDT_MAX);
	CHECK(cell(root, "#address-cells", 0) == 2);
	CHECK(cell(root, "#size-cells", 0) == 2);
	CHECK(phandle_is(cell(root, "interrupt-parent", 0), "arm,gic-v3"));
	CHECK(prop_is(chosen, "bootargs", params.bootargs));
	path = fdt_getprop(fdt, chosen, "stdout-path", NULL);
	CHECK(path && fdt_node_check_compatible(fdt, node(path), "arm,pl011") == 0);
	CHECK(cell64(chosen, "linux,initrd-start", 0) == 0x5f000000);
	CHECK(cell64(chosen, "linux,initrd-end", 0) == 0x5f123456);
	mem = node("/memory@40000000");
	CHECK(prop_is(mem, "device_type", "memory"));
	CHECK(cell64(mem, "reg", 0) == 0x40000000);
	CHECK(cell64(mem, "reg", 2) == 512ull << 20);
}

/* booting.rst and arm/cpus.yaml: reg is the MPIDR affinity KVM assigns. */
static void test_cpus_psci_timer(void)
{
	static const struct { unsigned id; uint32_t mpidr; } want[] = {
		{ 0, 0x0 }, { 15, 0xf }, { 16, 0x100 }, { 17, 0x101 },
	};
	int cpus = node("/cpus"), n = 0, off, psci, timer;
	char path[32];

	CHECK(cell(cpus, "#address-cells", 0) == 1);
	CHECK(cell(cpus, "#size-cells", 0) == 0);
	fdt_for_each_subnode(off, fdt, cpus) {
		CHECK(prop_is(off, "device_type", "cpu"));
		CHECK(prop_is(off, "enable-method", "psci"));
		n++;
	}
	CHECK(n == 18);
	for (unsigned i = 0; i < ARRAY_SIZE(want); i++) {
		snprintf(path, sizeof(path), "/cpus/cpu@%x", want[i].mpidr);
		CHECK(cell(node(path), "reg", 0) == want[i].mpidr);
	}
	psci = node("/psci");
	CHECK(fdt_node_check_compatible(fdt, psci, "arm,psci-0.2") == 0);
	CHECK(prop_is(psci, "method", "hvc"));
	timer = node("/timer");
	CHECK(fdt_node_check_compatible(fdt, timer, "arm,armv8-timer") == 0);
	/* Secure, non-secure physical, virtual, hypervisor: PPIs 13, 14, 11, 10. */
	CHECK(cells(timer, "interrupts") == 12);
	CHECK(cell(timer, "interrupts", 0) == 1 && cell(timer, "interrupts", 1) == 13);
	CHECK(cell(timer, "interrupts", 4) == 14 && cell(timer, "interrupts", 7) == 11);
	CHECK(cell(timer, "interrupts", 10) == 10);
}

static void test_gic(void)
{
	int gic = node("/intc@8000000"), its = node("/intc@8000000/msi-controller@8080000");

	CHECK(fdt_node_check_compatible(fdt, gic, "arm,gic-v3") == 0);
	CHECK(fdt_getprop(fdt, gic, "interrupt-controller", NULL) != NULL);
	CHECK(cell(gic, "#interrupt-cells", 0) == 3);
	CHECK(cell64(gic, "reg", 0) == 0x08000000 && cell64(gic, "reg", 2) == 0x10000);
	/* 128 KiB of redistributor per vCPU. */
	CHECK(cell64(gic, "reg", 4) == 0x0a000000 && cell64(gic, "reg", 6) == 18 * 0x20000);
	CHECK(fdt_node_check_compatible(fdt, its, "arm,gic-v3-its") == 0);
	CHECK(fdt_getprop(fdt, its, "msi-controller", NULL) != NULL);
	CHECK(cell(its, "#msi-cells", 0) == 1);
	CHECK(cell64(its, "reg", 0) == 0x08080000 && cell64(its, "reg", 2) == 0x20000);
}

static void test_devices(void)
{
	int uart = node("/pl011@9000000"), rtc = node("/pl031@9010000");
	int pvp = node("/pvpanic@9020000"), dx = node("/debug-exit@9030000");

	CHECK(fdt_node_check_compatible(fdt, uart, "arm,pl011") == 0);
	CHECK(fdt_node_check_compatible(fdt, uart, "arm,primecell") == 0);
	CHECK(cell64(uart, "reg", 0) == 0x09000000);
	/* SPI 1, level high. */
	CHECK(cell(uart, "interrupts", 0) == 0 && cell(uart, "interrupts", 1) == 1 &&
	      cell(uart, "interrupts", 2) == 4);
	CHECK(phandle_is(cell(uart, "clocks", 0), "fixed-clock"));
	CHECK(phandle_is(cell(uart, "clocks", 1), "fixed-clock"));
	CHECK(fdt_node_check_compatible(fdt, rtc, "arm,pl031") == 0);
	CHECK(cell64(rtc, "reg", 0) == 0x09010000);
	CHECK(phandle_is(cell(rtc, "clocks", 0), "fixed-clock"));
	CHECK(fdt_node_check_compatible(fdt, pvp, "qemu,pvpanic-mmio") == 0);
	CHECK(cell64(pvp, "reg", 0) == 0x09020000);
	CHECK(fdt_node_check_compatible(fdt, dx, "brisk,debug-exit") == 0);
	CHECK(cell64(dx, "reg", 0) == 0x09030000 && cell64(dx, "reg", 2) == 4);
}

static void test_pci(void)
{
	int pci = node("/pcie@3f000000"), n;

	CHECK(fdt_node_check_compatible(fdt, pci, "pci-host-ecam-generic") == 0);
	CHECK(prop_is(pci, "device_type", "pci"));
	CHECK(cell(pci, "#address-cells", 0) == 3 && cell(pci, "#size-cells", 0) == 2);
	CHECK(cell64(pci, "reg", 0) == 0x3f000000 && cell64(pci, "reg", 2) == 1 << 20);
	CHECK(cell(pci, "bus-range", 0) == 0 && cell(pci, "bus-range", 1) == 0);
	/* One 32-bit memory window, identity mapped: 0x10000000..0x3effffff. */
	CHECK(cells(pci, "ranges") == 7);
	CHECK(cell(pci, "ranges", 0) == 0x02000000);
	CHECK(cell64(pci, "ranges", 1) == 0x10000000 && cell64(pci, "ranges", 3) == 0x10000000);
	CHECK(cell64(pci, "ranges", 5) == 0x2f000000);
	/* msi-map: rid 0.. maps to the ITS with the same id, the whole bus. */
	CHECK(cell(pci, "msi-map", 0) == 0 && cell(pci, "msi-map", 2) == 0 &&
	      cell(pci, "msi-map", 3) == 0x100);
	CHECK(phandle_is(cell(pci, "msi-map", 1), "arm,gic-v3-its"));
	/* 4 slots x 4 pins, 10 cells each: child 3+1, gic, parent 2+3. */
	n = cells(pci, "interrupt-map");
	CHECK(n == 160);
	for (int e = 0; e < n / 10; e++) {
		CHECK(phandle_is(cell(pci, "interrupt-map", e * 10 + 4), "arm,gic-v3"));
		CHECK(cell(pci, "interrupt-map", e * 10 + 7) == 0);	/* SPI */
	}
	/* Slot 1, INTA (pin 1) swizzles to the second line, SPI 4. */
	CHECK(cell(pci, "interrupt-map", 4 * 10 + 0) == 0x800 &&
	      cell(pci, "interrupt-map", 4 * 10 + 3) == 1 &&
	      cell(pci, "interrupt-map", 4 * 10 + 8) == 4);
	CHECK(cell(pci, "interrupt-map-mask", 0) == 0x1800 &&
	      cell(pci, "interrupt-map-mask", 3) == 7);
}

static void test_fdt_options(void)
{
	struct arm_fdt_params p = params;
	static uint8_t small[512];

	p.debug_exit = false;
	p.initrd_size = 0;
	p.bootargs = NULL;
	CHECK(arm_fdt_build(&p, fdt, sizeof(fdt)) == 0);
	CHECK(fdt_path_offset(fdt, "/debug-exit@9030000") == -FDT_ERR_NOTFOUND);
	CHECK(fdt_getprop(fdt, node("/chosen"), "linux,initrd-start", NULL) == NULL);
	CHECK(prop_is(node("/chosen"), "bootargs", ""));
	CHECK(arm_fdt_build(&params, small, sizeof(small)) == -1);
}

/* -dtb: the user's tree, with /chosen set as brisk alone can. */
static void test_user_fdt(void)
{
	static uint8_t user[4096], out[8192], junk[64] = "not a tree";
	struct arm_fdt_params p = { .bootargs = "root=/dev/vda",
				    .initrd_start = 0x48000000, .initrd_size = 0x1000 };
	int chosen;

	/* A minimal tree without /chosen, as a user might bring. */
	CHECK(fdt_create_empty_tree(user, sizeof(user)) == 0);
	CHECK(fdt_setprop_string(user, 0, "model", "mine") == 0);
	CHECK(arm_fdt_patch_user(user, sizeof(user), out, sizeof(out), &p) == 0);
	chosen = fdt_path_offset(out, "/chosen");
	CHECK(chosen >= 0);
	CHECK(!strcmp(fdt_getprop(out, chosen, "bootargs", NULL), "root=/dev/vda"));
	/* Properties are only 4-byte aligned. */
	const void *end = fdt_getprop(out, chosen, "linux,initrd-end", NULL);
	fdt64_t be = 0;

	if (end)
		memcpy(&be, end, sizeof(be));
	CHECK(fdt64_to_cpu(be) == 0x48001000);
	CHECK(!strcmp(fdt_getprop(out, 0, "model", NULL), "mine"));
	/* No -append: the user's bootargs stay. */
	CHECK(fdt_setprop_string(out, chosen, "bootargs", "theirs") == 0);
	memcpy(user, out, fdt_totalsize(out));
	p.bootargs = NULL;
	CHECK(arm_fdt_patch_user(user, sizeof(user), out, sizeof(out), &p) == 0);
	CHECK(!strcmp(fdt_getprop(out, fdt_path_offset(out, "/chosen"), "bootargs",
				  NULL), "theirs"));
	CHECK(arm_fdt_patch_user(junk, sizeof(junk), out, sizeof(out), &p) == -1);
	CHECK(arm_fdt_patch_user(user, sizeof(user), out, 64, &p) == -1);	/* no room */
}

/*
 * Sets word n of the root's first property (0 its tag, 1 its length,
 * 2 its name); false if the root has no property.
 */
static bool set_first_prop_word(uint8_t *blob, int n, uint32_t value)
{
	int prop = fdt_first_property_offset(blob, 0);

	if (prop < 0)
		return false;
	((fdt32_t *)(blob + fdt_off_dt_struct(blob) + prop))[n] = cpu_to_fdt32(value);
	return true;
}

/*
 * Copies the blob at src to dst with n zero bytes inserted at offset at,
 * every block the header places at or after at moved with them.
 */
static int shift_blocks(uint8_t *dst, const uint8_t *src, size_t total,
			uint32_t at, uint32_t n)
{
	struct fdt_header *h = (struct fdt_header *)dst;

	if (at < sizeof(*h) || at > total)
		return -1;
	memcpy(dst, src, at);
	memset(dst + at, 0, n);
	memcpy(dst + at + n, src + at, total - at);
	h->totalsize = cpu_to_fdt32(total + n);
	if (fdt_off_mem_rsvmap(dst) >= at)
		h->off_mem_rsvmap = cpu_to_fdt32(fdt_off_mem_rsvmap(dst) + n);
	if (fdt_off_dt_struct(dst) >= at)
		h->off_dt_struct = cpu_to_fdt32(fdt_off_dt_struct(dst) + n);
	if (fdt_off_dt_strings(dst) >= at)
		h->off_dt_strings = cpu_to_fdt32(fdt_off_dt_strings(dst) + n);
	return 0;
}

/*
 * A blob read from a file is checked against the bytes read (devicetree
 * specification 0.4, 5.2: totalsize covers every block; 5.4: the
 * structure block's tokens, 5.5: the strings block) before any use.
 */
static void test_user_fdt_bad(void)
{
	static uint8_t user[4096], out[8192], copy[4096];
	struct arm_fdt_params p = { .bootargs = "root=/dev/vda" };
	struct fdt_header *h = (struct fdt_header *)copy;
	char line[256];
	size_t total;

	CHECK(fdt_create_empty_tree(user, sizeof(user)) == 0);
	CHECK(fdt_setprop_string(user, 0, "model", "mine") == 0);
	CHECK(fdt_pack(user) == 0);
	total = fdt_totalsize(user);
	CHECK(arm_fdt_check_user(user, total, "t") == 0);
	/* Truncated: the file ends before totalsize, or inside the header. */
	CHECK(arm_fdt_check_user(user, total - 1, "t") == -1);
	CHECK(arm_fdt_check_user(user, 20, "t") == -1);
	CHECK(arm_fdt_patch_user(user, total - 8, out, sizeof(out), &p) == -1);
	/* A header that says more than the file holds. */
	memcpy(copy, user, total);
	h->totalsize = cpu_to_fdt32(0x7fffffff);
	CHECK(arm_fdt_check_user(copy, total, "t") == -1);
	/* A structure block that runs past totalsize. */
	memcpy(copy, user, total);
	h->size_dt_struct = cpu_to_fdt32(fdt32_to_cpu(h->size_dt_struct) + 0x1000);
	CHECK(arm_fdt_check_user(copy, total, "t") == -1);
	/* A property whose name offset points past the strings block. */
	memcpy(copy, user, total);
	CHECK(set_first_prop_word(copy, 2, 0x10000));
	CHECK(arm_fdt_check_user(copy, total, "t") == -1);
	CHECK(arm_fdt_patch_user(copy, total, out, sizeof(out), &p) == -1);
	/* Before version 17 the header lacks the structure block's size. */
	memcpy(copy, user, total);
	h->version = cpu_to_fdt32(16);
	CHECK(arm_fdt_check_user(copy, total, "t") == -1);
	/* A token that is none of the five. */
	memcpy(copy, user, total);
	memset(copy + fdt_off_dt_struct(copy), 0x55, 4);
	CHECK(arm_fdt_check_user(copy, total, "t") == -1);
	/*
	 * A property's length (5.4.1: FDT_PROP, then len, nameoff, value)
	 * that is -12 in 32 bits ends the property where it began: a walk
	 * that trusts it stays on that property.
	 */
	memcpy(copy, user, total);
	CHECK(set_first_prop_word(copy, 1, 0xfffffff4));
	CHECK(arm_fdt_check_user(copy, total, "t") == -1);
	CHECK(arm_fdt_patch_user(copy, total, out, sizeof(out), &p) == -1);
	/* -1 on an empty property ends it past its start, but is no length. */
	CHECK(fdt_create_empty_tree(copy, sizeof(copy)) == 0);
	CHECK(fdt_setprop_empty(copy, 0, "empty") == 0);
	CHECK(fdt_pack(copy) == 0);
	CHECK(arm_fdt_check_user(copy, fdt_totalsize(copy), "t") == 0);
	CHECK(set_first_prop_word(copy, 1, 0xffffffff));
	CHECK(arm_fdt_check_user(copy, fdt_totalsize(copy), "t") == -1);
	/* 5.4.2: the structure block begins with the root node ... */
	memcpy(copy, user, total);
	*(fdt32_t *)(copy + fdt_off_dt_struct(copy)) = cpu_to_fdt32(FDT_END);
	CHECK(arm_fdt_check_user(copy, total, "t") == -1);
	/* ... after any FDT_NOP (5.4.1). */
	CHECK(shift_blocks(copy, user, total, fdt_off_dt_struct(user), 4) == 0);
	h->off_dt_struct = cpu_to_fdt32(fdt_off_dt_struct(copy) - 4);
	h->size_dt_struct = cpu_to_fdt32(fdt_size_dt_struct(copy) + 4);
	*(fdt32_t *)(copy + fdt_off_dt_struct(copy)) = cpu_to_fdt32(FDT_NOP);
	CHECK(arm_fdt_check_user(copy, total + 4, "t") == 0);
	/*
	 * 5.3: the reservation block is 8-byte aligned; 5.4: the structure
	 * block is 4-byte aligned.  Blocks moved whole, so that only the
	 * alignment is wrong.
	 */
	CHECK(shift_blocks(copy, user, total, fdt_off_dt_struct(user), 2) == 0);
	CHECK(arm_fdt_check_user(copy, total + 2, "t") == -1);
	CHECK(shift_blocks(copy, user, total, fdt_off_dt_struct(user), 4) == 0);
	CHECK(arm_fdt_check_user(copy, total + 4, "t") == 0);
	CHECK(shift_blocks(copy, user, total, fdt_off_mem_rsvmap(user), 4) == 0);
	capture_begin();
	CHECK(arm_fdt_check_user(copy, total + 4, "t") == -1);
	CHECK(capture_end(line, sizeof(line)) == 1);
	CHECK(strstr(line, "-dtb 't': not a usable device tree blob: FDT_ERR_ALIGNMENT"));
}

/*
 * KVM_CREATE_VM's IPA size (Documentation/virt/kvm/api.rst, 4.2 and
 * KVM_CAP_ARM_VM_IPA_SIZE): type 0 means 40 bits, which a host limited
 * to fewer refuses; a host with the capability is asked for what the map
 * needs, at least 32 bits.
 */
static void test_ipa(void)
{
	uint64_t gib = 1ull << 30;

	CHECK(kvm_arm_ipa_bits(2 << 20) == 32);		/* the KVM check's VM */
	CHECK(kvm_arm_ipa_bits(ARM_RAM_BASE + gib) == 32);
	CHECK(kvm_arm_ipa_bits(ARM_RAM_BASE + 4 * gib) == 33);
	CHECK(kvm_arm_ipa_bits(ARM_RAM_BASE + 64 * gib) == 37);
	CHECK(kvm_arm_ipa_bits(1ull << 40) == 40);
	CHECK(kvm_arm_ipa_bits((1ull << 40) + 1) == 41);
	/* A host limited to 36 bits runs a 1 GiB guest ... */
	CHECK(kvm_arm_ipa_request(32, 36) == 32);
	CHECK(kvm_arm_ipa_request(36, 36) == 36);
	/* ... but not one whose RAM ends past 64 GiB. */
	CHECK(kvm_arm_ipa_request(37, 36) == -1);
	CHECK(kvm_arm_ipa_request(44, 48) == 44);
	/* Without the capability: type 0 (40 bits) or nothing. */
	CHECK(kvm_arm_ipa_request(32, 0) == 0);
	CHECK(kvm_arm_ipa_request(40, 0) == 0);
	CHECK(kvm_arm_ipa_request(41, 0) == -1);
	CHECK(kvm_arm_ipa_request(41, -1) == -1);
}

/* ---- booting.rst: the Image header ---- */

static uint8_t *image(size_t size, uint64_t text_offset, uint64_t image_size,
		      uint64_t flags)
{
	uint8_t *p = calloc(1, size);

	for (int i = 0; i < 8; i++) {
		p[8 + i] = text_offset >> (8 * i);
		p[16 + i] = image_size >> (8 * i);
		p[24 + i] = flags >> (8 * i);
	}
	memcpy(p + 56, "ARM\x64", 4);
	return p;
}

static void test_image(void)
{
	struct arm_boot b = { .initrd_fd = -1 };
	uint8_t *p;

	/* A current kernel: text_offset 0, image_size covers the BSS. */
	CHECK(arm_boot_open_image(&b, image(4096, 0, 3 << 20, 0xa), 4096, "t") == 0);
	b.initrd_size = 5 << 20;
	CHECK(arm_boot_plan(&b, 0x40000000, 64 << 20) == 0);
	CHECK(b.kernel_addr == 0x40000000);
	/* The tree in the top 2 MiB, alone; the initrd under it, page aligned. */
	CHECK(b.dtb_addr == 0x40000000 + (62 << 20));
	CHECK(b.initrd_addr + b.initrd_size <= b.dtb_addr);
	CHECK(b.initrd_addr % 4096 == 0 && b.initrd_addr >= 0x40000000 + (3 << 20));
	/* Too big for the RAM left above the kernel. */
	b.initrd_size = 60 << 20;
	CHECK(arm_boot_plan(&b, 0x40000000, 64 << 20) == -1);
	/*
	 * booting.rst: the initrd within a 1 GiB aligned window of at most
	 * 32 GiB that covers the Image too; the tree 8-byte aligned, at most
	 * 2 MiB.  With 64 GiB of RAM from 1 GiB both stay under 33 GiB.
	 */
	b.initrd_size = 16 << 20;
	CHECK(arm_boot_plan(&b, 0x40000000, 64ull << 30) == 0);
	CHECK(b.initrd_addr >= 0x40000000);
	CHECK(b.initrd_addr + b.initrd_size <= 0x40000000 + (32ull << 30));
	CHECK(b.dtb_addr + ARM_FDT_MAX <= 0x40000000 + (32ull << 30));
	CHECK(b.dtb_addr % 8 == 0 && b.dtb_addr >= b.initrd_addr + b.initrd_size);
	arm_boot_close(&b);

	/* image_size 0: a kernel before 3.17, at text_offset 0x80000. */
	CHECK(arm_boot_open_image(&b, image(8192, 0, 0, 0), 8192, "t") == 0);
	CHECK(arm_boot_plan(&b, 0x40000000, 64 << 20) == 0);
	CHECK(b.kernel_addr == 0x40080000);
	arm_boot_close(&b);

	p = image(4096, 0, 1 << 20, 0xb);		/* big-endian */
	CHECK(arm_boot_open_image(&b, p, 4096, "t") == -1);
	arm_boot_close(&b);
	p = image(4096, 0x1000, 1 << 20, 0xa);
	p[56] = 'X';					/* no magic */
	CHECK(arm_boot_open_image(&b, p, 4096, "t") == -1);
	arm_boot_close(&b);
	p = image(4096, 3 << 20, 1 << 20, 0xa);	/* text_offset past 2 MiB */
	CHECK(arm_boot_open_image(&b, p, 4096, "t") == -1);
	arm_boot_close(&b);
	CHECK(arm_boot_open_image(&b, calloc(1, 32), 32, "t") == -1);	/* short */
	arm_boot_close(&b);
}

/* What the boot vCPU gets, and what lands in RAM. */
static void test_load(void)
{
	struct arm_boot b = { .initrd_fd = -1 };
	struct guest_mem mem = { 0 };
	struct cpu_entry e;
	uint8_t *ram = calloc(1, 16 << 20);

	guest_mem_add(&mem, 0x40000000, 16 << 20, ram);
	CHECK(arm_boot_open_image(&b, image(4096, 0, 1 << 20, 0xa), 4096, "t") == 0);
	CHECK(arm_boot_plan(&b, 0x40000000, 16 << 20) == 0);
	CHECK(arm_fdt_build(&params, fdt, sizeof(fdt)) == 0);
	CHECK(arm_boot_load(&b, &mem, fdt, fdt_totalsize(fdt), &e) == 0);
	CHECK(e.pc == 0x40000000 && e.x0 == 0x40000000 + (14 << 20));
	CHECK(memcmp(ram + 56, "ARM\x64", 4) == 0);
	CHECK(fdt_check_header(ram + (14 << 20)) == 0);
	arm_boot_close(&b);
	free(ram);
}

int main(int argc, char **argv)
{
	if (arm_fdt_build(&params, fdt, sizeof(fdt))) {
		fprintf(stderr, "cannot build the tree\n");
		return 1;
	}
	if (argc == 2) {
		FILE *f = fopen(argv[1], "wb");

		if (!f || fwrite(fdt, fdt_totalsize(fdt), 1, f) != 1 || fclose(f)) {
			perror(argv[1]);
			return 1;
		}
		return 0;
	}
	RUN(test_root_chosen_memory());
	RUN(test_cpus_psci_timer());
	RUN(test_gic());
	RUN(test_devices());
	RUN(test_pci());
	RUN(test_fdt_options());
	RUN(test_user_fdt());
	RUN(test_user_fdt_bad());
	RUN(test_ipa());
	RUN(test_image());
	RUN(test_load());
	return check_done();
}
