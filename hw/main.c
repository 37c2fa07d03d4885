// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * brisk's entry point, and the one place that fixes the order in which the
 * board comes together.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "accel/kvm-arch.h"
#include "accel/kvm.h"
#include "hw/block/virtio-blk.h"
#include "hw/board.h"
#include "hw/char/chardev.h"
#include "hw/brisk-version.h"
#include "hw/cli.h"
#include "hw/device.h"
#include "hw/machine.h"
#include "hw/nic-cmdline.h"
#include "hw/object.h"
#include "hw/pci/pci.h"
#include "util/clock.h"
#include "util/iothread.h"
#include "util/log.h"

/* Everything run() builds, so that teardown can undo exactly that. */
struct brisk {
	struct cli_opts opts;
	struct blk_cmdline *blk;	/* -drive, -chardev: the disks' back ends */
	struct device_set *devices;	/* every -device but the board's, or -export */
	struct object_set *objects;	/* -object: what devices name by id */
	const struct board_ops *ops;
	struct board *board;
	struct machine m;
	struct kvm_vm *vm;
	bool bus_ready;
	int sig_fd;
	bool done;		/* wait_for_shutdown() may return */
};

/* Before any device: devices name them. */
static int objects_parse(struct brisk *b)
{
	const struct cli_opts *o = &b->opts;

	b->objects = object_set_new();
	if (!b->objects) {
		error_report("out of memory");
		return -1;
	}
	for (unsigned i = 0; i < o->nr_objects; i++)
		if (object_set_add(b->objects, o->objects[i].type, o->objects[i].props))
			return -1;
	return 0;
}

/* -chardev, before any device: vhost-user-blk-pci names them. */
static int disks_parse(struct brisk *b)
{
	const struct cli_opts *o = &b->opts;

	b->blk = blk_cmdline_new();
	b->devices = device_set_new();
	if (!b->blk || !b->devices) {
		error_report("out of memory");
		return -1;
	}
	blk_cmdline_set_objects(b->blk, b->objects);
	blk_cmdline_set_devices(b->blk, b->devices);
	for (unsigned i = 0; i < o->nr_chardevs; i++)
		if (blk_cmdline_chardev(b->blk, o->chardevs[i].arg))
			return -1;
	return 0;
}

/* What only the whole command line tells of the disks, and their files opened. */
static int disks_finish(struct brisk *b)
{
	if (b->opts.snapshot)
		blk_cmdline_snapshot(b->blk);
	return blk_cmdline_finish(b->blk) || blk_drives_open(b->blk, b->opts.board.ncpus);
}

/*
 * devs (-device, or -export) in command-line order, and among them the
 * disk each -drive if=virtio makes where the -drive stands.
 */
static int devices_add(struct brisk *b, const struct cli_device *devs, unsigned n)
{
	const struct cli_opts *o = &b->opts;
	unsigned d = 0;

	for (unsigned i = 0; i <= n; i++) {
		for (; d < o->nr_drives && (i == n || o->drives[d].at < devs[i].at); d++)
			if (blk_cmdline_drive(b->blk, o->drives[d].arg))
				return -1;
		if (i < n && device_set_add(b->devices, devs[i].family, devs[i].props,
					    b->objects))
			return -1;
	}
	return 0;
}

static int devices_parse(struct brisk *b)
{
	const struct cli_opts *o = &b->opts;

	if (disks_parse(b) || devices_add(b, o->devices, o->nr_devices))
		return -1;
	if (nic_cmdline_add(o, b->objects, b->devices) || disks_finish(b))
		return -1;
	/* As QEMU, which warns of a netdev without a peer and runs. */
	for (unsigned i = 0; object_set_get(b->objects, i); i++) {
		const struct object_cfg *c = object_set_get(b->objects, i);

		if (netdev_type_find(c->type, strlen(c->type)) &&
		    !device_set_claimed(b->devices, c))
			error_report("warning: -netdev %s has no NIC", c->id);
	}
	return 0;
}

/*
 * Signals that end brisk go to main only, through a signalfd; every thread
 * started later inherits the mask.
 */
static int block_signals(struct brisk *b)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	b->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (b->sig_fd < 0) {
		error_report("signalfd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int64_t now_ms(void)
{
	return (int64_t)(clock_now_ns() / 1000000);
}

static void vm_done(void *opaque)
{
	struct brisk *b = opaque;

	b->done = true;
}

static void got_signal(void *opaque)
{
	struct brisk *b = opaque;
	struct signalfd_siginfo si;
	char why[80];

	if (read(b->sig_fd, &si, sizeof(si)) != sizeof(si))
		return;
	snprintf(why, sizeof(why), "terminating on signal %u", si.ssi_signo);
	/* As a shell reports a process killed by it. */
	b->m.shutdown(&b->m, 128 + si.ssi_signo, why);
	b->done = true;
}

/*
 * Until some thread calls m->shutdown(), a signal arrives or time runs
 * out; meanwhile the main thread serves the devices' timers (m->loop).
 */
static void wait_for_shutdown(struct brisk *b)
{
	struct machine *m = &b->m;
	unsigned timeout = b->opts.timeout_s;
	int64_t deadline = now_ms() + timeout * 1000ll;
	char why[80];

	if (iothread_add_fd(m->loop, kvm_vm_done_fd(b->vm), vm_done, b) ||
	    iothread_add_fd(m->loop, b->sig_fd, got_signal, b)) {
		m->shutdown(m, BRISK_EXIT_FAILURE, "cannot watch for the VM's end");
		return;
	}
	while (!b->done) {
		int wait = timeout ? (int)(deadline - now_ms()) : -1;

		if (timeout && wait <= 0) {
			snprintf(why, sizeof(why),
				 "timeout: guest still running after %u s", timeout);
			m->shutdown(m, BRISK_EXIT_TIMEOUT, why);
			break;
		}
		if (iothread_poll(m->loop, wait) < 0) {
			m->shutdown(m, BRISK_EXIT_FAILURE, "poll failed");
			break;
		}
	}
	iothread_del_fd(m->loop, b->sig_fd);
	iothread_del_fd(m->loop, kvm_vm_done_fd(b->vm));
}

/* brisk --check-kvm: the facts on stdout, 0 when guests can run here. */
static int check_kvm_report(const struct board_ops *ops)
{
	const struct kvm_check_guest *g = ops->check_guest;
	struct kvm_check c;

	if (kvm_check(&c, g))
		return BRISK_EXIT_FAILURE;
	printf("kvm-module: %s\n", c.module[0] ? c.module : "unknown");
	printf("cpu-virt: %s\n", c.cpu_virt);
	printf("nested-state: %d\n", c.nested_state);
	if (c.loop_ns)
		printf("test-guest: %.3f ms for %u loop iterations\n",
		       c.loop_ns / 1e6, g->loops);
	else
		printf("test-guest: did not finish\n");
	printf("usable: %s\n", c.usable ? "yes" : "no");
	printf("verdict: %s\n", c.verdict);
	return c.usable ? BRISK_EXIT_OK : BRISK_EXIT_FAILURE;
}

/*
 * A /dev/kvm that cannot run the guest would leave it spinning without a
 * word, for hours: say so and stop instead, unless told to go ahead.
 */
static int kvm_refuse_unusable(const struct board_ops *ops)
{
	struct kvm_check c;

	if (kvm_check(&c, ops->check_guest))
		return -1;
	if (c.usable)
		return 0;
	error_report("%s (-accel kvm,check=off boots anyway)", c.verdict);
	return -1;
}

/*
 * hw/cli.c refuses every -device with -export; a -drive if=virtio makes
 * its guest's disk only as it is parsed.
 */
static int daemon_check(struct brisk *b)
{
	const struct device_family *f;

	for (unsigned i = 0; device_set_get(b->devices, i, &f); i++) {
		if (f->pci_class) {
			error_report("-drive if=virtio needs a guest; with -export brisk runs "
				     "none and serves its drives to other processes");
			return -1;
		}
	}
	return 0;
}

/*
 * With -export brisk runs no guest: it serves its drives to vhost-user
 * front-ends until a signal (a normal end, exit 0) or -timeout.
 */
static int run_daemon(struct brisk *b)
{
	unsigned timeout = b->opts.timeout_s;
	int64_t deadline = now_ms() + timeout * 1000ll;
	struct pollfd p;

	if (objects_parse(b) || disks_parse(b) ||
	    devices_add(b, b->opts.exports, b->opts.nr_exports) || daemon_check(b) ||
	    disks_finish(b) || block_signals(b) || device_set_create(b->devices, NULL))
		return BRISK_EXIT_FAILURE;
	p = (struct pollfd){ .fd = b->sig_fd, .events = POLLIN };
	for (;;) {
		int wait = timeout ? (int)(deadline - now_ms()) : -1;

		if (timeout && wait <= 0) {
			error_report("timeout: still serving after %u s", timeout);
			return BRISK_EXIT_TIMEOUT;
		}
		if (poll(&p, 1, wait) < 0 && errno != EINTR) {
			error_report("poll: %s", strerror(errno));
			return BRISK_EXIT_FAILURE;
		}
		if (p.revents)
			return BRISK_EXIT_OK;
	}
}

static int run(struct brisk *b)
{
	const struct cli_opts *o = &b->opts;
	struct machine *m = &b->m;
	struct cpu_entry entry;

	if (o->nr_exports)
		return run_daemon(b);
	/* Everything the command line names is checked before /dev/kvm. */
	if (objects_parse(b) || devices_parse(b) ||
	    chardev_check(o->board.serial))
		return BRISK_EXIT_FAILURE;
	if (o->dumpdtb && !b->ops->dump_fdt) {
		error_report("-machine dumpdtb: the %s board is described by ACPI, "
			     "not a device tree", b->ops->name);
		return BRISK_EXIT_FAILURE;
	}
	b->board = b->ops->open(&o->board);
	if (!b->board)
		return BRISK_EXIT_FAILURE;
	if (o->dumpdtb) {
		return b->ops->dump_fdt(b->board, o->board.ncpus, o->dumpdtb) ?
		       BRISK_EXIT_FAILURE : BRISK_EXIT_OK;
	}
	if (block_signals(b))
		return BRISK_EXIT_FAILURE;

	bus_init(&m->mmio, "mmio");
	b->bus_ready = true;
	m->loop = iothread_new("main");
	if (!m->loop) {
		error_report("cannot make the main event loop");
		return BRISK_EXIT_FAILURE;
	}
	m->ncpus = o->board.ncpus;
	if (o->kvm_check && kvm_refuse_unusable(b->ops))
		return BRISK_EXIT_FAILURE;
	m->panic = o->panic;
	b->vm = kvm_vm_new(m, b->ops->ram_end(b->board));
	if (!b->vm)
		return BRISK_EXIT_FAILURE;
	if (o->board.ncpus > kvm_max_vcpus(b->vm)) {
		error_report("-smp %u: this host's KVM allows at most %u vCPUs",
			     o->board.ncpus, kvm_max_vcpus(b->vm));
		return BRISK_EXIT_FAILURE;
	}
	/* A vhost-user back-end maps guest RAM: it must be in memfds. */
	m->ram_shared = blk_cmdline_shares_ram(b->blk);
	if (b->ops->init(b->board, m, b->vm) || b->ops->devices(b->board, m))
		return BRISK_EXIT_FAILURE;
	if (device_set_create(b->devices, m))
		return BRISK_EXIT_FAILURE;
	if (b->ops->load(b->board, m, &entry) || kvm_vcpus_create(b->vm, &entry) ||
	    kvm_vcpus_start(b->vm))
		return BRISK_EXIT_FAILURE;
	wait_for_shutdown(b);
	return BRISK_EXIT_OK;
}

/* Undoes run() in reverse; the vCPUs stop first, so no exit races it. */
static int teardown(struct brisk *b, int status)
{
	const char *why = NULL;
	char reason[256] = "";

	if (b->vm) {
		int vm_status = kvm_vm_stop(b->vm, &why);

		/* why lives in the VM, which is freed below. */
		if (status == BRISK_EXIT_OK && why)
			snprintf(reason, sizeof(reason), "%s", why);
		if (status == BRISK_EXIT_OK)
			status = vm_status;
	}
	device_set_free(b->devices);
	if (b->m.pci)
		pci_bus_free(b->m.pci);
	/* Device threads may raise interrupts until they are gone. */
	if (b->board)
		b->ops->free(b->board, &b->m);
	iothread_free(b->m.loop);
	kvm_vm_free(b->vm);
	if (b->bus_ready)
		bus_destroy(&b->m.mmio);
	if (b->blk)
		blk_cmdline_free(b->blk);
	object_set_free(b->objects);
	if (status != BRISK_EXIT_OK && reason[0])
		error_report("%s", reason);
	return status;
}

int main(int argc, char **argv)
{
	struct brisk *b = calloc(1, sizeof(*b));

	if (!b) {
		error_report("out of memory");
		return BRISK_EXIT_FAILURE;
	}
	b->sig_fd = -1;
	b->ops = board_ops();
	int status;

	if (cli_parse(argc, argv, &b->opts)) {
		free(b);
		return BRISK_EXIT_FAILURE;
	}
	if (b->opts.action == CLI_HELP || b->opts.action == CLI_DEVICE_LIST ||
	    b->opts.action == CLI_EXPORT_LIST || b->opts.action == CLI_OPT_HELP ||
	    b->opts.action == CLI_OBJECT_LIST || b->opts.action == CLI_NETDEV_LIST ||
	    b->opts.action == CLI_VALUES_HELP) {
		if (b->opts.action == CLI_HELP)
			cli_print_help();
		else if (b->opts.action == CLI_VALUES_HELP)
			cli_print_values(&b->opts);
		else if (b->opts.action == CLI_DEVICE_LIST)
			device_print_list(stdout);
		else if (b->opts.action == CLI_EXPORT_LIST)
			export_print_list(stdout);
		else if (b->opts.action == CLI_OBJECT_LIST)
			object_print_list(stdout, "-object");
		else if (b->opts.action == CLI_NETDEV_LIST)
			object_print_list(stdout, "-netdev");
		else
			opts_print_help(stdout, b->opts.help);
		free(b);
		return BRISK_EXIT_OK;
	}
	if (b->opts.action == CLI_CHECK_KVM || b->opts.action == CLI_ACCEL_HELP) {
		status = b->opts.action == CLI_CHECK_KVM ? check_kvm_report(b->ops) :
			 (puts("kvm"), BRISK_EXIT_OK);
		free(b);
		return status;
	}
	if (b->opts.action == CLI_VERSION) {
		printf("brisk %s\n", BRISK_VERSION);
		free(b);
		return BRISK_EXIT_OK;
	}
	status = teardown(b, run(b));

	if (b->sig_fd >= 0)
		close(b->sig_fd);
	free(b);
	return status;
}
