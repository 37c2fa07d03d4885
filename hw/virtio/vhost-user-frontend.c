// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vhost-user front-end (QEMU's docs/interop/vhost-user.rst): the guest's
 * rings of one device handed to a back-end process.
 *
 * Messages go out from whichever thread holds vdev->lock: a vCPU thread
 * (the driver's DRIVER_OK, reset or config write) or the watcher thread
 * (a reconnect).  Each request that has an answer, and with REPLY_ACK
 * every request, waits for it, so a failure is known at once and the
 * back-end is known to hold the new state when the call returns.
 *
 * The watcher owns the socket: it alone closes it, when the peer hangs
 * up.  A vCPU thread that sees a request fail shuts the socket down,
 * which wakes the watcher.
 *
 * Ring state crosses a back-end restart only through the guest's rings:
 * a split ring resumes at the used ring's index, which is exact when the
 * back-end had nothing in flight (it completes requests out of order, so
 * with some in flight one might be served twice); a packed ring keeps no
 * such index in guest memory and resumes only from its start, when the
 * old back-end never used a buffer of it.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "hw/virtio/vhost-user-frontend.h"
#include "hw/virtio/vhost-user.h"
#include "util/log.h"
#include "virtio/virtio.h"
#include "virtio/virtio_ring.h"

#define F(bit) (1ull << (bit))
/* A reply must come within this, except those vhu_call_held() waits for. */
#define VHU_TIMEOUT_MS 30000
#define VHU_PROTOCOL (F(VHOST_USER_PROTOCOL_F_MQ) | F(VHOST_USER_PROTOCOL_F_REPLY_ACK) | \
		      F(VHOST_USER_PROTOCOL_F_CONFIG) | F(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD))

struct vhu_frontend {
	char name[64];
	char *path;
	unsigned reconnect_s;
	int timeout_ms;
	int vm_stop_fd;		/* readable once brisk stops the VM; -1: never */
	uint32_t config_len;

	/* Written by the watcher (and before it starts); read under vdev->lock. */
	int sock;		/* -1: disconnected */
	/* Under vdev->lock once attached. */
	bool dropped;		/* sock is shut down; the watcher closes it */
	uint64_t features;	/* the back-end's, protocol bit included */
	uint64_t protocol;	/* negotiated protocol features */
	unsigned max_queues;
	uint8_t config[VHOST_USER_MAX_CONFIG];
	bool *started;		/* per queue: the back-end serves it */
	int ifl_fd;		/* INFLIGHT_SHMFD's region for this driver; -1: none yet */
	struct vhost_user_inflight ifl;
	struct vhost_user_err err;	/* why the last request failed */
	bool gone;		/* ... and whether the back-end had hung up */

	struct virtio_device *vdev;
	pthread_t watcher;
	bool watching;
	int stop_fd;
};

static int vhu_call(struct vhu_frontend *f, uint32_t req, const void *payload,
		    uint32_t size, const int *fds, unsigned nfds,
		    struct vhost_user_msg *reply)
{
	if (f->sock < 0 || f->dropped) {
		f->gone = true;
		return vhost_user_fail(&f->err, "not connected");
	}
	return vhost_user_call(f->sock, req, payload, size, fds, nfds,
			       f->protocol & F(VHOST_USER_PROTOCOL_F_REPLY_ACK), reply,
			       f->timeout_ms, &f->err, &f->gone);
}

/*
 * vhu_call() for an answer that comes once the back-end has finished a
 * ring's requests: no time limit until the VM stops (vhost_user_call_held).
 */
static int vhu_call_held(struct vhu_frontend *f, uint32_t req, const void *payload,
			 uint32_t size, bool ack, struct vhost_user_msg *reply)
{
	return vhost_user_call_held(f->sock, req, payload, size, ack, reply, f->timeout_ms,
				    f->vm_stop_fd, &f->err, &f->gone);
}

static int vhu_call_u64(struct vhu_frontend *f, uint32_t req, uint64_t v)
{
	return vhu_call(f, req, &v, sizeof(v), NULL, 0, NULL);
}

static int vhu_get_u64(struct vhu_frontend *f, uint32_t req, uint64_t *v)
{
	struct vhost_user_msg r;

	if (vhu_call(f, req, NULL, 0, NULL, 0, &r) < 0)
		return -1;
	*v = r.payload.u64;
	return 0;
}

static int vhu_call_state(struct vhu_frontend *f, uint32_t req, unsigned q, uint32_t num)
{
	struct vhost_user_vring_state s = { q, num };

	return vhu_call(f, req, &s, sizeof(s), NULL, 0, NULL);
}

/*
 * A request failed with the device attached: the connection is done
 * for.  Returns 0 when the back-end went away and will be reconnected,
 * -1 when the device is now broken (one line said why).
 */
static int vhu_fail(struct vhu_frontend *f)
{
	struct virtio_device *vdev = f->vdev;

	if (f->sock >= 0 && !f->dropped) {
		shutdown(f->sock, SHUT_RDWR);
		f->dropped = true;
	}
	memset(f->started, 0, vdev->nr_queues * sizeof(*f->started));
	if (f->gone && f->reconnect_s) {
		error_report("%s: back-end %s went away (%s); reconnecting every %u s",
			     f->name, f->path, f->err.msg, f->reconnect_s);
		return 0;
	}
	virtio_error(vdev, "%s: back-end %s: %s", f->name, f->path, f->err.msg);
	return -1;
}

/* ---- negotiation ---- */

static int vhu_get_config(struct vhu_frontend *f, uint8_t *buf)
{
	struct vhost_user_config c = { .offset = 0, .size = f->config_len };
	struct vhost_user_msg r;

	if (vhu_call(f, VHOST_USER_GET_CONFIG, &c, VHOST_USER_CONFIG_HDR_SIZE + c.size,
		     NULL, 0, &r) < 0)
		return -1;
	if (r.hdr.size == 0)
		return vhost_user_fail(&f->err, "GET_CONFIG: the back-end has no config");
	if (r.payload.config.offset != 0 || r.payload.config.size != f->config_len)
		return vhost_user_fail(&f->err, "GET_CONFIG: %u bytes at %u for %u at 0",
				       r.payload.config.size, r.payload.config.offset,
				       f->config_len);
	memcpy(buf, r.payload.config.data, f->config_len);
	return 0;
}

/* What every connection starts with; fills features, protocol, max_queues. */
static int vhu_handshake(struct vhu_frontend *f, uint8_t *config)
{
	uint64_t pf, n = 1;

	f->protocol = 0;
	if (vhu_get_u64(f, VHOST_USER_GET_FEATURES, &f->features) < 0)
		return -1;
	if (!(f->features & F(VHOST_USER_F_PROTOCOL_FEATURES)))
		return vhost_user_fail(&f->err, "the back-end has no protocol features "
				       "(brisk needs its device config: CONFIG)");
	if (vhu_get_u64(f, VHOST_USER_GET_PROTOCOL_FEATURES, &pf) < 0 ||
	    vhu_call_u64(f, VHOST_USER_SET_PROTOCOL_FEATURES, pf & VHU_PROTOCOL) < 0)
		return -1;
	f->protocol = pf & VHU_PROTOCOL;
	if (!(f->protocol & F(VHOST_USER_PROTOCOL_F_CONFIG)))
		return vhost_user_fail(&f->err, "the back-end does not give its device "
				       "config (protocol feature CONFIG)");
	if ((f->protocol & F(VHOST_USER_PROTOCOL_F_MQ)) &&
	    vhu_get_u64(f, VHOST_USER_GET_QUEUE_NUM, &n) < 0)
		return -1;
	if (n == 0 || n > VHOST_USER_VRING_IDX_MASK + 1)
		return vhost_user_fail(&f->err, "the back-end serves %llu queues",
				       (unsigned long long)n);
	f->max_queues = (unsigned)n;
	if (vhu_call(f, VHOST_USER_SET_OWNER, NULL, 0, NULL, 0, NULL) < 0)
		return -1;
	return vhu_get_config(f, config);
}

static int vhu_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

struct vhu_frontend *vhu_frontend_new(const struct vhu_frontend_cfg *cfg)
{
	struct vhu_frontend *f = calloc(1, sizeof(*f));

	if (!f || !(f->path = strdup(cfg->path ? cfg->path : "(inherited socket)"))) {
		error_report("out of memory");
		goto fail;
	}
	snprintf(f->name, sizeof(f->name), "%s", cfg->name);
	f->reconnect_s = cfg->reconnect_s;
	f->timeout_ms = VHU_TIMEOUT_MS;
	f->vm_stop_fd = cfg->vm_stop_fd;
	f->config_len = cfg->config_len;
	f->stop_fd = -1;
	f->ifl_fd = -1;
	f->sock = cfg->fd >= 0 ? cfg->fd : vhu_connect(cfg->path);
	if (f->sock < 0) {
		error_report("%s: cannot connect to the back-end at %s: %s", cfg->name,
			     cfg->path, strerror(errno));
		goto fail;
	}
	if (f->config_len > VHOST_USER_MAX_CONFIG || vhu_handshake(f, f->config) < 0) {
		error_report("%s: back-end %s: %s", f->name, f->path,
			     f->config_len > VHOST_USER_MAX_CONFIG ? "config too large" :
			     f->err.msg);
		goto fail;
	}
	return f;
fail:
	vhu_frontend_free(f);
	return NULL;
}

void vhu_frontend_set_timeout(struct vhu_frontend *f, int ms)
{
	f->timeout_ms = ms;
}

uint64_t vhu_frontend_features(const struct vhu_frontend *f)
{
	return f->features & ~F(VHOST_USER_F_PROTOCOL_FEATURES);
}

unsigned vhu_frontend_max_queues(const struct vhu_frontend *f)
{
	return f->max_queues;
}

const uint8_t *vhu_frontend_config(const struct vhu_frontend *f)
{
	return f->config;
}

/* ---- rings ---- */

static int vhu_set_mem_table(struct vhu_frontend *f)
{
	const struct guest_mem *mem = f->vdev->mem;
	struct vhost_user_mem_table t = { .nregions = mem->nr_regions };
	int fds[VHOST_USER_MAX_REGIONS];

	for (unsigned i = 0; i < mem->nr_regions; i++) {
		const struct guest_region *r = &mem->region[i];

		t.region[i] = (struct vhost_user_region){
			.gpa = r->gpa, .size = r->size, .uva = (uintptr_t)r->hva,
			.mmap_offset = r->fd_offset,
		};
		fds[i] = r->fd;
	}
	return vhu_call(f, VHOST_USER_SET_MEM_TABLE, &t,
			(uint32_t)(offsetof(struct vhost_user_mem_table, region) +
				   mem->nr_regions * sizeof(t.region[0])),
			fds, mem->nr_regions, NULL);
}

/*
 * Whether no descriptor of packed ring vq carries the USED flag.  The
 * driver sets it on none in its first lap, reaches a second only over
 * buffers the device used, and the device sets it on each it uses in the
 * first: so none carries it until the device has used a buffer.  (A
 * driver that did not zero its ring reads as used: no resume, as before.)
 */
static bool vhu_packed_unused(const struct virtqueue *vq)
{
	const struct vring_packed_desc *d = vq->desc;

	for (unsigned i = 0; i < vq->num; i++) {
		uint16_t flags;

		memcpy(&flags, &d[i].flags, sizeof(flags));
		if (le16toh(flags) & (1u << VRING_PACKED_DESC_F_USED))
			return false;
	}
	return true;
}

/*
 * Where the back-end takes queue q up: from the start, or after a
 * back-end restart from what the guest's rings say.  -1 with f->err when
 * it cannot be known.
 */
static int vhu_ring_base(struct vhu_frontend *f, unsigned q, bool resume, uint32_t *base)
{
	const struct virtqueue *vq = &f->vdev->queues[q].vq;
	uint16_t used;

	if (!resume) {
		*base = virtqueue_get_base(vq);
		return 0;
	}
	if (vq->packed) {
		if (!vhu_packed_unused(vq))
			return vhost_user_fail(&f->err, "queue %u: a packed ring the old "
					       "back-end used cannot resume on a new one", q);
		/* The front end serves none of it: its state is the start. */
		*base = virtqueue_get_base(vq);
		return 0;
	}
	/* The used index, right after the used ring's flags. */
	memcpy(&used, (const uint8_t *)vq->device + 2, sizeof(used));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	*base = le16toh(used);
	return 0;
}

static int vhu_ring_start(struct vhu_frontend *f, unsigned q, bool resume)
{
	struct virtio_device *vdev = f->vdev;
	const struct virtqueue *vq = &vdev->queues[q].vq;
	int kick = vdev->queues[q].kick_fd;
	int call = vdev->transport->queue_irqfd ? vdev->transport->queue_irqfd(vdev, q) : -1;
	uint64_t call_arg = q | (call < 0 ? VHOST_USER_VRING_NOFD : 0);
	struct vhost_user_vring_addr a = {
		.index = q,
		.desc = (uintptr_t)vq->desc,
		.avail = (uintptr_t)vq->driver,
		.used = (uintptr_t)vq->device,
	};
	uint32_t base = 0;	/* set by vhu_ring_base(); gcc -O3 cannot tell */

	if (vhu_ring_base(f, q, resume, &base) < 0)
		return -1;
	if (vhu_call_state(f, VHOST_USER_SET_VRING_NUM, q, vq->num) < 0 ||
	    vhu_call_state(f, VHOST_USER_SET_VRING_BASE, q, base) < 0 ||
	    vhu_call(f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0, NULL) < 0 ||
	    vhu_call(f, VHOST_USER_SET_VRING_CALL, &call_arg, sizeof(call_arg), &call,
		     call >= 0, NULL) < 0 ||
	    vhu_call(f, VHOST_USER_SET_VRING_KICK, &(uint64_t){ q }, sizeof(uint64_t),
		     &kick, 1, NULL) < 0)
		return -1;
	return 0;
}

/* The driver reset the device: nothing of what it had in flight counts. */
static void vhu_inflight_drop(struct vhu_frontend *f)
{
	if (f->ifl_fd >= 0)
		close(f->ifl_fd);
	f->ifl_fd = -1;
}

/*
 * INFLIGHT_SHMFD: the back-end records in a region brisk keeps the
 * requests it has taken and not answered, so that one restarted after a
 * crash serves those once more and no others.  One region for as long as
 * the driver runs the device: asked for at its first start, handed to
 * every back-end until the driver resets the device.  brisk never reads
 * it; it only carries it from one back-end to the next.
 */
static int vhu_inflight_set(struct vhu_frontend *f)
{
	struct virtio_device *vdev = f->vdev;
	struct vhost_user_msg r;

	if (!(f->protocol & F(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD)))
		return 0;
	if (f->ifl_fd < 0) {
		struct vhost_user_inflight in = {
			.num_queues = (uint16_t)vdev->nr_queues,
			.queue_size = vdev->queues[0].max_size,
		};

		if (vhu_call(f, VHOST_USER_GET_INFLIGHT_FD, &in, sizeof(in), NULL, 0, &r) < 0)
			return -1;
		f->ifl = r.payload.inflight;
		f->ifl_fd = vhost_user_take_fd(&r, 0);
		vhost_user_close_fds(&r);
		/* Size 0: a back-end that keeps no region after all (QEMU reads it so). */
		if (!f->ifl.mmap_size) {
			vhu_inflight_drop(f);
			return 0;
		}
		if (f->ifl_fd < 0)
			return vhost_user_fail(&f->err, "GET_INFLIGHT_FD: no region came with "
					       "the answer");
	}
	return vhu_call(f, VHOST_USER_SET_INFLIGHT_FD, &f->ifl, sizeof(f->ifl), &f->ifl_fd, 1,
			NULL);
}

static bool vhu_enables(const struct vhu_frontend *f)
{
	return f->features & F(VHOST_USER_F_PROTOCOL_FEATURES);
}

/* The order of QEMU's vhost start: features, memory, each ring, then enable. */
static int vhu_rings_start(struct vhu_frontend *f, bool resume)
{
	struct virtio_device *vdev = f->vdev;
	uint64_t features = vdev->guest_features |
			    (f->features & F(VHOST_USER_F_PROTOCOL_FEATURES));
	bool running = false;

	/* A queue the driver enabled late joins rings already running. */
	for (unsigned q = 0; q < vdev->nr_queues; q++)
		running |= f->started[q];
	if (!running && (vhu_inflight_set(f) < 0 ||
			 vhu_call_u64(f, VHOST_USER_SET_FEATURES, features) < 0 ||
			 vhu_set_mem_table(f) < 0))
		return -1;
	for (unsigned q = 0; q < vdev->nr_queues; q++)
		if (vdev->queues[q].ready && !f->started[q] &&
		    vhu_ring_start(f, q, resume) < 0)
			return -1;
	for (unsigned q = 0; q < vdev->nr_queues; q++) {
		if (!vdev->queues[q].ready || f->started[q])
			continue;
		if (vhu_enables(f) && vhu_call_state(f, VHOST_USER_SET_VRING_ENABLE, q, 1) < 0)
			return -1;
		f->started[q] = true;
	}
	return 0;
}

int vhu_frontend_start(struct vhu_frontend *f)
{
	/* Disconnected, with a reconnect to come: that starts the rings. */
	if ((f->sock < 0 || f->dropped) && f->reconnect_s)
		return 0;
	if (vhu_rings_start(f, false) < 0)
		return vhu_fail(f);
	return 0;
}

void vhu_frontend_stop(struct vhu_frontend *f)
{
	struct virtio_device *vdev = f->vdev;
	struct vhost_user_msg r;

	vhu_inflight_drop(f);	/* the driver's next start asks for a fresh one */
	/* A back-end that went away took its rings with it. */
	if (f->sock < 0 || f->dropped) {
		memset(f->started, 0, vdev->nr_queues * sizeof(*f->started));
		return;
	}
	/*
	 * A back-end may finish a ring's requests before it answers either
	 * message (brisk's own does so for SET_VRING_ENABLE 0), which may take
	 * as long as its disk does; until then it may still write guest
	 * memory, so the guest's reset waits for those answers, however long.
	 * Or for a hang-up: a back-end process that ends lets go of its memory
	 * before its socket closes.  Or for brisk to stop the VM; from then
	 * on the usual time limit.
	 */
	for (unsigned q = 0; q < vdev->nr_queues; q++) {
		struct vhost_user_vring_state s = { q, 0 };

		if (f->started[q] && vhu_enables(f) &&
		    vhu_call_held(f, VHOST_USER_SET_VRING_ENABLE, &s, sizeof(s),
				  f->protocol & F(VHOST_USER_PROTOCOL_F_REPLY_ACK), NULL) < 0) {
			vhu_fail(f);
			return;
		}
	}
	for (unsigned q = 0; q < vdev->nr_queues; q++) {
		struct vhost_user_vring_state s = { q, 0 };

		if (!f->started[q])
			continue;
		if (vhu_call_held(f, VHOST_USER_GET_VRING_BASE, &s, sizeof(s), false, &r) < 0) {
			vhu_fail(f);
			return;
		}
		if (r.payload.state.index != q) {
			vhost_user_fail(&f->err, "GET_VRING_BASE: the answer is for ring %u, "
					"not %u", r.payload.state.index, q);
			vhu_fail(f);
			return;
		}
		f->started[q] = false;
	}
}

void vhu_frontend_set_config(struct vhu_frontend *f, uint32_t off, const void *buf,
			     unsigned len)
{
	struct vhost_user_config c = { .offset = off, .size = len };

	if (off > f->config_len || len > f->config_len - off)
		return;
	memcpy(c.data, buf, len);
	if (vhu_call(f, VHOST_USER_SET_CONFIG, &c, VHOST_USER_CONFIG_HDR_SIZE + len,
		     NULL, 0, NULL) < 0) {
		vhu_fail(f);
		return;
	}
	memcpy(f->config + off, buf, len);
}

/* ---- the watcher: disconnects and reconnects ---- */

/*
 * A new back-end must offer what the old one did, since the driver may
 * already have accepted any of it.  Its config replaces the old one; a
 * change is signalled to the driver.
 */
static int vhu_resume(struct vhu_frontend *f)
{
	struct virtio_device *vdev = f->vdev;
	uint8_t config[VHOST_USER_MAX_CONFIG];
	uint64_t missing;

	if (vhu_handshake(f, config) < 0)
		return -1;
	missing = vdev->host_features & ~f->features;
	if (missing)
		return vhost_user_fail(&f->err, "the restarted back-end lacks features "
				       "%#llx", (unsigned long long)missing);
	if (f->max_queues < vdev->nr_queues)
		return vhost_user_fail(&f->err, "the restarted back-end serves %u queues, "
				       "not %u", f->max_queues, vdev->nr_queues);
	if (memcmp(config, f->config, f->config_len)) {
		memcpy(f->config, config, f->config_len);
		vdev->config_generation++;
		if (vdev->transport)
			vdev->transport->notify_config(vdev);
	}
	if (!(vdev->status & VIRTIO_CONFIG_S_DRIVER_OK) || vdev->broken)
		return 0;
	if (vhu_rings_start(f, true) < 0)
		return -1;
	/*
	 * The old back-end may have used buffers it never signalled: each
	 * ring's interrupt once, perhaps for nothing, so that the driver looks.
	 */
	for (unsigned q = 0; q < vdev->nr_queues; q++) {
		int call = vdev->transport->queue_irqfd ? vdev->transport->queue_irqfd(vdev, q) : -1;

		if (f->started[q] && call >= 0)
			eventfd_write(call, 1);
	}
	return 0;
}

static void vhu_reconnect(struct vhu_frontend *f)
{
	int fd = vhu_connect(f->path);

	if (fd < 0)
		return;		/* not back yet: try again later */
	f->sock = fd;
	f->dropped = false;
	if (vhu_resume(f) < 0) {
		/*
		 * One that hangs up while starting may just be slow: try
		 * again later.  One that answers wrong broke the device.
		 */
		vhu_fail(f);
		close(f->sock);
		f->sock = -1;
		f->dropped = false;
		return;
	}
	error_report("%s: reconnected to the back-end at %s", f->name, f->path);
}

static void *vhu_watch(void *opaque)
{
	struct vhu_frontend *f = opaque;
	struct virtio_device *vdev = f->vdev;

	for (;;) {
		struct pollfd p[2] = {
			{ .fd = f->stop_fd, .events = POLLIN },
			{ .fd = f->sock, .events = POLLRDHUP },
		};
		bool connected = f->sock >= 0;
		int wait = !connected && f->reconnect_s ? (int)f->reconnect_s * 1000 : -1;

		if (poll(p, connected ? 2 : 1, wait) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		pthread_mutex_lock(&vdev->lock);
		if (connected && p[1].revents) {
			if (!f->dropped) {
				f->gone = true;
				vhost_user_fail(&f->err, "it closed the connection");
				vhu_fail(f);
			}
			close(f->sock);
			f->sock = -1;
			f->dropped = false;
		} else if (!connected && f->reconnect_s) {
			vhu_reconnect(f);
		}
		pthread_mutex_unlock(&vdev->lock);
	}
	return NULL;
}

int vhu_frontend_attach(struct vhu_frontend *f, struct virtio_device *vdev)
{
	const struct guest_mem *mem = vdev->mem;

	for (unsigned i = 0; i < mem->nr_regions; i++) {
		if (mem->region[i].fd < 0) {
			error_report("%s: guest RAM is not shared, the back-end cannot map it",
				     f->name);
			return -1;
		}
	}
	if (mem->nr_regions > VHOST_USER_MAX_REGIONS || vdev->nr_queues > f->max_queues) {
		error_report("%s: %u queues, %u RAM regions: too many for the back-end",
			     f->name, vdev->nr_queues, mem->nr_regions);
		return -1;
	}
	f->started = calloc(vdev->nr_queues, sizeof(*f->started));
	f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!f->started || f->stop_fd < 0) {
		error_report("%s: %s", f->name, strerror(errno));
		return -1;
	}
	f->vdev = vdev;
	if (pthread_create(&f->watcher, NULL, vhu_watch, f)) {
		error_report("%s: cannot start its thread", f->name);
		return -1;
	}
	f->watching = true;
	return 0;
}

void vhu_frontend_free(struct vhu_frontend *f)
{
	if (!f)
		return;
	if (f->watching) {
		eventfd_write(f->stop_fd, 1);
		pthread_join(f->watcher, NULL);
	}
	if (f->vdev) {
		/* The guest is gone: let the back-end finish and forget its rings. */
		pthread_mutex_lock(&f->vdev->lock);
		vhu_frontend_stop(f);
		pthread_mutex_unlock(&f->vdev->lock);
	}
	if (f->sock >= 0)
		close(f->sock);
	if (f->stop_fd >= 0)
		close(f->stop_fd);
	vhu_inflight_drop(f);
	free(f->started);
	free(f->path);
	free(f);
}
