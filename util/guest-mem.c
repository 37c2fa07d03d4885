// SPDX-License-Identifier: GPL-2.0-or-later
#include <string.h>

#include "util/guest-mem.h"

int guest_mem_add(struct guest_mem *mem, uint64_t gpa, uint64_t size, void *hva)
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
		.gpa = gpa, .size = size, .hva = hva,
	};
	mem->ram_size += size;
	return 0;
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
