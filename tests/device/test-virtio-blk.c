// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * virtio-blk through the whole stack.  The test plays the guest
 * (blk-guest.h): it builds a machine, creates the device from command-line
 * strings, and drives it only through bus_read/bus_write (0xcf8/0xcfc
 * config cycles and BAR MMIO), as a vCPU would.  The device's I/O threads
 * run for real; every wait is bounded.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "hw/block/virtio-blk.h"
#include "hw/bus.h"
#include "hw/machine.h"
#include "hw/pci/pci.h"
#include "util/clock.h"
#include "util/guest-mem.h"
#include "virtio/virtio.h"
#include "virtio/virtio_ring.h"

#include "capture.h"
#include "virtio-blk-int.h"
#include "check.h"
#include "blk-guest.h"

/* ---- tests ---- */

static void test_roundtrips(bool packed, bool indirect)
{
	struct tmachine *t = machine_new("file=%s,if=none,id=d0",
		packed ? "virtio-blk-pci,drive=d0,packed=on,serial=brisk-disk-0"
		       : "virtio-blk-pci,drive=d0,serial=brisk-disk-0", 1);
	struct vdev d;
	struct gq q;
	uint32_t len;

	CHECK(vdev_find(t, 0, &d));
	uint64_t f = vdev_init(&d, &q, 1, 64, ALL_FEATURES);

	CHECK(!!(f >> VIRTIO_F_RING_PACKED & 1) == packed);
	CHECK(f >> VIRTIO_F_RING_INDIRECT_DESC & 1);
	CHECK(!(f >> F_RO & 1));
	CHECK(mmio_read(t, d.pci.device, 8) == DISK_SIZE / 512);
	CHECK(mmio_read(t, d.pci.device + 12, 4) == 254);	/* seg_max: queue-size - 2 */
	CHECK(mmio_read(t, d.pci.device + 20, 4) == 512);

	/* IN, data split over three descriptors */
	memset(slot_data(t, 0), 0, 8192);
	CHECK(do_req(&q, (struct breq){ T_IN, 5, 4096, 3, indirect, 0, 0, 0 }, &len) == S_OK);
	CHECK(len == 4097);
	bool same = true;

	for (unsigned i = 0; i < 4096; i++)
		same &= slot_data(t, 0)[i] == disk_byte(5 * 512 + i);
	CHECK(same);

	/* OUT, then the file holds it */
	for (unsigned i = 0; i < 8192; i++)
		slot_data(t, 1)[i] = (uint8_t)(i * 13 + 1);
	CHECK(do_req(&q, (struct breq){ T_OUT, 100, 8192, 2, indirect, 1, 0, 0 }, &len) == S_OK);
	CHECK(len == 1);
	CHECK(file_is(t, 100 * 512, slot_data(t, 1), 8192));

	CHECK(do_req(&q, (struct breq){ T_FLUSH, 0, 0, 0, indirect, 2, 0, 0 }, NULL) == S_OK);

	/* GET_ID: 20 bytes, NUL padded */
	memset(slot_data(t, 3), 0xff, 32);
	CHECK(do_req(&q, (struct breq){ T_GET_ID, 0, 20, 1, indirect, 3, 0, 0 }, &len) == S_OK);
	CHECK(len == 21);
	CHECK(!memcmp(slot_data(t, 3), "brisk-disk-0\0\0\0\0\0\0\0\0", 20));

	/* WRITE_ZEROES with and without unmap, DISCARD */
	uint8_t zero[4096] = { 0 };

	CHECK(do_req(&q, (struct breq){ T_WRITE_ZEROES, 200, 0, 0, indirect, 4, 0, 8 }, NULL) == S_OK);
	CHECK(file_is(t, 200 * 512, zero, 4096));
	CHECK(do_req(&q, (struct breq){ T_WRITE_ZEROES, 300, 0, 0, indirect, 4, 1, 8 }, NULL) == S_OK);
	CHECK(file_is(t, 300 * 512, zero, 4096));
	uint8_t around[512];

	for (unsigned i = 0; i < 512; i++)
		around[i] = disk_byte(308 * 512 + i);
	CHECK(file_is(t, 308 * 512, around, 512));
	CHECK(do_req(&q, (struct breq){ T_DISCARD, 400, 0, 0, indirect, 4, 0, 8 }, NULL) == S_OK);
	/* discard with the unmap flag, and unknown flags */
	CHECK(do_req(&q, (struct breq){ T_DISCARD, 400, 0, 0, indirect, 4, 1, 8 }, NULL) == S_UNSUPP);
	CHECK(do_req(&q, (struct breq){ T_WRITE_ZEROES, 400, 0, 0, indirect, 4, 2, 8 }, NULL) == S_UNSUPP);

	/* errors: out of range, bad length, unknown type */
	CHECK(do_req(&q, (struct breq){ T_IN, DISK_SIZE / 512 - 1, 1024, 1, indirect, 5, 0, 0 }, NULL) == S_IOERR);
	CHECK(do_req(&q, (struct breq){ T_IN, ~0ull - 1, 1024, 1, indirect, 5, 0, 0 }, NULL) == S_IOERR);
	CHECK(do_req(&q, (struct breq){ T_OUT, ~0ull, 512, 1, indirect, 5, 0, 0 }, NULL) == S_IOERR);
	CHECK(do_req(&q, (struct breq){ T_IN, 0, 100, 1, indirect, 5, 0, 0 }, NULL) == S_IOERR);
	CHECK(do_req(&q, (struct breq){ T_WRITE_ZEROES, DISK_SIZE / 512 - 4, 0, 0, indirect, 5, 0, 8 }, NULL) == S_IOERR);
	CHECK(do_req(&q, (struct breq){ 77, 0, 0, 0, indirect, 5, 0, 0 }, NULL) == S_UNSUPP);
	CHECK(do_req(&q, (struct breq){ T_IN, DISK_SIZE / 512 - 2, 1024, 1, indirect, 5, 0, 0 }, NULL) == S_OK);

	/* a batch of 32 in one kick, completed in any order */
	for (unsigned i = 0; i < 32; i++)
		CHECK(breq_add(&q, &(struct breq){ T_IN, i * 8, 4096, 1, true, i, 0, 0 }) >= 0);
	gq_kick(&q);
	unsigned got = 0;

	for (unsigned i = 0; i < 32; i++)
		got += gq_wait_used(&q, &len) >= 0 && len == 4097;
	CHECK(got == 32);
	same = true;
	for (unsigned i = 0; i < 32; i++)
		same &= breq_status(t, i) == S_OK && file_is(t, i * 8 * 512, slot_data(t, i), 4096);
	CHECK(same);
	CHECK(canaries_intact(&t->b));
	machine_free(t);
}

/*
 * VIRTIO 1.2, 5.2.6.2: DISCARD and WRITE_ZEROES are the device's only
 * where the driver took VIRTIO_BLK_F_DISCARD (13) and
 * VIRTIO_BLK_F_WRITE_ZEROES (14); without them, UNSUPP, and the disk is
 * untouched.  Each feature is judged on its own.
 */
static void test_ops_not_taken(void)
{
	struct tmachine *t = machine_new("file=%s,if=virtio,aio=threads", NULL, 1);
	uint8_t before[4096];
	struct vdev d;
	struct gq q;

	for (unsigned i = 0; i < sizeof(before); i++)
		before[i] = disk_byte(64 * 512 + i);
	CHECK(vdev_find(t, 0, &d));
	CHECK(!(vdev_init(&d, &q, 1, 16, ALL_FEATURES & ~(1ull << 13 | 1ull << 14)) >> 13 & 3));
	CHECK(do_req(&q, (struct breq){ T_DISCARD, 64, 0, 0, false, 0, 0, 8 }, NULL) == S_UNSUPP);
	CHECK(do_req(&q, (struct breq){ T_WRITE_ZEROES, 64, 0, 0, false, 1, 0, 8 }, NULL) == S_UNSUPP);
	CHECK(file_is(t, 64 * 512, before, sizeof(before)));

	CHECK(vdev_reset(&d));
	CHECK((vdev_init(&d, &q, 1, 16, ALL_FEATURES & ~(1ull << 14)) >> 13 & 3) == 1);
	CHECK(do_req(&q, (struct breq){ T_WRITE_ZEROES, 64, 0, 0, false, 1, 0, 8 }, NULL) == S_UNSUPP);
	CHECK(file_is(t, 64 * 512, before, sizeof(before)));
	CHECK(do_req(&q, (struct breq){ T_DISCARD, 64, 0, 0, false, 0, 0, 8 }, NULL) == S_OK);

	CHECK(vdev_reset(&d));
	CHECK((vdev_init(&d, &q, 1, 16, ALL_FEATURES & ~(1ull << 13)) >> 13 & 3) == 2);
	CHECK(do_req(&q, (struct breq){ T_DISCARD, 64, 0, 0, false, 0, 0, 8 }, NULL) == S_UNSUPP);
	CHECK(do_req(&q, (struct breq){ T_WRITE_ZEROES, 72, 0, 0, false, 1, 0, 8 }, NULL) == S_OK);
	memset(before, 0, sizeof(before));
	CHECK(file_is(t, 72 * 512, before, sizeof(before)));
	machine_free(t);
}

/*
 * A driver that enables a queue after DRIVER_OK (VIRTIO 1.2, 3.1.1 says
 * before) still has it served: the request completes, with the data.
 */
static void test_late_queue(bool packed)
{
	struct tmachine *t = machine_new("file=%s,if=none,id=x",
					 packed ? "virtio-blk-pci,drive=x,packed=on"
						: "virtio-blk-pci,drive=x", 2);
	struct vdev d;
	struct gq q[2];
	uint64_t f;

	CHECK(vdev_find(t, 0, &d));
	f = vdev_init(&d, q, 1, 16, ALL_FEATURES);
	CHECK((f >> VIRTIO_F_RING_PACKED & 1) == packed);
	CHECK(vstatus(&d) & 4);
	msix_setup(&d, 3);
	gq_init(&d, &q[1], 1, 16, packed, f >> VIRTIO_F_RING_EVENT_IDX & 1);
	memset(slot_data(t, 1), 0, 512);
	CHECK(do_req(&q[1], (struct breq){ T_IN, 7, 512, 1, false, 1, 0, 0 }, NULL) == S_OK);
	CHECK(slot_data(t, 1)[3] == disk_byte(7 * 512 + 3));
	CHECK(do_req(&q[0], (struct breq){ T_IN, 9, 512, 1, false, 0, 0, 0 }, NULL) == S_OK);
	CHECK(slot_data(t, 0)[5] == disk_byte(9 * 512 + 5));
	CHECK(!(vstatus(&d) & 0x40));
	machine_free(t);
}

static void test_readonly(void)
{
	struct tmachine *t = machine_new("file=%s,if=virtio,readonly=on,aio=threads", NULL, 1);
	struct vdev d;
	struct gq q;

	CHECK(vdev_find(t, 0, &d));
	CHECK(vdev_init(&d, &q, 1, 16, ALL_FEATURES) >> F_RO & 1);
	memset(slot_data(t, 0), 0x5a, 512);
	CHECK(do_req(&q, (struct breq){ T_OUT, 0, 512, 1, false, 0, 0, 0 }, NULL) == S_IOERR);
	CHECK(do_req(&q, (struct breq){ T_DISCARD, 0, 0, 0, false, 0, 0, 8 }, NULL) == S_IOERR);
	CHECK(do_req(&q, (struct breq){ T_WRITE_ZEROES, 0, 0, 0, false, 0, 0, 8 }, NULL) == S_IOERR);
	CHECK(do_req(&q, (struct breq){ T_IN, 0, 512, 1, false, 0, 0, 0 }, NULL) == S_OK);
	CHECK(slot_data(t, 0)[1] == disk_byte(1));
	machine_free(t);
}

/*
 * The image shrinks under the device: reads past the new end fail in the
 * backend.  The guest must get IOERR for exactly those, the others still
 * complete, and stderr says so once, not per request.
 */
static void test_backend_fault(const char *aio)
{
	char drive[64];
	struct tmachine *t;
	char line[512];
	int lines, naming;
	struct vdev d;
	struct gq q;
	uint32_t len;

	snprintf(drive, sizeof(drive), "file=%%s,if=virtio,aio=%s", aio);
	t = machine_new(drive, NULL, 1);
	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, &q, 1, 64, ALL_FEATURES);
	CHECK(ftruncate(t->fd, DISK_SIZE / 2) == 0);
	capture_begin();
	for (unsigned round = 0; round < 2; round++) {
		/* even slots below the new end, odd slots past it */
		for (unsigned i = 0; i < 8; i++) {
			uint64_t sector = (i & 1 ? DISK_SIZE / 2 : 0) / 512 + i * 8;

			CHECK(breq_add(&q, &(struct breq){ T_IN, sector, 4096, 1, false, i, 0, 0 }) >= 0);
		}
		gq_kick(&q);
		unsigned got = 0;

		for (unsigned i = 0; i < 8; i++)
			got += gq_wait_used(&q, &len) >= 0;
		CHECK(got == 8);
		for (unsigned i = 0; i < 8; i++) {
			uint8_t want = i & 1 ? S_IOERR : S_OK;

			CHECK(breq_status(t, i) == want);
		}
	}
	CHECK(do_req(&q, (struct breq){ T_IN, 0, 512, 1, false, 0, 0, 0 }, NULL) == S_OK);
	CHECK(!(vstatus(&d) & 0x40));		/* an I/O error is no guest error */
	naming = capture_count(t->path);
	lines = capture_end(line, sizeof(line));
	CHECK(lines == 1 && naming == 1);
	machine_free(t);
}

/* Many requests on a small packed ring: the wrap counters flip often. */
static void test_packed_wrap(void)
{
	struct tmachine *t = machine_new("file=%s,if=none,id=x",
					 "virtio-blk-pci,drive=x,packed=on,queue-size=8", 1);
	struct vdev d;
	struct gq q;
	unsigned ok = 0;
	uint32_t len;

	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, &q, 1, 8, ALL_FEATURES);
	for (unsigned round = 0; round < 100; round++) {
		/* two 3-descriptor chains per round: slots used out of step with 8 */
		unsigned s0 = round % 2;

		breq_add(&q, &(struct breq){ T_IN, round, 512, 1, false, s0, 0, 0 });
		breq_add(&q, &(struct breq){ T_IN, round + 1, 512, 1, false, s0 + 2, 0, 0 });
		gq_kick(&q);
		bool a = gq_wait_used(&q, &len) >= 0, b = gq_wait_used(&q, &len) >= 0;

		ok += a && b && breq_status(t, s0) == S_OK && breq_status(t, s0 + 2) == S_OK &&
		      slot_data(t, s0)[0] == disk_byte(round * 512) &&
		      slot_data(t, s0 + 2)[0] == disk_byte((round + 1) * 512);
	}
	CHECK(ok == 100);
	machine_free(t);
}

/* Waits, without taking interrupts, until n used entries came back. */
static unsigned wait_used_quietly(struct gq *q, unsigned n)
{
	long end = now_ms() + WAIT_MS;
	unsigned got = 0;
	uint32_t len;

	while (got < n && now_ms() < end) {
		if (gq_get_used(q, &len) >= 0)
			got++;
		else
			usleep(1000);
	}
	return got;
}

static void test_event_idx(void)
{
	struct tmachine *t = machine_new("file=%s,if=none,id=x",
					 "virtio-blk-pci,drive=x,num-queues=1", 1);
	struct vdev d;
	struct gq q;
	uint32_t len;

	CHECK(vdev_find(t, 0, &d));
	CHECK(vdev_init(&d, &q, 1, 16, ALL_FEATURES) >> VIRTIO_F_RING_EVENT_IDX & 1);
	struct vring_avail *av = gpa(t, q.ring.driver);
	uint16_t *used_event = &av->ring[q.ring.num];

	/* The first used buffer after start may always interrupt: get it out of the way. */
	*used_event = 0;
	CHECK(do_req(&q, (struct breq){ T_IN, 9, 512, 1, false, 0, 0, 0 }, NULL) == S_OK);
	irq_take(&d, 1, 50);

	/* the driver asks for no interrupt until used idx passes last + 1000 */
	*used_event = (uint16_t)(q.ring.last_used_idx + 1000);
	for (unsigned i = 0; i < 4; i++)
		breq_add(&q, &(struct breq){ T_IN, i, 512, 1, false, i, 0, 0 });
	gq_kick(&q);
	CHECK(wait_used_quietly(&q, 4) == 4);
	CHECK(irq_take(&d, 1, 50) == 0);

	/* now one at the very next used entry */
	breq_add(&q, &(struct breq){ T_IN, 9, 512, 1, false, 0, 0, 0 });
	*used_event = q.ring.last_used_idx;
	gq_kick(&q);
	CHECK(irq_take(&d, 1, WAIT_MS) == 1);
	CHECK(gq_get_used(&q, &len) >= 0);
	machine_free(t);
}

/* Whether a split-ring driver must kick after moving avail idx from old. */
static bool gq_kick_needed(struct gq *q, uint16_t old)
{
	struct vring_used *u = gpa(q->d->t, q->ring.device);

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!q->event_idx)
		return !(__atomic_load_n(&u->flags, __ATOMIC_ACQUIRE) & VRING_USED_F_NO_NOTIFY);
	uint16_t ev = __atomic_load_n((uint16_t *)&u->ring[q->ring.num], __ATOMIC_ACQUIRE);

	return (uint16_t)(q->ring.avail_idx - ev - 1) < (uint16_t)(q->ring.avail_idx - old);
}

/* Whether the ring asks for a kick for the next buffer the driver adds. */
static bool gq_wants_kick(struct gq *q)
{
	struct vring_used *u = gpa(q->d->t, q->ring.device);

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!q->event_idx)
		return !(__atomic_load_n(&u->flags, __ATOMIC_ACQUIRE) & VRING_USED_F_NO_NOTIFY);
	return __atomic_load_n((uint16_t *)&u->ring[q->ring.num], __ATOMIC_ACQUIRE) ==
	       q->ring.avail_idx;
}

/* Whether the ring comes to ask for a kick (the device idles with kicks on). */
static bool wait_wants_kick(struct gq *q)
{
	long end = now_ms() + WAIT_MS;

	while (!gq_wants_kick(q) && now_ms() < end)
		usleep(100);
	return gq_wants_kick(q);
}

/*
 * The kick protocol, judged by what the ring says rather than by how many
 * kicks a run happened to need (the scheduler decides that).  The driver
 * kicks only when the ring asks, as Linux does.  Without polling, the
 * device asks again each time it has served: nothing leaves kicks off
 * while it sleeps (a round already running, such as the one queue start
 * begins, may take a buffer without its kick).  With polling the I/O
 * thread spins with kicks off after serving, its window growing while the
 * gaps fit in poll-us, so the driver is soon told that no kick is needed;
 * each buffer added then must still be served.  Once the window passes
 * idle, the ring asks for kicks again.
 */
static void test_polling(unsigned poll_us, bool event_idx)
{
	char dev[128];

	snprintf(dev, sizeof(dev), "virtio-blk-pci,drive=x,num-queues=1,poll-us=%u", poll_us);
	struct tmachine *t = machine_new("file=%s,if=none,id=x", dev, 1);
	uint64_t want = event_idx ? ALL_FEATURES : ~(1ull << VIRTIO_F_RING_EVENT_IDX);
	/* Polling is seen within a few requests; 4000 leaves room for a slow host. */
	unsigned unkicked = 0, rearmed = 0, ok = 0, i, n = poll_us ? 4000 : 90;
	struct vdev d;
	struct gq q;
	uint32_t len;

	CHECK(vdev_find(t, 0, &d));
	CHECK((vdev_init(&d, &q, 1, 64, want) >> VIRTIO_F_RING_EVENT_IDX & 1) == event_idx);
	for (i = 0; i < n && unkicked < 8; i++) {
		uint16_t old = q.ring.avail_idx;

		breq_add(&q, &(struct breq){ T_IN, i, 512, 1, false, 0, 0, 0 });
		/* An interrupt for the next used entry, as Linux re-arms it. */
		if (event_idx)
			((struct vring_avail *)gpa(t, q.ring.driver))->ring[q.ring.num] =
				q.ring.last_used_idx;
		if (gq_kick_needed(&q, old))
			gq_kick(&q);
		else
			unkicked += poll_us != 0;
		ok += gq_wait_used(&q, &len) >= 0 && breq_status(t, 0) == S_OK;
		if (!poll_us)
			rearmed += wait_wants_kick(&q);
	}
	CHECK(ok == i);
	if (poll_us)
		CHECK(unkicked == 8);
	else
		CHECK(rearmed == n);
	printf("# polling: poll-us=%u event_idx=%d: %u requests, %u without a kick, "
	       "%u times asked again\n", poll_us, event_idx, i, unkicked, rearmed);

	/* Idle: the spin ends by itself and kicks are asked for again. */
	uint16_t old = q.ring.avail_idx;

	CHECK(wait_wants_kick(&q));
	breq_add(&q, &(struct breq){ T_IN, 1, 512, 1, false, 0, 0, 0 });
	CHECK(gq_kick_needed(&q, old));
	gq_kick(&q);
	CHECK(gq_wait_used(&q, &len) >= 0 && breq_status(t, 0) == S_OK);
	machine_free(t);
}

/*
 * irq-coalesce-us and irq-interval-us read the device's clock; this one
 * is the test's, far
 * ahead of CLOCK_MONOTONIC, so the interval's timer (armed at an absolute
 * time) goes off only when the test makes it, and time passes only when
 * the test says: nothing here depends on how fast the host runs.
 */
static uint64_t test_clock_ns;

static uint64_t test_clock(void)
{
	return __atomic_load_n(&test_clock_ns, __ATOMIC_RELAXED);
}

static void test_clock_pass(uint64_t ns)
{
	__atomic_add_fetch(&test_clock_ns, ns, __ATOMIC_RELAXED);
}

/* t's disk runs on the test's clock, a million seconds ahead of the real one. */
static void test_clock_take(struct tmachine *t)
{
	test_clock_ns = clock_now_ns() + 1000000 * 1000000000ull;
	blk_device_set_clock(t->c, 0, test_clock);
}

/* The timer goes off now, as it would have at the end of the gap. */
static void timer_fire(int tfd)
{
	struct itimerspec its = { .it_value = { .tv_nsec = 1 } };

	CHECK(timerfd_settime(tfd, 0, &its, NULL) == 0);
}

/*
 * Whether the held interrupt's timer goes off at `at` on the test's
 * clock: what it has left, read between two looks at the real clock
 * (the timer runs on that one), puts it there.
 */
static bool timer_due_at(int tfd, uint64_t at)
{
	struct itimerspec its;
	uint64_t before = clock_now_ns(), left, after;

	if (timerfd_gettime(tfd, &its) < 0)
		return false;
	after = clock_now_ns();
	left = (uint64_t)its.it_value.tv_sec * 1000000000u + (uint64_t)its.it_value.tv_nsec;
	return left && at - after <= left && left <= at - before;
}

enum irq_fate { IRQ_SENT, IRQ_HELD, IRQ_NEITHER };

/*
 * What became of the interrupt of a completion already in the used ring:
 * sent (the vector fired) or held (the timer is armed).  The device
 * decides right after it fills the used ring; this waits for whichever
 * it did, WAIT_MS at most.
 */
static enum irq_fate irq_fate(struct vdev *d, int tfd)
{
	for (long end = now_ms() + WAIT_MS; now_ms() < end;) {
		struct itimerspec its;

		if (irq_take(d, 1, 1))
			return IRQ_SENT;
		if (timerfd_gettime(tfd, &its) == 0 &&
		    (its.it_value.tv_sec || its.it_value.tv_nsec))
			return IRQ_HELD;
	}
	return IRQ_NEITHER;
}

/*
 * irq-coalesce-us: while another request is still in the backend, the
 * interrupt for a completion waits for it; the last one out sends it at
 * once.  A GET_ID completes while the device pops, before the read beside
 * it is even submitted, so without coalescing the pair takes exactly two
 * interrupts and with it exactly one.
 */
static void test_irq_coalesce(unsigned coalesce_us)
{
	char dev[96];
	struct vdev d;
	struct gq q;
	uint64_t irqs;

	snprintf(dev, sizeof(dev),
		 "virtio-blk-pci,drive=x,num-queues=1,poll-us=0,irq-coalesce-us=%u", coalesce_us);
	struct tmachine *t = machine_new("file=%s,if=none,id=x", dev, 1);

	CHECK(vdev_find(t, 0, &d));
	/* The window never closes by itself: only the last request out ends it. */
	test_clock_take(t);
	/* Without EVENT_IDX every used batch asks for an interrupt. */
	vdev_init(&d, &q, 1, 64, ALL_FEATURES & ~(1ull << VIRTIO_F_RING_EVENT_IDX));

	/* A lone request is the last out: not held, even by a 1 s window. */
	breq_add(&q, &(struct breq){ T_IN, 1, 512, 1, false, 0, 0, 0 });
	gq_kick(&q);
	CHECK(irq_take(&d, 1, WAIT_MS) == 1);
	CHECK(wait_used_quietly(&q, 1) == 1);

	for (unsigned round = 0; round < 3; round++) {
		breq_add(&q, &(struct breq){ T_GET_ID, 0, 20, 1, false, 1, 0, 0 });
		breq_add(&q, &(struct breq){ T_IN, 64, 65536, 4, true, 2, 0, 0 });
		gq_kick(&q);
		CHECK(wait_used_quietly(&q, 2) == 2);
		unsigned want = coalesce_us ? 1 : 2;
		long end = now_ms() + WAIT_MS;

		/* The last interrupt may still be on its way; then none more. */
		for (irqs = 0; irqs < want && now_ms() < end;)
			irqs += irq_take(&d, 1, 10);
		irqs += irq_take(&d, 1, 50);
		CHECK(irqs == want);
		if (irqs != want)
			printf("# irq-coalesce-us=%u: %llu interrupts for GET_ID + read\n",
			       coalesce_us, (unsigned long long)irqs);
		CHECK(slot_data(t, 2)[0] == disk_byte(64 * 512));
	}

	/* A batch: however its completions arrive, interrupts are not lost. */
	for (unsigned i = 0; i < 32; i++)
		breq_add(&q, &(struct breq){ T_IN, 64 * i, 16384, 4, true, i, 0, 0 });
	gq_kick(&q);
	CHECK(wait_used_quietly(&q, 32) == 32);
	irqs = irq_take(&d, 1, WAIT_MS);
	CHECK(irqs >= 1);
	if (coalesce_us)
		CHECK(irqs == 1);
	bool same = true;

	for (unsigned i = 0; i < 32; i++)
		same &= slot_data(t, i)[0] == disk_byte(64 * i * 512);
	CHECK(same);
	CHECK(irq_take(&d, 1, 50) == 0);
	machine_free(t);
}

/*
 * irq-interval-us: an interrupt due sooner than the gap after the previous
 * one waits for the gap, while its entries are in the used ring at once.
 * After a quiet gap the next interrupt goes out at once; none is lost, and
 * however many complete inside one gap, it ends with one interrupt.
 */
static void test_irq_interval(unsigned gap_us)
{
	const uint64_t gap = (uint64_t)gap_us * 1000;
	char dev[96];
	struct vdev d;
	struct gq q;

	snprintf(dev, sizeof(dev),
		 "virtio-blk-pci,drive=x,num-queues=1,poll-us=0,irq-interval-us=%u", gap_us);
	struct tmachine *t = machine_new("file=%s,if=none,id=x", dev, 1);

	CHECK(vdev_find(t, 0, &d));
	/* No timer of it goes off by itself. */
	test_clock_take(t);
	int tfd = blk_device_irq_timer_fd(t->c, 0, 0);

	vdev_init(&d, &q, 1, 64, ALL_FEATURES & ~(1ull << VIRTIO_F_RING_EVENT_IDX));

	for (unsigned round = 0; round < 2; round++) {
		/* Quiet since the last interrupt: this one is not held. */
		test_clock_pass(2 * gap);
		breq_add(&q, &(struct breq){ T_IN, 8, 512, 1, false, 0, 0, 0 });
		gq_kick(&q);
		CHECK(wait_used_quietly(&q, 1) == 1);
		CHECK(irq_fate(&d, tfd) == IRQ_SENT);

		/* Half a gap later: used at once, the interrupt held... */
		uint64_t sent_at = test_clock();

		test_clock_pass(gap / 2);
		breq_add(&q, &(struct breq){ T_IN, 16, 512, 1, false, 1, 0, 0 });
		gq_kick(&q);
		CHECK(wait_used_quietly(&q, 1) == 1);
		CHECK(slot_data(t, 1)[0] == disk_byte(16 * 512));
		CHECK(irq_fate(&d, tfd) == (gap ? IRQ_HELD : IRQ_SENT));
		if (!gap)
			continue;
		/* ...until a gap after the last one. */
		CHECK(timer_due_at(tfd, sent_at + gap));
		CHECK(irq_take(&d, 1, 0) == 0);
		/* The gap ends: the held interrupt goes. */
		test_clock_pass(gap / 2);
		timer_fire(tfd);
		CHECK(irq_take(&d, 1, WAIT_MS) == 1);
	}

	/* Eight inside one gap: the first held, the rest join it. */
	uint64_t sent_at = test_clock();

	for (unsigned i = 0; i < 8; i++) {
		test_clock_pass(gap / 10);
		breq_add(&q, &(struct breq){ T_IN, 64 * i, 4096, 1, false, i, 0, 0 });
		gq_kick(&q);
		CHECK(wait_used_quietly(&q, 1) == 1);
		if (!gap)
			CHECK(irq_fate(&d, tfd) == IRQ_SENT);
		else if (i == 0)
			CHECK(irq_fate(&d, tfd) == IRQ_HELD);
		if (gap)
			CHECK(timer_due_at(tfd, sent_at + gap));
	}
	if (gap) {
		CHECK(irq_take(&d, 1, 0) == 0);
		test_clock_pass(gap);
		timer_fire(tfd);
		CHECK(irq_take(&d, 1, WAIT_MS) == 1);
		/* Quiet again: the next goes at once. */
		test_clock_pass(2 * gap);
		breq_add(&q, &(struct breq){ T_IN, 8, 512, 1, false, 0, 0, 0 });
		gq_kick(&q);
		CHECK(wait_used_quietly(&q, 1) == 1);
		CHECK(irq_fate(&d, tfd) == IRQ_SENT);
	}
	machine_free(t);
}

/*
 * The same on the real clock, whose timer nothing fires by hand: a held
 * interrupt goes out by itself.  Held or not (the host decides how long
 * the second request takes), it comes.
 */
static void test_irq_interval_real(void)
{
	struct tmachine *t = machine_new("file=%s,if=none,id=x",
		"virtio-blk-pci,drive=x,num-queues=1,poll-us=0,irq-interval-us=20000", 1);
	struct vdev d;
	struct gq q;

	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, &q, 1, 64, ALL_FEATURES & ~(1ull << VIRTIO_F_RING_EVENT_IDX));
	for (unsigned i = 0; i < 3; i++) {
		breq_add(&q, &(struct breq){ T_IN, 8 * i, 512, 1, false, i, 0, 0 });
		gq_kick(&q);
		CHECK(wait_used_quietly(&q, 1) == 1);
		CHECK(irq_take(&d, 1, WAIT_MS) == 1);
	}
	machine_free(t);
}

/* Threads of this process whose name starts with prefix. */
/* Whether task TID of this process is named NAME (only begins so: PREFIX). */
static bool task_named(const char *tid, const char *name, bool prefix)
{
	char path[300], comm[32] = "";
	size_t len = strlen(name);
	bool named;
	FILE *f;

	if (tid[0] == '.')
		return false;
	snprintf(path, sizeof(path), "/proc/self/task/%s/comm", tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	named = fgets(comm, sizeof(comm), f) && !strncmp(comm, name, len) &&
		(prefix || comm[len] == '\n');
	fclose(f);
	return named;
}

static unsigned threads_named(const char *prefix)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;
	unsigned n = 0;

	if (!dir)
		return 0;
	while ((e = readdir(dir)))
		n += task_named(e->d_name, prefix, true);
	closedir(dir);
	return n;
}

/*
 * Every queue serves its own requests, also when queues share I/O threads
 * (iothreads=N: queue i runs on thread i % N).
 */
static void test_multiqueue(unsigned nq, unsigned iothreads)
{
	char dev[96];
	struct vdev d;
	struct gq q[4];
	uint32_t len;

	assert(nq <= 4);
	if (iothreads)
		snprintf(dev, sizeof(dev), "virtio-blk-pci,drive=x,iothreads=%u", iothreads);
	else
		snprintf(dev, sizeof(dev), "virtio-blk-pci,drive=x");
	struct tmachine *t = machine_new("file=%s,if=none,id=x", dev, nq);

	CHECK(threads_named("vblk") == (iothreads ? iothreads : 1));
	CHECK(vdev_find(t, 0, &d));
	CHECK(cc_read(&d.pci, CC_NUM_QUEUES, 2) == nq);
	CHECK(mmio_read(t, d.pci.device + 34, 2) == nq);
	CHECK(vdev_init(&d, q, nq, 64, ALL_FEATURES) >> F_MQ & 1);
	for (unsigned i = 0; i < 8; i++)
		for (unsigned k = 0; k < nq; k++)
			breq_add(&q[k], &(struct breq){ T_IN, 100 * k + i, 512, 1, false,
							 8 * k + i, 0, 0 });
	for (unsigned k = 0; k < nq; k++)
		gq_kick(&q[k]);
	unsigned got = 0;

	for (unsigned i = 0; i < 8; i++)
		for (unsigned k = 0; k < nq; k++)
			got += gq_wait_used(&q[k], &len) >= 0;
	CHECK(got == 8 * nq);
	bool same = true;

	for (unsigned i = 0; i < 8; i++)
		for (unsigned k = 0; k < nq; k++)
			same &= slot_data(t, 8 * k + i)[0] == disk_byte((100 * k + i) * 512);
	CHECK(same);
	machine_free(t);
	CHECK(threads_named("vblk") == 0);
}

#ifdef SYS_epoll_wait
#define EPOLL_WAIT_NR SYS_epoll_wait
#else
#define EPOLL_WAIT_NR SYS_epoll_pwait	/* arm64 has only the pwait one */
#endif

/* Whether task TID of this process sleeps in epoll_wait. */
static bool task_in_epoll(const char *tid)
{
	char path[300];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%s/syscall", tid);
	f = fopen(path, "r");
	if (f && fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	if (f)
		fclose(f);
	return nr == SYS_epoll_pwait || nr == EPOLL_WAIT_NR;
}

/* The voluntary context switches of the thread named NAME, and whether it
 * sleeps; -1 if there is no such thread. */
static long thread_status(const char *name, bool *asleep)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;
	long n = -1;

	while (dir && n < 0 && (e = readdir(dir))) {
		char path[300], line[128];
		FILE *f;

		if (!task_named(e->d_name, name, false))
			continue;
		/*
		 * Asleep in epoll (not on a lock it is about to get) before and
		 * after the count is read: then the count holds its last switch.
		 */
		bool before = task_in_epoll(e->d_name);

		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
				break;
		if (f)
			fclose(f);
		*asleep = before && task_in_epoll(e->d_name);
	}
	if (dir)
		closedir(dir);
	return n;
}

/*
 * Voluntary context switches of the thread named NAME so far, once it
 * sleeps (so a switch it is about to make is counted already); -1 if there
 * is no such thread or it did not come to sleep.
 */
static long thread_switches(const char *name)
{
	long end = now_ms() + WAIT_MS, n;
	bool asleep = false;

	while ((n = thread_status(name, &asleep)) >= 0 && !asleep && now_ms() < end)
		usleep(100);
	return asleep ? n : -1;
}

/*
 * Queue i is served by I/O thread i % iothreads, as the command line
 * said.  Without polling a thread sleeps in epoll until its own queues
 * have work, so serving queue k wakes thread k % N and no other: each
 * thread's voluntary context switches tell which one ran.
 */
static void test_iothread_map(unsigned nq, unsigned nt)
{
	char dev[96];
	struct vdev d;
	struct gq q[4];
	uint32_t len;

	assert(nq <= 4 && nt <= 4);
	snprintf(dev, sizeof(dev), "virtio-blk-pci,drive=x,poll-us=0,iothreads=%u", nt);
	struct tmachine *t = machine_new("file=%s,if=none,id=x", dev, nq);

	CHECK(vdev_find(t, 0, &d));
	CHECK(vdev_init(&d, q, nq, 64, ALL_FEATURES) >> F_MQ & 1);
	/* Every queue served once, and idle: the start's own wakeups are over. */
	for (unsigned k = 0; k < nq; k++) {
		CHECK(do_req(&q[k], (struct breq){ T_IN, 0, 512, 1, false, 8 * k, 0, 0 }, &len) == S_OK);
		CHECK(wait_wants_kick(&q[k]));
	}
	for (unsigned k = 0; k < nq; k++) {
		long before[4], after[4];
		unsigned ok = 0;

		for (unsigned j = 0; j < nt; j++) {
			char name[16];

			snprintf(name, sizeof(name), "vblk%u", j);
			before[j] = thread_switches(name);
		}
		for (unsigned i = 0; i < 16; i++)
			ok += do_req(&q[k], (struct breq){ T_IN, 100 * k + i, 512, 1, false,
							   8 * k, 0, 0 }, &len) == S_OK;
		CHECK(ok == 16);
		for (unsigned j = 0; j < nt; j++) {
			char name[16];

			snprintf(name, sizeof(name), "vblk%u", j);
			after[j] = thread_switches(name);
			CHECK(before[j] >= 0 && after[j] >= 0);
			if (j == k % nt)
				CHECK(after[j] > before[j]);
			else
				CHECK(after[j] == before[j]);
			if ((j == k % nt) != (after[j] > before[j]))
				printf("# queue %u: thread vblk%u switched %ld times\n", k, j,
				       after[j] - before[j]);
		}
	}
	machine_free(t);
}

/*
 * -snapshot, or snapshot=on on the drive: the guest's writes go to a
 * private copy, so it reads them back while the image stays as it was.
 */
static void test_snapshot(bool global)
{
	const char *opts[] = { "-device", "virtio-blk-pci,drive=x", "-snapshot", "",
			       NULL };
	struct tmachine *t;
	struct vdev d;
	struct gq q;
	uint8_t orig[4096];

	if (!global)
		opts[2] = NULL;
	t = machine_build(global ? "file=%s,if=none,id=x" :
			  "file=%s,if=none,id=x,snapshot=on", opts, 1);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, &q, 1, 16, ALL_FEATURES);
	for (unsigned i = 0; i < sizeof(orig); i++)
		orig[i] = disk_byte(40 * 512 + i);
	memset(slot_data(t, 0), 0x5a, 4096);
	CHECK(do_req(&q, (struct breq){ T_OUT, 40, 4096, 1, false, 0, 0, 0 }, NULL) == S_OK);
	CHECK(do_req(&q, (struct breq){ T_FLUSH, 0, 0, 0, false, 1, 0, 0 }, NULL) == S_OK);
	memset(slot_data(t, 2), 0, 4096);
	CHECK(do_req(&q, (struct breq){ T_IN, 40, 4096, 1, false, 2, 0, 0 }, NULL) == S_OK);
	CHECK(slot_data(t, 2)[0] == 0x5a && slot_data(t, 2)[4095] == 0x5a);
	CHECK(file_is(t, 40 * 512, orig, sizeof(orig)));
	machine_free(t);
}

/* More threads than queues is a command-line error, and leaks nothing. */
static void test_iothreads_too_many(void)
{
	CHECK(machine_try("file=%s,if=none,id=x", "virtio-blk-pci,drive=x,iothreads=3", 2) == NULL);
	CHECK(machine_try("file=%s,if=none,id=x",
			  "virtio-blk-pci,drive=x,num-queues=1,iothreads=2", 4) == NULL);
	CHECK(threads_named("vblk") == 0);
}

/* Reset while writes are in flight; the device must serve again after. */
static void test_reset_inflight(void)
{
	struct tmachine *t = machine_new("file=%s,if=none,id=x",
					 "virtio-blk-pci,drive=x,queue-size=128", 1);
	struct vdev d;
	struct gq q;

	CHECK(vdev_find(t, 0, &d));
	for (unsigned round = 0; round < 5; round++) {
		vdev_init(&d, &q, 1, 128, ALL_FEATURES);
		for (unsigned i = 0; i < 40; i++)
			breq_add(&q, &(struct breq){ T_OUT, (i % 16) * 128, 65536, 4, true, i, 0, 0 });
		gq_kick(&q);
		CHECK(vdev_reset(&d));
	}
	vdev_init(&d, &q, 1, 128, ALL_FEATURES);
	CHECK(do_req(&q, (struct breq){ T_IN, 3, 512, 1, false, 50, 0, 0 }, NULL) == S_OK);
	machine_free(t);
}

/* Hostile rings: each ends in NEEDS_RESET, a config interrupt, and recovery. */
enum evil {
	EVIL_OUTSIDE_RAM, EVIL_LOOP, EVIL_IND_LEN, EVIL_IND_NESTED,
	EVIL_READ_AFTER_WRITE, EVIL_AVAIL_JUMP, EVIL_HEAD_RANGE, EVIL_NO_STATUS,
	EVIL_SHORT_HDR, EVIL_COUNT,
};

static void evil_chain(struct gq *q, enum evil e)
{
	struct tmachine *t = q->d->t;
	struct vring_desc *desc = gpa(t, q->ring.desc);
	struct vring_avail *av = gpa(t, q->ring.driver);
	struct vring_desc *ind = gpa(t, IND_AREA);
	uint64_t h = hdr_gpa(0);

	memset(gpa(t, h), 0, 16);
	switch (e) {
	case EVIL_OUTSIDE_RAM:
		/* Far from every region (the board's RAM and what follows it). */
		desc[0] = (struct vring_desc){ 16ull * RAM_SIZE - 8, 16, 0, 0 };
		break;
	case EVIL_LOOP:
		desc[0] = (struct vring_desc){ h, 16, VRING_DESC_F_NEXT, 1 };
		desc[1] = (struct vring_desc){ h + 16, 16, VRING_DESC_F_NEXT, 0 };
		break;
	case EVIL_IND_LEN:
		desc[0] = (struct vring_desc){ IND_AREA, 17, VRING_DESC_F_INDIRECT, 0 };
		break;
	case EVIL_IND_NESTED:
		ind[0] = (struct vring_desc){ IND_AREA + 0x100, 32, VRING_DESC_F_INDIRECT, 0 };
		desc[0] = (struct vring_desc){ IND_AREA, 16, VRING_DESC_F_INDIRECT, 0 };
		break;
	case EVIL_READ_AFTER_WRITE:
		desc[0] = (struct vring_desc){ h + 48, 1, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1 };
		desc[1] = (struct vring_desc){ h, 16, 0, 0 };
		break;
	case EVIL_NO_STATUS:
		desc[0] = (struct vring_desc){ h, 16, 0, 0 };
		break;
	case EVIL_SHORT_HDR:
		desc[0] = (struct vring_desc){ h, 8, VRING_DESC_F_NEXT, 1 };
		desc[1] = (struct vring_desc){ h + 48, 1, VRING_DESC_F_WRITE, 0 };
		break;
	default:
		break;
	}
	if (e == EVIL_AVAIL_JUMP) {
		__atomic_store_n(&av->idx, (uint16_t)(q->ring.avail_idx + q->ring.num + 1),
				 __ATOMIC_RELEASE);
	} else {
		av->ring[q->ring.avail_idx % q->ring.num] =
			e == EVIL_HEAD_RANGE ? (uint16_t)q->ring.num : 0;
		__atomic_store_n(&av->idx, ++q->ring.avail_idx, __ATOMIC_RELEASE);
	}
	gq_kick(q);
}

/*
 * What brisk must say broke the device, for each hostile chain: the line
 * names the rule the chain broke, so a check that fires for the wrong
 * reason (or a later one catching what an earlier should have) shows.
 */
static const char *const evil_reason[EVIL_COUNT] = {
	[EVIL_OUTSIDE_RAM] = "descriptor buffer outside guest RAM",
	[EVIL_LOOP] = "descriptor chain longer than its table",
	[EVIL_IND_LEN] = "bad indirect table length",
	[EVIL_IND_NESTED] = "indirect descriptor inside an indirect table",
	[EVIL_READ_AFTER_WRITE] = "readable descriptor after a writable one",
	[EVIL_AVAIL_JUMP] = "available index ahead by more than the queue size",
	[EVIL_HEAD_RANGE] = "available head index out of range",
	[EVIL_NO_STATUS] = "request without a status byte",
	[EVIL_SHORT_HDR] = "request header shorter than 16 bytes",
};

/* Each hostile chain on a device of its own: NEEDS_RESET, why, recovery. */
static void test_hostile(void)
{
	for (int e = 0; e < EVIL_COUNT; e++) {
		struct tmachine *t = machine_new("file=%s,if=none,id=x",
						 "virtio-blk-pci,drive=x,num-queues=1", 1);
		struct vdev d;
		struct gq q;
		char line[512];

		CHECK(vdev_find(t, 0, &d));
		vdev_init(&d, &q, 1, 16, ALL_FEATURES & ~(1ull << VIRTIO_F_RING_PACKED));
		CHECK(do_req(&q, (struct breq){ T_IN, 1, 512, 1, false, 1, 0, 0 }, NULL) == S_OK);
		CHECK(ioeventfds_assigned(&t->b) == 1);
		irq_take(&d, 0, 0);
		capture_begin();
		evil_chain(&q, (enum evil)e);
		uint64_t cfg_irqs = irq_take(&d, 0, WAIT_MS);
		int n = capture_end(line, sizeof(line));

		if (!(vstatus(&d) & VIRTIO_CONFIG_S_NEEDS_RESET) || cfg_irqs != 1 || n != 1 ||
		    !strstr(line, evil_reason[e]) || !strstr(line, "needs reset"))
			printf("# hostile case %d: status %#x, %llu config irqs, %d lines: %.*s\n", e,
			       vstatus(&d), (unsigned long long)cfg_irqs, n,
			       (int)strcspn(line, "\n"), line);
		CHECK(vstatus(&d) & VIRTIO_CONFIG_S_NEEDS_RESET);
		CHECK(cfg_irqs == 1);
		CHECK(n == 1 && strstr(line, evil_reason[e]) && strstr(line, "needs reset"));
		/* The I/O thread broke it: doorbells no longer bypass brisk. */
		CHECK(ioeventfds_assigned(&t->b) == 0);
		CHECK(canaries_intact(&t->b));
		vdev_init(&d, &q, 1, 16, ALL_FEATURES);
		CHECK(do_req(&q, (struct breq){ T_IN, 7, 512, 1, false, 1, 0, 0 }, NULL) == S_OK);
		CHECK(slot_data(t, 1)[0] == disk_byte(7 * 512));
		machine_free(t);
	}
}

/*
 * A bad chain in the middle of a kick's round: the device needs a reset
 * and carries out nothing the driver posted behind it, though the round
 * popped those chains with it.  A reset completes only once the backend
 * has given back all it took, so the file and the used ring are judged
 * after it.
 */
static void test_hostile_mid_round(void)
{
	struct tmachine *t = machine_new("file=%s,if=none,id=x",
					 "virtio-blk-pci,drive=x,num-queues=1,poll-us=0", 1);
	static const unsigned behind[2] = { 64, 72 };
	uint8_t was[2][4096];
	struct vdev d;
	struct gq q;
	uint32_t len;
	char line[512];

	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, &q, 1, 16, ALL_FEATURES & ~(1ull << VIRTIO_F_RING_PACKED));
	CHECK(do_req(&q, (struct breq){ T_IN, 1, 512, 1, false, 0, 0, 0 }, NULL) == S_OK);
	irq_take(&d, 0, 0);
	for (unsigned i = 0; i < 2; i++) {
		for (unsigned k = 0; k < sizeof(was[i]); k++)
			was[i][k] = disk_byte(behind[i] * 512 + k);
		memset(slot_data(t, 2 + i), 0x5a + (int)i, 4096);
	}
	memset(slot_data(t, 1), 0x33, 4096);
	CHECK(breq_add(&q, &(struct breq){ T_OUT, 32, 4096, 1, false, 1, 0, 0 }) >= 0);
	/* A header of 8 bytes, then the status byte: parse refuses it. */
	uint64_t h = hdr_gpa(4);
	struct drv_seg bad[2] = { { h, 8, false }, { h + 48, 1, true } };

	memset(gpa(t, h), 0, 16);
	CHECK(gq_add(&q, bad, 2, false, 0) >= 0);
	for (unsigned i = 0; i < 2; i++)
		CHECK(breq_add(&q, &(struct breq){ T_OUT, behind[i], 4096, 1, false, 2 + i,
						   0, 0 }) >= 0);
	capture_begin();
	gq_kick(&q);
	CHECK(irq_take(&d, 0, WAIT_MS) == 1);
	int n = capture_end(line, sizeof(line));

	CHECK(n == 1 && strstr(line, "request header shorter than 16 bytes"));
	CHECK(vstatus(&d) & VIRTIO_CONFIG_S_NEEDS_RESET);
	CHECK(vdev_reset(&d));
	for (unsigned i = 0; i < 2; i++) {
		bool same = file_is(t, behind[i] * 512, was[i], sizeof(was[i]));

		if (!same)
			printf("# the write to sector %u, behind the bad chain, reached the file\n",
			       behind[i]);
		CHECK(same);
	}
	/* A broken device touches the rings no more. */
	CHECK(gq_get_used(&q, &len) < 0);
	vdev_init(&d, &q, 1, 16, ALL_FEATURES);
	CHECK(do_req(&q, (struct breq){ T_IN, 7, 512, 1, false, 1, 0, 0 }, NULL) == S_OK);
	CHECK(slot_data(t, 1)[0] == disk_byte(7 * 512));
	CHECK(canaries_intact(&t->b));
	machine_free(t);
}

/* Several drives, each its own device. */
static void test_two_devices(void)
{
	struct tmachine *t = machine_new("file=%s,if=none,id=a", "virtio-blk-pci,drive=a,serial=A", 1);
	struct vdev d0, d1;
	struct gq q0, q1;
	char arg[128];

	/*
	 * a second device on the same backing file, read-only, made directly:
	 * QEMU's locks would refuse a reader beside the writer (it does not
	 * share write), so this one goes without them
	 */
	blk_devices_destroy(t->c);
	blk_cmdline_free(t->c);
	t->c = blk_cmdline_new();
	snprintf(arg, sizeof(arg), "file=%s,if=virtio", t->path);
	CHECK(blk_cmdline_drive(t->c, arg) == 0);
	snprintf(arg, sizeof(arg), "file=%s,if=none,id=b,readonly=on,file.locking=off", t->path);
	CHECK(blk_cmdline_drive(t->c, arg) == 0);
	CHECK(blk_cmdline_device(t->c, "virtio-blk-pci,drive=b,serial=B") == 0);
	CHECK(blk_cmdline_finish(t->c) == 0);
	CHECK(blk_devices_create(t->c, &t->b.m) == 0);
	CHECK(vdev_find(t, 0, &d0) && vdev_find(t, 1, &d1));
	CHECK(!(vdev_init(&d0, &q0, 1, 16, ALL_FEATURES) >> F_RO & 1));
	CHECK(vdev_init(&d1, &q1, 1, 16, ALL_FEATURES) >> F_RO & 1);
	CHECK(do_req(&q1, (struct breq){ T_GET_ID, 0, 20, 1, false, 0, 0, 0 }, NULL) == S_OK);
	CHECK(!memcmp(slot_data(t, 0), "B\0", 2));
	CHECK(do_req(&q0, (struct breq){ T_IN, 2, 512, 1, false, 1, 0, 0 }, NULL) == S_OK);
	CHECK(slot_data(t, 1)[0] == disk_byte(2 * 512));
	machine_free(t);
}

/* ---- the edges of a request's life ---- */

/*
 * The size_max and seg_max the device advertises are enforced: a request
 * beyond them fails alone with IOERR (so a request never reaches 4 GiB,
 * whose length the 32-bit used length could not carry).
 */
static void test_segment_limits(void)
{
	struct tmachine *t = machine_new("file=%s,if=none,id=x",
					 "virtio-blk-pci,drive=x,queue-size=8", 1);
	uint32_t size_max, seg_max, len;
	struct vdev d;
	struct gq q;

	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, &q, 1, 8, ALL_FEATURES);
	size_max = (uint32_t)mmio_read(t, d.pci.device + 8, 4);
	seg_max = (uint32_t)mmio_read(t, d.pci.device + 12, 4);
	CHECK(size_max == 1u << 20 && seg_max == 6);
	CHECK(do_req(&q, (struct breq){ T_IN, 0, 512 * seg_max, seg_max, true, 0, 0, 0 }, &len) == S_OK);
	CHECK(len == 512 * seg_max + 1);
	CHECK(do_req(&q, (struct breq){ T_IN, 0, 512 * (seg_max + 1), seg_max + 1, true, 0, 0, 0 },
		     NULL) == S_IOERR);
	CHECK(do_req(&q, (struct breq){ T_OUT, 0, 512 * (seg_max + 1), seg_max + 1, true, 0, 0, 0 },
		     NULL) == S_IOERR);
	CHECK(do_req(&q, (struct breq){ T_IN, 0, size_max, 1, false, 0, 0, 0 }, &len) == S_OK);
	CHECK(len == size_max + 1);
	CHECK(do_req(&q, (struct breq){ T_IN, 0, size_max + 512, 1, false, 0, 0, 0 }, NULL) == S_IOERR);
	CHECK(do_req(&q, (struct breq){ T_OUT, 0, size_max + 512, 1, false, 0, 0, 0 }, NULL) == S_IOERR);
	CHECK(do_req(&q, (struct breq){ T_IN, 3, 512, 1, false, 0, 0, 0 }, NULL) == S_OK);
	CHECK(!(vstatus(&d) & VIRTIO_CONFIG_S_NEEDS_RESET));

	/* A driver that took neither limit is held to neither (VIRTIO 1.2, 5.2.3). */
	CHECK(vdev_reset(&d));
	CHECK(!(vdev_init(&d, &q, 1, 8, ALL_FEATURES & ~(1ull << F_SIZE_MAX | 1ull << F_SEG_MAX)) &
		(1ull << F_SIZE_MAX | 1ull << F_SEG_MAX)));
	CHECK(do_req(&q, (struct breq){ T_IN, 0, 512 * (seg_max + 1), seg_max + 1, true, 0, 0, 0 },
		     &len) == S_OK && len == 512 * (seg_max + 1) + 1);
	for (unsigned i = 0; i < size_max + 512; i++)
		slot_data(t, 0)[i] = (uint8_t)(i * 3 + 5);
	CHECK(do_req(&q, (struct breq){ T_OUT, 8, size_max + 512, 1, false, 0, 0, 0 }, NULL) == S_OK);
	CHECK(file_is(t, 8 * 512, slot_data(t, 0), size_max + 512));
	CHECK(do_req(&q, (struct breq){ T_IN, 0, size_max + 512, 1, false, 0, 0, 0 }, &len) == S_OK &&
	      len == size_max + 513);
	machine_free(t);
}

/* logical_block_size= and physical_block_size= reach the config space. */
static void test_block_size_options(void)
{
	struct tmachine *t = machine_new("file=%s,if=none,id=x",
		"virtio-blk-pci,drive=x,logical_block_size=4096,physical_block_size=16384", 1);
	struct vdev d;
	struct gq q;

	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, &q, 1, 16, ALL_FEATURES);
	CHECK(mmio_read(t, d.pci.device + 20, 4) == 4096);
	CHECK(mmio_read(t, d.pci.device + 24, 1) == 2);
	CHECK(do_req(&q, (struct breq){ T_IN, 8, 4096, 1, false, 0, 0, 0 }, NULL) == S_OK);
	CHECK(slot_data(t, 0)[0] == disk_byte(8 * 512));
	machine_free(t);
}

/*
 * Whatever the driver accepted, a READ moves less than 4 GiB: its used
 * length (data + status byte) is 32 bits.  The disk is a sparse file
 * larger than that; the chain reaches 4 GiB through 257 descriptors of
 * 16 MiB, all over guest RAM (legal: buffers may overlap), and must fail
 * alone with IOERR, before any I/O.
 */
#define BIG_DISK (5ull << 30)

static void test_rw_len_cap(void)
{
	struct tmachine *t = machine_new("file=%s,if=none,id=x", "virtio-blk-pci,drive=x", 1);
	static struct drv_seg c[257 + 2];
	char arg[128];
	uint32_t len = 0;
	struct vdev d;
	struct gq q;
	uint64_t h = hdr_gpa(0);
	uint8_t *hp = gpa(t, h);
	uint32_t type = T_IN;

	blk_devices_destroy(t->c);
	blk_cmdline_free(t->c);
	CHECK(ftruncate(t->fd, (off_t)BIG_DISK) == 0);
	t->c = blk_cmdline_new();
	snprintf(arg, sizeof(arg), "file=%s,if=virtio", t->path);
	CHECK(blk_cmdline_drive(t->c, arg) == 0 && blk_cmdline_finish(t->c) == 0 &&
	      blk_devices_create(t->c, &t->b.m) == 0);
	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, &q, 1, 16, ALL_FEATURES & ~(1ull << F_SIZE_MAX | 1ull << F_SEG_MAX));
	memcpy(hp, &type, 4);
	memset(hp + 4, 0, 12);
	hp[48] = 0xee;
	c[0] = (struct drv_seg){ h, 16, false };
	for (unsigned i = 1; i <= 257; i++)
		c[i] = (struct drv_seg){ 0, RAM_SIZE, true };
	c[258] = (struct drv_seg){ h + 48, 1, true };
	CHECK(gq_add(&q, c, 259, true, IND_AREA) >= 0);
	gq_kick(&q);
	CHECK(gq_wait_used(&q, &len) >= 0);
	CHECK(((uint8_t *)gpa(t, h))[48] == S_IOERR && len == 1);
	CHECK(!(vstatus(&d) & VIRTIO_CONFIG_S_NEEDS_RESET));
	machine_free(t);
}

/*
 * cache=none with guest buffers O_DIRECT refuses, as drivers may lay them
 * out: a WRITE whose header and data share one descriptor (data at +16),
 * a READ into a buffer at +16.  Both must work, through the bounce.
 */
static void test_direct_misaligned(const char *aio)
{
	char drive[96];
	struct tmachine *t;
	struct vdev d;
	struct gq q;
	uint32_t len;

	snprintf(drive, sizeof(drive), "file=%%s,if=none,id=x,cache=none,aio=%s", aio);
	t = machine_try(drive, "virtio-blk-pci,drive=x", 1);
	if (!t) {
		check_skip_case("cache=none refused here");
		return;
	}
	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, &q, 1, 16, ALL_FEATURES);
	uint64_t h = hdr_gpa(0), buf = data_gpa(1);
	uint8_t *hp = gpa(t, buf), *status = gpa(t, h + 48);
	uint32_t type = T_OUT;
	uint64_t sector = 24;

	/* One readable descriptor: the 16-byte header, then 4 KiB of data. */
	memcpy(hp, &type, 4);
	memset(hp + 4, 0, 4);
	memcpy(hp + 8, &sector, 8);
	for (unsigned i = 0; i < 4096; i++)
		hp[16 + i] = (uint8_t)(i * 5 + 3);
	*status = 0xee;
	struct drv_seg w[2] = { { buf, 16 + 4096, false }, { h + 48, 1, true } };

	CHECK(gq_add(&q, w, 2, false, 0) >= 0);
	gq_kick(&q);
	CHECK(gq_wait_used(&q, &len) >= 0 && *status == S_OK);
	CHECK(file_is(t, 24 * 512, hp + 16, 4096));
	/* And back, into a buffer at +16. */
	memset(slot_data(t, 2), 0, 8192);
	CHECK(do_req(&q, (struct breq){ T_IN, 24, 4096, 1, false, 2, 0, 0, data_gpa(2) + 16 },
		     &len) == S_OK);
	CHECK(len == 4097 && !memcmp(slot_data(t, 2) + 16, hp + 16, 4096));
	CHECK(slot_data(t, 2)[15] == 0 && slot_data(t, 2)[16 + 4096] == 0);
	machine_free(t);
}

/* ---- tests that need root: requests held in the backend, loop devices ---- */

static bool root_skip(const char *test, const char *why)
{
	check_skip_case("%s: %s", test, why);
	return false;
}

/*
 * The machine of a root test: its drive with aio= and opts, on a loop
 * device of loop_bs (unless 0), the stall armed if asked.  NULL after
 * the skip is reported.
 */
static struct tmachine *root_machine(const char *test, const char *aio, const char *opts,
				     const char *device, unsigned loop_bs, bool stall)
{
	char drive[128], name[64];
	const char *why = NULL;
	struct tmachine *t;

	snprintf(name, sizeof(name), "%s %s", test, aio);
	snprintf(drive, sizeof(drive), "file=%%s,if=none,id=x,aio=%s%s", aio, opts);
	t = machine_try_on(drive, device, 1, loop_bs, &why);
	if (!t) {
		root_skip(name, why ? why : "the device cannot be made here");
		return NULL;
	}
	if (stall && !stall_arm(t, &why)) {
		root_skip(name, why);
		machine_free(t);
		return NULL;
	}
	return t;
}

/*
 * One queue that a driver keeps full must not keep its I/O thread from
 * another queue: a kick serves a few rounds of up to a queue's worth
 * (docs/architecture.md), then the thread's other work gets its turn.
 *
 * The flood: a full split ring of GET_ID chains, one per head, each with
 * its own buffers.  GET_ID is answered while the device pops, so a written
 * buffer tells the feeder thread that its chain was popped, and it makes
 * one more entry available right away (the same heads, lap after lap),
 * never more than a ring ahead of the device.  Each chain has many
 * descriptors, so the device pops slower than the feeder refills.  The
 * feeder runs real-time (root): preempted, it would let the ring run dry,
 * and the other queue would get its turn without any bound.  It also
 * kicks queue 1 once the flood is on, and counts the requests queue 0 got
 * served until queue 1's read came back.
 */
#define FLOOD_NUM 256
#define FLOOD_DESCS 250		/* header, 248 one-byte buffers, status */
#define FLOOD_BUFS 0x700000ull
#define FLOOD_MAX (64 * FLOOD_NUM)

struct feeder {
	struct gq *q, *other;
	unsigned long fed, kicked_at, done_at;
	bool done;
};

static bool gq_kick_needed(struct gq *q, uint16_t old);

static void *feed(void *opaque)
{
	struct feeder *f = opaque;
	struct gq *q = f->q;
	struct tmachine *t = q->d->t;
	struct vring_avail *av = gpa(t, q->ring.driver);
	struct vring_used *other = gpa(t, f->other->ring.device);
	unsigned long popped = 0;
	/* Real-time and spinning: a device that stops popping must not hang it. */
	long end = now_ms() + 4 * WAIT_MS;

	while (popped < FLOOD_MAX && now_ms() < end) {
		uint8_t *b = gpa(t, FLOOD_BUFS + 256 * (popped % FLOOD_NUM));
		uint16_t old = q->ring.avail_idx;

		if (f->kicked_at && __atomic_load_n(&other->idx, __ATOMIC_ACQUIRE)) {
			f->done_at = popped;
			f->done = true;
			break;
		}
		if (!__atomic_load_n(b, __ATOMIC_ACQUIRE))
			continue;
		__atomic_store_n(b, 0, __ATOMIC_RELAXED);
		popped++;
		__atomic_store_n(&av->idx, ++q->ring.avail_idx, __ATOMIC_RELEASE);
		/* A driver kicks when asked to: only an idle device asks. */
		if (gq_kick_needed(q, old))
			gq_kick(q);
		if (popped == 4 * FLOOD_NUM) {
			f->kicked_at = popped;
			gq_kick(f->other);
		}
	}
	f->fed = popped;
	return NULL;
}

static void test_serve_budget(void)
{
	struct sched_param rt = { .sched_priority = 1 };
	struct feeder f = { 0 };
	pthread_attr_t attr;
	struct tmachine *t;
	struct vdev d;
	struct gq q[2];
	pthread_t th;
	uint32_t len;

	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
	pthread_attr_setschedparam(&attr, &rt);
	t = machine_new("file=%s,if=none,id=x",
		"virtio-blk-pci,drive=x,num-queues=2,iothreads=1,poll-us=0,"
		"queue-size=256,serial=S", 2);
	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, q, 2, FLOOD_NUM, ALL_FEATURES & ~(1ull << VIRTIO_F_RING_PACKED));
	uint8_t *hp = gpa(t, hdr_gpa(0));
	uint32_t type = T_GET_ID;

	memcpy(hp, &type, 4);
	memset(hp + 4, 0, 12);
	for (unsigned i = 0; i < FLOOD_NUM; i++) {
		uint64_t b = FLOOD_BUFS + 256 * i;
		struct drv_seg c[FLOOD_DESCS] = { { hdr_gpa(0), 16, false } };

		for (unsigned k = 1; k + 1 < FLOOD_DESCS; k++)
			c[k] = (struct drv_seg){ b + k - 1, 1, true };
		c[FLOOD_DESCS - 1] = (struct drv_seg){ b + FLOOD_DESCS, 1, true };
		memset(gpa(t, b), 0, 256);
		CHECK(gq_add(&q[0], c, FLOOD_DESCS, true, IND_AREA + 4096ull * i) == (int)i);
	}
	/* Queue 1's request, kicked by the feeder in the middle of the flood. */
	memset(slot_data(t, 10), 0, 32);
	breq_add(&q[1], &(struct breq){ T_GET_ID, 0, 20, 1, false, 10, 0, 0 });
	f.q = &q[0];
	f.other = &q[1];
	if (pthread_create(&th, &attr, feed, &f)) {
		root_skip("serve-budget", "needs root for a real-time feeder thread");
		machine_free(t);
		return;
	}
	gq_kick(&q[0]);
	pthread_join(th, NULL);
	printf("# serve budget: queue 0 served %lu requests while queue 1's waited\n",
	       f.done ? f.done_at - f.kicked_at : f.fed - f.kicked_at);
	CHECK(f.kicked_at && f.done);
	/*
	 * A kick serves at most 4 queue-sizes: the one under way, perhaps
	 * one more of queue 0 first, and room to spare.  Unbounded, queue 1
	 * waits as long as the flood goes on (FLOOD_MAX).
	 */
	CHECK(f.done_at - f.kicked_at <= 3 * 4 * FLOOD_NUM);
	CHECK(gq_wait_used(&q[1], &len) >= 0);
	CHECK(breq_status(t, 10) == S_OK && slot_data(t, 10)[0] == 'S');
	CHECK(!(vstatus(&d) & VIRTIO_CONFIG_S_NEEDS_RESET));
	CHECK(vdev_reset(&d));
	machine_free(t);
	pthread_attr_destroy(&attr);
}

/*
 * A reset with a write in flight (held on guest memory by the stall).
 * Status must keep reading non-zero, without the register write itself
 * waiting, until the write is done; only then may the driver go on, so a
 * write made after re-init to the same sectors is what the disk keeps.
 * cache=none: a buffered write holds the file's lock while it waits on
 * guest memory, which would serialise the two writes and hide a late one.
 */
static void test_reset_drains(const char *aio)
{
	struct tmachine *t = root_machine("reset-drains", aio, ",cache=none",
					  "virtio-blk-pci,drive=x,num-queues=1", 0, true);
	uint8_t fresh[4096];
	struct vdev d;
	struct gq q;

	if (!t)
		return;
	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, &q, 1, 64, ALL_FEATURES);
	/* A write whose data the stall holds back: 0x5a once let go. */
	breq_add(&q, &(struct breq){ T_OUT, 64, 4096, 1, false, 0, 0, 0, STALL_GPA });
	gq_kick(&q);
	CHECK(stall_wait(t));
	/* Let go only after the checks below; the bound is for a write that hangs. */
	stall_release_after(t, WAIT_MS, 0x5a);
	vpci_set_status(&d.pci, 0);
	/* The register write did not wait for the backend... */
	CHECK(!stall_released(t));
	/* ...and the reset is not complete while the write is out. */
	CHECK(vstatus(&d) != 0);
	stall_release_now(t);
	for (long end = now_ms() + WAIT_MS; vstatus(&d) && now_ms() < end;)
		usleep(1000);
	CHECK(vstatus(&d) == 0);
	CHECK(stall_released(t));
	/* The next incarnation writes the same sectors. */
	vdev_init(&d, &q, 1, 64, ALL_FEATURES);
	for (unsigned i = 0; i < sizeof(fresh); i++)
		fresh[i] = slot_data(t, 1)[i] = (uint8_t)(i * 3 + 1);
	CHECK(do_req(&q, (struct breq){ T_OUT, 64, 4096, 1, false, 1, 0, 0 }, NULL) == S_OK);
	stall_join(t);
	/* A device that let the old write through late would show it by now. */
	usleep(100 * 1000);
	CHECK(file_is(t, 64 * 512, fresh, sizeof(fresh)));
	CHECK(!(vstatus(&d) & VIRTIO_CONFIG_S_NEEDS_RESET));
	machine_free(t);
}

/*
 * A reset whose request the host's disk holds (the stall) for longer than
 * the device's patience: status keeps its value and register writes are
 * ignored meanwhile, stderr says once which disk holds how many requests,
 * and when the request comes back the I/O thread completes the reset:
 * status 0, the transport's registers at their reset values, no doorbell
 * left to an ioeventfd.
 */
#define RESET_WARN_MS 5000	/* VIRTIO_RESET_WARN_NS */

static void test_reset_slow(void)
{
	struct tmachine *t = root_machine("reset-slow", "io_uring", "",
					  "virtio-blk-pci,drive=x,num-queues=1", 0, true);
	uint64_t vec, sel;
	unsigned zero = 0;
	int lines, naming;
	char line[512];
	struct vdev d;
	struct gq q;

	if (!t)
		return;
	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, &q, 1, 64, ALL_FEATURES);
	CHECK(ioeventfds_assigned(&t->b) == 1);
	breq_add(&q, &(struct breq){ T_IN, 8, 4096, 1, false, 0, 0, 0, STALL_GPA });
	gq_kick(&q);
	CHECK(stall_wait(t));
	capture_begin();
	vpci_set_status(&d.pci, 0);
	cc_write(&d.pci, CC_MSIX_CONFIG, 1, 2);
	cc_write(&d.pci, CC_Q_SELECT, 1, 2);
	vec = cc_read(&d.pci, CC_MSIX_CONFIG, 2);
	sel = cc_read(&d.pci, CC_Q_SELECT, 2);
	/* Held past VIRTIO_RESET_WARN_NS: one line says so; status never 0. */
	for (long end = now_ms() + RESET_WARN_MS + WAIT_MS;
	     now_ms() < end && !capture_count(t->path);) {
		zero += vstatus(&d) == 0;
		usleep(20 * 1000);
	}
	stall_release(t, 0);
	for (long end = now_ms() + WAIT_MS; vstatus(&d) && now_ms() < end;)
		usleep(1000);
	/* Checked only now: a failure said while stderr is taken would be lost. */
	naming = capture_count(t->path);
	lines = capture_end(line, sizeof(line));
	CHECK(vec == 0 && sel == 0);
	CHECK(zero == 0);
	CHECK(vstatus(&d) == 0);
	CHECK(lines == 1 && naming == 1);
	CHECK(cc_read(&d.pci, CC_MSIX_CONFIG, 2) == VIRTIO_NO_VECTOR &&
	      cc_read(&d.pci, CC_Q_SELECT, 2) == 0);
	CHECK(ioeventfds_assigned(&t->b) == 0);
	vdev_init(&d, &q, 1, 64, ALL_FEATURES);
	CHECK(ioeventfds_assigned(&t->b) == 1);
	CHECK(do_req(&q, (struct breq){ T_IN, 3, 512, 1, false, 1, 0, 0 }, NULL) == S_OK);
	machine_free(t);
}

/*
 * No DMA after status reads 0: a read lands first in a stalled page, then
 * in an ordinary one.  The driver writes a canary there as soon as the
 * reset is complete; nothing may overwrite it afterwards, and the request
 * of the old generation gets neither a status byte nor a used entry.
 */
static void test_reset_no_dma_after(const char *aio)
{
	struct tmachine *t = root_machine("reset-no-dma-after", aio, "",
					  "virtio-blk-pci,drive=x,num-queues=1", 0, true);
	struct vdev d;
	struct gq q;
	uint8_t *canary;
	bool intact = true;

	if (!t)
		return;
	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, &q, 1, 64, ALL_FEATURES);
	uint64_t h = hdr_gpa(0);
	uint8_t *hp = gpa(t, h);
	uint32_t type = T_IN;
	uint64_t sector = 8;

	memcpy(hp, &type, 4);
	memset(hp + 4, 0, 4);
	memcpy(hp + 8, &sector, 8);
	struct drv_seg r[4] = {
		{ h, 16, false }, { STALL_GPA, 4096, true },
		{ data_gpa(3), 4096, true }, { h + 48, 1, true },
	};

	canary = slot_data(t, 3);
	memset(canary, 0, 4096);
	hp[48] = CANARY;	/* S_OK is 0: a status written would show */
	CHECK(gq_add(&q, r, 4, false, 0) >= 0);
	gq_kick(&q);
	CHECK(stall_wait(t));
	stall_release_after(t, 300, 0);
	CHECK(vdev_reset(&d));
	memset(canary, CANARY, 4096);
	stall_join(t);
	usleep(100 * 1000);
	for (unsigned i = 0; i < 4096; i++)
		intact &= canary[i] == CANARY;
	CHECK(intact);
	/* The old driver's request is not answered: no status, no used entry. */
	CHECK(hp[48] == CANARY);
	CHECK(((struct vring_used *)gpa(t, q.ring.device))->idx == 0);
	machine_free(t);
}

/*
 * A driver offers a head again while it is still in use (held in the
 * backend by the stall) and never waits for the used ring: the device
 * must refuse the first pop beyond the queue size, ask for a reset (with
 * a config interrupt) and serve again after one.  Split and packed.
 */
static void test_inuse_hostile(bool packed)
{
	struct tmachine *t = root_machine(packed ? "inuse-hostile packed" : "inuse-hostile split",
		"threads", "", packed ? "virtio-blk-pci,drive=x,num-queues=1,queue-size=4,packed=on"
				      : "virtio-blk-pci,drive=x,num-queues=1,queue-size=4", 0, true);
	struct vdev d;
	struct gq q;
	int head = -1;

	if (!t)
		return;
	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, &q, 1, 4, ALL_FEATURES);
	/* Four reads into the stalled region, each one slot (indirect). */
	for (unsigned i = 0; i < 4; i++)
		head = breq_add(&q, &(struct breq){ T_IN, i, 512, 1, true, i, 0, 0,
						   STALL_GPA + 4096 * i });
	CHECK(head >= 0);
	gq_kick(&q);
	CHECK(stall_wait(t));
	usleep(50 * 1000);
	CHECK(!(vstatus(&d) & VIRTIO_CONFIG_S_NEEDS_RESET));	/* four is the limit, not past it */
	irq_take(&d, 0, 0);
	/* The first chain offered again, though none came back. */
	if (packed) {
		struct vring_packed_desc *ring = gpa(t, q.ring.desc);

		/* Slot 0 of the second lap: the driver's wrap counter is 0 now. */
		__atomic_store_n(&ring[0].flags, (uint16_t)(VRING_DESC_F_INDIRECT |
				 (1u << VRING_PACKED_DESC_F_USED)), __ATOMIC_RELEASE);
	} else {
		struct vring_avail *av = gpa(t, q.ring.driver);

		av->ring[q.ring.avail_idx % q.ring.num] = av->ring[0];
		__atomic_store_n(&av->idx, ++q.ring.avail_idx, __ATOMIC_RELEASE);
	}
	gq_kick(&q);
	CHECK(irq_take(&d, 0, WAIT_MS) == 1);
	CHECK(vstatus(&d) & VIRTIO_CONFIG_S_NEEDS_RESET);
	stall_release_after(t, 100, 0);
	CHECK(vdev_reset(&d));
	stall_join(t);
	vdev_init(&d, &q, 1, 4, ALL_FEATURES);
	CHECK(do_req(&q, (struct breq){ T_IN, 7, 512, 1, false, 1, 0, 0 }, NULL) == S_OK);
	CHECK(slot_data(t, 1)[0] == disk_byte(7 * 512));
	CHECK(canaries_intact(&t->b));
	machine_free(t);
}

/*
 * cache=none on a 4 KiB-sector host device: the device says so (blk_size,
 * topology), a misaligned chain works, a 512-byte read works (widened by
 * the backend), and so do 512-byte writes, which a driver may send
 * whatever blk_size says (VIRTIO 1.2, 5.2): eight of them in one kick,
 * one per sector of a block, each read-modify-writing the block, must
 * all land.  And a WRITE_ZEROES of one sector.
 */
static void test_host_4k(const char *aio)
{
	struct tmachine *t = root_machine("host-4k", aio, ",cache=none", "virtio-blk-pci,drive=x",
					  4096, false);
	struct vdev d;
	struct gq q;
	uint32_t len;

	if (!t)
		return;
	CHECK(vdev_find(t, 0, &d));
	uint64_t f = vdev_init(&d, &q, 1, 16, ALL_FEATURES);

	CHECK(f >> 6 & 1 && f >> 10 & 1);	/* BLK_SIZE, TOPOLOGY */
	CHECK(mmio_read(t, d.pci.device + 20, 4) == 4096);
	CHECK(mmio_read(t, d.pci.device, 8) == DISK_SIZE / 512);
	CHECK(mmio_read(t, d.pci.device + 44, 4) % 8 == 0);	/* discard alignment, sectors */
	memset(slot_data(t, 0), 0, 1024);
	CHECK(do_req(&q, (struct breq){ T_IN, 3, 512, 1, false, 0, 0, 0, data_gpa(0) + 16 },
		     &len) == S_OK && len == 513);
	bool same = true;

	for (unsigned i = 0; i < 512; i++)
		same &= slot_data(t, 0)[16 + i] == disk_byte(3 * 512 + i);
	CHECK(same);
	for (unsigned i = 0; i < 8192; i++)
		slot_data(t, 1)[i] = (uint8_t)(i * 11 + 7);
	CHECK(do_req(&q, (struct breq){ T_OUT, 16, 4096, 2, false, 1, 0, 0, data_gpa(1) + 16 },
		     NULL) == S_OK);
	CHECK(file_is(t, 16 * 512, slot_data(t, 1) + 16, 4096));
	for (unsigned i = 0; i < 8; i++) {
		memset(slot_data(t, 2 + i), 0x30 + i, 512);
		CHECK(breq_add(&q, &(struct breq){ T_OUT, 64 + i, 512, 1, true, 2 + i, 0, 0 }) >= 0);
	}
	gq_kick(&q);
	CHECK(wait_used_quietly(&q, 8) == 8);
	bool all = true;

	for (unsigned i = 0; i < 8; i++)
		all &= breq_status(t, 2 + i) == S_OK && file_is(t, (64 + i) * 512, slot_data(t, 2 + i), 512);
	CHECK(all);
	uint8_t zero[512] = { 0 };

	CHECK(do_req(&q, (struct breq){ T_WRITE_ZEROES, 66, 0, 0, false, 0, 0, 1 }, NULL) == S_OK);
	CHECK(file_is(t, 66 * 512, zero, 512) && file_is(t, 67 * 512, slot_data(t, 5), 512));
	CHECK(!(vstatus(&d) & VIRTIO_CONFIG_S_NEEDS_RESET));
	machine_free(t);
}

/*
 * The geometry a 4 KiB-sector host device gets its guest.  Without
 * cache=none nothing forces 4 KiB on the guest: blk_size stays 512 (a
 * guest's partitions and file systems may be laid out in 512-byte
 * sectors) and the host's 4 KiB is the physical block (topology: 2^3
 * logical blocks).  logical_block_size= and physical_block_size= set
 * either, as in QEMU.
 */
static void test_host_geometry(void)
{
	static const struct {
		const char *device;
		unsigned blk_size, exp;
	} cases[] = {
		{ "virtio-blk-pci,drive=x", 512, 3 },
		{ "virtio-blk-pci,drive=x,logical_block_size=4096", 4096, 0 },
		{ "virtio-blk-pci,drive=x,physical_block_size=65536", 512, 7 },
	};

	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		struct tmachine *t = root_machine("host-geometry", "io_uring", "",
						  cases[i].device, 4096, false);
		struct vdev d;
		struct gq q;

		if (!t)
			return;
		CHECK(vdev_find(t, 0, &d));
		CHECK(vdev_init(&d, &q, 1, 16, ALL_FEATURES) >> 6 & 1);	/* BLK_SIZE */
		CHECK(mmio_read(t, d.pci.device + 20, 4) == cases[i].blk_size);
		CHECK(mmio_read(t, d.pci.device + 24, 1) == cases[i].exp);
		CHECK(mmio_read(t, d.pci.device, 8) == DISK_SIZE / 512);	/* capacity: 512-byte sectors */
		machine_free(t);
	}
	/* cache=none needs 4 KiB blocks here: a smaller physical block is refused. */
	const char *why = NULL;

	CHECK(!machine_try_on("file=%s,if=none,id=x,cache=none",
			      "virtio-blk-pci,drive=x,physical_block_size=512", 1, 4096, &why) &&
	      !why);
}

/* A guest DISCARD reaches a host block device as a discard, never as writes. */
static void test_host_discard(const char *aio)
{
	struct tmachine *t = root_machine("host-discard", aio, "", "virtio-blk-pci,drive=x",
					  4096, false);
	struct vdev d;
	struct gq q;

	if (!t)
		return;
	CHECK(vdev_find(t, 0, &d));
	vdev_init(&d, &q, 1, 16, ALL_FEATURES);
	long long w0 = loop_stat(&t->loop, LOOP_STAT_WRITES);
	long long d0 = loop_stat(&t->loop, LOOP_STAT_DISCARDS);

	CHECK(do_req(&q, (struct breq){ T_DISCARD, 256, 0, 0, false, 0, 0, 128 }, NULL) == S_OK);
	CHECK(loop_stat(&t->loop, LOOP_STAT_DISCARDS) > d0);
	CHECK(loop_stat(&t->loop, LOOP_STAT_WRITES) == w0);
	machine_free(t);
}

/*
 * A driver that does not take VIRTIO_BLK_F_FLUSH gets write-through: each
 * write reaches the host device with a flush.  One that takes it gets
 * writeback: flushes come with its FLUSH requests.
 */
static void test_writethrough(const char *aio)
{
	struct tmachine *t = root_machine("writethrough", aio, "", "virtio-blk-pci,drive=x",
					  512, false);
	struct vdev d;
	struct gq q;
	long long f0;

	if (!t)
		return;
	CHECK(vdev_find(t, 0, &d));
	CHECK(!(vdev_init(&d, &q, 1, 16, ALL_FEATURES & ~(1ull << 9)) >> 9 & 1));
	memset(slot_data(t, 0), 0x42, 8192);
	f0 = loop_stat(&t->loop, LOOP_STAT_FLUSHES);
	CHECK(do_req(&q, (struct breq){ T_OUT, 8, 4096, 1, false, 0, 0, 0 }, NULL) == S_OK);
	CHECK(loop_stat(&t->loop, LOOP_STAT_FLUSHES) > f0);
	f0 = loop_stat(&t->loop, LOOP_STAT_FLUSHES);
	CHECK(do_req(&q, (struct breq){ T_WRITE_ZEROES, 64, 0, 0, false, 1, 0, 8 }, NULL) == S_OK);
	CHECK(loop_stat(&t->loop, LOOP_STAT_FLUSHES) > f0);

	CHECK(vdev_reset(&d));
	CHECK(vdev_init(&d, &q, 1, 16, ALL_FEATURES) >> 9 & 1);
	f0 = loop_stat(&t->loop, LOOP_STAT_FLUSHES);
	CHECK(do_req(&q, (struct breq){ T_OUT, 16, 4096, 1, false, 0, 0, 0 }, NULL) == S_OK);
	CHECK(loop_stat(&t->loop, LOOP_STAT_FLUSHES) == f0);
	CHECK(do_req(&q, (struct breq){ T_FLUSH, 0, 0, 0, false, 2, 0, 0 }, NULL) == S_OK);
	CHECK(loop_stat(&t->loop, LOOP_STAT_FLUSHES) > f0);
	machine_free(t);
}

/*
 * --root: what needs root (userfaultfd on the kernel's own accesses, loop
 * devices).  Exit 77, a skip, when none of it could run here.
 */
static int main_root(void)
{
	static const char *const aios[] = { "threads", "io_uring" };

	for (unsigned i = 0; i < 2; i++) {
		RUN(test_reset_drains(aios[i]));
		RUN(test_reset_no_dma_after(aios[i]));
		RUN(test_host_4k(aios[i]));
		RUN(test_host_discard(aios[i]));
		RUN(test_writethrough(aios[i]));
	}
	RUN(test_reset_slow());
	RUN(test_host_geometry());
	RUN(test_inuse_hostile(false));
	RUN(test_inuse_hostile(true));
	RUN(test_serve_budget());
	return check_done();
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--root"))
		return main_root();
	RUN(test_roundtrips(false, false));
	RUN(test_roundtrips(false, true));
	RUN(test_roundtrips(true, false));
	RUN(test_roundtrips(true, true));
	RUN(test_readonly());
	RUN(test_ops_not_taken());
	RUN(test_late_queue(false));
	RUN(test_late_queue(true));
	RUN(test_backend_fault("io_uring"));
	RUN(test_backend_fault("threads"));
	RUN(test_packed_wrap());
	RUN(test_event_idx());
	RUN(test_polling(0, true));
	RUN(test_polling(200 * 1000, true));
	RUN(test_polling(200 * 1000, false));
	RUN(test_irq_coalesce(0));
	RUN(test_irq_coalesce(1000000));
	RUN(test_irq_interval(0));
	RUN(test_irq_interval(400000));
	RUN(test_irq_interval_real());
	RUN(test_multiqueue(2, 0));
	RUN(test_multiqueue(4, 4));
	RUN(test_multiqueue(4, 3));
	RUN(test_iothread_map(4, 3));
	RUN(test_iothread_map(2, 2));
	RUN(test_snapshot(true));
	RUN(test_snapshot(false));
	RUN(test_iothreads_too_many());
	RUN(test_reset_inflight());
	RUN(test_hostile());
	RUN(test_hostile_mid_round());
	RUN(test_two_devices());
	RUN(test_segment_limits());
	RUN(test_rw_len_cap());
	RUN(test_block_size_options());
	RUN(test_direct_misaligned("io_uring"));
	RUN(test_direct_misaligned("threads"));
	return check_done();
}
