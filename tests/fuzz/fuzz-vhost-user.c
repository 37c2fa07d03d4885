// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A hostile vhost-user front-end.  Each input starts a virtio-blk export
 * (memfd disk, its control and I/O threads live), connects to its socket
 * and writes the input's byte stream to it, with file descriptors
 * attached where the input says: the message reader, the shape checks
 * and every message handler of the back-end see whatever the fuzzer
 * makes, and rings that start are served from guest RAM the input fills.
 * Then the harness hangs up and waits, bounded, for the back-end to close
 * its side, and tears the export down (which drains what it took).
 *
 * Input layout:
 *   u8  bit 0 aio=threads, bit 1 writable, bits 2-3 num-queues - 1,
 *       bit 4 queue-size=16 (else 256), bit 5 the RAM memfd is sealable
 *       (the back-end seals it; else it must survive its shrinking)
 *   u16 n, then n bytes of guest RAM (a 64 KiB memfd, zeros past them)
 *   then chunks until the input ends:
 *     u8  bits 0-1 how many fds ride with the chunk (0-3); bits 2-3 what
 *         they are: 0 the RAM memfd, 1 eventfds, 2 a pipe's read end,
 *         3 the RAM memfd first, then eventfds; bit 4: once the chunk is
 *         sent, the RAM memfd shrinks to a quarter (requests may be in
 *         flight on it), as a front end that truncates its memory
 *     u16 length, then that many bytes, written as one sendmsg
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fuzz-util.h"
#include "hw/block/virtio-blk.h"

#define RAM_SIZE (64u << 10)
#define DISK_SIZE (64u << 10)
#define WAIT_MS 2000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

static int make_fd(unsigned kind, unsigned i, int ram)
{
	int p[2];

	if (kind == 0 || (kind == 3 && i == 0))
		return dup(ram);
	if (kind == 2) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return -1;
		close(p[1]);
		return p[0];
	}
	return eventfd(0, EFD_CLOEXEC);
}

/* One chunk; false once the back-end has stopped listening. */
static bool send_chunk(int sock, const uint8_t *p, size_t len, unsigned spec, int ram)
{
	char cbuf[CMSG_SPACE(3 * sizeof(int))];
	struct iovec iov = { (void *)p, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	unsigned nfds = spec & 3;
	int fds[3];
	bool ok;

	if (!len)
		return true;
	for (unsigned i = 0; i < nfds; i++)
		fds[i] = make_fd((spec >> 2) & 3, i, ram);
	if (nfds) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	ok = sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)len;
	for (unsigned i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ok;
}

/*
 * Reads (and drops) replies until the back-end closes, none comes for
 * quiet_ms, or max_ms have passed.
 */
static void drain(int sock, int quiet_ms, int max_ms)
{
	int64_t end = now_ms() + max_ms;
	char buf[4096];

	for (;;) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		int left = (int)(end - now_ms());
		ssize_t r;

		if (left <= 0 || poll(&p, 1, left < quiet_ms ? left : quiet_ms) <= 0)
			return;
		r = recv(sock, buf, sizeof(buf), MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char drive[96], exp[192];
	uint8_t fl = fuzz_u8(&in);
	size_t n = fuzz_u16(&in);
	struct blk_cmdline *c;
	int disk, ram, sock;
	uint8_t *p;

	snprintf(a.sun_path, sizeof(a.sun_path), "/tmp/brisk-fuzz-vu-%d.sock", (int)getpid());
	disk = memfd_create("disk", MFD_CLOEXEC);
	ram = memfd_create("ram", MFD_CLOEXEC | (fl & 32 ? MFD_ALLOW_SEALING : 0));
	if (disk < 0 || ram < 0 || ftruncate(disk, DISK_SIZE) < 0 ||
	    ftruncate(ram, RAM_SIZE) < 0)
		abort();
	if (n > in.n)
		n = in.n;
	if (n > RAM_SIZE)
		n = RAM_SIZE;
	p = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, ram, 0);
	if (p == MAP_FAILED)
		abort();
	memcpy(p, in.p, n);
	munmap(p, RAM_SIZE);
	in.p += n;
	in.n -= n;

	snprintf(drive, sizeof(drive), "file=/proc/self/fd/%d,if=none,id=d0,aio=%s", disk,
		 fl & 1 ? "threads" : "io_uring");
	snprintf(exp, sizeof(exp), "vhost-user-blk,id=e0,drive=d0,addr.path=%s,writable=%s,"
		 "num-queues=%u,queue-size=%u", a.sun_path, fl & 2 ? "on" : "off",
		 ((fl >> 2) & 3) + 1, fl & 16 ? 16 : 256);
	c = blk_cmdline_new();
	if (!c || blk_cmdline_drive(c, drive) < 0 || blk_cmdline_export(c, exp) < 0 ||
	    blk_cmdline_finish(c) < 0 || blk_devices_create(c, NULL) < 0)
		abort();	/* the harness wrote a bad command line */

	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&a, sizeof(a)) < 0)
		abort();
	while (in.n) {
		unsigned spec = fuzz_u8(&in);
		size_t len = fuzz_u16(&in);

		if (len > in.n)
			len = in.n;
		if (!send_chunk(sock, in.p, len, spec, ram))
			break;
		/*
		 * Once the back-end has taken what came before (it answers
		 * what asks for a reply; quiet for 50 ms, or 1 s at most).
		 * Fails where the back-end sealed it, as it should.
		 */
		if (spec & 16) {
			drain(sock, 50, 1000);
			if (ftruncate(ram, RAM_SIZE / 4) < 0 && errno != EPERM)
				abort();
		}
		in.p += len;
		in.n -= len;
	}
	shutdown(sock, SHUT_WR);
	drain(sock, WAIT_MS, WAIT_MS);
	close(sock);
	blk_devices_destroy(c);
	blk_cmdline_free(c);
	close(ram);
	close(disk);
	return 0;
}
