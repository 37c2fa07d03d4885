// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vhost-user back-end transport (QEMU's docs/interop/vhost-user.rst).
 *
 * The front-end's messages are handled one at a time on a control thread
 * (an iothread with the listening or the connected socket).  They program
 * the virtio core as a driver's register writes would, under vdev->lock;
 * the rings themselves are served by the device's own I/O threads,
 * started and stopped queue by queue with start_queue and stop_queue,
 * which are called without the lock because stopping waits for the I/O
 * threads to finish what they took.
 *
 * A ring goes through three steps.  Configured: size, addresses and base
 * given.  Started: its kick eventfd arrived, so its addresses were
 * translated (front-end user addresses -> guest-physical, through the
 * memory table) and checked by virtqueue_enable().  Running: started and
 * enabled (SET_VRING_ENABLE, or always without protocol features); the
 * device serves it.  GET_VRING_BASE takes a ring back to configured,
 * with every request it had taken completed.
 *
 * The call, error and kick fds must be eventfds, and are made
 * non-blocking: a front-end that never reads its call eventfd must not
 * stall an I/O thread in write().
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include "hw/virtio/vhost-user-backend.h"
#include "hw/virtio/vhost-user.h"
#include "hw/virtio/virtio-plug.h"
#include "util/guest-mem.h"
#include "util/iothread.h"
#include "util/log.h"
#include "virtio/virtio.h"
#include "virtio/virtio_ring.h"

#define F(bit) (1ull << (bit))
/* A message that has begun must be whole within this; so must a reply fit. */
#define VU_TIMEOUT_MS 10000
#define VU_PROTOCOL_FEATURES (F(VHOST_USER_PROTOCOL_F_MQ) |		\
			      F(VHOST_USER_PROTOCOL_F_REPLY_ACK) |	\
			      F(VHOST_USER_PROTOCOL_F_CONFIG) |		\
			      F(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD) |	\
			      F(VHOST_USER_PROTOCOL_F_RESET_DEVICE))

struct vu_ring {
	int kick_fd, call_fd, err_fd;	/* -1: none; call/err under vdev->lock */
	uint32_t num;			/* 0: not given */
	uint64_t desc, avail, used;	/* the front-end's user addresses */
	bool addr_set;
	uint32_t base;
	bool base_set;
	bool enabled;
	bool started;
	bool running;
	struct vq_inflight ifl;		/* its part of the inflight region, if any */
};

struct vu_backend {
	struct virtio_device *vdev;
	struct guest_mem *mem;
	struct iothread *t;
	char *path;			/* NULL: no listening socket */
	int listen_fd;
	bool listening;			/* listen_fd is on t */
	int conn_fd;			/* -1: nobody connected */
	int fault_fd;			/* eventfd: the front-end's memory shrank */
	int lock_fd;			/* flock held on lock_path: the socket is ours */
	char *lock_path;
	dev_t sock_dev;			/* the socket we made, to remove only it */
	ino_t sock_ino;
	uint64_t features;		/* SET_FEATURES, protocol bit included */
	bool features_set;
	uint64_t protocol_features;
	struct vu_ring *rings;
	/* GET/SET_INFLIGHT_FD: one part per ring, stride bytes apart */
	uint8_t *ifl_map;
	size_t ifl_len;
	size_t ifl_stride;
	unsigned ifl_queues;
};

/* ---- signalling the front-end (called with vdev->lock held) ---- */

static void vu_signal(int fd)
{
	uint64_t one = 1;
	ssize_t r;

	/* EAGAIN: the counter is already that full, the reader will wake. */
	do
		r = write(fd, &one, sizeof(one));
	while (r < 0 && errno == EINTR);
}

static void vu_notify_queue(struct virtio_device *vdev, unsigned q)
{
	struct vu_backend *vu = vdev->transport_opaque;

	if (vu->rings[q].call_fd >= 0)
		vu_signal(vu->rings[q].call_fd);
}

/* The only config interrupt brisk raises is NEEDS_RESET: tell the error fds. */
static void vu_notify_config(struct virtio_device *vdev)
{
	struct vu_backend *vu = vdev->transport_opaque;

	if (!vdev->broken)
		return;
	for (unsigned i = 0; i < vdev->nr_queues; i++)
		if (vu->rings[i].err_fd >= 0)
			vu_signal(vu->rings[i].err_fd);
}

static const struct virtio_transport_ops vu_transport_ops = {
	.notify_queue = vu_notify_queue,
	.notify_config = vu_notify_config,
};

/* ---- rings ---- */

/* An eventfd, made non-blocking; -1 with *e for any other kind of fd. */
static int vu_check_eventfd(int fd, const char *what, unsigned i, struct vhost_user_err *e)
{
	char link[64], target[32];
	ssize_t n;
	int fl;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0 || (target[n] = '\0', strcmp(target, "anon_inode:[eventfd]")))
		return vhost_user_fail(e, "ring %u: the %s fd is not an eventfd", i, what);
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return vhost_user_fail(e, "ring %u: %s fd: %s", i, what, strerror(errno));
	return 0;
}

static bool vu_protocol_negotiated(const struct vu_backend *vu)
{
	return vu->features & F(VHOST_USER_F_PROTOCOL_FEATURES);
}

/*
 * Puts the configured ring into the virtio core: addresses through the
 * memory table, then virtqueue_enable()'s checks, then the base.
 */
static int vu_ring_setup(struct vu_backend *vu, unsigned i, struct vhost_user_err *e)
{
	struct virtio_device *vdev = vu->vdev;
	struct virtio_queue *q = &vdev->queues[i];
	struct vu_ring *r = &vu->rings[i];
	bool packed = vu->features & F(VIRTIO_F_RING_PACKED);
	uint64_t desc, avail, used, dlen, alen, ulen;
	const char *why = NULL;
	int ret;

	if (!vu->features_set)
		return vhost_user_fail(e, "ring %u started before SET_FEATURES", i);
	if (!vu->mem->nr_regions)
		return vhost_user_fail(e, "ring %u started before SET_MEM_TABLE", i);
	if (!r->num || !r->addr_set)
		return vhost_user_fail(e, "ring %u started before its size and addresses", i);
	dlen = packed ? 16ull * r->num : vring_split_desc_size(r->num);
	alen = packed ? sizeof(struct vring_packed_desc_event) : vring_split_avail_size(r->num);
	ulen = packed ? sizeof(struct vring_packed_desc_event) : vring_split_used_size(r->num);
	if (!guest_mem_uva_to_gpa(vu->mem, r->desc, dlen, &desc) ||
	    !guest_mem_uva_to_gpa(vu->mem, r->avail, alen, &avail) ||
	    !guest_mem_uva_to_gpa(vu->mem, r->used, ulen, &used))
		return vhost_user_fail(e, "ring %u: addresses outside the memory table", i);
	pthread_mutex_lock(&vdev->lock);
	q->vq.num = (uint16_t)r->num;
	q->vq.desc_addr = desc;
	q->vq.driver_addr = avail;
	q->vq.device_addr = used;
	ret = virtio_queue_enable(vdev, i);
	if (ret == 0 && r->base_set && virtqueue_set_base(&q->vq, r->base) < 0) {
		virtio_queue_disable(vdev, i);
		ret = -2;
	}
	if (ret == 0 && vu->ifl_map && i < vu->ifl_queues &&
	    (why = virtqueue_inflight_attach(&q->vq, &r->ifl, vu->ifl_map + i * vu->ifl_stride,
					     vu->ifl_stride))) {
		virtio_queue_disable(vdev, i);
		ret = -3;
	}
	pthread_mutex_unlock(&vdev->lock);
	if (ret == -3)
		return vhost_user_fail(e, "ring %u: %s", i, why);
	if (ret == -2)
		return vhost_user_fail(e, "ring %u: base %#x beyond a %u-entry ring", i,
				       r->base, r->num);
	if (ret < 0)
		return vhost_user_fail(e, "ring %u: size %u or addresses (desc %#llx, avail "
				       "%#llx, used %#llx) wrong for a %s ring", i, r->num,
				       (unsigned long long)desc, (unsigned long long)avail,
				       (unsigned long long)used, packed ? "packed" : "split");
	r->started = true;
	return 0;
}

/* Runs the ring exactly when it is started and enabled. */
static int vu_ring_update(struct vu_backend *vu, unsigned i, struct vhost_user_err *e)
{
	struct virtio_device *vdev = vu->vdev;
	struct vu_ring *r = &vu->rings[i];
	bool want = r->started && (r->enabled || !vu_protocol_negotiated(vu));

	if (want == r->running)
		return 0;
	if (!want) {
		vdev->ops->stop_queue(vdev, i);
		r->running = false;
		return 0;
	}
	if (vdev->ops->start_queue(vdev, i, r->kick_fd) < 0)
		return vhost_user_fail(e, "ring %u: cannot start: %s", i, strerror(errno));
	r->running = true;
	/*
	 * A back-end that died may have published used buffers before it
	 * could signal them: after a region is taken up, one interrupt, if
	 * perhaps for nothing, so that the driver looks.
	 */
	pthread_mutex_lock(&vdev->lock);
	if (r->ifl.taken_up && vdev->queues[i].vq.ifl == &r->ifl && r->call_fd >= 0)
		vu_signal(r->call_fd);
	r->ifl.taken_up = false;
	pthread_mutex_unlock(&vdev->lock);
	return 0;
}

/*
 * Back to configured: the device finishes what it took, the position is
 * kept as the base a restart continues from.  The kick fd stays.
 */
static void vu_ring_down(struct vu_backend *vu, unsigned i)
{
	struct virtio_device *vdev = vu->vdev;
	struct vu_ring *r = &vu->rings[i];

	if (r->running) {
		vdev->ops->stop_queue(vdev, i);
		r->running = false;
	}
	if (!r->started)
		return;
	pthread_mutex_lock(&vdev->lock);
	r->base = virtqueue_get_base(&vdev->queues[i].vq);
	r->base_set = true;
	virtio_queue_disable(vdev, i);
	pthread_mutex_unlock(&vdev->lock);
	r->started = false;
}

static void vu_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Down, fds closed, configuration forgotten: the state of a new connection. */
static void vu_ring_clear(struct vu_backend *vu, unsigned i)
{
	struct vu_ring *r = &vu->rings[i];
	int call, err;

	vu_ring_down(vu, i);
	vu_close(&r->kick_fd);
	pthread_mutex_lock(&vu->vdev->lock);
	call = r->call_fd;
	err = r->err_fd;
	*r = (struct vu_ring){ .kick_fd = -1, .call_fd = -1, .err_fd = -1 };
	pthread_mutex_unlock(&vu->vdev->lock);
	vu_close(&call);
	vu_close(&err);
}

/* RESET_DEVICE, and the first step of a disconnect. */
static void vu_inflight_unmap(struct vu_backend *vu)
{
	if (vu->ifl_map)
		munmap(vu->ifl_map, vu->ifl_len);
	vu->ifl_map = NULL;
	vu->ifl_len = vu->ifl_stride = 0;
	vu->ifl_queues = 0;
}

static void vu_reset_device(struct vu_backend *vu)
{
	struct virtio_device *vdev = vu->vdev;

	for (unsigned i = 0; i < vdev->nr_queues; i++)
		vu_ring_clear(vu, i);
	/* No ring points into the region any more. */
	vu_inflight_unmap(vu);
	pthread_mutex_lock(&vdev->lock);
	virtio_set_status(vdev, 0);
	/* Every ring was stopped: nothing of the device's is in flight. */
	assert(!vdev->resetting);
	pthread_mutex_unlock(&vdev->lock);
	vu->features = 0;
	vu->features_set = false;
}

static bool vu_any_started(const struct vu_backend *vu)
{
	for (unsigned i = 0; i < vu->vdev->nr_queues; i++)
		if (vu->rings[i].started)
			return true;
	return false;
}

/* ---- messages ---- */

static int vu_reply(struct vu_backend *vu, const struct vhost_user_msg *req,
		    const void *payload, uint32_t size, struct vhost_user_err *e)
{
	struct vhost_user_msg r;

	vhost_user_msg_init(&r, req->hdr.request, VHOST_USER_FLAG_REPLY, size);
	if (size)
		memcpy(&r.payload, payload, size);
	return vhost_user_send(vu->conn_fd, &r, NULL, 0, VU_TIMEOUT_MS, e);
}

static int vu_reply_u64(struct vu_backend *vu, const struct vhost_user_msg *req,
			uint64_t v, struct vhost_user_err *e)
{
	return vu_reply(vu, req, &v, sizeof(v), e);
}

static struct vu_ring *vu_ring_arg(struct vu_backend *vu, const struct vhost_user_msg *m,
				   uint32_t index, struct vhost_user_err *e)
{
	if (index >= vu->vdev->nr_queues) {
		vhost_user_fail(e, "%s: ring %u, but the device has %u",
				vhost_user_request_name(m->hdr.request), index,
				vu->vdev->nr_queues);
		return NULL;
	}
	return &vu->rings[index];
}

static int vu_set_features(struct vu_backend *vu, const struct vhost_user_msg *m,
			   struct vhost_user_err *e)
{
	struct virtio_device *vdev = vu->vdev;
	uint64_t f = m->payload.u64;
	uint64_t offered = vdev->host_features | F(VHOST_USER_F_PROTOCOL_FEATURES);
	bool ok;

	if (f & ~offered)
		return vhost_user_fail(e, "SET_FEATURES %#llx: bits %#llx were not offered",
				       (unsigned long long)f, (unsigned long long)(f & ~offered));
	if (vu_any_started(vu)) {
		if (vu->features_set && f == vu->features)
			return 0;
		return vhost_user_fail(e, "SET_FEATURES changes the features of running rings");
	}
	/* Renegotiation starts the device over, as a driver's reset does. */
	pthread_mutex_lock(&vdev->lock);
	virtio_set_status(vdev, 0);
	assert(!vdev->resetting);	/* no ring started: nothing in flight */
	ok = virtio_set_features(vdev, f & ~F(VHOST_USER_F_PROTOCOL_FEATURES));
	if (ok)
		virtio_set_status(vdev, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
				  VIRTIO_CONFIG_S_FEATURES_OK);
	pthread_mutex_unlock(&vdev->lock);
	if (!ok)
		return vhost_user_fail(e, "SET_FEATURES %#llx without VIRTIO_F_VERSION_1: "
				       "brisk serves no legacy driver", (unsigned long long)f);
	vu->features = f;
	vu->features_set = true;
	return 0;
}

/*
 * A new table while rings run (memory hotplug): they stop, with what they
 * took finished, the table is swapped and they start again where they
 * were.  On any error the old regions are gone too and the connection ends.
 */
static int vu_set_mem_table(struct vu_backend *vu, struct vhost_user_msg *m,
			    struct vhost_user_err *e)
{
	const struct vhost_user_mem_table *t = &m->payload.mem;
	unsigned n = vu->vdev->nr_queues;
	bool was[64];

	for (unsigned i = 0; i < n; i++) {
		was[i] = vu->rings[i].started;
		vu_ring_down(vu, i);
	}
	guest_mem_unmap(vu->mem);
	for (unsigned i = 0; i < t->nregions; i++) {
		const struct vhost_user_region *r = &t->region[i];
		const char *why;

		if (guest_mem_map_fd(vu->mem, r->gpa, r->size, r->uva, m->fds[i],
				     r->mmap_offset, vu->fault_fd, &why) < 0) {
			guest_mem_unmap(vu->mem);
			return vhost_user_fail(e, "SET_MEM_TABLE region %u (gpa %#llx, size "
					       "%#llx): %s", i, (unsigned long long)r->gpa,
					       (unsigned long long)r->size, why);
		}
	}
	for (unsigned i = 0; i < n; i++)
		if (was[i] && (vu_ring_setup(vu, i, e) < 0 || vu_ring_update(vu, i, e) < 0))
			return -1;
	return 0;
}

/* SET_VRING_KICK/CALL/ERR: the ring, and its fd (-1 for NOFD). */
static struct vu_ring *vu_vring_fd(struct vu_backend *vu, struct vhost_user_msg *m,
				   const char *what, int *fd, struct vhost_user_err *e)
{
	uint64_t v = m->payload.u64;
	struct vu_ring *r;

	*fd = -1;
	if (v & ~(uint64_t)(VHOST_USER_VRING_IDX_MASK | VHOST_USER_VRING_NOFD)) {
		vhost_user_fail(e, "%s: unknown bits in %#llx",
				vhost_user_request_name(m->hdr.request), (unsigned long long)v);
		return NULL;
	}
	r = vu_ring_arg(vu, m, v & VHOST_USER_VRING_IDX_MASK, e);
	if (!r || (v & VHOST_USER_VRING_NOFD))
		return r;
	if (vu_check_eventfd(m->fds[0], what, (unsigned)(r - vu->rings), e) < 0)
		return NULL;
	*fd = vhost_user_take_fd(m, 0);
	return r;
}

static int vu_set_vring_kick(struct vu_backend *vu, struct vhost_user_msg *m,
			     struct vhost_user_err *e)
{
	struct vu_ring *r;
	unsigned i;
	int fd;

	r = vu_vring_fd(vu, m, "kick", &fd, e);
	if (!r)
		return -1;
	i = (unsigned)(r - vu->rings);
	if (fd < 0)
		return vhost_user_fail(e, "SET_VRING_KICK: ring %u without a kick fd "
				       "(polling) is not supported", i);
	/* A new kick fd (re)starts the ring, from where it stood. */
	vu_ring_down(vu, i);
	vu_close(&r->kick_fd);
	r->kick_fd = fd;
	if (vu_ring_setup(vu, i, e) < 0)
		return -1;
	return vu_ring_update(vu, i, e);
}

static int vu_set_vring_signal(struct vu_backend *vu, struct vhost_user_msg *m,
			       bool call, struct vhost_user_err *e)
{
	int fd, old;
	struct vu_ring *r = vu_vring_fd(vu, m, call ? "call" : "error", &fd, e);

	/* No fd: the front-end polls the used ring itself. */
	if (!r)
		return -1;
	pthread_mutex_lock(&vu->vdev->lock);
	old = call ? r->call_fd : r->err_fd;
	if (call)
		r->call_fd = fd;
	else
		r->err_fd = fd;
	pthread_mutex_unlock(&vu->vdev->lock);
	vu_close(&old);
	return 0;
}

static int vu_get_vring_base(struct vu_backend *vu, const struct vhost_user_msg *m,
			     struct vhost_user_err *e)
{
	struct vhost_user_vring_state st = m->payload.state;
	struct vu_ring *r = vu_ring_arg(vu, m, st.index, e);

	if (!r)
		return -1;
	vu_ring_down(vu, st.index);
	vu_close(&r->kick_fd);
	st.num = r->base;
	return vu_reply(vu, m, &st, sizeof(st), e);
}

/* SET_VRING_NUM, _ADDR, _BASE: only while the ring is not started. */
static int vu_configure_ring(struct vu_backend *vu, const struct vhost_user_msg *m,
			     struct vhost_user_err *e)
{
	const char *name = vhost_user_request_name(m->hdr.request);
	uint32_t index = m->hdr.request == VHOST_USER_SET_VRING_ADDR ?
			 m->payload.addr.index : m->payload.state.index;
	struct vu_ring *r = vu_ring_arg(vu, m, index, e);
	uint32_t num = m->payload.state.num;

	if (!r)
		return -1;
	if (r->started)
		return vhost_user_fail(e, "%s: ring %u is running", name, index);
	switch (m->hdr.request) {
	case VHOST_USER_SET_VRING_NUM:
		if (num == 0 || num > vu->vdev->queues[index].max_size)
			return vhost_user_fail(e, "SET_VRING_NUM: ring %u size %u (1 to %u)",
					       index, num, vu->vdev->queues[index].max_size);
		r->num = num;
		return 0;
	case VHOST_USER_SET_VRING_BASE:
		r->base = num;
		r->base_set = true;
		return 0;
	default:
		/* Logging (VHOST_VRING_F_LOG) needs LOG_ALL, never offered. */
		if (m->payload.addr.flags)
			return vhost_user_fail(e, "SET_VRING_ADDR: ring %u flags %#x", index,
					       m->payload.addr.flags);
		r->desc = m->payload.addr.desc;
		r->avail = m->payload.addr.avail;
		r->used = m->payload.addr.used;
		r->addr_set = true;
		return 0;
	}
}

static int vu_set_vring_enable(struct vu_backend *vu, const struct vhost_user_msg *m,
			       struct vhost_user_err *e)
{
	struct vu_ring *r = vu_ring_arg(vu, m, m->payload.state.index, e);

	if (!r)
		return -1;
	if (!vu_protocol_negotiated(vu))
		return vhost_user_fail(e, "SET_VRING_ENABLE without VHOST_USER_F_PROTOCOL_FEATURES");
	if (m->payload.state.num > 1)
		return vhost_user_fail(e, "SET_VRING_ENABLE: ring %u state %u",
				       m->payload.state.index, m->payload.state.num);
	r->enabled = m->payload.state.num;
	return vu_ring_update(vu, m->payload.state.index, e);
}

/* The spec's answer to a config range brisk cannot serve is an empty reply. */
static int vu_config(struct vu_backend *vu, const struct vhost_user_msg *m,
		     struct vhost_user_err *e)
{
	struct virtio_device *vdev = vu->vdev;
	struct vhost_user_config c = m->payload.config;
	bool fits = c.offset <= VHOST_USER_MAX_CONFIG &&
		    c.size <= VHOST_USER_MAX_CONFIG - c.offset;

	if (m->hdr.request == VHOST_USER_SET_CONFIG) {
		if (!fits || c.flags > 1)
			return vhost_user_fail(e, "SET_CONFIG: offset %u size %u flags %#x",
					       c.offset, c.size, c.flags);
		pthread_mutex_lock(&vdev->lock);
		if (vdev->ops->write_config)
			vdev->ops->write_config(vdev, c.offset, c.data, c.size);
		pthread_mutex_unlock(&vdev->lock);
		return 0;
	}
	if (!fits)
		return vu_reply(vu, m, &c, 0, e);
	memset(c.data, 0, sizeof(c.data));
	pthread_mutex_lock(&vdev->lock);
	if (vdev->ops->read_config)
		vdev->ops->read_config(vdev, c.offset, c.data, c.size);
	pthread_mutex_unlock(&vdev->lock);
	return vu_reply(vu, m, &c, VHOST_USER_CONFIG_HDR_SIZE + c.size, e);
}

/* The ring parts of an inflight region: each big enough for queue_size. */
static int vu_inflight_check(const struct vu_backend *vu, const struct vhost_user_inflight *in,
			     uint64_t size, const char *what, struct vhost_user_err *e)
{
	if (!in->num_queues || in->num_queues > vu->vdev->nr_queues || !in->queue_size ||
	    in->queue_size > VIRTQUEUE_MAX_SIZE)
		return vhost_user_fail(e, "%s: %u queues of %u entries", what, in->num_queues,
				       in->queue_size);
	if (size / in->num_queues < virtqueue_inflight_size(in->queue_size))
		return vhost_user_fail(e, "%s: %llu bytes are too few for %u rings of %u",
				       what, (unsigned long long)size, in->num_queues,
				       in->queue_size);
	return 0;
}

/* Takes region (len bytes, rings stride apart) for the rings to start. */
static void vu_inflight_take(struct vu_backend *vu, void *region, size_t len, size_t stride,
			     unsigned queues)
{
	vu_inflight_unmap(vu);
	vu->ifl_map = region;
	vu->ifl_len = len;
	vu->ifl_stride = stride;
	vu->ifl_queues = queues;
}

/*
 * GET_INFLIGHT_FD: a zeroed region, sealed so that no one can shrink it
 * under a ring that writes it, in a memfd the front-end keeps for the
 * next back-end after a crash of this one.
 */
static int vu_get_inflight(struct vu_backend *vu, const struct vhost_user_msg *m,
			   struct vhost_user_err *e)
{
	struct vhost_user_inflight in = m->payload.inflight;
	struct vhost_user_msg r;
	size_t stride, len;
	void *p;
	int fd, ret;

	if (vu_any_started(vu))
		return vhost_user_fail(e, "GET_INFLIGHT_FD while rings run");
	if (vu_inflight_check(vu, &in, UINT64_MAX, "GET_INFLIGHT_FD", e) < 0)
		return -1;
	/* Each ring's part on a cache line of its own, as other back-ends lay them. */
	stride = (virtqueue_inflight_size(in.queue_size) + 63) & ~(size_t)63;
	len = stride * in.num_queues;
	fd = memfd_create("brisk-inflight", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
	    (p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		ret = vhost_user_fail(e, "GET_INFLIGHT_FD: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	vu_inflight_take(vu, p, len, stride, in.num_queues);
	in.mmap_size = len;
	in.mmap_offset = 0;
	vhost_user_msg_init(&r, m->hdr.request, VHOST_USER_FLAG_REPLY, sizeof(in));
	r.payload.inflight = in;
	ret = vhost_user_send(vu->conn_fd, &r, &fd, 1, VU_TIMEOUT_MS, e);
	close(fd);
	return ret;
}

/*
 * SET_INFLIGHT_FD: the region a front-end kept, perhaps from a back-end
 * that crashed.  It must not shrink under our writes: sealed so, or
 * sealed now.  What it holds is checked as each ring starts.
 */
static int vu_set_inflight(struct vu_backend *vu, struct vhost_user_msg *m,
			   struct vhost_user_err *e)
{
	const struct vhost_user_inflight *in = &m->payload.inflight;
	int fd = m->fds[0], seals = fcntl(fd, F_GET_SEALS);
	struct statfs fs;
	struct stat st;
	void *p;

	if (vu_any_started(vu))
		return vhost_user_fail(e, "SET_INFLIGHT_FD while rings run");
	if (vu_inflight_check(vu, in, in->mmap_size, "SET_INFLIGHT_FD", e) < 0)
		return -1;
	/*
	 * Written on the hot path, outside the guest-memory fault handling:
	 * a tmpfs memfd, sealed against shrinking (hugetlbfs may still fault).
	 */
	if (fstatfs(fd, &fs) < 0 || fs.f_type != TMPFS_MAGIC || seals < 0 ||
	    (!(seals & F_SEAL_SHRINK) &&
	     ((seals & F_SEAL_SEAL) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)))
		return vhost_user_fail(e, "SET_INFLIGHT_FD: the region could shrink "
				       "(not a tmpfs memfd sealed against it)");
	if ((in->mmap_size / in->num_queues) % 8)
		return vhost_user_fail(e, "SET_INFLIGHT_FD: %llu bytes do not split into %u "
				       "aligned rings", (unsigned long long)in->mmap_size,
				       in->num_queues);
	if (fstat(fd, &st) < 0 || in->mmap_offset % (uint64_t)sysconf(_SC_PAGESIZE) ||
	    in->mmap_size > (uint64_t)st.st_size || in->mmap_size > SIZE_MAX ||
	    in->mmap_offset > (uint64_t)st.st_size - in->mmap_size)
		return vhost_user_fail(e, "SET_INFLIGHT_FD: %llu bytes at %llu do not lie in "
				       "its file", (unsigned long long)in->mmap_size,
				       (unsigned long long)in->mmap_offset);
	p = mmap(NULL, in->mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)in->mmap_offset);
	if (p == MAP_FAILED)
		return vhost_user_fail(e, "SET_INFLIGHT_FD: %s", strerror(errno));
	vu_inflight_take(vu, p, in->mmap_size, in->mmap_size / in->num_queues, in->num_queues);
	return 0;
}

static int vu_dispatch(struct vu_backend *vu, struct vhost_user_msg *m,
		       struct vhost_user_err *e)
{
	struct virtio_device *vdev = vu->vdev;
	uint64_t v = m->payload.u64;

	switch (m->hdr.request) {
	case VHOST_USER_GET_FEATURES:
		return vu_reply_u64(vu, m, vdev->host_features |
				    F(VHOST_USER_F_PROTOCOL_FEATURES), e);
	case VHOST_USER_SET_FEATURES:
		return vu_set_features(vu, m, e);
	case VHOST_USER_GET_PROTOCOL_FEATURES:
		return vu_reply_u64(vu, m, VU_PROTOCOL_FEATURES, e);
	case VHOST_USER_SET_PROTOCOL_FEATURES:
		if (v & ~VU_PROTOCOL_FEATURES)
			return vhost_user_fail(e, "SET_PROTOCOL_FEATURES %#llx: bits %#llx "
					       "were not offered", (unsigned long long)v,
					       (unsigned long long)(v & ~VU_PROTOCOL_FEATURES));
		vu->protocol_features = v;
		return 0;
	case VHOST_USER_GET_QUEUE_NUM:
		return vu_reply_u64(vu, m, vdev->nr_queues, e);
	case VHOST_USER_SET_OWNER:
		return 0;
	case VHOST_USER_RESET_OWNER:	/* deprecated; the spec allows a device reset */
	case VHOST_USER_RESET_DEVICE:
		vu_reset_device(vu);
		return 0;
	case VHOST_USER_SET_MEM_TABLE:
		return vu_set_mem_table(vu, m, e);
	case VHOST_USER_SET_VRING_NUM:
	case VHOST_USER_SET_VRING_ADDR:
	case VHOST_USER_SET_VRING_BASE:
		return vu_configure_ring(vu, m, e);
	case VHOST_USER_GET_VRING_BASE:
		return vu_get_vring_base(vu, m, e);
	case VHOST_USER_SET_VRING_KICK:
		return vu_set_vring_kick(vu, m, e);
	case VHOST_USER_SET_VRING_CALL:
	case VHOST_USER_SET_VRING_ERR:
		return vu_set_vring_signal(vu, m, m->hdr.request == VHOST_USER_SET_VRING_CALL, e);
	case VHOST_USER_SET_VRING_ENABLE:
		return vu_set_vring_enable(vu, m, e);
	case VHOST_USER_GET_CONFIG:
	case VHOST_USER_SET_CONFIG:
		return vu_config(vu, m, e);
	case VHOST_USER_GET_INFLIGHT_FD:
		return vu_get_inflight(vu, m, e);
	case VHOST_USER_SET_INFLIGHT_FD:
		return vu_set_inflight(vu, m, e);
	default:
		return vhost_user_fail(e, "%s is not supported",
				       vhost_user_request_name(m->hdr.request));
	}
}

/* ---- connections ---- */

static void vu_accept(void *opaque);
static void vu_conn_ready(void *opaque);

static const char *vu_name(const struct vu_backend *vu)
{
	return vu->path ? vu->path : "(connected socket)";
}

static void vu_listen_on(struct vu_backend *vu, bool on)
{
	if (!vu->t || vu->listen_fd < 0 || on == vu->listening)
		return;
	if (on && iothread_add_fd(vu->t, vu->listen_fd, vu_accept, vu) < 0) {
		error_report("vhost-user %s: cannot listen again: %s", vu_name(vu),
			     strerror(errno));
		return;
	}
	if (!on)
		iothread_del_fd(vu->t, vu->listen_fd);
	vu->listening = on;
}

/*
 * Ends the connection: every ring stops with its requests completed and
 * answered, the device is reset and the shared memory unmapped.
 */
static void vu_disconnect(struct vu_backend *vu)
{
	if (vu->conn_fd < 0)
		return;
	if (vu->t)
		iothread_del_fd(vu->t, vu->conn_fd);
	vu_reset_device(vu);
	guest_mem_unmap(vu->mem);
	/* A fault of this front-end's memory is not the next one's. */
	(void)!read(vu->fault_fd, &(uint64_t){ 0 }, sizeof(uint64_t));
	vu->protocol_features = 0;
	/* The next front-end's first device error is news of its own. */
	pthread_mutex_lock(&vu->vdev->lock);
	vu->vdev->error_reported = false;
	pthread_mutex_unlock(&vu->vdev->lock);
	close(vu->conn_fd);
	vu->conn_fd = -1;
	vu_listen_on(vu, true);
}

/*
 * The front-end shrank a memory file it shared (one that could not be
 * sealed) and an access of ours went past its end: that access read
 * zeros (util/guest-mem.c), and the front-end's session ends here.  Its
 * disk's other users, and the daemon, go on.
 */
static void vu_memory_fault(void *opaque)
{
	struct vu_backend *vu = opaque;
	uint64_t n;

	if (read(vu->fault_fd, &n, sizeof(n)) != sizeof(n) || vu->conn_fd < 0)
		return;
	error_report("vhost-user %s: the front-end's memory shrank under a request; "
		     "closing the connection", vu_name(vu));
	vu_disconnect(vu);
}

static bool vu_ack_wanted(const struct vu_backend *vu, const struct vhost_user_msg *m)
{
	return (m->hdr.flags & VHOST_USER_FLAG_NEED_REPLY) &&
	       (vu->protocol_features & F(VHOST_USER_PROTOCOL_F_REPLY_ACK)) &&
	       !vhost_user_has_reply(m->hdr.request);
}

static void vu_conn_ready(void *opaque)
{
	struct vu_backend *vu = opaque;
	struct vhost_user_msg m;
	struct vhost_user_err e;
	int r = vhost_user_recv(vu->conn_fd, &m, VU_TIMEOUT_MS, &e);

	if (r == 0) {
		vu_disconnect(vu);
		return;
	}
	if (r > 0) {
		r = vhost_user_check_request(&m, &e);
		if (r == 0)
			r = vu_dispatch(vu, &m, &e);
		if (vu_ack_wanted(vu, &m)) {
			struct vhost_user_err e2;

			/* A failure is said before the connection ends. */
			if (vu_reply_u64(vu, &m, r < 0, &e2) < 0 && r == 0) {
				e = e2;
				r = -1;
			}
		}
		vhost_user_close_fds(&m);
	}
	if (r < 0) {
		error_report("vhost-user %s: %s; closing the connection", vu_name(vu), e.msg);
		vu_disconnect(vu);
	}
}

static int vu_take_conn(struct vu_backend *vu, int fd)
{
	vu->conn_fd = fd;
	if (iothread_add_fd(vu->t, fd, vu_conn_ready, vu) < 0) {
		error_report("vhost-user %s: %s", vu_name(vu), strerror(errno));
		close(fd);
		vu->conn_fd = -1;
		return -1;
	}
	/* Later front-ends wait in the backlog until this one is done. */
	vu_listen_on(vu, false);
	return 0;
}

static void vu_accept(void *opaque)
{
	struct vu_backend *vu = opaque;
	int fd;

	if (vu->conn_fd >= 0)
		return;
	fd = accept4(vu->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd >= 0)
		vu_take_conn(vu, fd);
}

/*
 * The socket's path is taken under a lock (flock on PATH.lock, beside it),
 * so that two daemons started on one path agree on which serves it: the
 * lock's holder alone replaces a stale socket there, one that refuses
 * connections, and at exit removes the socket only if it is still the one
 * it made.  A lock file found replaced after taking it (its owner was
 * exiting) is taken again.
 */
/* Whether path names the file (dev, ino), itself and not a link to it. */
static bool vu_path_is(const char *path, dev_t dev, ino_t ino)
{
	struct stat st;

	return lstat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

static int vu_lock(struct vu_backend *vu, const char *path)
{
	size_t n = strlen(path) + sizeof(".lock");
	struct stat a;

	vu->lock_path = malloc(n);
	if (!vu->lock_path)
		return -1;
	snprintf(vu->lock_path, n, "%s.lock", path);
	for (int tries = 0; tries < 8; tries++) {
		int fd = open(vu->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

		if (fd < 0) {
			error_report("vhost-user %s: %s: %s", path, vu->lock_path, strerror(errno));
			return -1;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			if (errno == EWOULDBLOCK)
				error_report("vhost-user %s: another process serves this socket "
					     "(it holds %s)", path, vu->lock_path);
			else
				error_report("vhost-user %s: %s: %s", path, vu->lock_path,
					     strerror(errno));
			close(fd);
			return -1;
		}
		if (fstat(fd, &a) == 0 && vu_path_is(vu->lock_path, a.st_dev, a.st_ino)) {
			vu->lock_fd = fd;
			return 0;
		}
		close(fd);
	}
	error_report("vhost-user %s: %s keeps changing", path, vu->lock_path);
	return -1;
}

static int vu_listen(struct vu_backend *vu, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, probe;

	if (strlen(path) >= sizeof(a.sun_path)) {
		error_report("vhost-user %s: socket path longer than %zu bytes", path,
			     sizeof(a.sun_path) - 1);
		return -1;
	}
	strcpy(a.sun_path, path);
	if (vu_lock(vu, path) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		goto fail;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			error_report("vhost-user %s: exists and is not a socket", path);
			close(fd);
			return -1;
		}
		/* Only a socket nobody serves (it refuses connections) is stale. */
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (probe < 0)
			goto fail;
		if (connect(probe, (struct sockaddr *)&a, sizeof(a)) == 0 || errno == EAGAIN) {
			error_report("vhost-user %s: another process serves this socket", path);
			close(probe);
			close(fd);
			return -1;
		}
		if (errno != ECONNREFUSED) {
			error_report("vhost-user %s: cannot tell whether another process serves "
				     "this socket: %s", path, strerror(errno));
			close(probe);
			close(fd);
			return -1;
		}
		close(probe);
		unlink(path);
	}
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 1) < 0 ||
	    lstat(path, &st) < 0)
		goto fail;
	vu->sock_dev = st.st_dev;
	vu->sock_ino = st.st_ino;
	return fd;
fail:
	error_report("vhost-user %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

struct vu_backend *vu_backend_new(struct virtio_device *vdev, struct guest_mem *mem,
				  const char *path)
{
	struct vu_backend *vu = calloc(1, sizeof(*vu));

	assert(vdev->ops->start_queue && vdev->ops->stop_queue && vdev->mem == mem);
	assert(vdev->nr_queues <= 64);	/* VHOST_USER_VRING_IDX_MASK reaches 255 */
	if (!vu)
		return NULL;
	vu->vdev = vdev;
	vu->mem = mem;
	vu->listen_fd = vu->conn_fd = vu->lock_fd = -1;
	vu->rings = calloc(vdev->nr_queues, sizeof(*vu->rings));
	vu->t = iothread_new("vhost-user");
	vu->fault_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!vu->rings || !vu->t || !(vu->path = strdup(path)) ||
	    vu->fault_fd < 0 || iothread_add_fd(vu->t, vu->fault_fd, vu_memory_fault, vu) < 0)
		goto fail;
	for (unsigned i = 0; i < vdev->nr_queues; i++)
		vu->rings[i] = (struct vu_ring){ .kick_fd = -1, .call_fd = -1, .err_fd = -1 };
	pthread_mutex_lock(&vdev->lock);
	vdev->transport = &vu_transport_ops;
	vdev->transport_opaque = vu;
	pthread_mutex_unlock(&vdev->lock);
	vu->listen_fd = vu_listen(vu, path);
	if (vu->listen_fd < 0)
		goto fail;
	vu_listen_on(vu, true);
	if (!vu->listening)
		goto fail;
	if (iothread_start(vu->t) < 0) {
		error_report("vhost-user %s: cannot start its thread: %s", vu_name(vu),
			     strerror(errno));
		goto fail;
	}
	return vu;
fail:
	vu_backend_free(vu);
	return NULL;
}

void vu_backend_free(struct vu_backend *vu)
{
	if (!vu)
		return;
	/* Joins the control thread, if any: from here on the state is ours. */
	iothread_free(vu->t);
	vu->t = NULL;
	vu->listening = false;
	vu_disconnect(vu);
	if (vu->listen_fd >= 0) {
		close(vu->listen_fd);
		/* Ours still, not a socket someone put there meanwhile. */
		if (vu_path_is(vu->path, vu->sock_dev, vu->sock_ino))
			unlink(vu->path);
	}
	if (vu->lock_fd >= 0) {
		struct stat st;

		/* Unlinked while held (whoever opens it now finds it replaced), if ours. */
		if (fstat(vu->lock_fd, &st) == 0 &&
		    vu_path_is(vu->lock_path, st.st_dev, st.st_ino))
			unlink(vu->lock_path);
		close(vu->lock_fd);
	}
	free(vu->lock_path);
	if (vu->rings) {
		pthread_mutex_lock(&vu->vdev->lock);
		vu->vdev->transport = NULL;
		vu->vdev->transport_opaque = NULL;
		pthread_mutex_unlock(&vu->vdev->lock);
	}
	if (vu->fault_fd >= 0)
		close(vu->fault_fd);
	vu_inflight_unmap(vu);
	free(vu->rings);
	free(vu->path);
	free(vu);
}

struct vu_plug {
	struct virtio_plug p;
	struct vu_backend *vu;
	char path[];
};

static int vu_plug(struct virtio_plug *p, struct virtio_device *vdev,
		   struct guest_mem *shared)
{
	struct vu_plug *up = (struct vu_plug *)p;

	assert(!up->vu);
	if (!shared) {
		error_report("vhost-user %s: this device cannot be exported", up->path);
		return -1;
	}
	up->vu = vu_backend_new(vdev, shared, up->path);
	return up->vu ? 0 : -1;
}

static void vu_unplug(struct virtio_plug *p)
{
	struct vu_plug *up = (struct vu_plug *)p;

	vu_backend_free(up->vu);
	free(up);
}

struct virtio_plug *vu_backend_plug(const char *path)
{
	size_t n = strlen(path) + 1;
	struct vu_plug *up = calloc(1, sizeof(*up) + n);

	if (!up) {
		error_report("vhost-user %s: out of memory", path);
		return NULL;
	}
	up->p = (struct virtio_plug){ vu_plug, vu_unplug };
	memcpy(up->path, path, n);
	return &up->p;
}
