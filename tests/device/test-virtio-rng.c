// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * virtio-rng-pci through the whole stack, the test playing the guest on
 * blk-guest.h's machine: config cycles, BAR MMIO and its ring driver.
 * Expected values come from VIRTIO 1.2 (4.1.2, 5.4) and from QEMU's
 * rate limit, not from the device.
 *
 * The device serves on m->loop, which no thread runs here: the test turns
 * it by hand, without waiting, after each kick.  A rate-limit period is
 * an hour, ended by making the device's timerfd readable.  So no check
 * depends on how long anything takes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "hw/device.h"
#include "hw/object.h"
#include "hw/virtio/virtio-plug.h"
#include "hw/virtio/virtio-rng.h"
#include "util/iothread.h"

#include "capture.h"
#include "check.h"
#include "blk-guest.h"
#include "timer-fd.h"

#define RNG_PCI_ID 0x1044	/* VIRTIO 1.2, 4.1.2: 0x1040 + 4 */
#define NUM 8
#define HOUR_MS 3600000u
#define NEEDS_RESET 0x40
#define JUNK 0xcc

struct rng {
	struct tmachine *t;
	struct vrng *r;
	struct vdev d;
	struct gq q;
};

/* The board with m->loop (which hw/main.c would make) and the device. */
static bool rng_new(struct rng *g, const struct vrng_cfg *cfg)
{
	memset(g, 0, sizeof(*g));
	g->t = machine_board(1, false);
	g->t->b.m.loop = iothread_new("main");
	g->r = g->t->b.m.loop ? vrng_create(&g->t->b.m, cfg,
					    virtio_pci_plug(&g->t->b.m, 0x00ff00)) : NULL;
	return g->r && vdev_find_id(g->t, RNG_PCI_ID, 0, &g->d);
}

static void rng_free(struct rng *g)
{
	vrng_free(g->r);
	iothread_free(g->t->b.m.loop);
	machine_free(g->t);
}

/* Runs whatever the device's fds have ready, as the main loop would. */
static void loop_turn(struct rng *g)
{
	while (iothread_poll(g->t->b.m.loop, 0) > 0)
		;
}

static bool rng_start(struct rng *g)
{
	vdev_init(&g->d, &g->q, 1, NUM, ALL_FEATURES);
	return (vstatus(&g->d) & 0x4) && !(vstatus(&g->d) & NEEDS_RESET);
}

/* The device made and started; false after a failed check, all freed. */
static bool rng_up(struct rng *g, const struct vrng_cfg *cfg)
{
	if (rng_new(g, cfg) && rng_start(g))
		return true;
	CHECK(!"device started");
	rng_free(g);
	return false;
}

/* Offers the chain, kicks, lets the device run; the chain's id. */
static int offer(struct rng *g, const struct drv_seg *s, unsigned n)
{
	int id = gq_add(&g->q, s, n, false, 0);

	gq_kick(&g->q);
	loop_turn(g);
	return id;
}

static int offer_one(struct rng *g, unsigned slot, uint32_t len)
{
	struct drv_seg s = { data_gpa(slot), len, true };

	memset(slot_data(g->t, slot), JUNK, len);
	return offer(g, &s, 1);
}

/* Whether a period is running: the device armed its timer. */
static bool timer_armed(struct rng *g)
{
	return timerfd_armed(vrng_timer_fd(g->r));
}

/* The device's armed timer fd goes off now; the loop runs its handler. */
static void fire(struct rng *g, int fd)
{
	CHECK(timerfd_fire(fd, WAIT_MS));
	loop_turn(g);
}

/* The rate limit's period ends now. */
static void period_end(struct rng *g)
{
	fire(g, vrng_timer_fd(g->r));
}

/*
 * rng-random's file: the guest gets the file's bytes, in order, each
 * once, a buffer as many as are left; a file that ends puts the device
 * in NEEDS_RESET rather than hand out empty buffers.
 */
static void test_file_source(void)
{
	char path[] = "/tmp/brisk-rng-XXXXXX";
	uint8_t bytes[100];
	struct vrng_cfg cfg = { VRNG_NO_LIMIT, VRNG_DEFAULT_PERIOD_MS, .filename = path };
	struct rng g;
	uint32_t len = 0;
	int fd = mkstemp(path), id;

	for (unsigned i = 0; i < sizeof(bytes); i++)
		bytes[i] = (uint8_t)(i * 7 + 3);
	CHECK(fd >= 0 && write(fd, bytes, sizeof(bytes)) == (ssize_t)sizeof(bytes));
	close(fd);
	if (!rng_up(&g, &cfg)) {
		unlink(path);
		return;
	}
	CHECK(vrng_retry_fd(g.r) >= 0);
	for (unsigned slot = 0; slot < 2; slot++) {
		id = offer_one(&g, slot, 32);
		CHECK(id >= 0 && gq_get_used(&g.q, &len) == id && len == 32);
		CHECK(!memcmp(slot_data(g.t, slot), bytes + 32 * slot, 32));
		CHECK(gq_kicks_on(&g.q));
	}
	/* 36 bytes left: a 64-byte buffer gets them, the next meets the end. */
	id = offer_one(&g, 2, 64);
	CHECK(id >= 0 && gq_get_used(&g.q, &len) == id && len == 36);
	CHECK(!memcmp(slot_data(g.t, 2), bytes + 64, 36));
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	CHECK(offer_one(&g, 3, 64) >= 0);
	CHECK(vstatus(&g.d) & NEEDS_RESET);
	CHECK(gq_get_used(&g.q, &len) < 0);
	rng_free(&g);
	unlink(path);
}

/*
 * A source with nothing to read (a slow hardware RNG; here a pipe) holds
 * the buffer in the ring, without the loop waiting on it, and the retry
 * timer serves it once bytes came.
 */
static void test_slow_source(void)
{
	int p[2];
	char path[64];
	struct vrng_cfg cfg = { VRNG_NO_LIMIT, VRNG_DEFAULT_PERIOD_MS, .filename = path };
	struct rng g;
	uint32_t len = 0;
	int id;

	CHECK(pipe(p) == 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
	if (!rng_up(&g, &cfg)) {
		close(p[0]);
		close(p[1]);
		return;
	}
	id = offer_one(&g, 0, 64);
	CHECK(id >= 0 && gq_get_used(&g.q, &len) < 0);
	CHECK(timerfd_armed(vrng_retry_fd(g.r)));
	CHECK(write(p[1], "0123456789", 10) == 10);
	fire(&g, vrng_retry_fd(g.r));
	CHECK(gq_get_used(&g.q, &len) == id);
	CHECK_EQ(len, 10);
	CHECK(!memcmp(slot_data(g.t, 0), "0123456789", 10));
	CHECK(gq_kicks_on(&g.q));
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	rng_free(&g);
	close(p[0]);
	close(p[1]);
}

static bool all_same(const uint8_t *p, size_t len)
{
	for (size_t i = 1; i < len; i++)
		if (p[i] != p[0])
			return false;
	return true;
}

static void test_identity(void)
{
	struct rng g;
	struct vrng_cfg cfg = { VRNG_NO_LIMIT, VRNG_DEFAULT_PERIOD_MS };

	if (!rng_new(&g, &cfg)) {
		CHECK(!"device found");
		return;
	}
	CHECK_EQ(cfg_read(&g.t->b, g.d.pci.devfn, 0x00, 2), 0x1af4);
	CHECK_EQ(cfg_read(&g.t->b, g.d.pci.devfn, 0x02, 2), 0x1044);
	CHECK(cfg_read(&g.t->b, g.d.pci.devfn, 0x08, 1) >= 1);	/* 4.1.2.1: revision 1+ */
	CHECK_EQ(cfg_read(&g.t->b, g.d.pci.devfn, 0x08, 4) >> 8, 0x00ff00);	/* QEMU's class */
	CHECK(dev_features(&g.d) >> VIRTIO_F_VERSION_1 & 1);
	CHECK_EQ(cc_read(&g.d.pci, CC_NUM_QUEUES, 2), 1);	/* requestq */
	/* A queue beyond the one there is reads size 0 (4.1.4.3). */
	cc_write(&g.d.pci, CC_Q_SELECT, 1, 2);
	CHECK_EQ(cc_read(&g.d.pci, CC_Q_SIZE, 2), 0);
	CHECK(vrng_timer_fd(g.r) < 0);	/* no limit, no timer */
	rng_free(&g);
}

static void test_fill(void)
{
	struct rng g;
	uint32_t len = 0;
	int id;

	if (!rng_new(&g, virtio_rng_pci_family.defaults) || !rng_start(&g)) {
		CHECK(!"device started");
		rng_free(&g);
		return;
	}
	for (unsigned slot = 0; slot < 2; slot++) {
		id = offer_one(&g, slot, 64);
		CHECK(id >= 0 && gq_get_used(&g.q, &len) == id);
		CHECK_EQ(len, 64);
		CHECK(!all_same(slot_data(g.t, slot), 64));
		CHECK(gq_kicks_on(&g.q));
	}
	CHECK(memcmp(slot_data(g.t, 0), slot_data(g.t, 1), 64));
	CHECK(irq_take(&g.d, 1, 0) > 0);

	/* Three buffers in one chain: used len counts them all. */
	struct drv_seg s[3] = {
		{ data_gpa(2), 10, true }, { data_gpa(3), 1, true },
		{ data_gpa(4), 4000, true },
	};

	memset(slot_data(g.t, 4), JUNK, 4000);
	id = offer(&g, s, 3);
	CHECK(id >= 0 && gq_get_used(&g.q, &len) == id);
	CHECK_EQ(len, 4011);
	CHECK(!all_same(slot_data(g.t, 4), 4000));
	/* A full ring with one kick, three times over: each once, in order. */
	for (unsigned round = 0; round < 3; round++) {
		int ids[NUM];

		for (unsigned i = 0; i < NUM; i++) {
			struct drv_seg one = { data_gpa(5 + i), 512, true };

			ids[i] = gq_add(&g.q, &one, 1, false, 0);
		}
		gq_kick(&g.q);
		loop_turn(&g);
		for (unsigned i = 0; i < NUM; i++)
			CHECK(ids[i] >= 0 && gq_get_used(&g.q, &len) == ids[i] && len == 512);
	}
	CHECK(gq_get_used(&g.q, &len) < 0);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	rng_free(&g);
}

/* NEEDS_RESET with a config interrupt, nothing used; a reset recovers. */
static void check_broken_then_reset(struct rng *g)
{
	uint32_t len;
	int id;

	CHECK(vstatus(&g->d) & NEEDS_RESET);
	CHECK(irq_take(&g->d, 0, 0) > 0);
	CHECK(gq_get_used(&g->q, &len) < 0);
	/* Kicking a broken device serves nothing and breaks nothing. */
	gq_kick(&g->q);
	loop_turn(g);
	CHECK(gq_get_used(&g->q, &len) < 0);
	CHECK(vdev_reset(&g->d));
	CHECK(rng_start(g));
	id = offer_one(g, 0, 32);
	CHECK(id >= 0 && gq_get_used(&g->q, &len) == id);
	CHECK_EQ(len, 32);
}

static void test_readable(bool alone)
{
	struct rng g;
	struct vrng_cfg cfg = { VRNG_NO_LIMIT, VRNG_DEFAULT_PERIOD_MS };
	struct drv_seg s[2] = { { data_gpa(0), 16, false }, { data_gpa(1), 16, true } };

	if (!rng_up(&g, &cfg))
		return;
	CHECK(offer(&g, s, alone ? 1 : 2) >= 0);
	check_broken_then_reset(&g);
	rng_free(&g);
}

static void test_outside_ram(uint64_t addr, uint32_t len)
{
	struct rng g;
	struct vrng_cfg cfg = { VRNG_NO_LIMIT, VRNG_DEFAULT_PERIOD_MS };
	struct drv_seg s[2] = { { data_gpa(0), 16, true }, { addr, len, true } };

	if (!rng_up(&g, &cfg))
		return;
	CHECK(offer(&g, s, 2) >= 0);
	check_broken_then_reset(&g);
	rng_free(&g);
}

static void test_rate_limit(void)
{
	struct rng g;
	struct vrng_cfg cfg = { 16, HOUR_MS };
	uint32_t len = 0;
	int id[4];

	if (!rng_up(&g, &cfg))
		return;
	CHECK(vrng_timer_fd(g.r) >= 0);
	/* As QEMU's: a request gets what is left of the quota, at most. */
	id[0] = offer_one(&g, 0, 64);
	CHECK(gq_get_used(&g.q, &len) == id[0]);
	CHECK_EQ(len, 16);
	CHECK(!all_same(slot_data(g.t, 0), 16));
	/* The quota is spent: the next request waits, kicked or not. */
	id[1] = offer_one(&g, 1, 64);
	CHECK(gq_get_used(&g.q, &len) < 0);
	gq_kick(&g.q);
	loop_turn(&g);
	CHECK(gq_get_used(&g.q, &len) < 0);
	CHECK(timer_armed(&g));
	id[2] = offer_one(&g, 2, 8);
	CHECK(gq_get_used(&g.q, &len) < 0);

	/*
	 * Each period serves what its quota covers, in order, once; spending
	 * starts the next period (its timer armed), or nothing would end it.
	 */
	period_end(&g);
	CHECK(gq_get_used(&g.q, &len) == id[1]);
	CHECK_EQ(len, 16);
	CHECK(!all_same(slot_data(g.t, 1), 16));
	CHECK(gq_get_used(&g.q, &len) < 0);
	CHECK(timer_armed(&g));
	period_end(&g);
	CHECK(gq_get_used(&g.q, &len) == id[2]);
	CHECK_EQ(len, 8);
	CHECK(gq_get_used(&g.q, &len) < 0);

	/* The rest of this period's quota goes at once. */
	id[3] = offer_one(&g, 3, 8);
	CHECK(gq_get_used(&g.q, &len) == id[3]);
	CHECK_EQ(len, 8);
	/* A period that ends with nothing waiting: the next is served at once. */
	period_end(&g);
	id[0] = offer_one(&g, 4, 4);
	CHECK(gq_get_used(&g.q, &len) == id[0]);
	CHECK_EQ(len, 4);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	rng_free(&g);
}

/* A reset neither refills the quota nor serves the old ring's requests. */
static void test_rate_limit_reset(void)
{
	struct rng g;
	struct vrng_cfg cfg = { 16, HOUR_MS };
	uint32_t len = 0;
	int id;

	if (!rng_up(&g, &cfg))
		return;
	id = offer_one(&g, 0, 16);
	CHECK(gq_get_used(&g.q, &len) == id && len == 16);
	CHECK(offer_one(&g, 1, 16) >= 0);
	CHECK(vdev_reset(&g.d));
	period_end(&g);		/* nothing to serve: the ring is gone */
	CHECK(rng_start(&g));
	CHECK(gq_get_used(&g.q, &len) < 0);
	id = offer_one(&g, 2, 32);
	CHECK(gq_get_used(&g.q, &len) == id && len == 16);
	CHECK(offer_one(&g, 3, 16) >= 0);
	CHECK(vdev_reset(&g.d));
	CHECK(rng_start(&g));
	id = offer_one(&g, 4, 16);
	CHECK(gq_get_used(&g.q, &len) < 0);
	period_end(&g);
	CHECK(gq_get_used(&g.q, &len) == id && len == 16);
	rng_free(&g);
}

/*
 * VIRTIO 1.2, 3.1.1: nothing is used before DRIVER_OK, not even when a
 * period ends meanwhile; what waits then is served once it is set.
 */
static void test_before_driver_ok(void)
{
	struct rng g;
	struct vrng_cfg cfg = { 16, HOUR_MS };
	struct drv_seg s = { data_gpa(1), 16, true };
	uint32_t len = 0;
	int id;

	if (!rng_up(&g, &cfg))
		return;
	id = offer_one(&g, 0, 16);
	CHECK(gq_get_used(&g.q, &len) == id && len == 16);
	CHECK(vdev_reset(&g.d));
	/* vdev_init() up to FEATURES_OK and the queue, DRIVER_OK left out. */
	vpci_negotiate(&g.d.pci, 1ull << VIRTIO_F_VERSION_1);
	cc_write(&g.d.pci, CC_MSIX_CONFIG, 0, 2);
	msix_setup(&g.d, 2);
	gq_init(&g.d, &g.q, 0, NUM, false, false);
	id = gq_add(&g.q, &s, 1, false, 0);
	period_end(&g);
	CHECK(gq_get_used(&g.q, &len) < 0);
	vpci_set_status(&g.d.pci, DS_ACKNOWLEDGE | DS_DRIVER | DS_FEATURES_OK | DS_DRIVER_OK);
	loop_turn(&g);
	CHECK(id >= 0 && gq_get_used(&g.q, &len) == id);
	CHECK_EQ(len, 16);
	rng_free(&g);
}

/* What -device virtio-rng-pci reads: QEMU's names, ranges and defaults. */
/*
 * The command line's view, through the family's own table as hw/main.c
 * uses it: QEMU's defaults (no limit, a 65536 ms period) and its names.
 */
static bool parse_rng(const char *arg, struct vrng_cfg *cfg)
{
	const struct device_family *f = &virtio_rng_pci_family;

	memcpy(cfg, f->defaults, f->cfg_size);
	return opts_parse(f->spec, arg, cfg) == 0;
}

static void test_family(void)
{
	const struct device_family *f = &virtio_rng_pci_family;
	struct vrng_cfg c;

	CHECK(!strcmp(f->name, "virtio-rng-pci") && f->kind == DEVICE_PLUGGED);
	CHECK(f->create && f->destroy);
	CHECK(parse_rng("", &c));
	CHECK(c.max_bytes == INT64_MAX && c.period_ms == 65536);
	CHECK(parse_rng("max-bytes=16,period=1000", &c));
	CHECK(c.max_bytes == 16 && c.period_ms == 1000);
	CHECK(parse_rng("period=1", &c) && c.period_ms == 1);
	CHECK(parse_rng("max-bytes=9223372036854775807", &c) && c.max_bytes == INT64_MAX);
	CHECK(opts_parse(f->spec, "help", &c) == OPTS_HELP);
	capture_begin();
	CHECK(!parse_rng("period=0", &c));
	CHECK(!parse_rng("max-bytes=9223372036854775808", &c));
	CHECK(!parse_rng("rate=1", &c));
	char line[256];

	CHECK(capture_end(line, sizeof(line)) == 3);

	/* rng= takes the file of the -object rng-random it names, none of rng-builtin's. */
	struct object_set *objs = object_set_new();

	CHECK(objs && object_set_add(objs, object_type_find("rng-random", 10),
				     "id=r0,filename=/dev/urandom") == 0);
	CHECK(object_set_add(objs, object_type_find("rng-builtin", 11), "id=r1") == 0);
	CHECK(parse_rng("rng=r0", &c) && f->resolve(&c, objs) == 0);
	CHECK(c.filename && !strcmp(c.filename, "/dev/urandom"));
	opts_free(f->spec, &c);
	CHECK(parse_rng("rng=r1", &c) && f->resolve(&c, objs) == 0 && !c.filename);
	opts_free(f->spec, &c);
	capture_begin();
	CHECK(parse_rng("rng=r2", &c) && f->resolve(&c, objs) < 0);
	opts_free(f->spec, &c);
	CHECK(capture_end(line, sizeof(line)) == 1);
	object_set_free(objs);
}

int main(void)
{
	RUN(test_identity());
	RUN(test_fill());
	RUN(test_readable(true));
	RUN(test_readable(false));
	RUN(test_outside_ram(RAM_SIZE + 4096, 64));
	RUN(test_outside_ram(RAM_SIZE - 8, 64));
	RUN(test_outside_ram(~0ull - 15, 64));
	RUN(test_rate_limit());
	RUN(test_rate_limit_reset());
	RUN(test_before_driver_ok());
	RUN(test_family());
	RUN(test_file_source());
	RUN(test_slow_source());
	return check_done();
}
