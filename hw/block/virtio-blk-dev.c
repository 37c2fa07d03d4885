// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * virtio-blk as its transport sees it: config space, feature
 * negotiation, reset, queues started and stopped; and its construction,
 * on the guest's PCI bus or as a vhost-user export (-export).  Serving
 * requests is virtio-blk.c's.
 */
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <linux/virtio_ids.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "hw/block/virtio-blk.h"
#include "hw/machine.h"
#include "hw/virtio/virtio-plug.h"
#include "util/clock.h"
#include "util/iothread.h"
#include "util/log.h"
#include "virtio-blk-dev.h"

static struct vblk *vdev_to_vblk(struct virtio_device *vdev)
{
	return container_of(vdev, struct vblk, vdev);
}

static void vblk_read_config(struct virtio_device *vdev, uint32_t off, void *buf,
			     unsigned len)
{
	struct vblk *s = vdev_to_vblk(vdev);

	memset(buf, 0, len);
	if (off < VBLK_CONFIG_LEN)
		memcpy(buf, s->config + off,
		       len < VBLK_CONFIG_LEN - off ? len : VBLK_CONFIG_LEN - off);
}

/* Only the writeback field is writable, and only with CONFIG_WCE: ignore. */
static void vblk_write_config(struct virtio_device *vdev, uint32_t off,
			      const void *buf, unsigned len)
{
	(void)vdev;
	(void)off;
	(void)buf;
	(void)len;
}

/* What the driver's features decide for the requests to come; under the lock. */
static void vblk_apply_features(struct vblk *s)
{
	uint64_t f = s->vdev.guest_features;

	/* VIRTIO 1.2, 5.2: without FLUSH, a completed write is on stable storage. */
	s->writethrough = !(f & (1ull << VIRTIO_BLK_F_FLUSH));
	s->seg_limit = f & (1ull << VIRTIO_BLK_F_SEG_MAX) ? s->seg_max : IOV_MAX;
	s->size_limit = f & (1ull << VIRTIO_BLK_F_SIZE_MAX) ? VBLK_SIZE_MAX : UINT32_MAX;
	/* VIRTIO 1.2, 5.2.6: a command whose feature was not negotiated is not offered. */
	s->ops_taken = 0;
	if (f & (1ull << VIRTIO_BLK_F_DISCARD))
		s->ops_taken |= 1ull << VIRTIO_BLK_T_DISCARD;
	if (f & (1ull << VIRTIO_BLK_F_WRITE_ZEROES))
		s->ops_taken |= 1ull << VIRTIO_BLK_T_WRITE_ZEROES;
}

static int vblk_start(struct virtio_device *vdev)
{
	struct vblk *s = vdev_to_vblk(vdev);
	uint64_t one = 1;

	vblk_apply_features(s);
	for (unsigned i = 0; i < s->nq; i++) {
		struct virtio_queue *vq = &vdev->queues[i];

		virtio_server_start_locked(&s->q[i].sv, vq->ready);
		/* Serve what the driver queued before DRIVER_OK. */
		if (vq->ready && write(vq->kick_fd, &one, sizeof(one)) < 0)
			return -1;
	}
	return 0;
}

static void vblk_reset(struct virtio_device *vdev)
{
	struct vblk *s = vdev_to_vblk(vdev);

	for (unsigned i = 0; i < s->nq; i++) {
		virtio_server_reset_locked(&s->q[i].sv);
		s->q[i].irq_held = false;
	}
}

/* Requests from before a reset are still out there (VIRTIO 1.2, 2.4). */
static unsigned vblk_busy(struct virtio_device *vdev)
{
	struct vblk *s = vdev_to_vblk(vdev);
	unsigned n = 0;

	for (unsigned i = 0; i < s->nq; i++)
		n += virtio_server_busy(&s->q[i].sv);
	return n;
}

static int vblk_start_queue(struct virtio_device *vdev, unsigned qi, int kick_fd)
{
	struct vblk *s = vdev_to_vblk(vdev);
	struct vblk_queue *q = &s->q[qi];
	uint64_t one = 1;

	assert(qi < s->nq && q->kick_fd < 0);
	/* Set before the handler can run: add_fd orders it for the thread. */
	q->kick_fd = kick_fd;
	if (iothread_add_event(q->t, kick_fd, vblk_serve, &q->sv) < 0) {
		q->kick_fd = -1;
		return -1;
	}
	pthread_mutex_lock(&vdev->lock);
	/* No DRIVER_OK on this transport: a ring's start is the device's. */
	vblk_apply_features(s);
	virtio_server_restart_locked(&q->sv);
	pthread_mutex_unlock(&vdev->lock);
	/* Serve what the driver queued before the queue started. */
	return write(vdev->queues[qi].kick_fd, &one, sizeof(one)) < 0 ? -1 : 0;
}

static void vblk_stop_queue(struct virtio_device *vdev, unsigned qi)
{
	struct vblk *s = vdev_to_vblk(vdev);
	struct vblk_queue *q = &s->q[qi];

	assert(qi < s->nq);
	pthread_mutex_lock(&vdev->lock);
	virtio_server_stop_locked(&q->sv);
	/* An interrupt held back for coalescing goes now, not never. */
	if (q->irq_held && !vdev->broken)
		vblk_irq_send_locked(q);
	q->irq_held = false;
	pthread_mutex_unlock(&vdev->lock);
	if (q->kick_fd >= 0) {
		iothread_del_fd(q->t, q->kick_fd);
		q->kick_fd = -1;
	}
}

static const struct virtio_device_ops vblk_ops = {
	.read_config = vblk_read_config,
	.write_config = vblk_write_config,
	.start = vblk_start,
	.reset = vblk_reset,
	.busy = vblk_busy,
	.start_queue = vblk_start_queue,
	.stop_queue = vblk_stop_queue,
};

static void put_le32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

/*
 * The block geometry the guest sees: blk_size is its logical block, the
 * smallest unit Linux then reads and writes.  That stays 512 unless
 * O_DIRECT wants more (cache=none on a 4 KiB-sector host) or the command
 * line says otherwise, since a guest's partitions and file systems may
 * depend on it (a 1 KiB ext4, a GPT made with 512-byte sectors).  The
 * host's physical block and I/O sizes go into the topology, which Linux
 * follows without changing its logical block.
 */
static void vblk_config_geometry(struct vblk *s, const struct blk_device_cfg *cfg)
{
	struct blk_file_info fi, *f = &fi;

	blk_file_info(s->file, f);
	unsigned lbs = cfg->logical_block_size ? cfg->logical_block_size :
		       f->direct ? f->align : SECTOR_SIZE;
	unsigned pbs = cfg->physical_block_size ? cfg->physical_block_size :
		       f->pbs > lbs ? f->pbs : lbs;
	unsigned exp = 0, dalign = (f->lbs > lbs ? f->lbs : lbs) / SECTOR_SIZE;
	uint16_t min_io = htole16((uint16_t)(f->io_min / lbs > 0xffff ? 0 : f->io_min / lbs));

	while ((lbs << (exp + 1)) <= pbs && exp < 15)
		exp++;
	put_le32(s->config + CFG_BLK_SIZE, lbs);
	s->config[CFG_PHYS_BLOCK_EXP] = (uint8_t)exp;
	s->config[CFG_ALIGN_OFFSET] = 0;
	memcpy(s->config + CFG_MIN_IO_SIZE, &min_io, 2);
	put_le32(s->config + CFG_OPT_IO_SIZE, f->io_opt / lbs);
	put_le32(s->config + CFG_DISCARD_ALIGN,
		 dalign > VBLK_DISCARD_ALIGN ? dalign : VBLK_DISCARD_ALIGN);
}

static void vblk_config_init(struct vblk *s, const struct blk_device_cfg *cfg)
{
	uint64_t cap = htole64(s->capacity);
	uint16_t nq = htole16((uint16_t)s->nq);

	s->seg_max = cfg->queue_size > 2 ? cfg->queue_size - 2 : 1;
	memcpy(s->config + CFG_CAPACITY, &cap, 8);
	put_le32(s->config + CFG_SIZE_MAX, VBLK_SIZE_MAX);
	put_le32(s->config + CFG_SEG_MAX, s->seg_max);
	vblk_config_geometry(s, cfg);
	memcpy(s->config + CFG_NUM_QUEUES, &nq, 2);
	put_le32(s->config + CFG_MAX_DISCARD_SECTORS, VBLK_MAX_ZERO_SECTORS);
	put_le32(s->config + CFG_MAX_DISCARD_SEG, VBLK_MAX_ZERO_SEG);
	put_le32(s->config + CFG_MAX_WZ_SECTORS, VBLK_MAX_ZERO_SECTORS);
	put_le32(s->config + CFG_MAX_WZ_SEG, VBLK_MAX_ZERO_SEG);
	s->config[CFG_WZ_MAY_UNMAP] = 1;
}

static uint64_t vblk_features(const struct vblk *s, const struct blk_device_cfg *cfg)
{
	uint64_t f = 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_BLK_F_SIZE_MAX |
		     1ull << VIRTIO_BLK_F_SEG_MAX | 1ull << VIRTIO_BLK_F_BLK_SIZE |
		     1ull << VIRTIO_BLK_F_TOPOLOGY |
		     1ull << VIRTIO_BLK_F_FLUSH | 1ull << VIRTIO_BLK_F_DISCARD |
		     1ull << VIRTIO_BLK_F_WRITE_ZEROES;

	if (s->readonly)
		f |= 1ull << VIRTIO_BLK_F_RO;
	if (s->nq > 1)
		f |= 1ull << VIRTIO_BLK_F_MQ;
	return f | virtio_ring_features(&cfg->ring);
}

static int vblk_queue_init(struct vblk *s, unsigned i, enum blk_aio aio,
			   const struct blk_device_cfg *cfg)
{
	bool poll = cfg->poll_us != 0;
	bool timer = cfg->irq_coalesce_us || cfg->irq_interval_us;
	struct vblk_queue *q = &s->q[i];
	struct iothread_poller poller = {
		.ready = virtio_server_poll_ready, .run = vblk_serve,
		.quiesce = virtio_server_poll_quiesce, .opaque = &q->sv,
	};

	q->s = s;
	q->idx = i;
	q->t = s->t[i % s->nt];
	q->bq = blk_queue_new(s->file, q->t, aio);
	if (!q->bq)
		return -1;
	blk_queue_set_batch_done(q->bq, vblk_batch_done, q);
	q->coalesce_ns = (uint64_t)cfg->irq_coalesce_us * 1000;
	q->interval_ns = (uint64_t)cfg->irq_interval_us * 1000;
	if (timer)
		q->irq_timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if ((timer && (q->irq_timer_fd < 0 ||
			     iothread_add_fd(q->t, q->irq_timer_fd, vblk_irq_timer_handler, q) < 0)) ||
	    iothread_add_event(q->t, s->vdev.queues[i].kick_fd, vblk_serve, &q->sv) < 0 ||
	    (poll && iothread_add_poller(q->t, &poller) < 0)) {
		error_report("virtio-blk %s: cannot set up queue %u: %s",
			     s->vdev.name, i, strerror(errno));
		return -1;
	}
	return 0;
}

static int vblk_threads_init(struct vblk *s, const struct blk_device_cfg *cfg)
{
	assert(cfg->iothreads > 0);	/* the command line defaults it to 1 */
	s->nt = cfg->iothreads;
	assert(s->nt <= s->nq);		/* blk_drives_open() refused more */
	s->t = calloc(s->nt, sizeof(*s->t));
	if (!s->t)
		return -1;
	for (unsigned j = 0; j < s->nt; j++) {
		char name[16];

		snprintf(name, sizeof(name), "vblk%u", j);
		s->t[j] = iothread_new(name);
		if (!s->t[j])
			return -1;
		iothread_set_poll_max(s->t[j], (uint64_t)cfg->poll_us * 1000);
	}
	return 0;
}

/* Leaves the I/O thread running: it may serve other queues. */
static void vblk_queue_destroy(struct vblk_queue *q)
{
	if (!q->t)
		return;
	iothread_del_poller(q->t, &q->sv);
	if (q->kick_fd >= 0)
		iothread_del_fd(q->t, q->kick_fd);
	if (q->s->vdev_ready)
		iothread_del_fd(q->t, q->s->vdev.queues[q->idx].kick_fd);
	if (q->irq_timer_fd >= 0)
		iothread_del_fd(q->t, q->irq_timer_fd);
	virtio_server_close(&q->sv);
	/* Runs the callbacks of everything in flight: they only free. */
	blk_queue_free(q->bq);
	if (q->irq_timer_fd >= 0)
		close(q->irq_timer_fd);
}

void vblk_destroy(struct vblk *s)
{
	if (!s)
		return;
	/*
	 * The guest (or front end) can no longer reach it; a transport's
	 * requests in flight complete first, then its memory goes.
	 */
	virtio_unplug(s->plug);
	if (s->vdev_ready) {
		pthread_mutex_lock(&s->vdev.lock);
		vblk_reset(&s->vdev);
		pthread_mutex_unlock(&s->vdev.lock);
	}
	for (unsigned i = 0; s->q && i < s->nq; i++) {
		vblk_queue_destroy(&s->q[i]);
		virtio_server_destroy(&s->q[i].sv);
	}
	for (unsigned j = 0; s->t && j < s->nt; j++)
		if (s->t[j])
			iothread_free(s->t[j]);
	free(s->t);
	free(s->q);
	if (s->vdev_ready)
		virtio_device_destroy(&s->vdev);
	if (s->file) {
		struct blk_file_info fi;

		blk_file_info(s->file, &fi);
		if (blk_file_flush(s->file) < 0)
			error_report("%s: flush failed: %s", fi.path, strerror(errno));
		blk_file_close(s->file);
	}
	free(s);
}

/* num-queues as the device will have it: without num-queues=, the vCPU count. */
static unsigned vblk_queues(const struct blk_device_cfg *dc, unsigned ncpus)
{
	unsigned n = dc->num_queues ? dc->num_queues : ncpus;

	return n < 1 ? 1 : n > VBLK_MAX_QUEUES ? VBLK_MAX_QUEUES : n;
}

struct vblk *vblk_create(const struct guest_mem *mem, unsigned ncpus, struct blk_file *file,
			 const struct blk_drive_cfg *d, const struct blk_device_cfg *cfg,
			 struct virtio_plug *plug)
{
	struct vblk *s = calloc(1, sizeof(*s));
	struct blk_file_info fi;

	assert(plug && file);
	if (!s) {
		error_report("virtio-blk %s: out of memory", d->file);
		blk_file_close(file);
		virtio_unplug(plug);
		return NULL;
	}
	s->plug = plug;
	s->now_ns = clock_now_ns;
	s->file = file;
	blk_file_info(s->file, &fi);
	/* Opened read-only for readonly=on and for an export without writable=on. */
	s->readonly = fi.readonly;
	s->capacity = fi.size >> SECTOR_SHIFT;
	s->nq = vblk_queues(cfg, ncpus);
	memcpy(s->serial, cfg->serial, strnlen(cfg->serial, VBLK_SERIAL_LEN));
	if (cfg->physical_block_size && cfg->physical_block_size < fi.align &&
	    !cfg->logical_block_size) {
		error_report("virtio-blk %s: physical_block_size=%u is smaller than the "
			     "logical block cache=none needs here (%u)", d->file,
			     cfg->physical_block_size, fi.align);
		goto fail;
	}
	vblk_config_init(s, cfg);
	if (virtio_device_init(&s->vdev, VIRTIO_ID_BLOCK, vblk_features(s, cfg),
			       VBLK_CONFIG_LEN, s->nq, (uint16_t)cfg->queue_size,
			       mem ? mem : &s->shared_mem, &vblk_ops, s) < 0) {
		error_report("virtio-blk %s: cannot create the device", d->file);
		goto fail;
	}
	s->vdev_ready = true;
	s->vdev.name = fi.path;
	s->q = calloc(s->nq, sizeof(*s->q));
	if (!s->q)
		goto fail;
	for (unsigned i = 0; i < s->nq; i++) {
		s->q[i].s = s;
		s->q[i].irq_timer_fd = -1;
		s->q[i].kick_fd = -1;
		vblk_server_init(&s->q[i], i, cfg->queue_size);
	}
	if (vblk_threads_init(s, cfg) < 0)
		goto fail;
	for (unsigned i = 0; i < s->nq; i++)
		if (vblk_queue_init(s, i, d->aio, cfg) < 0)
			goto fail;
	for (unsigned j = 0; j < s->nt; j++) {
		if (iothread_start(s->t[j]) < 0) {
			error_report("virtio-blk %s: cannot start I/O thread %u: %s",
				     s->vdev.name, j, strerror(errno));
			goto fail;
		}
	}
	if (virtio_plug(s->plug, &s->vdev, &s->shared_mem) < 0)
		goto fail;
	return s;
fail:
	vblk_destroy(s);
	return NULL;
}

static struct blk_file *drive_open(const struct blk_drive_cfg *d)
{
	char label[PATH_MAX + 16];
	struct blk_file_opts o = {
		.path = d->file, .label = label,
		.ro_hint = "readonly=on opens it read-only",
		.readonly = d->readonly, .cache = d->cache, .snapshot = d->snapshot,
		.lock = d->locking, .probe = !d->format_given,
	};

	snprintf(label, sizeof(label), "-drive file=%s", d->file);
	return blk_file_open(&o);
}

/* What blk_drives_open() checks but the -chardev sockets (an export may be about to make one). */
int blk_drives_open_files(struct blk_cmdline *c, unsigned ncpus)
{
	for (unsigned i = 0; i < c->nr_devs; i++) {
		const struct blk_device_cfg *dc = c->devs[i];
		unsigned nq = vblk_queues(dc, ncpus);

		/* An export's num-queues is its own: checked as it was parsed. */
		if (!dc->socket_path && dc->iothreads > nq) {
			error_report("-device virtio-blk-pci: iothreads=%u exceeds "
				     "num-queues=%u%s", dc->iothreads, nq,
				     dc->num_queues ? "" : " (the vCPU count)");
			return -1;
		}
	}
	for (unsigned i = 0; i < c->nr_drives; i++) {
		struct blk_drive_cfg *d = &c->drives[i];

		if (!d->f && !(d->f = drive_open(d)))
			return -1;
	}
	return 0;
}

int blk_drives_open(struct blk_cmdline *c, unsigned ncpus)
{
	return vublk_chardevs_check(c) < 0 ? -1 : blk_drives_open_files(c, ncpus);
}

void blk_device_set_clock(struct blk_cmdline *c, unsigned i, uint64_t (*now_ns)(void))
{
	assert(i < c->nr_devs);
	struct vblk *s = c->devs[i]->dev;

	assert(s && !(s->vdev.status & VIRTIO_CONFIG_S_DRIVER_OK));
	s->now_ns = now_ns;
}

int blk_device_irq_timer_fd(struct blk_cmdline *c, unsigned i, unsigned q)
{
	assert(i < c->nr_devs);
	struct vblk *s = c->devs[i]->dev;

	assert(s && q < s->nq);
	return s->q[q].irq_timer_fd;
}
