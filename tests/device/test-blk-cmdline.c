// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * -drive / -device virtio-blk-pci parsing: what is accepted lands in the
 * right fields, and every rejection is exactly one "brisk: " line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/block/virtio-blk.h"
#include "virtio-blk-int.h"

#include "capture.h"
#include "check.h"

/*
 * Lines brisk wrote to stderr in run() since the last stderr_lines(); -1
 * once one of them did not start "brisk: ".
 */
static int err_lines;

static int stderr_lines(void)
{
	int n = err_lines;

	err_lines = 0;
	return n;
}

/*
 * Runs one command line, its stderr captured; returns the first failing
 * step's -1 or 0.
 */
static int run(const char *const *drives, const char *const *devices,
	       struct blk_cmdline **out)
{
	static const char *const ours[] = { "brisk: ", NULL };
	struct blk_cmdline *c = blk_cmdline_new();
	char first[256];
	int r = 0, n;
	bool only;

	capture_begin();
	for (; *drives && !r; drives++)
		r = blk_cmdline_drive(c, *drives);
	for (; devices && *devices && !r; devices++)
		r = blk_cmdline_device(c, *devices);
	if (!r)
		r = blk_cmdline_finish(c);
	if (out && !r)
		*out = c;
	else
		blk_cmdline_free(c);
	only = capture_only(ours);
	n = capture_end(first, sizeof(first));
	err_lines = err_lines < 0 || !only ? -1 : err_lines + n;
	return r;
}

#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void bad(int line, const char *const *drives, const char *const *devices)
{
	int r = run(drives, devices, NULL), n = stderr_lines();

	if (r == -1 && n == 1) {
		passed++;
		return;
	}
	failed++;
	printf("# %s:%d: FAIL: expected one error line and -1, got %d and %d lines\n",
	       __FILE__, line, r, n);
}
#define BAD(d, v) bad(__LINE__, d, v)

static void test_good(void)
{
	struct blk_cmdline *c = NULL;

	CHECK(run(L("file=/img/a,,b.raw,if=none,id=d0,format=raw,aio=threads,"
		    "cache=none,readonly=on"),
		  L("virtio-blk-pci,drive=d0,packed=on,num-queues=4,queue-size=128,"
		    "serial=SER-01,event_idx=off,indirect_desc=off,poll-us=0,iothreads=2,"
		    "irq-coalesce-us=250,irq-interval-us=300,logical_block_size=4096,"
		    "physical_block_size=2097152"),
		  &c) == 0);
	CHECK(stderr_lines() == 0);
	if (c) {
		CHECK(c->nr_drives == 1 && c->nr_devs == 1);
		CHECK(!strcmp(c->drives[0].file, "/img/a,b.raw"));
		CHECK(!strcmp(c->drives[0].id, "d0"));
		CHECK(c->drives[0].readonly && !c->drives[0].if_virtio);
		CHECK(c->drives[0].aio == BLK_AIO_THREADS);
		CHECK(c->drives[0].cache == BLK_CACHE_NONE);
		CHECK(c->devs[0]->drive == 0 && c->devs[0]->ring.packed);
		CHECK(c->devs[0]->num_queues == 4 && c->devs[0]->queue_size == 128);
		CHECK(!strcmp(c->devs[0]->serial, "SER-01"));
		CHECK(!c->devs[0]->ring.event_idx && !c->devs[0]->ring.indirect_desc);
		CHECK(c->devs[0]->poll_us == 0);
		CHECK(c->devs[0]->iothreads == 2);
		CHECK(c->devs[0]->irq_coalesce_us == 250);
		CHECK(c->devs[0]->irq_interval_us == 300);
		CHECK(c->devs[0]->logical_block_size == 4096);
		CHECK(c->devs[0]->physical_block_size == 2097152);
		blk_cmdline_free(c);
	}

	/*
	 * Defaults, the short form, and QEMU's driver= spelling.  Expected
	 * defaults are the documented ones, never brisk's constants: README's
	 * -device row gives queue-size 256, poll-us 16, iothreads 1,
	 * irq-coalesce-us 0, irq-interval-us 0 and num-queues one per vCPU;
	 * the disk is "served by io_uring" (README); the rest are QEMU's
	 * virtio-blk-pci and -drive defaults, which README's promise that
	 * QEMU command lines carry over implies (packed off, event_idx and
	 * indirect_desc on, cache=writeback).
	 */
	c = NULL;
	CHECK(run(L("file=x.img,if=virtio", "file=y.img",
		    "file=z.img,if=none,id=z"),
		  L("driver=virtio-blk-pci,drive=z,serial=12345678901234567890"), &c) == 0);
	CHECK(stderr_lines() == 0);
	if (c) {
		CHECK(c->nr_drives == 3 && c->nr_devs == 3);
		CHECK(c->devs[0]->drive == 0 && c->devs[1]->drive == 1 && c->devs[2]->drive == 2);
		CHECK(c->drives[0].aio == BLK_AIO_IO_URING);
		CHECK(c->drives[0].cache == BLK_CACHE_WRITEBACK);
		CHECK(!c->drives[0].readonly);
		CHECK(c->devs[0]->num_queues == 0);	/* one per vCPU, at create */
		CHECK(c->devs[0]->queue_size == 256 && !c->devs[0]->ring.packed);
		CHECK(c->devs[0]->ring.event_idx && c->devs[0]->ring.indirect_desc);
		CHECK(c->devs[0]->poll_us == 16);
		CHECK(c->devs[1]->poll_us == 16);
		CHECK(c->devs[2]->queue_size == 256 && c->devs[2]->iothreads == 1);
		CHECK(c->devs[0]->iothreads == 1);
		CHECK(!c->devs[0]->logical_block_size && !c->devs[0]->physical_block_size);
		CHECK(c->devs[0]->irq_coalesce_us == 0);
		CHECK(c->devs[0]->irq_interval_us == 0);
		CHECK(c->devs[0]->serial[0] == '\0');
		CHECK(strlen(c->devs[2]->serial) == 20);
		blk_cmdline_free(c);
	}

	/* An empty serial= is QEMU's default (GET_ID answers nothing). */
	c = NULL;
	CHECK(run(L("file=z.img,if=none,id=z"), L("virtio-blk-pci,drive=z,serial="), &c) == 0);
	if (c) {
		CHECK(c->devs[0]->serial[0] == '\0');
		blk_cmdline_free(c);
	}

	/* As QEMU's integer properties, 0x-prefixed hex is a number too. */
	c = NULL;
	CHECK(run(L("file=z.img,if=none,id=z"),
		  L("virtio-blk-pci,drive=z,queue-size=0x80"), &c) == 0);
	if (c) {
		CHECK(c->devs[0]->queue_size == 128);
		blk_cmdline_free(c);
	}
}

static void test_bad(void)
{
	const char *const *none = NULL;
	const char *const *dev = L("virtio-blk-pci,drive=d");

	BAD(L("file=a,if=none,id=d,bogus=1"), dev);
	BAD(L("file=a,if=none,id=d,aio=native"), dev);
	BAD(L("file=a,if=none,id=d,cache=unsafe"), dev);
	BAD(L("file=a,if=none,id=d,readonly=maybe"), dev);
	BAD(L("file=a,if=none,id=d,format=qcow2"), dev);
	BAD(L("file=a,if=ide"), none);
	BAD(L("if=virtio"), none);
	BAD(L("file="), none);
	BAD(L("file"), none);
	BAD(L(""), none);
	BAD(L("file=a,"), none);
	BAD(L(",file=a"), none);
	BAD(L("file=a,file=b"), none);
	BAD(L("file=a,if=none"), none);	/* if=none needs an id */
	BAD(L("file=a,if=none,id=1d"), none);
	BAD(L("file=a,if=none,id=d d"), none);
	BAD(L("file=a,if=none,id=d", "file=b,if=none,id=d"), dev);
	BAD(L("file=a,if=none,id=d"), none);	/* no device uses it */
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=e"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d", "virtio-blk-pci,drive=d"));
	BAD(L("file=a,if=virtio,id=d"), L("virtio-blk-pci,drive=d"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci"));
	BAD(L("file=a,if=none,id=d"), L("virtio-net-pci,drive=d"));
	BAD(L("file=a,if=none,id=d"), L("driver=virtio-net-pci,drive=d"));
	BAD(L("file=a,if=none,id=d"), L("drive=d"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,serial=123456789012345678901"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,serial=a\tb"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,queue-size=100"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,queue-size=2048"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,queue-size=1"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,queue-size=0"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,queue-size=0x100x"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,num-queues=0"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,num-queues=65"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,num-queues=-1"));
	BAD(L("file=a,if=none,id=d"),
	    L("virtio-blk-pci,drive=d,num-queues=99999999999999999999999"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,packed=2"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,poll-us=1000001"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,poll-us=-1"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,poll-us=5us"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,iothreads=0"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,iothreads=65"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,irq-coalesce-us=1000001"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,irq-coalesce-us=1ms"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,irq-interval-us=1000001"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,irq-interval-us=-1"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,logical_block_size=256"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,logical_block_size=3072"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,physical_block_size=4194304"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,logical-block-size=4096"));
	BAD(L("file=a,if=none,id=d"),
	    L("virtio-blk-pci,drive=d,logical_block_size=4096,physical_block_size=512"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,packed"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,drive=d"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,addr=3"));
	BAD(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,"));

	/* the accepted edges of the same keys */
	CHECK(run(L("file=a,,,if=none,id=d"), L("virtio-blk-pci,drive=d,queue-size=2,num-queues=64"),
		  NULL) == 0);
	CHECK(run(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,queue-size=1024,num-queues=1"),
		  NULL) == 0);
	CHECK(run(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,poll-us=1000000"),
		  NULL) == 0);
	CHECK(run(L("file=a,if=none,id=d"), L("virtio-blk-pci,drive=d,num-queues=64,iothreads=64"),
		  NULL) == 0);
	CHECK(stderr_lines() == 0);
}

int main(void)
{
	RUN(test_good());
	RUN(test_bad());
	return check_done();
}
