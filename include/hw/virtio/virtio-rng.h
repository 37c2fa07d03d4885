/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_VIRTIO_VIRTIO_RNG_H
#define BRISK_HW_VIRTIO_VIRTIO_RNG_H

#include <stdint.h>

#include "hw/device.h"

struct machine;
struct virtio_plug;

/*
 * virtio-rng-pci: the guest's entropy source, fed from the host's
 * getrandom(2) or, given rng= an -object rng-random, from a file (a
 * character device such as /dev/hwrng), served on m->loop.  As QEMU's, it hands out at most
 * max_bytes per period_ms; a max_bytes of VRNG_NO_LIMIT or more (QEMU's
 * default) limits nothing.
 */
#define VRNG_NO_LIMIT ((uint64_t)INT64_MAX)
#define VRNG_DEFAULT_PERIOD_MS 65536

struct vrng_cfg {
	uint64_t max_bytes;	/* what OPT_U64 stores */
	unsigned period_ms;	/* at least 1 */
	char *rng;		/* rng=: an -object rng-random or rng-builtin */
	/*
	 * What rng= named: the file the bytes are read from (rng-random's
	 * filename, owned by the -object), NULL for getrandom(2).
	 */
	const char *filename;
};

struct vrng;

/*
 * Serves one on m->loop, reached through plug (which it owns from here
 * on, even when it fails); NULL after one error line.
 */
struct vrng *vrng_create(struct machine *m, const struct vrng_cfg *cfg,
			 struct virtio_plug *plug);
/* After the vCPUs have stopped; NULL is fine. */
void vrng_free(struct vrng *r);

/*
 * The timerfd that ends a rate-limit period, -1 when nothing is limited:
 * a test makes it readable to end the period without waiting for it.
 */
int vrng_timer_fd(const struct vrng *r);
/*
 * The timerfd that looks at an rng-random file again while it has no
 * bytes, -1 without a file: a test makes it readable in the same way.
 */
int vrng_retry_fd(const struct vrng *r);

extern const struct device_family virtio_rng_pci_family;

#endif
