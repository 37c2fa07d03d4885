/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_BLK_GUEST_H
#define BRISK_TESTS_BLK_GUEST_H

/*
 * The guest's side of a virtio-blk disk on virtio-pci, for the tests of
 * the devices behind one (virtio-blk, vhost-user-blk-pci): test-board.h's
 * board with RAM in a memfd between canaries, a PCI bus and MSI routes
 * that are eventfds, its devices made from command-line strings; a
 * driver that finds them through 0xcf8/0xcfc config cycles and BAR MMIO,
 * as a vCPU would, sets up split or packed rings (vq-driver's, in that
 * RAM) and submits requests.
 * Every wait is bounded.  Static inline, so that its CHECKs count in the
 * test including it (after check.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hw/block/virtio-blk.h"
#include "hw/bus.h"
#include "hw/machine.h"
#include "hw/pci/pci.h"
#include "util/guest-mem.h"
#include "virtio/virtio.h"
#include "virtio/virtio_ring.h"

#include "loop.h"
#include "test-board.h"
#include "virtio-pci-guest.h"
#include "vq-driver.h"

#define RAM_SIZE (16u << 20)
#define DISK_SIZE (4u << 20)
#define WAIT_MS 5000
/*
 * A second RAM region right above the first, whose pages a test can leave
 * missing under userfaultfd: the kernel then stalls, inside a request,
 * on the first access to guest memory there, until the test lets it go.
 * That holds requests in the backend for as long as a test needs.
 */
#define STALL_GPA ((uint64_t)RAM_SIZE)
#define STALL_LEN (64u << 10)

/* virtio-blk wire format */
#define T_IN 0
#define T_OUT 1
#define T_FLUSH 4
#define T_GET_ID 8
#define T_DISCARD 11
#define T_WRITE_ZEROES 13
#define S_OK 0
#define S_IOERR 1
#define S_UNSUPP 2
#define F_SIZE_MAX 1
#define F_SEG_MAX 2
#define F_RO 5
#define F_MQ 12

struct tmachine {
	struct test_board b;
	struct blk_cmdline *c;
	char path[64];
	int fd;
	struct loopdev loop;	/* when the drive is a loop device over path */
	uint8_t *stall;		/* STALL_LEN at STALL_GPA */
	int uffd;		/* -1 until stall_arm() */
	pthread_t releaser;
	bool releasing;
	uint8_t release_fill;
	unsigned release_after_ms;
	int release_efd;	/* written: let go now */
	int released;		/* atomic: the stall was let go */
};

/* A line on stderr, as brisk says why it stops: a test counts it. */
static inline void blk_shutdown(struct machine *m, int status, const char *why)
{
	fprintf(stderr, "shutdown %d: %s\n", status, why ? why : "");
	board_shutdown(m, status, why);
}

static inline int make_disk(struct tmachine *t)
{
	uint8_t *buf = malloc(DISK_SIZE);

	strcpy(t->path, "/tmp/brisk-vblk-XXXXXX");
	t->fd = mkstemp(t->path);
	if (t->fd < 0 || !buf)
		return -1;
	for (unsigned i = 0; i < DISK_SIZE; i++)
		buf[i] = (uint8_t)(i / 512 + i * 7);
	if (pwrite(t->fd, buf, DISK_SIZE, 0) != DISK_SIZE)
		return -1;
	free(buf);
	return 0;
}

static inline uint8_t disk_byte(unsigned off)
{
	return (uint8_t)(off / 512 + off * 7);
}

static inline void machine_free(struct tmachine *t);

/*
 * The board with its RAM, PCI bus and disk file, but no device yet.  With
 * stall, a second RAM region at STALL_GPA that stall_arm() can leave
 * missing; it is private memory, which a vhost-user back-end cannot map.
 */
static inline struct tmachine *machine_board(unsigned ncpus, bool stall)
{
	struct tmachine *t = calloc(1, sizeof(*t));

	board_init(&t->b, ncpus, 0);
	board_ram_map(&t->b, RAM_SIZE, true);
	board_pci(&t->b, BOARD_PCI_BASE, BOARD_PCI_SIZE);
	t->b.ioeventfd_ok = true;
	t->b.m.shutdown = blk_shutdown;
	t->b.m.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	t->uffd = -1;
	t->loop.fd = -1;
	t->stall = MAP_FAILED;
	if (stall) {
		t->stall = mmap(NULL, STALL_LEN, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (t->stall == MAP_FAILED) {
			perror("mmap");
			exit(1);
		}
		guest_mem_add(&t->b.m.mem, STALL_GPA, STALL_LEN, t->stall);
	}
	if (make_disk(t) < 0) {
		perror("temp disk");
		exit(1);
	}
	t->c = blk_cmdline_new();
	return t;
}

/*
 * Its devices, from command-line strings: drive (a -drive, "%s" standing
 * for the disk's path, or its loop device's; NULL for none) and opts, pairs
 * of an option and its argument ("-device", "virtio-blk-pci,drive=d0",
 * ...; "-snapshot" takes an ignored one) ending in NULL.  NULL, with brisk's error on stderr and t freed,
 * when one cannot be made.
 */
static inline struct tmachine *machine_devices(struct tmachine *t, const char *drive,
					       const char *const *opts)
{
	char arg[256];
	int r = 0;

	if (drive) {
		snprintf(arg, sizeof(arg), drive, t->loop.fd >= 0 ? t->loop.path : t->path);
		r = blk_cmdline_drive(t->c, arg);
	}
	for (; r == 0 && opts && opts[0]; opts += 2)
		r = !strcmp(opts[0], "-snapshot") ? (blk_cmdline_snapshot(t->c), 0) :
		    !strcmp(opts[0], "-device") ? blk_cmdline_device(t->c, opts[1]) :
		    !strcmp(opts[0], "-chardev") ? blk_cmdline_chardev(t->c, opts[1]) :
		    blk_cmdline_export(t->c, opts[1]);
	if (r < 0 || blk_cmdline_finish(t->c) < 0 || blk_devices_create(t->c, &t->b.m) < 0) {
		machine_free(t);
		return NULL;
	}
	return t;
}

static inline struct tmachine *machine_build(const char *drive, const char *const *opts,
					     unsigned ncpus)
{
	return machine_devices(machine_board(ncpus, false), drive, opts);
}

/*
 * A drive and at most one -device; NULL, with brisk's error on stderr, when
 * the device cannot be made.  With block_size, the drive is a loop device
 * of that logical block over the disk file (NULL with *why set when there
 * can be none here).
 */
static inline struct tmachine *machine_try_on(const char *drive, const char *device,
					      unsigned ncpus, unsigned block_size,
					      const char **why)
{
	struct tmachine *t = machine_board(ncpus, true);
	const char *opts[] = { "-device", device, NULL };

	if (block_size && loop_attach(&t->loop, t->path, block_size, why) < 0) {
		machine_free(t);
		return NULL;
	}
	return machine_devices(t, drive, device ? opts : NULL);
}

static inline struct tmachine *machine_try(const char *drive, const char *device,
					   unsigned ncpus)
{
	return machine_try_on(drive, device, ncpus, 0, NULL);
}

static inline struct tmachine *machine_new(const char *drive, const char *device, unsigned ncpus)
{
	struct tmachine *t = machine_try(drive, device, ncpus);

	if (!t) {
		fprintf(stderr, "cannot create device from %s %s\n", drive, device ? device : "");
		exit(1);
	}
	return t;
}

static inline void stall_join(struct tmachine *t);

static inline void machine_free(struct tmachine *t)
{
	CHECK(canaries_intact(&t->b));
	stall_join(t);
	/* A request still stalled would hold teardown up: closing lets it go. */
	if (t->uffd >= 0)
		close(t->uffd);
	blk_devices_destroy(t->c);
	blk_cmdline_free(t->c);
	loop_detach(&t->loop);
	if (t->stall != MAP_FAILED)
		munmap(t->stall, STALL_LEN);
	close(t->fd);
	unlink(t->path);
	board_destroy(&t->b);
	free(t);
}

/* ---- holding requests in the backend: userfaultfd on guest RAM ---- */

/*
 * Leaves the stall region's pages missing, so the kernel's first access to
 * one, from inside a request, waits for stall_release().  False, with a
 * reason, where userfaultfd cannot catch the kernel's own accesses.
 */
static inline bool stall_arm(struct tmachine *t, const char **why)
{
	if (t->uffd < 0) {
		struct uffdio_api api = { .api = UFFD_API };
		struct uffdio_register reg = {
			.range = { (uintptr_t)t->stall, STALL_LEN },
			.mode = UFFDIO_REGISTER_MODE_MISSING,
		};

		t->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
		if (t->uffd < 0) {
			*why = "userfaultfd refused (needs root, or vm.unprivileged_userfaultfd=1)";
			return false;
		}
		if (ioctl(t->uffd, UFFDIO_API, &api) < 0 ||
		    ioctl(t->uffd, UFFDIO_REGISTER, &reg) < 0) {
			*why = "userfaultfd cannot register guest RAM";
			close(t->uffd);
			t->uffd = -1;
			return false;
		}
	}
	__atomic_store_n(&t->released, 0, __ATOMIC_RELEASE);
	return madvise(t->stall, STALL_LEN, MADV_DONTNEED) == 0;
}

/* Waits until something (a request in the backend) is stuck on the stall. */
static inline bool stall_wait(struct tmachine *t)
{
	struct pollfd p = { .fd = t->uffd, .events = POLLIN };
	struct uffd_msg msg;

	return poll(&p, 1, WAIT_MS) == 1 && read(t->uffd, &msg, sizeof(msg)) == sizeof(msg) &&
	       msg.event == UFFD_EVENT_PAGEFAULT;
}

/* Fills every missing page with fill, which wakes whatever waits on them. */
static inline void stall_release(struct tmachine *t, uint8_t fill)
{
	static uint8_t page[4096] __attribute__((aligned(4096)));

	memset(page, fill, sizeof(page));
	for (unsigned off = 0; off < STALL_LEN; off += sizeof(page)) {
		struct uffdio_copy c = {
			.dst = (uintptr_t)t->stall + off, .src = (uintptr_t)page,
			.len = sizeof(page),
		};

		ioctl(t->uffd, UFFDIO_COPY, &c);	/* EEXIST: already there */
	}
	__atomic_store_n(&t->released, 1, __ATOMIC_RELEASE);
}

static inline void *stall_releaser(void *opaque)
{
	struct tmachine *t = opaque;

	struct pollfd p = { .fd = t->release_efd, .events = POLLIN };

	poll(&p, 1, (int)t->release_after_ms);
	stall_release(t, t->release_fill);
	return NULL;
}

/*
 * The slow disk: lets the stall go after ms, on another thread, or
 * sooner at stall_release_now().
 */
static inline void stall_release_after(struct tmachine *t, unsigned ms, uint8_t fill)
{
	t->release_after_ms = ms;
	t->release_fill = fill;
	t->release_efd = eventfd(0, EFD_CLOEXEC);
	t->releasing = t->release_efd >= 0 &&
		       pthread_create(&t->releaser, NULL, stall_releaser, t) == 0;
	CHECK(t->releasing);
}

static inline void stall_release_now(struct tmachine *t)
{
	uint64_t one = 1;

	if (t->releasing)
		CHECK(write(t->release_efd, &one, sizeof(one)) == sizeof(one));
}

static inline void stall_join(struct tmachine *t)
{
	if (!t->releasing)
		return;
	pthread_join(t->releaser, NULL);
	close(t->release_efd);
	t->releasing = false;
}

static inline bool stall_released(struct tmachine *t)
{
	return __atomic_load_n(&t->released, __ATOMIC_ACQUIRE);
}

/* ---- PCI and virtio-pci, the guest's way (virtio-pci-guest.h) ---- */

struct vdev {
	struct tmachine *t;
	unsigned nth;		/* PCI slot; MSI data = nth * 64 + vector */
	struct vpci pci;	/* devfn, the structures' guest addresses */
	uint64_t features;
};

static inline uint64_t mmio_read(struct tmachine *t, uint64_t a, unsigned size)
{
	return vpci_mmio_read(&t->b, a, size);
}

static inline void mmio_write(struct tmachine *t, uint64_t a, uint64_t v, unsigned size)
{
	vpci_mmio_write(&t->b, a, v, size);
}

/*
 * The nth function on bus 0 with virtio-pci device ID pci_id (0x1040 plus
 * the virtio device type), with its common, notify and MSI-X structures;
 * memory decoding, bus mastering and MSI-X turned on.
 */
static inline bool vdev_find_id(struct tmachine *t, uint16_t pci_id, unsigned nth,
				struct vdev *d)
{
	memset(d, 0, sizeof(*d));
	d->t = t;
	d->pci.b = &t->b;
	for (unsigned dev = 0; dev < 32; dev++) {
		unsigned devfn = dev << 3;

		if (cfg_read(&t->b, devfn, 0, 4) != ((uint32_t)pci_id << 16 | 0x1af4))
			continue;
		if (nth--)
			continue;
		d->nth = dev;
		cfg_write(&t->b, devfn, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, 2);
		vpci_probe(&t->b, devfn, &d->pci);
		if (d->pci.msix_cap)
			vpci_msix_ctrl(&d->pci, MSIX_ENABLE);
		return d->pci.common && d->pci.notify && d->pci.msix_table;
	}
	return false;
}

/* The nth virtio-blk function on bus 0. */
static inline bool vdev_find(struct tmachine *t, unsigned nth, struct vdev *d)
{
	return vdev_find_id(t, 0x1042, nth, d) && d->pci.device;
}

static inline void msix_setup(struct vdev *d, unsigned nvec)
{
	for (unsigned v = 0; v < nvec; v++)
		vpci_msix_entry(&d->pci, v, 0xfee00000, d->nth * 64 + v, false);
}

static inline int vector_efd(struct tmachine *t, unsigned v)
{
	struct board_route *r = route_by_data(&t->b, v);

	return r ? r->efd : -1;
}

/* Interrupts delivered on vector v so far (consumes them). */
static inline uint64_t irq_take(struct vdev *d, unsigned v, int timeout_ms)
{
	int efd = vector_efd(d->t, d->nth * 64 + v);
	struct pollfd p = { .fd = efd, .events = POLLIN };
	uint64_t n = 0;

	if (efd < 0 || poll(&p, 1, timeout_ms) <= 0)
		return 0;
	if (read(efd, &n, 8) != 8)
		return 0;
	return n;
}

static inline long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline uint8_t vstatus(struct vdev *d)
{
	return vpci_status(&d->pci);
}

/*
 * Reset the way a driver does (VIRTIO 1.2, 4.1.4.3.2): write 0, then wait
 * for status to read 0 before anything else.  False if it never does.
 */
static inline bool vdev_reset(struct vdev *d)
{
	long end;

	vpci_set_status(&d->pci, 0);
	for (end = now_ms() + WAIT_MS; vstatus(d) && now_ms() < end;)
		usleep(1000);
	return vstatus(d) == 0;
}

static inline uint64_t dev_features(struct vdev *d)
{
	return vpci_features(&d->pci);
}

/* ---- guest rings ---- */

/* A queue of a vdev: the ring itself is vq-driver's, in the board's RAM. */
struct gq {
	struct vdev *d;
	unsigned idx;
	bool event_idx;
	uint64_t notify_addr;
	struct vq_driver ring;
};

static inline void *gpa(struct tmachine *t, uint64_t a)
{
	return t->b.ram + a;
}

/* Below HDR_AREA for up to six devices of two queues. */
#define QUEUE_AREA(dev, q) (0x100000ull + (uint64_t)(dev) * 0x80000 + (uint64_t)(q) * 0x40000)

static inline void gq_init(struct vdev *d, struct gq *q, unsigned idx, unsigned num,
		    bool packed, bool event_idx)
{
	struct vq_driver *r = &q->ring;

	q->d = d;
	q->idx = idx;
	q->event_idx = event_idx;
	drv_init_at(r, packed, num, d->t->b.ram, 0, RAM_SIZE, QUEUE_AREA(d->nth, idx));
	q->notify_addr = vpci_queue_setup(&d->pci, idx, num, idx + 1, r->desc, r->driver,
					  r->device);
	cc_write(&d->pci, CC_Q_ENABLE, 1, 2);
}

/* Driver init up to DRIVER_OK; returns the negotiated features. */
static inline uint64_t vdev_init(struct vdev *d, struct gq *qs, unsigned nq, unsigned num,
			  uint64_t want)
{
	struct vpci *p = &d->pci;
	uint64_t f;

	vpci_set_status(p, 0);
	f = vpci_negotiate(p, want);
	CHECK(vstatus(d) & DS_FEATURES_OK);
	cc_write(p, CC_MSIX_CONFIG, 0, 2);
	msix_setup(d, nq + 1);
	for (unsigned i = 0; i < nq; i++)
		gq_init(d, &qs[i], i, num, f >> VIRTIO_F_RING_PACKED & 1,
			f >> VIRTIO_F_RING_EVENT_IDX & 1);
	vpci_set_status(p, DS_ACKNOWLEDGE | DS_DRIVER | DS_FEATURES_OK | DS_DRIVER_OK);
	d->features = f;
	return f;
}

static inline void gq_kick(struct gq *q)
{
	mmio_write(q->d->t, q->notify_addr, q->idx, 2);
}

/*
 * Whether the device wants a kick for the driver's next buffer: a split
 * ring's flag (VIRTIO 1.2, 2.7.7) or, with EVENT_IDX, its avail_event
 * (after the used ring) at the driver's next index (2.7.10); a packed
 * ring's device event suppression flags (2.8.10: anything but DISABLE
 * asks).  A driver such as Linux's kicks only then; a device that stops
 * asking never hears of a buffer again.
 */
static inline bool gq_kicks_on(struct gq *q)
{
	struct vq_driver *d = &q->ring;
	const struct vring_used *u = drv_ptr(d, d->device);
	const uint16_t *dev_flags = drv_ptr(d, d->device + 2);

	if (d->packed)
		return le16toh(__atomic_load_n(dev_flags, __ATOMIC_ACQUIRE)) !=
		       VRING_PACKED_EVENT_FLAG_DISABLE;
	if (q->event_idx)
		return le16toh(__atomic_load_n((const uint16_t *)&u->ring[d->num],
					       __ATOMIC_ACQUIRE)) == d->avail_idx;
	return !(le16toh(__atomic_load_n(&u->flags, __ATOMIC_ACQUIRE)) & VRING_USED_F_NO_NOTIFY);
}

/*
 * Places a chain; returns the head/id, or -1 when the ring is full.  An
 * indirect one has its table at ind_table.
 */
static inline int gq_add(struct gq *q, const struct drv_seg *s, unsigned n, bool indirect,
		  uint64_t ind_table)
{
	return indirect ? drv_add_table(&q->ring, s, n, ind_table) : drv_add(&q->ring, s, n, false);
}

/* One used entry if there is one: returns its id, -1 when none. */
static inline int gq_get_used(struct gq *q, uint32_t *len)
{
	uint16_t id;

	return drv_reap(&q->ring, &id, len) ? id : -1;
}

/* Waits (bounded) for one used entry. */
static inline int gq_wait_used(struct gq *q, uint32_t *len)
{
	long end = now_ms() + WAIT_MS;
	int id;

	while ((id = gq_get_used(q, len)) < 0 && now_ms() < end)
		irq_take(q->d, q->idx + 1, 10);
	return id;
}

/* ---- requests ---- */

#define HDR_AREA 0x400000ull	/* headers and status bytes, per slot */
#define DATA_AREA 0x800000ull	/* 64 KiB data buffers, per slot */
#define IND_AREA 0x600000ull

struct breq {
	uint32_t type;
	uint64_t sector;
	uint32_t len;		/* data bytes */
	unsigned nsplit;	/* data split into this many descriptors */
	bool indirect;
	unsigned slot;
	uint32_t flags;		/* discard/write-zeroes segment flags */
	uint32_t nsec;		/* discard/write-zeroes sectors */
	uint64_t data;		/* data buffer's gpa; 0: the slot's own */
};

static inline uint64_t hdr_gpa(unsigned slot) { return HDR_AREA + 64 * slot; }
static inline uint64_t data_gpa(unsigned slot) { return DATA_AREA + 0x10000ull * slot; }

static inline int breq_add(struct gq *q, const struct breq *r)
{
	struct tmachine *t = q->d->t;
	uint64_t h = hdr_gpa(r->slot);
	uint8_t *hp = gpa(t, h);
	struct drv_seg s[20];
	unsigned n = 0;
	bool w = r->type == T_IN || r->type == T_GET_ID;

	memcpy(hp, &r->type, 4);
	memset(hp + 4, 0, 4);
	memcpy(hp + 8, &r->sector, 8);
	hp[48] = 0xee;		/* status byte, overwritten by the device */
	if (r->type == T_DISCARD || r->type == T_WRITE_ZEROES) {
		memcpy(hp + 16, &r->sector, 8);
		memcpy(hp + 24, &r->nsec, 4);
		memcpy(hp + 28, &r->flags, 4);
		s[n++] = (struct drv_seg){ h, 32, false };
	} else {
		s[n++] = (struct drv_seg){ h, 16, false };
	}
	if (r->len) {
		unsigned parts = r->nsplit ? r->nsplit : 1;
		uint32_t each = r->len / parts;

		for (unsigned i = 0; i < parts; i++)
			s[n++] = (struct drv_seg){ (r->data ? r->data : data_gpa(r->slot)) +
						   i * each,
						   i + 1 < parts ? each : r->len - i * each, w };
	}
	s[n++] = (struct drv_seg){ h + 48, 1, true };
	return gq_add(q, s, n, r->indirect, IND_AREA + 0x400 * r->slot);
}

static inline uint8_t breq_status(struct tmachine *t, unsigned slot)
{
	return ((uint8_t *)gpa(t, hdr_gpa(slot)))[48];
}

/* Submits one request and waits for it; returns the status byte. */
static inline int do_req(struct gq *q, struct breq r, uint32_t *used_len)
{
	uint32_t len = 0;

	if (breq_add(q, &r) < 0)
		return -1;
	gq_kick(q);
	if (gq_wait_used(q, &len) < 0)
		return -2;
	if (used_len)
		*used_len = len;
	return breq_status(q->d->t, r.slot);
}

static inline uint8_t *slot_data(struct tmachine *t, unsigned slot)
{
	return gpa(t, data_gpa(slot));
}

static inline bool file_is(struct tmachine *t, unsigned off, const uint8_t *buf, unsigned len)
{
	uint8_t *tmp = malloc(len);
	bool ok = pread(t->fd, tmp, len, off) == (ssize_t)len && !memcmp(tmp, buf, len);

	free(tmp);
	return ok;
}

#define ALL_FEATURES (~0ull)

#endif
