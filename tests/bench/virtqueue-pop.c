// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Hot-path microbenchmark: one request through a virtqueue per iteration.
 * A guest-side driver in this process adds a chain, the device side pops
 * and pushes it, the driver reaps the used entry.  Prints ns per request
 * (min and median of several timed runs) for split and packed rings with
 * a virtio-blk-like 3-descriptor chain and a 64-descriptor chain.
 *
 * Each of REPS measurements runs for at least the given time (0.3 s by
 * default) in chunks of CHUNK requests and takes the median chunk.
 * Output: one CSV line per case, "ring,chain,min_ns,median_ns" over the
 * measurements.
 *
 * "--count split|packed CHAIN N" instead runs exactly N requests of one
 * case after a warm-up of WARM_COUNT, and prints nothing: for counting
 * instructions under callgrind, which no load on the host can skew.
 */
#include <alloca.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vq-driver.h"

#define NUM 256
#define REPS 9
/* Stack offsets 0, 448, ... spread over a 4 KiB page in cache-line steps. */
#define STACK_STEP 448
#define CHUNK 256
#define MAX_CHUNKS (1u << 20)
#define WARM_COUNT 1000

static double chunk_ns[MAX_CHUNKS];

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

/*
 * One measurement: at least min_s seconds in chunks of CHUNK requests,
 * returning the median chunk.  On a shared host a preemption then lands in
 * one chunk instead of skewing the mean.
 */
static double measure(struct vq_driver *d, struct virtqueue *vq,
		      const struct drv_seg *segs, unsigned int n, double min_s)
{
	unsigned int nchunks = 0;
	double start = now_ns(), t0 = start, t;

	do {
		for (int i = 0; i < CHUNK; i++)
			one_request(d, vq, segs, n);
		t = now_ns();
		chunk_ns[nchunks++] = (t - t0) / CHUNK;
		t0 = t;
	} while (t - start < min_s * 1e9 && nchunks < MAX_CHUNKS);
	qsort(chunk_ns, nchunks, sizeof(chunk_ns[0]), cmp_double);
	return chunk_ns[nchunks / 2];
}

/*
 * The same code runs 10-25% faster or slower depending on where its stack
 * lands relative to the rings and the heap (address aliasing), which would
 * swamp the differences between builds.  Each measurement therefore runs
 * at another stack offset; min and median are over those layouts.
 */
static __attribute__((noinline)) double
measure_at(unsigned int offset, struct vq_driver *d, struct virtqueue *vq,
	   const struct drv_seg *segs, unsigned int n, double min_s)
{
	volatile char *pad = alloca(offset + 1);

	pad[0] = 0;
	return measure(d, vq, segs, n, min_s);
}

/* Header out, data in, status in: the shape of a block request. */
static void setup_case(struct vq_driver *d, struct virtqueue *vq, bool packed,
		       struct drv_seg *segs, unsigned int n)
{
	uint64_t feats = (1ull << VIRTIO_F_VERSION_1) |
			 (packed ? 1ull << VIRTIO_F_RING_PACKED : 0);

	drv_init(d, packed, NUM, 4 << 20);
	if (drv_setup_vq(d, vq, feats) < 0)
		abort();
	segs[0] = (struct drv_seg){ d->data, 16, false };
	for (unsigned int i = 1; i + 1 < n; i++)
		segs[i] = (struct drv_seg){ d->data + 0x1000 * i, 4096, true };
	segs[n - 1] = (struct drv_seg){ d->data + 0x100, 1, true };
}

static void run_case(bool packed, unsigned int n, const char *chain, double min_s)
{
	struct drv_seg segs[64];
	struct vq_driver d;
	struct virtqueue vq;
	double ns[REPS];

	setup_case(&d, &vq, packed, segs, n);

	for (double t0 = now_ns(); now_ns() - t0 < 0.1e9;)
		for (int i = 0; i < 1000; i++)
			one_request(&d, &vq, segs, n);
	for (int r = 0; r < REPS; r++)
		ns[r] = measure_at(STACK_STEP * (unsigned int)r, &d, &vq, segs, n, min_s);
	qsort(ns, REPS, sizeof(ns[0]), cmp_double);
	printf("%s,%s,%.1f,%.1f\n", packed ? "packed" : "split",
	       chain, ns[0], ns[REPS / 2]);
	if (vq.broken || !drv_canary_ok(&d)) {
		fprintf(stderr, "virtqueue-pop: ring broke\n");
		exit(1);
	}
	drv_destroy(&d);
}

/* --count: exactly count requests after the warm-up, for callgrind. */
static int count_case(const char *ring, const char *chain, const char *count)
{
	unsigned int n = (unsigned int)atoi(chain);
	long c = atol(count);
	struct drv_seg segs[64];
	struct vq_driver d;
	struct virtqueue vq;

	if ((strcmp(ring, "split") && strcmp(ring, "packed")) || n < 2 || n > 64 || c < 1) {
		fprintf(stderr, "usage: virtqueue-pop --count split|packed CHAIN(2-64) N\n");
		return 2;
	}
	setup_case(&d, &vq, !strcmp(ring, "packed"), segs, n);
	for (int i = 0; i < WARM_COUNT; i++)
		one_request(&d, &vq, segs, n);
	for (long i = 0; i < c; i++)
		one_request(&d, &vq, segs, n);
	drv_destroy(&d);
	return 0;
}

int main(int argc, char **argv)
{
	double min_s = 0.3;

	if (argc == 5 && !strcmp(argv[1], "--count"))
		return count_case(argv[2], argv[3], argv[4]);
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
