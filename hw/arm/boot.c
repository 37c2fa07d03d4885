// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The arm64 Linux boot protocol (Documentation/arch/arm64/booting.rst).
 * brisk plays the boot loader: the Image goes text_offset bytes above a
 * 2 MiB aligned base at the bottom of RAM, with image_size bytes (its
 * BSS included) left free there; the device tree goes into the top 2 MiB
 * of RAM (8-byte aligned, at most 2 MiB, and alone in its 2 MiB block, so
 * the kernel can map it with any attributes); the initrd right below it.
 * "The top" is that of the 1 GiB aligned, 32 GiB window from the Image's
 * base when RAM runs past it: the initrd must lie in such a window
 * together with the Image.
 * The boot vCPU enters at the Image's first byte with x0 = the tree.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/arm/virt.h"
#include "hw/loader.h"
#include "util/guest-mem.h"
#include "util/log.h"

/* The Image header (booting.rst, "Call the kernel image"). */
#define HDR_TEXT_OFFSET 8
#define HDR_IMAGE_SIZE 16
#define HDR_FLAGS 24
#define HDR_MAGIC 56
#define HDR_SIZE 64
#define IMAGE_MAGIC 0x644d5241u		/* "ARM\x64" */
#define FLAG_BE 0x1
#define FLAG_PAGE_SIZE_SHIFT 1		/* 2 bits: 0 unspecified, 1 4K, 2 16K, 3 64K */
#define OLD_TEXT_OFFSET 0x80000u	/* image_size 0: before Linux 3.17 */

#define SZ_2M (2ull << 20)
#define SZ_1G (1ull << 30)
#define INITRD_WINDOW (32ull << 30)	/* with the Image, 1 GiB aligned */
#define IMAGE_MAX (512ull << 20)

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int check_header(struct arm_boot *b, const char *name)
{
	const uint8_t *h = b->image;
	uint64_t flags;

	if (b->image_size < HDR_SIZE || (uint32_t)get64(h + HDR_MAGIC) != IMAGE_MAGIC) {
		error_report("kernel '%s' is not an arm64 Linux Image (no \"ARM\\x64\" "
			     "magic at offset 56)", name);
		return -1;
	}
	b->text_offset = get64(h + HDR_TEXT_OFFSET);
	b->load_size = get64(h + HDR_IMAGE_SIZE);
	flags = get64(h + HDR_FLAGS);
	if (b->load_size == 0) {
		b->text_offset = OLD_TEXT_OFFSET;
		b->load_size = b->image_size;
		flags = 0;
	}
	if (flags & FLAG_BE) {
		error_report("kernel '%s' is a big-endian Image; brisk boots "
			     "little-endian kernels", name);
		return -1;
	}
	if (b->text_offset >= SZ_2M || b->text_offset % 4096 ||
	    b->load_size < b->image_size || b->load_size > IMAGE_MAX) {
		error_report("kernel '%s' has a bad Image header (text_offset %#llx, "
			     "image_size %#llx)", name,
			     (unsigned long long)b->text_offset,
			     (unsigned long long)b->load_size);
		return -1;
	}
	return 0;
}

int arm_boot_open_image(struct arm_boot *b, uint8_t *image, size_t size,
			const char *name)
{
	b->image = image;
	b->image_size = size;
	return check_header(b, name);
}

int arm_boot_open(struct arm_boot *b, const char *kernel, const char *initrd,
		  const char *dtb)
{
	uint8_t *img;
	size_t size;

	if (loader_read_file("kernel", kernel, HDR_SIZE, IMAGE_MAX, &img, &size) ||
	    arm_boot_open_image(b, img, size, kernel))
		return -1;
	if (initrd) {
		b->initrd_fd = loader_open_file("initrd", initrd, &b->initrd_size);
		if (b->initrd_fd < 0)
			return -1;
	}
	return dtb ? arm_boot_open_dtb(b, dtb) : 0;
}

int arm_boot_open_dtb(struct arm_boot *b, const char *dtb)
{
	if (loader_read_file("device tree", dtb, 8, ARM_FDT_MAX, &b->dtb,
			     &b->dtb_size))
		return -1;
	return arm_fdt_check_user(b->dtb, b->dtb_size, dtb);
}

int arm_boot_plan(struct arm_boot *b, uint64_t ram_base, uint64_t ram_size)
{
	uint64_t kernel_end, top = ram_base + ram_size, window;

	b->kernel_addr = ram_base + b->text_offset;
	kernel_end = b->kernel_addr + b->load_size;
	window = (b->kernel_addr & ~(SZ_1G - 1)) + INITRD_WINDOW;
	if (top > window)
		top = window;
	/* The tree's own 2 MiB block at the top; the initrd under it. */
	if (ram_size < 2 * SZ_2M || kernel_end > top - SZ_2M) {
		error_report("kernel does not fit in guest memory (needs %llu MiB; "
			     "raise -m)", (unsigned long long)
			     ((kernel_end - ram_base + 2 * SZ_2M) >> 20));
		return -1;
	}
	b->dtb_addr = top - SZ_2M;
	assert(b->dtb_addr % 8 == 0);	/* booting.rst; 2 MiB, in fact */
	b->initrd_addr = (b->dtb_addr - b->initrd_size) & ~0xfffull;
	if (b->initrd_size &&
	    (b->initrd_size > b->dtb_addr - kernel_end ||
	     b->initrd_addr < kernel_end)) {
		error_report("initrd too large for memory (%llu MiB, at most %llu "
			     "MiB fit; raise -m)",
			     (unsigned long long)(b->initrd_size >> 20),
			     (unsigned long long)((b->dtb_addr - kernel_end) >> 20));
		return -1;
	}
	return 0;
}

int arm_boot_load(struct arm_boot *b, struct guest_mem *mem, const void *fdt,
		  size_t fdt_size, struct cpu_entry *entry)
{
	uint8_t *dst;

	if (fdt_size > ARM_FDT_MAX ||
	    !guest_mem_write(mem, b->kernel_addr, b->image, b->image_size) ||
	    !guest_mem_write(mem, b->dtb_addr, fdt, fdt_size)) {
		error_report("cannot load the kernel into guest memory");
		return -1;
	}
	if (b->initrd_size) {
		dst = guest_mem_ptr(mem, b->initrd_addr, b->initrd_size);
		if (!dst || loader_pread_all("initrd", b->initrd_fd, dst,
					     b->initrd_size))
			return -1;
	}
	*entry = (struct cpu_entry){ .pc = b->kernel_addr, .x0 = b->dtb_addr };
	return 0;
}

void arm_boot_close(struct arm_boot *b)
{
	free(b->image);
	free(b->dtb);
	if (b->initrd_fd >= 0)
		close(b->initrd_fd);
	b->image = b->dtb = NULL;
	b->initrd_fd = -1;
}
