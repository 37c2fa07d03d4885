// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/guest-mem.h"

/*
 * KVM maps guest RAM with large NPT/EPT entries only where a transparent
 * huge page of ours lines up with a 2 MiB guest-physical frame; a mapping
 * that is merely page aligned (mmap's default before Linux 6.7) pins every
 * guest access to 4 KiB entries, and each first touch to its own fault.
 * So the mapping is carved out of a larger one at a 2 MiB boundary.
 */
static void *ram_map(uint64_t size, int fd)
{
	uint64_t len = size + GUEST_RAM_ALIGN;
	uint8_t *p, *start;

	if (size == 0 || len < size || len != (size_t)len) {
		errno = ENOMEM;
		return NULL;
	}
	/* Reserve an aligned range first, then put the RAM there. */
	p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	start = (uint8_t *)(((uintptr_t)p + GUEST_RAM_ALIGN - 1) &
			    ~(uintptr_t)(GUEST_RAM_ALIGN - 1));
	if (mmap(start, size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_NORESERVE |
		 (fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED), fd, 0) == MAP_FAILED) {
		int err = errno;

		munmap(p, len);
		errno = err;
		return NULL;
	}
	if (start > p)
		munmap(p, start - p);
	if (p + len > start + size)
		munmap(start + size, p + len - (start + size));
	madvise(start, size, MADV_HUGEPAGE);	/* best effort: THP may be off */
	return start;
}

void *guest_ram_alloc(uint64_t size)
{
	return ram_map(size, -1);
}

void *guest_ram_alloc_shared(uint64_t size, int *fd)
{
	void *p;
	int err;

	*fd = memfd_create("brisk-guest-ram", MFD_CLOEXEC);
	if (*fd < 0)
		return NULL;
	if (size != (uint64_t)(off_t)size || ftruncate(*fd, (off_t)size) < 0)
		goto fail;
	p = ram_map(size, *fd);
	if (p)
		return p;
fail:
	err = errno;
	close(*fd);
	*fd = -1;
	errno = err;
	return NULL;
}

int guest_mem_add(struct guest_mem *mem, uint64_t gpa, uint64_t size, void *hva)
{
	return guest_mem_add_fd(mem, gpa, size, hva, -1, 0);
}

int guest_mem_add_fd(struct guest_mem *mem, uint64_t gpa, uint64_t size, void *hva,
		     int fd, uint64_t offset)
{
	if (mem->nr_regions == GUEST_MEM_MAX_REGIONS || size == 0 ||
	    gpa + size < gpa)
		return -1;
	for (unsigned i = 0; i < mem->nr_regions; i++) {
		const struct guest_region *r = &mem->region[i];

		if (gpa < r->gpa + r->size && r->gpa < gpa + size)
			return -1;
	}
	mem->region[mem->nr_regions++] = (struct guest_region){
		.gpa = gpa, .size = size, .hva = hva, .fd = fd, .fd_offset = offset,
	};
	mem->ram_size += size;
	return 0;
}

static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

int guest_mem_map_fd(struct guest_mem *mem, uint64_t gpa, uint64_t size,
		     uint64_t uva, int fd, uint64_t offset, const char **why)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t delta = offset % pg, len = size + delta;
	struct guest_region *r;
	struct stat st;
	uint8_t *p;

	*why = NULL;
	if (mem->nr_regions == GUEST_MEM_MAX_REGIONS)
		*why = "too many memory regions";
	else if (size == 0)
		*why = "empty memory region";
	else if (gpa + size < gpa || uva + size < uva || offset + size < offset ||
		 len < size || len != (size_t)len)
		*why = "memory region wraps around";
	for (unsigned i = 0; !*why && i < mem->nr_regions; i++) {
		r = &mem->region[i];
		if (ranges_overlap(gpa, size, r->gpa, r->size))
			*why = "memory regions overlap in guest-physical space";
		else if (r->map && ranges_overlap(uva, size, r->uva, r->size))
			*why = "memory regions overlap in the front-end's address space";
	}
	if (*why)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*why = "memory region fd is not a regular file";
		return -1;
	}
	/* A mapping beyond the end of the file faults on first touch. */
	if ((uint64_t)st.st_size < offset + size) {
		*why = "memory region extends beyond the end of its file";
		return -1;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd,
		 (off_t)(offset - delta));
	if (p == MAP_FAILED) {
		*why = "cannot map a memory region";
		return -1;
	}
	r = &mem->region[mem->nr_regions++];
	*r = (struct guest_region){
		.gpa = gpa, .size = size, .hva = p + delta, .uva = uva,
		.map = p, .map_len = len, .fd = -1,
	};
	mem->ram_size += size;
	return 0;
}

void guest_mem_unmap(struct guest_mem *mem)
{
	for (unsigned i = 0; i < mem->nr_regions; i++)
		if (mem->region[i].map)
			munmap(mem->region[i].map, mem->region[i].map_len);
	*mem = (struct guest_mem){ 0 };
}

bool guest_mem_uva_to_gpa(const struct guest_mem *mem, uint64_t uva,
			  uint64_t len, uint64_t *gpa)
{
	if (len == 0)
		len = 1;
	for (unsigned i = 0; i < mem->nr_regions; i++) {
		const struct guest_region *r = &mem->region[i];
		uint64_t off = uva - r->uva;

		if (r->map && off < r->size && len <= r->size - off) {
			*gpa = r->gpa + off;
			return true;
		}
	}
	return false;
}

void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len)
{
	if (len == 0)
		len = 1;
	for (unsigned i = 0; i < mem->nr_regions; i++) {
		const struct guest_region *r = &mem->region[i];
		uint64_t off = gpa - r->gpa;

		/* Unsigned arithmetic: gpa below the region wraps to a huge off. */
		if (off < r->size && len <= r->size - off)
			return r->hva + off;
	}
	return NULL;
}

bool guest_mem_read(const struct guest_mem *mem, uint64_t gpa, void *dst, size_t len)
{
	const void *p = guest_mem_ptr(mem, gpa, len);

	if (!p)
		return false;
	memcpy(dst, p, len);
	return true;
}

bool guest_mem_write(const struct guest_mem *mem, uint64_t gpa, const void *src, size_t len)
{
	void *p = guest_mem_ptr(mem, gpa, len);

	if (!p)
		return false;
	memcpy(p, src, len);
	return true;
}
