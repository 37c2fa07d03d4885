// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "vu-frontend.h"

#define VUF_TIMEOUT_MS 10000
#define F(bit) (1ull << (bit))

int vuf_connect(struct vuf *f, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	memset(f, 0, sizeof(*f));
	f->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->sock < 0 || strlen(path) >= sizeof(a.sun_path))
		return -1;
	strcpy(a.sun_path, path);
	if (connect(f->sock, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(f->sock);
		f->sock = -1;
		return -1;
	}
	return 0;
}

void vuf_close(struct vuf *f)
{
	if (f->sock >= 0)
		close(f->sock);
	f->sock = -1;
}

int vuf_request(struct vuf *f, uint32_t req, const void *payload, uint32_t size,
		const int *fds, unsigned nfds, struct vhost_user_msg *reply)
{
	return vhost_user_call(f->sock, req, payload, size, fds, nfds, f->ack, reply,
			       VUF_TIMEOUT_MS, &f->err, NULL);
}

int vuf_get_u64(struct vuf *f, uint32_t req, uint64_t *v)
{
	struct vhost_user_msg r = { 0 };	/* gcc -O3 cannot see it is filled */

	if (vuf_request(f, req, NULL, 0, NULL, 0, &r) < 0)
		return -1;
	*v = r.payload.u64;
	return 0;
}

int vuf_set_u64(struct vuf *f, uint32_t req, uint64_t v)
{
	return vuf_request(f, req, &v, sizeof(v), NULL, 0, NULL);
}

int vuf_state(struct vuf *f, uint32_t req, uint32_t index, uint32_t num)
{
	struct vhost_user_vring_state s = { index, num };

	return vuf_request(f, req, &s, sizeof(s), NULL, 0, NULL);
}

bool vuf_closed(struct vuf *f, int timeout_ms)
{
	struct pollfd p = { .fd = f->sock, .events = POLLIN };
	char buf[512];

	/* Whatever the back-end said before it hung up does not matter. */
	while (poll(&p, 1, timeout_ms) > 0) {
		ssize_t r = recv(f->sock, buf, sizeof(buf), MSG_DONTWAIT);

		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return true;
		if (r < 0 && errno != EAGAIN && errno != EINTR)
			return false;
	}
	return false;
}

int vuf_negotiate(struct vuf *f, uint64_t want, uint64_t want_protocol)
{
	uint64_t pf;

	if (vuf_get_u64(f, VHOST_USER_GET_FEATURES, &f->features) < 0)
		return -1;
	if (f->features & F(VHOST_USER_F_PROTOCOL_FEATURES)) {
		if (vuf_get_u64(f, VHOST_USER_GET_PROTOCOL_FEATURES, &pf) < 0 ||
		    vuf_set_u64(f, VHOST_USER_SET_PROTOCOL_FEATURES, pf & want_protocol) < 0)
			return -1;
		f->protocol = pf & want_protocol;
		f->ack = f->protocol & F(VHOST_USER_PROTOCOL_F_REPLY_ACK);
	}
	if (vuf_request(f, VHOST_USER_SET_OWNER, NULL, 0, NULL, 0, NULL) < 0)
		return -1;
	return vuf_set_u64(f, VHOST_USER_SET_FEATURES,
			   f->features & (want | F(VHOST_USER_F_PROTOCOL_FEATURES)));
}

int vuf_set_mem(struct vuf *f, struct vq_driver *const *d, unsigned n)
{
	struct vhost_user_mem_table t = { .nregions = n };
	int fds[VHOST_USER_MAX_REGIONS];

	for (unsigned i = 0; i < n; i++) {
		t.region[i] = (struct vhost_user_region){
			.gpa = d[i]->gpa, .size = d[i]->ram_size,
			.uva = (uintptr_t)d[i]->ram,
			.mmap_offset = (uint64_t)(d[i]->ram - d[i]->map),
		};
		fds[i] = d[i]->memfd;
	}
	return vuf_request(f, VHOST_USER_SET_MEM_TABLE, &t,
			   (uint32_t)(offsetof(struct vhost_user_mem_table, region) +
				      n * sizeof(t.region[0])), fds, n, NULL);
}

int vuf_start_ring(struct vuf *f, unsigned i, struct vq_driver *d, int64_t base,
		   int kick, int call)
{
	struct vhost_user_vring_addr a = {
		.index = i,
		.desc = (uintptr_t)drv_ptr(d, d->desc),
		.avail = (uintptr_t)drv_ptr(d, d->driver),
		.used = (uintptr_t)drv_ptr(d, d->device),
	};

	if (vuf_state(f, VHOST_USER_SET_VRING_NUM, i, d->num) < 0 ||
	    (base >= 0 && vuf_state(f, VHOST_USER_SET_VRING_BASE, i, (uint32_t)base) < 0) ||
	    vuf_request(f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0, NULL) < 0 ||
	    vuf_request(f, VHOST_USER_SET_VRING_CALL, &(uint64_t){ i }, 8, &call, 1, NULL) < 0 ||
	    vuf_request(f, VHOST_USER_SET_VRING_KICK, &(uint64_t){ i }, 8, &kick, 1, NULL) < 0)
		return -1;
	if (f->features & F(VHOST_USER_F_PROTOCOL_FEATURES))
		return vuf_state(f, VHOST_USER_SET_VRING_ENABLE, i, 1);
	return 0;
}

static uint64_t slot_gpa(struct vq_driver *d, unsigned slot)
{
	return d->data + (uint64_t)slot * VUF_SLOT_SIZE;
}

uint8_t *vuf_blk_data(struct vq_driver *d, unsigned slot)
{
	return drv_ptr(d, slot_gpa(d, slot) + 4096);
}

uint8_t vuf_blk_status(struct vq_driver *d, unsigned slot)
{
	return *(volatile uint8_t *)drv_ptr(d, slot_gpa(d, slot) + 16);
}

int vuf_blk_add(struct vq_driver *d, unsigned slot, uint32_t type, uint64_t sector,
		uint32_t len, bool indirect)
{
	uint64_t g = slot_gpa(d, slot);
	uint8_t *hdr = drv_ptr(d, g);
	struct drv_seg s[3];
	unsigned n = 0;

	memset(hdr, 0, 16);
	memcpy(hdr, &type, 4);
	memcpy(hdr + 8, &sector, 8);
	*(uint8_t *)drv_ptr(d, g + 16) = 0xff;
	s[n++] = (struct drv_seg){ g, 16, false };
	if (len)
		s[n++] = (struct drv_seg){ g + 4096, len, type != VUF_BLK_T_OUT };
	s[n++] = (struct drv_seg){ g + 16, 1, true };
	return drv_add(d, s, n, indirect);
}
