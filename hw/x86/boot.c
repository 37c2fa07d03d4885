// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Linux x86 boot protocol (Documentation/arch/x86/boot.rst), 64-bit entry.
 *
 * brisk has no firmware, so it plays the boot loader: it skips the
 * real-mode setup code, puts the protected-mode kernel at its preferred
 * address and enters it at startup_64 (load address + 0x200) with RSI
 * pointing at boot_params.  That entry needs long mode with an identity
 * mapping of the kernel, boot_params and command line, and flat
 * __BOOT_CS (0x10) / __BOOT_DS (0x18) segments.  We identity-map the
 * whole first 4 GiB with 2 MiB pages: every x86-64 CPU has them, while
 * 1 GiB pages are an optional feature (pdpe1gb) that a -cpu without it
 * would fault on.  Four page directories cost 16 KiB of low RAM.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hw/loader.h"
#include "hw/machine.h"
#include "hw/x86/check-guest.h"
#include "hw/x86/pc.h"
#include "util/log.h"

/* Setup header fields, as offsets into the image and into boot_params. */
#define HDR_SETUP_SECTS 0x1f1
#define HDR_BOOT_FLAG 0x1fe
#define HDR_JUMP 0x200
#define HDR_MAGIC 0x202
#define HDR_VERSION 0x206
#define HDR_TYPE_OF_LOADER 0x210
#define HDR_LOADFLAGS 0x211
#define HDR_RAMDISK_IMAGE 0x218
#define HDR_RAMDISK_SIZE 0x21c
#define HDR_CMD_LINE_PTR 0x228
#define HDR_INITRD_ADDR_MAX 0x22c
#define HDR_XLOADFLAGS 0x236
#define HDR_CMDLINE_SIZE 0x238
#define HDR_PREF_ADDRESS 0x258
#define HDR_INIT_SIZE 0x260
#define HDR_END_MAX 0x290

#define BP_ACPI_RSDP_ADDR 0x070
#define BP_E820_ENTRIES 0x1e8
#define BP_E820_TABLE 0x2d0
#define BP_E820_MAX 128
#define BP_SIZE 0x1000

#define LOADED_HIGH 0x01
#define XLF_KERNEL_64 0x01

#define E820_RAM 1
#define E820_RESERVED 2

/* Low-memory placement of what brisk itself writes (see pc.h). */
#define BOOT_GDT 0x500
#define BOOT_PARAMS 0x7000
#define BOOT_PML4 0x9000
#define BOOT_PDPT 0xa000
#define BOOT_PD 0xb000
#define BOOT_CMDLINE 0x20000
#define BOOT_CMDLINE_MAX 0x10000
#define KERNEL_MIN_ADDR 0x100000

#define BOOT_IMAGE_MAX (256u << 20)

static uint16_t get16(const uint8_t *p, size_t off)
{
	return p[off] | p[off + 1] << 8;
}

static uint32_t get32(const uint8_t *p, size_t off)
{
	return get16(p, off) | (uint32_t)get16(p, off + 2) << 16;
}

static uint64_t get64(const uint8_t *p, size_t off)
{
	return get32(p, off) | (uint64_t)get32(p, off + 4) << 32;
}

static void put(uint8_t *p, size_t off, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[off + i] = v >> (8 * i);
}

/* Image size bounds: a setup header needs 4 KiB; more is not a kernel. */
static bool image_size_ok(uint64_t size)
{
	return size >= 0x1000 && size <= BOOT_IMAGE_MAX;
}

/*
 * RAM up to 3 GiB stays below the PCI hole; beyond that the rest moves
 * above 4 GiB, so 32-bit BARs, the IOAPIC and the LAPIC never overlap RAM.
 */
void pc_layout(uint64_t ram_size, struct pc_layout *l)
{
	l->low_size = ram_size < PC_LOW_RAM_MAX ? ram_size : PC_LOW_RAM_MAX;
	l->high_size = ram_size - l->low_size;
}

static int read_image(struct x86_boot *b, const char *path)
{
	return loader_read_file("kernel", path, 0x1000, BOOT_IMAGE_MAX, &b->image,
				&b->image_size);
}

static int check_image(struct x86_boot *b, const struct pc_layout *l,
		       const char *path)
{
	const uint8_t *img = b->image;
	unsigned sects = img[HDR_SETUP_SECTS] ? img[HDR_SETUP_SECTS] : 4;
	uint16_t version = get16(img, HDR_VERSION);

	if (memcmp(img + HDR_MAGIC, "HdrS", 4) ||
	    get16(img, HDR_BOOT_FLAG) != 0xaa55) {
		error_report("kernel '%s' is not a bzImage (no HdrS header)", path);
		return -1;
	}
	/* 2.12 brought xloadflags, which says whether the 64-bit entry exists. */
	if (version < 0x020c) {
		error_report("kernel '%s' uses boot protocol %u.%02u; brisk needs "
			     "2.12 or later", path, version >> 8, version & 0xff);
		return -1;
	}
	if (!(img[HDR_LOADFLAGS] & LOADED_HIGH) ||
	    !(get16(img, HDR_XLOADFLAGS) & XLF_KERNEL_64)) {
		error_report("kernel '%s' has no 64-bit entry point "
			     "(not an x86-64 bzImage)", path);
		return -1;
	}
	b->setup_size = (sects + 1) * 512ul;
	if (b->setup_size >= b->image_size) {
		error_report("kernel '%s' is truncated", path);
		return -1;
	}
	b->load_addr = get64(img, HDR_PREF_ADDRESS);
	b->init_size = get32(img, HDR_INIT_SIZE);
	uint64_t payload = b->image_size - b->setup_size;

	if (b->init_size < payload)
		b->init_size = payload;
	if (b->load_addr < KERNEL_MIN_ADDR || b->load_addr & 0xfff)
		b->load_addr = KERNEL_MIN_ADDR;
	if (b->load_addr >= l->low_size ||
	    b->init_size > l->low_size - b->load_addr) {
		error_report("kernel '%s' does not fit in guest memory "
			     "(needs %llu MiB; raise -m)", path,
			     (unsigned long long)((b->load_addr + b->init_size) >> 20) + 1);
		return -1;
	}
	return 0;
}

static int plan_initrd(struct x86_boot *b, const struct pc_layout *l,
		       const char *path)
{
	b->initrd_fd = loader_open_file("initrd", path, &b->initrd_size);
	if (b->initrd_fd < 0)
		return -1;

	uint64_t max = get32(b->image, HDR_INITRD_ADDR_MAX);
	uint64_t top = (max ? max : 0x37ffffff) + 1;
	uint64_t bottom = (b->load_addr + b->init_size + 0xfff) & ~0xfffull;

	if (top > l->low_size)
		top = l->low_size;
	if (top < bottom)
		top = bottom;
	if (b->initrd_size > top - bottom) {
		error_report("initrd '%s' too large for memory (%llu MiB, at most "
			     "%llu MiB fit; raise -m)", path,
			     (unsigned long long)(b->initrd_size >> 20),
			     (unsigned long long)((top - bottom) >> 20));
		return -1;
	}
	/* At the top, as boot loaders do, out of the kernel's way. */
	b->initrd_addr = (top - b->initrd_size) & ~0xfffull;
	return 0;
}

/* The checks after the image is in memory, shared by both entry points. */
static int boot_plan(struct x86_boot *b, const struct pc_layout *l,
		     const char *kernel, const char *initrd)
{
	if (check_image(b, l, kernel))
		return -1;

	size_t len = strlen(b->cmdline);
	uint32_t max = get32(b->image, HDR_CMDLINE_SIZE);

	if (max >= BOOT_CMDLINE_MAX)
		max = BOOT_CMDLINE_MAX - 1;
	if (len > max) {
		error_report("kernel command line too long (%zu bytes, the kernel "
			     "takes at most %u)", len, max);
		return -1;
	}
	if (initrd && plan_initrd(b, l, initrd))
		return -1;
	return 0;
}

int x86_boot_open(struct x86_boot *b, const struct pc_layout *l,
		  const char *kernel, const char *initrd, const char *cmdline)
{
	*b = (struct x86_boot){ .initrd_fd = -1, .cmdline = cmdline ? cmdline : "" };
	if (read_image(b, kernel))
		return -1;
	return boot_plan(b, l, kernel, initrd);
}

int x86_boot_open_image(struct x86_boot *b, const struct pc_layout *l,
			uint8_t *image, size_t size, const char *name,
			const char *initrd, const char *cmdline)
{
	*b = (struct x86_boot){
		.image = image, .image_size = size, .initrd_fd = -1,
		.cmdline = cmdline ? cmdline : "",
	};
	if (!image_size_ok(size)) {
		error_report("kernel '%s' is not a bzImage (not 4 KiB to 256 MiB)", name);
		return -1;
	}
	return boot_plan(b, l, name, initrd);
}

void x86_boot_close(struct x86_boot *b)
{
	free(b->image);
	b->image = NULL;
	if (b->initrd_fd >= 0)
		close(b->initrd_fd);
	b->initrd_fd = -1;
}

static int load_initrd(struct x86_boot *b, struct machine *m)
{
	uint8_t *dst = guest_mem_ptr(&m->mem, b->initrd_addr, b->initrd_size);

	/* An empty file sits at the very top of RAM, where no byte is. */
	if (b->initrd_size == 0)
		return 0;
	return dst ? loader_pread_all("initrd", b->initrd_fd, dst, b->initrd_size) : -1;
}

static unsigned add_e820(uint8_t *bp, unsigned n, uint64_t addr, uint64_t size,
			 uint32_t type)
{
	size_t off = BP_E820_TABLE + n * 20;

	put(bp, off, addr, 8);
	put(bp, off + 8, size, 8);
	put(bp, off + 16, type, 4);
	return n + 1;
}

/*
 * The PCI hole and the legacy VGA/option-ROM range 0xa0000-0xdffff are
 * left out of the map: gaps tell Linux where devices may live.
 */
static void fill_e820(uint8_t *bp, const struct pc_layout *l)
{
	unsigned n = 0;

	n = add_e820(bp, n, 0, PC_EBDA_BASE, E820_RAM);
	n = add_e820(bp, n, PC_EBDA_BASE, 0xa0000 - PC_EBDA_BASE, E820_RESERVED);
	n = add_e820(bp, n, PC_ACPI_BASE, 0x100000 - PC_ACPI_BASE, E820_RESERVED);
	n = add_e820(bp, n, 0x100000, l->low_size - 0x100000, E820_RAM);
	if (l->high_size)
		n = add_e820(bp, n, PC_HIGH_RAM_BASE, l->high_size, E820_RAM);
	bp[BP_E820_ENTRIES] = n;
}

static int write_boot_params(struct x86_boot *b, struct machine *m,
			     const struct pc_layout *l, uint64_t rsdp)
{
	uint8_t bp[BP_SIZE] = { 0 };
	size_t hdr_end = HDR_MAGIC + b->image[HDR_JUMP + 1];

	if (hdr_end > HDR_END_MAX)
		hdr_end = HDR_END_MAX;
	memcpy(bp + HDR_SETUP_SECTS, b->image + HDR_SETUP_SECTS,
	       hdr_end - HDR_SETUP_SECTS);
	bp[HDR_TYPE_OF_LOADER] = 0xff;
	put(bp, HDR_CMD_LINE_PTR, BOOT_CMDLINE, 4);
	if (b->initrd_fd >= 0) {
		put(bp, HDR_RAMDISK_IMAGE, b->initrd_addr, 4);
		put(bp, HDR_RAMDISK_SIZE, b->initrd_size, 4);
	}
	put(bp, BP_ACPI_RSDP_ADDR, rsdp, 8);
	fill_e820(bp, l);
	return guest_mem_write(&m->mem, BOOT_PARAMS, bp, sizeof(bp)) ? 0 : -1;
}

static int write_cpu_tables(struct guest_mem *mem, struct cpu_entry *e)
{
	static const uint64_t gdt[] = {
		0, 0,
		0x00af9b000000ffffull,	/* 0x10: 64-bit code, flat */
		0x00cf93000000ffffull,	/* 0x18: data, flat */
		0x0000890000000067ull,	/* 0x20: 64-bit TSS at 0 (for TR) */
		0,
	};
	uint64_t pml4 = BOOT_PDPT | 3, pdpt[4], pd[4 * 512];

	for (unsigned i = 0; i < 4; i++)
		pdpt[i] = (BOOT_PD + i * 0x1000) | 3;
	for (unsigned i = 0; i < ARRAY_SIZE(pd); i++)
		pd[i] = ((uint64_t)i << 21) | 0x83;	/* present, writable, 2M */
	if (!guest_mem_write(mem, BOOT_GDT, gdt, sizeof(gdt)) ||
	    !guest_mem_write(mem, BOOT_PML4, &pml4, sizeof(pml4)) ||
	    !guest_mem_write(mem, BOOT_PDPT, pdpt, sizeof(pdpt)) ||
	    !guest_mem_write(mem, BOOT_PD, pd, sizeof(pd)))
		return -1;
	e->gdt_base = BOOT_GDT;
	e->gdt_limit = sizeof(gdt) - 1;
	e->cr3 = BOOT_PML4;
	e->cs = 0x10;
	e->ds = 0x18;
	return 0;
}

int x86_boot_load(struct x86_boot *b, struct machine *m,
		  const struct pc_layout *l, uint64_t rsdp,
		  struct cpu_entry *entry)
{
	if (!guest_mem_write(&m->mem, b->load_addr, b->image + b->setup_size,
			     b->image_size - b->setup_size) ||
	    !guest_mem_write(&m->mem, BOOT_CMDLINE, b->cmdline,
			     strlen(b->cmdline) + 1) ||
	    (b->initrd_fd >= 0 && load_initrd(b, m)) ||
	    write_boot_params(b, m, l, rsdp) || write_cpu_tables(&m->mem, entry)) {
		error_report("cannot load the kernel into guest memory");
		return -1;
	}
	entry->rip = b->load_addr + 0x200;
	entry->rsi = BOOT_PARAMS;
	return 0;
}

extern const uint8_t x86_check_code[], x86_check_code_end[];

/* The same GDT, page tables and entry state as a kernel gets. */
int x86_check_guest_load(struct guest_mem *mem, struct cpu_entry *entry)
{
	if (!guest_mem_write(mem, X86_CHECK_ENTRY, x86_check_code,
			     x86_check_code_end - x86_check_code) ||
	    write_cpu_tables(mem, entry))
		return -1;
	entry->rip = X86_CHECK_ENTRY;
	entry->rsi = X86_CHECK_LOOPS;
	return 0;
}
