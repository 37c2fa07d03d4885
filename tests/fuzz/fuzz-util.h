/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_FUZZ_UTIL_H
#define BRISK_TESTS_FUZZ_UTIL_H

/*
 * Helpers shared by the fuzz targets: a cursor that decodes the input
 * (reading past its end yields zeros, so every input is a valid program)
 * and guest RAM made from input bytes in exactly-sized heap blocks, so
 * AddressSanitizer flags any host access outside guest RAM.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/guest-mem.h"

struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline uint64_t fuzz_get(struct fuzz_in *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++) {
		if (!in->n)
			break;
		v |= (uint64_t)*in->p++ << (8 * i);
		in->n--;
	}
	return v;
}

#define fuzz_u8(in) ((uint8_t)fuzz_get(in, 1))
#define fuzz_u16(in) ((uint16_t)fuzz_get(in, 2))
#define fuzz_u32(in) ((uint32_t)fuzz_get(in, 4))
#define fuzz_u64(in) fuzz_get(in, 8)

/* Up to two adjacent RAM regions; a buffer must never span them. */
struct fuzz_ram {
	struct guest_mem mem;
	uint8_t *block[2];
};

/*
 * RAM of size bytes at guest address 0, filled from data (zeros past
 * len), cut into two separately allocated regions at split when
 * 0 < split < size.  Returns -1 only when out of memory.
 *
 * The cut is rounded down to 16 bytes: brisk's RAM regions are page
 * aligned on both sides, so an aligned guest address is an aligned host
 * address, and the rings rely on that (malloc only promises 16).
 */
static inline int fuzz_ram_init(struct fuzz_ram *r, const uint8_t *data,
				size_t len, size_t size, size_t split)
{
	size_t cut[3] = { 0, size, size };

	split &= ~(size_t)15;
	if (split > 0 && split < size)
		cut[1] = split;

	memset(r, 0, sizeof(*r));
	for (unsigned i = 0; i < 2 && cut[i] < cut[i + 1]; i++) {
		size_t sz = cut[i + 1] - cut[i];

		r->block[i] = malloc(sz);
		if (!r->block[i])
			return -1;
		memset(r->block[i], 0, sz);
		if (cut[i] < len)
			memcpy(r->block[i], data + cut[i],
			       len - cut[i] < sz ? len - cut[i] : sz);
		guest_mem_add(&r->mem, cut[i], sz, r->block[i]);
	}
	return 0;
}

static inline void fuzz_ram_free(struct fuzz_ram *r)
{
	free(r->block[0]);
	free(r->block[1]);
}

#endif
