/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_MACHINE_H
#define BRISK_HW_MACHINE_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/bus.h"
#include "hw/irq.h"
#include "util/guest-mem.h"

struct iothread;
struct pci_bus;

/*
 * What a pvpanic report does (-action panic=): exit with
 * BRISK_EXIT_PANIC (the zero value, brisk's default), exit 0 as a
 * power-off would (QEMU's panic=shutdown), or nothing.
 */
enum machine_panic { PANIC_EXIT_FAILURE, PANIC_SHUTDOWN, PANIC_NONE };

/*
 * What every device may see of the board it sits on.  The board (hw/x86)
 * owns and fills it; accel/ fills irq, hw/main.c loop; devices only
 * register on the buses and use mem/irq/loop.
 */
struct machine {
	struct guest_mem mem;
	struct bus pio;
	struct bus mmio;
	struct irq_chip irq;
	struct pci_bus *pci;
	unsigned ncpus;
	/*
	 * The main thread's event loop: devices put their timers here (a
	 * timerfd with iothread_add_fd()) rather than start threads.
	 */
	struct iothread *loop;
	/*
	 * Guest RAM goes in memfds that other processes can map (a vhost-user
	 * back-end serving one of the guest's devices); set before the RAM is.
	 */
	bool ram_shared;
	enum machine_panic panic;
	/*
	 * NICs given a default MAC so far: QEMU's first is 52:54:00:12:34:56,
	 * each further one a last byte higher.
	 */
	unsigned nic_macs;

	/*
	 * Ends the VM: brisk stops every vCPU and exits with status.  Any
	 * thread may call it; the first call wins and later ones are ignored.
	 * why (may be NULL) is printed as one line when status != 0.
	 */
	void (*shutdown)(struct machine *m, int status, const char *why);
	/*
	 * Readable from the first shutdown() on, and never read: a device
	 * that waits on another process with no time limit (a vhost-user
	 * back-end finishing a ring's requests) gives up waiting then, so
	 * that the vCPU doing it can stop.  -1 on a board without one.
	 */
	int stop_fd;
	void *priv;		/* the accelerator/main loop's own state */
};

/* Exit statuses of the brisk process (README.md, "Exit status"). */
#define BRISK_EXIT_OK 0		/* guest powered off or rebooted */
#define BRISK_EXIT_FAILURE 1	/* bad input, internal or KVM failure */
#define BRISK_EXIT_PANIC 2	/* guest kernel panicked (pvpanic) */
#define BRISK_EXIT_TIMEOUT 124	/* -timeout fired */
/* isa-debug-exit: the guest wrote V, brisk exits (V << 1) | 1. */

#endif
