// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Hot-path microbenchmark: one request through a virtqueue per iteration.
 * A guest-side driver in this process adds a chain, the device side pops
 * and pushes it, the driver reaps the used entry.  Prints ns per request
 * (min and median of several timed runs) for split and packed rings with
 * a virtio-blk-like 3-descriptor chain and a 64-descriptor chain.
 *
 * Output: one CSV line per case, "ring,chain,min_ns,median_ns".
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vq-driver.h"

#define NUM 256
#define REPS 7

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void pin_to_one_cpu(void)
{
	cpu_set_t set;
	int cpu = -1;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return;
	/* The last CPU we may use: CPU 0 tends to take more interrupts. */
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			cpu = i;
	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void one_request(struct vq_driver *d, struct virtqueue *vq,
			const struct drv_seg *segs, unsigned int n)
{
	struct vq_elem *e;
	uint16_t id;
	uint32_t len;

	if (drv_add(d, segs, n, false) < 0 || virtqueue_pop(vq, sizeof(*e), &e) != 1) {
		fprintf(stderr, "virtqueue-pop: ring stalled\n");
		exit(1);
	}
	virtqueue_push(vq, e, 4097);
	free(e);
	if (drv_reap(d, &id, &len) != 1) {
		fprintf(stderr, "virtqueue-pop: used entry missing\n");
		exit(1);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void run_case(bool packed, unsigned int n, const char *chain, double min_s)
{
	struct drv_seg segs[64];
	struct vq_driver d;
	struct virtqueue vq;
	double ns[REPS];
	uint64_t feats = (1ull << VIRTIO_F_VERSION_1) |
			 (packed ? 1ull << VIRTIO_F_RING_PACKED : 0);

	drv_init(&d, packed, NUM, 4 << 20);
	if (drv_setup_vq(&d, &vq, feats) < 0)
		abort();
	/* Header out, data in, status in: the shape of a block request. */
	segs[0] = (struct drv_seg){ d.data, 16, false };
	for (unsigned int i = 1; i + 1 < n; i++)
		segs[i] = (struct drv_seg){ d.data + 0x1000 * i, 4096, true };
	segs[n - 1] = (struct drv_seg){ d.data + 0x100, 1, true };

	for (double t0 = now_ns(); now_ns() - t0 < 0.1e9;)
		for (int i = 0; i < 1000; i++)
			one_request(&d, &vq, segs, n);
	for (int r = 0; r < REPS; r++) {
		unsigned long iters = 0;
		double t0 = now_ns(), t;

		do {
			for (int i = 0; i < 4096; i++)
				one_request(&d, &vq, segs, n);
			iters += 4096;
			t = now_ns();
		} while (t - t0 < min_s * 1e9);
		ns[r] = (t - t0) / (double)iters;
	}
	qsort(ns, REPS, sizeof(ns[0]), cmp_double);
	printf("%s,%s,%.1f,%.1f\n", packed ? "packed" : "split",
	       chain, ns[0], ns[REPS / 2]);
	if (vq.broken || !drv_canary_ok(&d)) {
		fprintf(stderr, "virtqueue-pop: ring broke\n");
		exit(1);
	}
	drv_destroy(&d);
}

int main(int argc, char **argv)
{
	double min_s = 0.3;

	if (argc > 1)
		min_s = atof(argv[1]);
	if (!(min_s > 0)) {
		fprintf(stderr, "usage: virtqueue-pop [seconds per measurement]\n");
		return 2;
	}
	pin_to_one_cpu();
	printf("ring,chain,min_ns,median_ns\n");
	for (int p = 0; p < 2; p++) {
		run_case(p, 3, "3", min_s);
		run_case(p, 64, "64", min_s);
	}
	return 0;
}
