// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * virtio-rng (VIRTIO 1.2, 5.4) on the modern PCI transport: one queue of
 * device-writable buffers, each returned filled from getrandom(2).
 *
 * It runs on the main loop (m->loop), kicks and timer alike: a guest
 * takes a few bytes now and then, which is not worth an I/O thread.
 *
 * The queue is served by a struct virtio_server (virtio/), which pops in
 * rounds and publishes each round with one flush and at most one
 * interrupt; every buffer is answered as it is popped.
 *
 * With a file as the source (-object rng-random), its bytes are read
 * without blocking into a stage, and a buffer is answered only with
 * bytes from it; while the file has none (a hardware RNG may be slow;
 * /dev/hwrng's poll says readable regardless), the buffers wait in the
 * ring, unpopped, and a timer looks again every VRNG_RETRY_MS.
 *
 * max-bytes and period limit it as QEMU's does.  The first bytes handed
 * out start a period (a timerfd); once the period's quota is spent,
 * buffers stay in the ring, unpopped, until the period ends, refills the
 * quota and serves them.  So no buffer is lost or answered twice, and one
 * that asks for more than the quota left gets what is left.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <linux/virtio_rng.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "hw/machine.h"
#include "hw/object.h"
#include "hw/virtio/virtio-plug.h"
#include "hw/virtio/virtio-rng.h"
#include "util/iothread.h"
#include "util/log.h"
#include "virtio/virtio-server.h"
#include "virtio/virtio.h"

#define VRNG_QUEUE_SIZE 8	/* QEMU's */
/*
 * Bytes one buffer gets at most: the main loop also runs the other
 * devices' timers, which a guest asking for gigabytes must not hold up.
 */
#define VRNG_CHAIN_MAX (64u << 10)
#define VRNG_RETRY_MS 10
#define VRNG_FEATURES (1ull << VIRTIO_F_VERSION_1 |			\
		       1ull << VIRTIO_F_RING_INDIRECT_DESC |		\
		       1ull << VIRTIO_F_RING_EVENT_IDX)

struct vrng {
	struct virtio_device vdev;
	struct virtio_server sv;
	bool vdev_ready;
	struct virtio_plug *plug;
	struct iothread *loop;
	bool kick_added;
	int timer_fd;		/* -1 when nothing is limited */
	uint64_t max_bytes;	/* per period */
	unsigned period_ms;
	int src_fd;		/* the rng-random file; -1: getrandom(2) */
	const char *src_name;
	int retry_fd;		/* a timerfd: look at src_fd again; -1 without one */
	uint8_t stage[4096];	/* src_fd's bytes read ahead of a buffer; under vdev.lock */
	size_t staged, stage_off;

	/* under vdev.lock */
	bool period_running;	/* the timer is armed */
	bool retry_armed;	/* retry_fd is */
	uint64_t quota;		/* left in this period */
	char why[160];		/* a source's error, for the server's report */
};

static bool vrng_limited(const struct vrng *r)
{
	return r->timer_fd >= 0;
}

/* getrandom(2) into the buffers, up to max bytes; -1 with errno if it fails. */
static ssize_t vrng_fill(const struct iovec *iov, unsigned n, size_t max)
{
	size_t done = 0;

	for (unsigned i = 0; i < n && done < max; i++) {
		size_t len = iov[i].iov_len < max - done ? iov[i].iov_len : max - done;

		for (size_t got = 0; got < len;) {
			ssize_t ret = getrandom((uint8_t *)iov[i].iov_base + got, len - got, 0);

			if (ret < 0 && errno == EINTR)
				continue;
			if (ret <= 0) {
				errno = ret ? errno : EIO;
				return -1;
			}
			got += (size_t)ret;
		}
		done += len;
	}
	return (ssize_t)done;
}

/* A file source's staged bytes into the buffers, up to max of them. */
static size_t vrng_fill_staged(struct vrng *r, const struct iovec *iov, unsigned n, size_t max)
{
	size_t done = 0;

	for (unsigned i = 0; i < n && done < max && r->staged; i++) {
		size_t len = iov[i].iov_len < max - done ? iov[i].iov_len : max - done;

		if (len > r->staged)
			len = r->staged;
		memcpy(iov[i].iov_base, r->stage + r->stage_off, len);
		r->stage_off += len;
		r->staged -= len;
		done += len;
	}
	return done;
}

/*
 * Bytes for a popped buffer: 1 when some are staged (always, for
 * getrandom(2)); 0 when the file has none now, the retry timer armed to
 * look again; -1 with errno on an error or the file's end (ENODATA).
 */
static int vrng_stage(struct vrng *r)
{
	struct itimerspec its = { .it_value = { .tv_nsec = VRNG_RETRY_MS * 1000000l } };
	ssize_t n;

	if (r->src_fd < 0 || r->staged)
		return 1;
	do
		n = read(r->src_fd, r->stage, sizeof(r->stage));
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		r->staged = (size_t)n;
		r->stage_off = 0;
		return 1;
	}
	if (n < 0 && errno == EAGAIN) {
		if (!r->retry_armed && timerfd_settime(r->retry_fd, 0, &its, NULL) == 0)
			r->retry_armed = true;
		return 0;
	}
	if (n == 0)
		errno = ENODATA;
	return -1;
}

/* The period starts with its first bytes, as QEMU's does. */
static void vrng_spend_locked(struct vrng *r, size_t len)
{
	struct itimerspec its = {
		.it_value = { .tv_sec = r->period_ms / 1000,
			      .tv_nsec = r->period_ms % 1000 * 1000000l },
	};

	if (!vrng_limited(r) || !len)
		return;
	r->quota -= len;
	if (r->period_running)
		return;
	/* Cannot fail for a valid fd and time; should it, no limit beats no bytes. */
	if (timerfd_settime(r->timer_fd, 0, &its, NULL) < 0)
		r->quota = r->max_bytes;
	else
		r->period_running = true;
}

/*
 * Another buffer is taken only while the quota lasts and the source has
 * bytes for it: what is not taken waits in the ring, unpopped, so no
 * buffer is lost or answered twice.
 */
static bool vrng_admit(struct virtio_server *sv)
{
	struct vrng *r = container_of(sv, struct vrng, sv);
	int ret;

	if (!r->quota)
		return false;
	ret = vrng_stage(r);
	if (ret < 0)
		virtio_error(&r->vdev, "virtio-rng: %s: %s", r->src_name,
			     errno == ENODATA ? "end of file" : strerror(errno));
	return ret > 0;
}

/* A buffer filled at once, never handed to a back end (0), or the guest's error (-1). */
static int vrng_parse(struct virtio_server *sv, struct vs_req *req, const char **why)
{
	struct vrng *r = container_of(sv, struct vrng, sv);
	struct vq_elem *e = &req->elem;

	/* VIRTIO 1.2, 5.4.6.1: the driver offers writable buffers only. */
	if (e->out_num) {
		*why = "device-readable buffer in a request";
		return -1;
	}
	/*
	 * Admitted just before its pop (include/virtio/virtio-server.h): a
	 * quota and bytes are there.  A buffer answered with none would
	 * leave Linux's driver waiting for ever: it never asks again.
	 */
	assert(r->quota && (r->src_fd < 0 || r->staged));
	size_t max = r->quota < VRNG_CHAIN_MAX ? r->quota : VRNG_CHAIN_MAX;
	ssize_t len = r->src_fd < 0 ? vrng_fill(e->in_sg, e->in_num, max) :
		      (ssize_t)vrng_fill_staged(r, e->in_sg, e->in_num, max);

	/*
	 * The host's entropy failing is no state to serve empty buffers in
	 * (the guest would ask again at once, forever): stop.
	 */
	if (len < 0) {
		snprintf(r->why, sizeof(r->why), "%s: %s", r->src_name, strerror(errno));
		*why = r->why;
		return -1;
	}
	vrng_spend_locked(r, (size_t)len);
	req->used_len = (uint32_t)len;
	return 0;
}

static void vrng_notify(struct virtio_server *sv)
{
	virtio_notify(sv->vdev, 0);
}

static const struct virtio_server_ops vrng_server_ops = {
	.admit = vrng_admit,
	.parse = vrng_parse,
	.notify = vrng_notify,
};

/* A kick, or a timer that lets more be served. */
static void vrng_serve(struct vrng *r)
{
	virtio_server_serve(&r->sv, &vrng_server_ops);
}

static void vrng_kick(void *opaque)
{
	vrng_serve(opaque);
}

/* Time to look at the source again. */
static void vrng_retry(void *opaque)
{
	struct vrng *r = opaque;
	uint64_t ticks;

	if (read(r->retry_fd, &ticks, sizeof(ticks)) < 0)
		return;
	pthread_mutex_lock(&r->vdev.lock);
	r->retry_armed = false;
	pthread_mutex_unlock(&r->vdev.lock);
	vrng_serve(r);
}

/* The period is over: a new quota for what waits in the ring. */
static void vrng_period_end(void *opaque)
{
	struct vrng *r = opaque;
	uint64_t ticks;

	if (read(r->timer_fd, &ticks, sizeof(ticks)) < 0)
		return;
	pthread_mutex_lock(&r->vdev.lock);
	r->period_running = false;
	r->quota = r->max_bytes;
	pthread_mutex_unlock(&r->vdev.lock);
	vrng_serve(r);
}

static struct vrng *vdev_to_vrng(struct virtio_device *vdev)
{
	return container_of(vdev, struct vrng, vdev);
}

static int vrng_start(struct virtio_device *vdev)
{
	struct vrng *r = vdev_to_vrng(vdev);

	virtio_server_start_locked(&r->sv, vdev->queues[0].ready);
	/* What the driver queued before DRIVER_OK is served on the loop. */
	return r->sv.serving && eventfd_write(vdev->queues[0].kick_fd, 1) < 0 ? -1 : 0;
}

/* Quota and period stay: a reset must not buy the guest a fresh quota. */
static void vrng_reset(struct virtio_device *vdev)
{
	struct vrng *r = vdev_to_vrng(vdev);

	virtio_server_reset_locked(&r->sv);
}

static const struct virtio_device_ops vrng_ops = {
	.start = vrng_start,
	.reset = vrng_reset,
};

/* A timerfd on the main loop running fn; -1 after one line saying what it is for. */
static int vrng_timer_new(struct vrng *r, iothread_fn fn, const char *what)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd < 0 || iothread_add_fd(r->loop, fd, fn, r) < 0) {
		error_report("virtio-rng: no timer %s: %s", what, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The file rng= named, and the timer that waits for it; -1 after one line. */
static int vrng_source_init(struct vrng *r, const struct vrng_cfg *cfg)
{
	r->src_name = cfg->filename ? cfg->filename : "getrandom";
	if (!cfg->filename)
		return 0;
	r->src_fd = open(cfg->filename, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (r->src_fd < 0) {
		error_report("virtio-rng: %s: %s", cfg->filename, strerror(errno));
		return -1;
	}
	r->retry_fd = vrng_timer_new(r, vrng_retry, "to wait for its file");
	return r->retry_fd < 0 ? -1 : 0;
}

static int vrng_timer_init(struct vrng *r, const struct vrng_cfg *cfg)
{
	if (cfg->max_bytes >= VRNG_NO_LIMIT)
		return 0;
	if (!cfg->period_ms) {
		error_report("virtio-rng: period must be at least 1 ms");
		return -1;
	}
	r->timer_fd = vrng_timer_new(r, vrng_period_end, "for its rate limit");
	return r->timer_fd < 0 ? -1 : 0;
}

struct vrng *vrng_create(struct machine *m, const struct vrng_cfg *cfg,
			 struct virtio_plug *plug)
{
	struct vrng *r = calloc(1, sizeof(*r));

	assert(plug);
	if (!r || !m->loop) {
		error_report("virtio-rng: %s", r ? "no main loop to serve it" : "out of memory");
		virtio_unplug(plug);
		free(r);
		return NULL;
	}
	r->plug = plug;
	r->loop = m->loop;
	r->timer_fd = -1;
	r->src_fd = -1;
	r->retry_fd = -1;
	r->max_bytes = cfg->max_bytes;
	r->period_ms = cfg->period_ms;
	r->quota = cfg->max_bytes;
	if (virtio_device_init(&r->vdev, VIRTIO_ID_RNG, VRNG_FEATURES, 0, 1,
			       VRNG_QUEUE_SIZE, &m->mem, &vrng_ops, r) < 0)
		goto fail;
	virtio_server_init(&r->sv, "virtio-rng", &r->vdev, 0, &vrng_server_ops,
			   sizeof(struct vs_req), VRNG_QUEUE_SIZE);
	r->vdev_ready = true;
	if (vrng_timer_init(r, cfg) < 0 || vrng_source_init(r, cfg) < 0)
		goto fail;
	if (iothread_add_event(r->loop, r->vdev.queues[0].kick_fd, vrng_kick, r) < 0) {
		error_report("virtio-rng: cannot watch its queue: %s", strerror(errno));
		goto fail;
	}
	r->kick_added = true;
	if (virtio_plug(r->plug, &r->vdev, NULL) < 0)
		goto fail;
	return r;
fail:
	vrng_free(r);
	return NULL;
}

void vrng_free(struct vrng *r)
{
	if (!r)
		return;
	/* No register access after this: nothing starts serving again. */
	virtio_unplug(r->plug);
	/* Each returns once its handler is not running, and it runs no more. */
	if (r->kick_added)
		iothread_del_fd(r->loop, r->vdev.queues[0].kick_fd);
	if (r->timer_fd >= 0) {
		iothread_del_fd(r->loop, r->timer_fd);
		close(r->timer_fd);
	}
	if (r->retry_fd >= 0) {
		iothread_del_fd(r->loop, r->retry_fd);
		close(r->retry_fd);
	}
	if (r->src_fd >= 0)
		close(r->src_fd);
	if (r->vdev_ready) {
		virtio_server_destroy(&r->sv);
		virtio_device_destroy(&r->vdev);
	}
	free(r);
}

int vrng_timer_fd(const struct vrng *r)
{
	return r->timer_fd;
}

int vrng_retry_fd(const struct vrng *r)
{
	return r->retry_fd;
}

/* ---- -device virtio-rng-pci ---- */

static const struct opt_prop vrng_props[] = {
	{ "max-bytes", OPT_U64, OPT_AT(struct vrng_cfg, max_bytes, uint64_t),
	  .max = VRNG_NO_LIMIT, .def = "9223372036854775807 (no limit)",
	  .help = "bytes the guest gets per period at most" },
	{ "period", OPT_UINT, OPT_AT(struct vrng_cfg, period_ms, unsigned),
	  .min = 1, .max = UINT_MAX, .def = "65536",
	  .help = "the rate limit's period, in milliseconds" },
	{ "rng", OPT_ID, OPT_AT(struct vrng_cfg, rng, char *),
	  .def = "getrandom(2), as rng-builtin", .help = "an -object rng-random or rng-builtin" },
	{ NULL },
};

static const struct opt_spec vrng_spec = {
	.what = "-device virtio-rng-pci",
	.props = vrng_props,
};

static const struct vrng_cfg vrng_defaults = {
	.max_bytes = VRNG_NO_LIMIT,
	.period_ms = VRNG_DEFAULT_PERIOD_MS,
};

static int vrng_resolve(void *cfg, const struct object_set *objects)
{
	struct vrng_cfg *c = cfg;
	const struct object_rng_cfg *o;
	char who[96];

	if (!c->rng)
		return 0;
	snprintf(who, sizeof(who), "-device virtio-rng-pci: rng=%s", c->rng);
	o = (const struct object_rng_cfg *)object_find(objects, c->rng,
		(const char *const[]){ "rng-random", "rng-builtin", NULL }, who);
	if (!o)
		return -1;
	c->filename = o->filename;
	return 0;
}

static void *vrng_family_create(struct machine *m, const void *cfg,
				struct virtio_plug *plug)
{
	return vrng_create(m, cfg, plug);
}

static void vrng_family_destroy(void *dev)
{
	vrng_free(dev);
}

const struct device_family virtio_rng_pci_family = {
	.name = "virtio-rng-pci",
	.help = "entropy from the host's getrandom(2) (VIRTIO 1.2, 5.4)",
	.spec = &vrng_spec,
	.cfg_size = sizeof(struct vrng_cfg),
	.defaults = &vrng_defaults,
	.resolve = vrng_resolve,
	.pci_class = 0x00ff00,	/* "other": the PCI classes have no rng */
	.create = vrng_family_create,
	.destroy = vrng_family_destroy,
};
