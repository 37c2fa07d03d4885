/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_VU_FRONTEND_H
#define BRISK_TESTS_VU_FRONTEND_H

/*
 * A small vhost-user front-end for tests and benchmarks: speaks the
 * protocol through hw/virtio/vhost-user.c, with the guest's rings laid
 * out by tests/virtio/vq-driver in shared memory (drv_init_shared), one
 * memory region per ring.  Once REPLY_ACK is negotiated every request
 * waits for the back-end's answer, so a test knows it was handled.
 */
#include <stdbool.h>
#include <stdint.h>

#include "hw/virtio/vhost-user.h"
#include "vq-driver.h"

struct vuf {
	int sock;
	uint64_t features;	/* what the back-end offers */
	uint64_t protocol;	/* protocol features both sides use */
	bool ack;		/* REPLY_ACK negotiated */
	struct vhost_user_err err;	/* why the last call failed */
};

int vuf_connect(struct vuf *f, const char *path);
void vuf_close(struct vuf *f);

/*
 * Sends a request and, for a type with a reply or when acks are on,
 * reads and checks the reply into *reply (may be NULL).  -1 when the
 * back-end refused it: it closed the connection, acked a failure or sent
 * something malformed (f->err says which).
 */
int vuf_request(struct vuf *f, uint32_t req, const void *payload, uint32_t size,
		const int *fds, unsigned nfds, struct vhost_user_msg *reply);
int vuf_get_u64(struct vuf *f, uint32_t req, uint64_t *v);
int vuf_set_u64(struct vuf *f, uint32_t req, uint64_t v);
int vuf_state(struct vuf *f, uint32_t req, uint32_t index, uint32_t num);
/* True once the back-end has closed the connection (within timeout_ms). */
bool vuf_closed(struct vuf *f, int timeout_ms);

/*
 * GET_FEATURES, GET/SET_PROTOCOL_FEATURES, SET_OWNER, SET_FEATURES: takes
 * the wanted features the back-end offers (plus the protocol-features
 * bit) and the protocol features it offers among want_protocol.
 */
int vuf_negotiate(struct vuf *f, uint64_t want, uint64_t want_protocol);
/* SET_MEM_TABLE with each driver's RAM as one region, at its gpa. */
int vuf_set_mem(struct vuf *f, struct vq_driver *const *d, unsigned n);
/* SET_VRING_NUM, BASE (if base >= 0), ADDR, CALL, KICK, then ENABLE 1. */
int vuf_start_ring(struct vuf *f, unsigned i, struct vq_driver *d, int64_t base,
		   int kick, int call);

/*
 * virtio-blk requests: slot s of the driver's data area holds the
 * 16-byte header at +0, the status byte at +16 and up to 4 KiB of data
 * at +4096 (page aligned, as O_DIRECT wants).  Returns the head / buffer
 * id, -1 when the ring is full.
 */
#define VUF_SLOT_SIZE 8192u
#define VUF_BLK_T_IN 0
#define VUF_BLK_T_OUT 1
#define VUF_BLK_T_FLUSH 4
int vuf_blk_add(struct vq_driver *d, unsigned slot, uint32_t type, uint64_t sector,
		uint32_t len, bool indirect);
uint8_t *vuf_blk_data(struct vq_driver *d, unsigned slot);
uint8_t vuf_blk_status(struct vq_driver *d, unsigned slot);

#endif
