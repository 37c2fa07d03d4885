/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_VIRTIO_VHOST_USER_H
#define BRISK_HW_VIRTIO_VHOST_USER_H

/*
 * The vhost-user protocol (QEMU's docs/interop/vhost-user.rst): message
 * layouts, and a reader and a writer for a Unix socket that carry file
 * descriptors and check every message against what its type allows.
 * Both sides use it: the back-end (a brisk device served to another
 * process) and the front-end (a brisk guest using another process's
 * device).  Nothing here knows virtio devices or rings.
 *
 * On the wire a message is a 12-byte header and `size` bytes of payload,
 * in the host's byte order; file descriptors ride along as SCM_RIGHTS.
 */
#include <stdbool.h>
#include <stdint.h>

#include "util/compiler.h"

#define VHOST_USER_VERSION 0x1u
#define VHOST_USER_VERSION_MASK 0x3u
#define VHOST_USER_FLAG_REPLY (1u << 2)
#define VHOST_USER_FLAG_NEED_REPLY (1u << 3)

/* At most this many fds per message (and memory regions per table). */
#define VHOST_USER_MAX_FDS 8
#define VHOST_USER_MAX_REGIONS 8
/* Largest device config space a GET/SET_CONFIG may move. */
#define VHOST_USER_MAX_CONFIG 256

/* SET_VRING_KICK/CALL/ERR payload: ring index, and "no fd" (poll instead). */
#define VHOST_USER_VRING_IDX_MASK 0xffu
#define VHOST_USER_VRING_NOFD (1u << 8)

/* A virtio feature bit reused by vhost-user: protocol features exist. */
#define VHOST_USER_F_PROTOCOL_FEATURES 30

/* Protocol feature bits. */
enum {
	VHOST_USER_PROTOCOL_F_MQ = 0,
	VHOST_USER_PROTOCOL_F_LOG_SHMFD = 1,
	VHOST_USER_PROTOCOL_F_RARP = 2,
	VHOST_USER_PROTOCOL_F_REPLY_ACK = 3,
	VHOST_USER_PROTOCOL_F_MTU = 4,
	VHOST_USER_PROTOCOL_F_BACKEND_REQ = 5,
	VHOST_USER_PROTOCOL_F_CROSS_ENDIAN = 6,
	VHOST_USER_PROTOCOL_F_CRYPTO_SESSION = 7,
	VHOST_USER_PROTOCOL_F_PAGEFAULT = 8,
	VHOST_USER_PROTOCOL_F_CONFIG = 9,
	VHOST_USER_PROTOCOL_F_BACKEND_SEND_FD = 10,
	VHOST_USER_PROTOCOL_F_HOST_NOTIFIER = 11,
	VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD = 12,
	VHOST_USER_PROTOCOL_F_RESET_DEVICE = 13,
	VHOST_USER_PROTOCOL_F_INBAND_NOTIFICATIONS = 14,
	VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS = 15,
	VHOST_USER_PROTOCOL_F_STATUS = 16,
};

/* Requests from the front-end to the back-end. */
enum vhost_user_request {
	VHOST_USER_GET_FEATURES = 1,
	VHOST_USER_SET_FEATURES = 2,
	VHOST_USER_SET_OWNER = 3,
	VHOST_USER_RESET_OWNER = 4,
	VHOST_USER_SET_MEM_TABLE = 5,
	VHOST_USER_SET_LOG_BASE = 6,
	VHOST_USER_SET_LOG_FD = 7,
	VHOST_USER_SET_VRING_NUM = 8,
	VHOST_USER_SET_VRING_ADDR = 9,
	VHOST_USER_SET_VRING_BASE = 10,
	VHOST_USER_GET_VRING_BASE = 11,
	VHOST_USER_SET_VRING_KICK = 12,
	VHOST_USER_SET_VRING_CALL = 13,
	VHOST_USER_SET_VRING_ERR = 14,
	VHOST_USER_GET_PROTOCOL_FEATURES = 15,
	VHOST_USER_SET_PROTOCOL_FEATURES = 16,
	VHOST_USER_GET_QUEUE_NUM = 17,
	VHOST_USER_SET_VRING_ENABLE = 18,
	VHOST_USER_SEND_RARP = 19,
	VHOST_USER_NET_SET_MTU = 20,
	VHOST_USER_SET_BACKEND_REQ_FD = 21,
	VHOST_USER_IOTLB_MSG = 22,
	VHOST_USER_SET_VRING_ENDIAN = 23,
	VHOST_USER_GET_CONFIG = 24,
	VHOST_USER_SET_CONFIG = 25,
	VHOST_USER_CREATE_CRYPTO_SESSION = 26,
	VHOST_USER_CLOSE_CRYPTO_SESSION = 27,
	VHOST_USER_POSTCOPY_ADVISE = 28,
	VHOST_USER_POSTCOPY_LISTEN = 29,
	VHOST_USER_POSTCOPY_END = 30,
	VHOST_USER_GET_INFLIGHT_FD = 31,
	VHOST_USER_SET_INFLIGHT_FD = 32,
	VHOST_USER_GPU_SET_SOCKET = 33,
	VHOST_USER_RESET_DEVICE = 34,
	VHOST_USER_VRING_KICK = 35,
	VHOST_USER_GET_MAX_MEM_SLOTS = 36,
	VHOST_USER_ADD_MEM_REG = 37,
	VHOST_USER_REM_MEM_REG = 38,
	VHOST_USER_SET_STATUS = 39,
	VHOST_USER_GET_STATUS = 40,
	VHOST_USER_REQUEST_MAX,
};

struct vhost_user_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size;		/* payload bytes that follow */
};

/* SET_VRING_NUM/BASE, GET_VRING_BASE, SET_VRING_ENABLE. */
struct vhost_user_vring_state {
	uint32_t index;
	uint32_t num;
};

/* SET_VRING_ADDR: the front-end's user addresses, not guest addresses. */
struct vhost_user_vring_addr {
	uint32_t index;
	uint32_t flags;
	uint64_t desc;
	uint64_t used;
	uint64_t avail;
	uint64_t log;
};

struct vhost_user_region {
	uint64_t gpa;		/* guest-physical address */
	uint64_t size;
	uint64_t uva;		/* the front-end's user address of gpa */
	uint64_t mmap_offset;	/* where gpa lies in the region's fd */
};

/* SET_MEM_TABLE: only the first nregions entries travel. */
struct vhost_user_mem_table {
	uint32_t nregions;
	uint32_t padding;
	struct vhost_user_region region[VHOST_USER_MAX_REGIONS];
};

/* ADD_MEM_REG, REM_MEM_REG. */
struct vhost_user_mem_reg {
	uint64_t padding;
	struct vhost_user_region region;
};

/* GET_CONFIG, SET_CONFIG: only the first size bytes of data travel. */
#define VHOST_USER_CONFIG_HDR_SIZE 12u
struct vhost_user_config {
	uint32_t offset;
	uint32_t size;
	uint32_t flags;
	uint8_t data[VHOST_USER_MAX_CONFIG];
};

/* GET/SET_INFLIGHT_FD. */
struct vhost_user_inflight {
	uint64_t mmap_size;
	uint64_t mmap_offset;
	uint16_t num_queues;
	uint16_t queue_size;
};

/* SET_LOG_BASE. */
struct vhost_user_log {
	uint64_t size;
	uint64_t offset;
};

union vhost_user_payload {
	uint64_t u64;
	struct vhost_user_vring_state state;
	struct vhost_user_vring_addr addr;
	struct vhost_user_mem_table mem;
	struct vhost_user_mem_reg mem_reg;
	struct vhost_user_config config;
	struct vhost_user_inflight inflight;
	struct vhost_user_log log;
	uint8_t bytes[VHOST_USER_CONFIG_HDR_SIZE + VHOST_USER_MAX_CONFIG];
};

/*
 * A message as read or to be written.  Received fds belong to the
 * message: take the ones kept (vhost_user_take_fd) and close the rest
 * with vhost_user_close_fds().
 */
struct vhost_user_msg {
	struct vhost_user_hdr hdr;
	union vhost_user_payload payload;
	int fds[VHOST_USER_MAX_FDS];
	unsigned int nfds;
};

/* Why a message was refused or a transfer failed: one line for stderr. */
struct vhost_user_err {
	char msg[160];
};

/* Formats e and returns -1, for "return vhost_user_fail(e, ...)". */
int vhost_user_fail(struct vhost_user_err *e, const char *fmt, ...) BRISK_PRINTF(2, 3);

/* "SET_MEM_TABLE", or "request 99" (in a static buffer) for unknown ones. */
const char *vhost_user_request_name(uint32_t request);

/*
 * Reads one message.  Returns 1 with *m filled, 0 on an orderly end of
 * the connection before any byte of a message, -1 with *e on a broken
 * message or socket (no fd is left open then).  Works on blocking and
 * non-blocking sockets alike: once a message has begun, the rest must
 * arrive within timeout_ms (a peer stalling mid-message is an error, not
 * a hang).  The payload is not interpreted; see vhost_user_check_*().
 */
int vhost_user_recv(int sock, struct vhost_user_msg *m, int timeout_ms,
		    struct vhost_user_err *e);

/*
 * Writes the header and hdr.size bytes of payload in one go, with nfds
 * file descriptors (not closed).  Waits at most timeout_ms for room in
 * the socket.  0, or -1 with *e.  Never raises SIGPIPE.
 */
int vhost_user_send(int sock, const struct vhost_user_msg *m, const int *fds,
		    unsigned int nfds, int timeout_ms, struct vhost_user_err *e);

/*
 * A front-end's request, and its answer: sends it with size bytes of
 * payload and nfds fds (with NEED_REPLY when ack, i.e. REPLY_ACK is
 * negotiated, for a type without a reply of its own), then reads and
 * checks the reply if one comes: into *reply (NULL: dropped), whose fds
 * are then the caller's.  -1 with *e when the socket failed, the reply
 * was malformed or the back-end acked a failure; *gone then says whether
 * the back-end had closed the connection (NULL: not asked).
 */
int vhost_user_call(int sock, uint32_t request, const void *payload, uint32_t size,
		    const int *fds, unsigned int nfds, bool ack,
		    struct vhost_user_msg *reply, int timeout_ms,
		    struct vhost_user_err *e, bool *gone);
/*
 * The same for a request whose answer the back-end may rightly take as
 * long as its disk does (GET_VRING_BASE waits for the ring's requests):
 * the answer's start has no time limit until release_fd (-1: none) is
 * readable, and from then on timeout_ms.  A hang-up ends the wait.
 */
int vhost_user_call_held(int sock, uint32_t request, const void *payload, uint32_t size,
			 bool ack, struct vhost_user_msg *reply, int timeout_ms,
			 int release_fd, struct vhost_user_err *e, bool *gone);

/* Header for a request or a reply: version set, payload size given. */
void vhost_user_msg_init(struct vhost_user_msg *m, uint32_t request,
			 uint32_t flags, uint32_t size);

/*
 * Checks a request read by a back-end: version and flags, payload size
 * and fd count exactly as its type allows (for SET_MEM_TABLE, one fd per
 * region; for SET_VRING_KICK/CALL/ERR, one fd unless NOFD is set).
 * What the values mean (indexes, addresses, regions) is for the caller.
 */
int vhost_user_check_request(const struct vhost_user_msg *m, struct vhost_user_err *e);

/*
 * Checks a reply read by a front-end to `request`: the same request, the
 * reply flag, and the payload and fds that request's reply carries (a u64
 * for a REPLY_ACK).
 */
int vhost_user_check_reply(const struct vhost_user_msg *m, uint32_t request,
			   struct vhost_user_err *e);

/* Whether a back-end answers request with a payload of its own. */
bool vhost_user_has_reply(uint32_t request);

/* Takes ownership of the message's i-th fd (-1 if there is none). */
int vhost_user_take_fd(struct vhost_user_msg *m, unsigned int i);
/* Closes the fds the message still owns. */
void vhost_user_close_fds(struct vhost_user_msg *m);

#endif
