// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * virtio-blk requests from a hostile driver.  The harness is a driver that
 * sets the device up properly through virtio-pci (features, one queue,
 * DRIVER_OK, a kick); the input supplies the rings' contents, the
 * descriptors and the buffers, i.e. the requests.  The device's I/O
 * thread serves them from a memfd disk; we wait, bounded, until every
 * chain the ring offers is used or the device asks for a reset, then tear
 * everything down.
 *
 * Input layout:
 *   u8  bit 0 packed, bit 1 event_idx, bit 2 indirect_desc, bit 3
 *       aio=threads, bit 4 readonly, bit 5 reset the device right after
 *       the kick (requests in flight across a reset): wait for status 0
 *       as a driver must, check that guest RAM no longer changes, set the
 *       device up again and serve the ring once more, bit 6
 *       irq-coalesce-us, bit 7 irq-interval-us
 *   u8  bits 0-3: log2 of the queue size (mod 9: 1 to 256); bit 4: a
 *       driver that offers the same chains again, a ring's worth at a
 *       time, without waiting for them to come back
 *   ... guest RAM (64 KiB, zeros past the input): the descriptor ring at
 *       0, then the avail ring (split) or driver event area (packed),
 *       then the used ring or device event area, each right after the
 *       previous one with the alignment the ring needs.
 */
#include <sched.h>
#include <time.h>

#include "fuzz-machine.h"
#include "virtio-pci-guest.h"
#include "virtio/virtio.h"
#include "virtio/virtio_ring.h"

#define RAM_SIZE (64u << 10)
#define WAIT_NS (500 * 1000000ll)
#define DEV_SLOT 1
#define REOFFERS 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct drv {
	struct fuzz_machine f;
	struct vpci pci;
	uint64_t doorbell;	/* queue 0's */
	uint8_t *ram;
	unsigned num;
	bool packed;
	uint64_t desc, driver, device;
};

static uint16_t ld16(const uint8_t *p)
{
	return le16toh(__atomic_load_n((const uint16_t *)p, __ATOMIC_ACQUIRE));
}

/*
 * The virtio-pci handshake a well-behaved driver does, every offered
 * feature taken and no interrupt wanted; false if refused.
 */
static bool setup(struct drv *d)
{
	vpci_set_status(&d->pci, DS_ACKNOWLEDGE);
	vpci_negotiate(&d->pci, ~0ull);
	if (!(vpci_status(&d->pci) & DS_FEATURES_OK))
		return false;
	d->doorbell = vpci_queue_setup(&d->pci, 0, d->num, VIRTIO_NO_VECTOR, d->desc, d->driver,
				       d->device);
	cc_write(&d->pci, CC_Q_ENABLE, 1, 2);
	vpci_set_status(&d->pci, DS_ACKNOWLEDGE | DS_DRIVER | DS_FEATURES_OK | DS_DRIVER_OK);
	return vpci_status(&d->pci) & DS_DRIVER_OK;
}

static void kick(struct drv *d)
{
	vpci_mmio_write(&d->f.b, d->doorbell, 0, 2);
}

/*
 * Packed: walk the ring as the device will, one lap at most, counting
 * chains; each chain's buffer id becomes its index, so that used
 * descriptors can be matched to chain lengths.  ndescs gets each length.
 */
static unsigned packed_chains(struct drv *d, uint16_t *ndescs)
{
	struct vring_packed_desc *ring = (void *)(d->ram + d->desc);
	unsigned slot = 0, chains = 0;

	while (slot < d->num) {
		uint16_t fl = le16toh(ring[slot].flags);
		unsigned n = 0;

		if (!(fl & (1u << VRING_PACKED_DESC_F_AVAIL)) || (fl & (1u << VRING_PACKED_DESC_F_USED)))
			break;
		do {
			fl = le16toh(ring[slot].flags);
			n++;
			slot++;
		} while ((fl & VRING_DESC_F_NEXT) && slot < d->num);
		if (le16toh(ring[slot - 1].id) < d->num)
			ring[slot - 1].id = htole16(chains);
		ndescs[chains++] = n;
	}
	return chains;
}

/* How many chains the device has returned so far. */
static unsigned used_count(struct drv *d, const uint16_t *ndescs, unsigned chains)
{
	if (!d->packed)
		return ld16(d->ram + d->device + 2);

	const uint8_t *ring = d->ram + d->desc;
	unsigned slot = 0, n = 0;

	while (n < chains && slot < d->num) {
		uint16_t fl = ld16(ring + 16 * slot + 14);
		uint16_t id = ld16(ring + 16 * slot + 12);

		if (!(fl & (1u << VRING_PACKED_DESC_F_AVAIL)) || !(fl & (1u << VRING_PACKED_DESC_F_USED)) ||
		    id >= chains)
			break;
		slot += ndescs[id];
		n++;
	}
	return n;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Waits, bounded, until every offered chain is used or a reset is asked. */
static void wait_used(struct drv *d, const uint16_t *ndescs, unsigned want)
{
	int64_t end = now_ns() + WAIT_NS;

	while (used_count(d, ndescs, want) != want &&
	       !(vpci_status(&d->pci) & DS_NEEDS_RESET) && now_ns() < end)
		sched_yield();
}

/*
 * A reset with requests in flight, the way a driver does it: write 0,
 * wait for 0.  From then on the device must leave guest RAM alone.  The
 * wait has no deadline of its own: on a loaded host the backend may take
 * long, and a reset that never completes is a hang, which libFuzzer's
 * -timeout (run-fuzzers.sh: 10 s) reports as one, not as a crash.
 */
static void reset_and_check(struct drv *d)
{
	static uint8_t before[RAM_SIZE];

	vpci_set_status(&d->pci, 0);
	while (vpci_status(&d->pci))
		sched_yield();
	memcpy(before, d->ram, RAM_SIZE);
	for (int i = 0; i < 100; i++)
		sched_yield();
	if (memcmp(before, d->ram, RAM_SIZE))
		abort();	/* guest RAM written after status read 0 */
}

/* The driver offers the same chains again (second byte, bit 4). */
static void reoffer(struct drv *d, unsigned round)
{
	if (d->packed) {
		/* Marked available for the lap after round + 1 laps. */
		uint16_t mark = round & 1 ? (1u << VRING_PACKED_DESC_F_AVAIL) : (1u << VRING_PACKED_DESC_F_USED);
		struct vring_packed_desc *ring = (void *)(d->ram + d->desc);

		for (unsigned i = 0; i < d->num; i++)
			__atomic_store_n(&ring[i].flags, htole16((uint16_t)((le16toh(ring[i].flags) &
					 ~((1u << VRING_PACKED_DESC_F_AVAIL) | (1u << VRING_PACKED_DESC_F_USED))) | mark)),
					 __ATOMIC_RELEASE);
	} else {
		uint16_t *idx = (uint16_t *)(d->ram + d->driver + 2);

		__atomic_store_n(idx, htole16((uint16_t)(le16toh(*idx) + d->num)), __ATOMIC_RELEASE);
	}
	kick(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	static uint16_t ndescs[256];
	char drive[64], device[192];
	struct drv d = { 0 };
	uint8_t fl = fuzz_u8(&in), fl2 = fuzz_u8(&in);
	unsigned want = 0;

	d.num = 1u << ((fl2 & 15) % 9);
	d.packed = fl & 1;
	d.desc = 0;
	if (d.packed) {
		d.driver = 16ull * d.num;
		d.device = d.driver + 4;
	} else {
		d.driver = 16ull * d.num;
		d.device = (d.driver + 6 + 2 * d.num + 3) & ~3ull;
	}
	snprintf(drive, sizeof(drive), "if=none,id=d0,aio=%s,readonly=%s",
		 fl & 8 ? "threads" : "io_uring", fl & 16 ? "on" : "off");
	snprintf(device, sizeof(device),
		 "virtio-blk-pci,drive=d0,packed=%s,event_idx=%s,indirect_desc=%s,"
		 "queue-size=256,num-queues=1,serial=fuzz,irq-coalesce-us=%u,"
		 "irq-interval-us=%u",
		 d.packed ? "on" : "off", fl & 2 ? "on" : "off", fl & 4 ? "on" : "off",
		 fl & 64 ? 50 : 0, fl & 128 ? 20 : 0);
	if (fm_init(&d.f, in.p, in.n, RAM_SIZE, drive, device) < 0)
		abort();
	d.ram = d.f.ram.block[0];
	vpci_probe(&d.f.b, DEV_SLOT << 3, &d.pci);
	if (!d.pci.common || !d.pci.notify)
		abort();	/* the device's capabilities are not a fuzzer's to break */

	/* What the ring offers, from the driver's side, before the device looks. */
	if (d.packed) {
		want = packed_chains(&d, ndescs);
	} else {
		want = ld16(d.ram + d.driver + 2);
		memset(d.ram + d.device, 0, 4);	/* a driver zeroes the used ring */
	}
	if (!setup(&d))
		abort();	/* a correct handshake must be accepted */
	kick(&d);
	for (unsigned r = 0; (fl2 & 16) && r < REOFFERS; r++) {
		sched_yield();
		reoffer(&d, r);
	}
	if (fl & 32) {
		reset_and_check(&d);
		if (!d.packed)
			memset(d.ram + d.device, 0, 4);
		if (!setup(&d))
			abort();
		kick(&d);
	}
	wait_used(&d, ndescs, want);
	fm_free(&d.f);
	return 0;
}
