/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_CHAR_CHARDEV_H
#define BRISK_HW_CHAR_CHARDEV_H

#include <stddef.h>
#include <stdint.h>

struct machine;
struct chardev;

/*
 * A character backend for a console device.
 *
 *   "stdio"      output to stdout, input from stdin.  On a terminal stdin is
 *                put in raw mode (restored at exit, on SIGTERM/SIGINT/SIGHUP/
 *                SIGQUIT and by chardev_term_restore()); Ctrl-A x ends brisk
 *                with status 0, Ctrl-A Ctrl-A sends one Ctrl-A.  EOF on stdin
 *                only ends input.
 *   "file:PATH"  output to PATH (created or truncated), no input.
 *   "none"       output discarded, no input.
 *
 * NULL with one error line on a bad spec or an unopenable file.
 */
struct chardev *chardev_open(struct machine *m, const char *spec);
/*
 * What chardev_open(spec) would refuse, found without opening anything
 * (a file: backend would be created and truncated): a directory, a file
 * that cannot be written, a missing or read-only directory.  -1 after the
 * line chardev_open() would print; hw/main.c asks before /dev/kvm.
 */
int chardev_check(const char *spec);

/*
 * Backend over caller-supplied descriptors (either may be -1), taken over
 * by the chardev; never touches terminal modes.
 */
struct chardev *chardev_open_fds(struct machine *m, int in_fd, int out_fd);

/*
 * Input arrives on a reader thread through rx, which takes as many bytes as
 * it has room for and returns that count.  When it takes fewer than offered,
 * the reader holds the rest and waits for chardev_kick(): that is how a full
 * receive FIFO pushes back on the input instead of dropping it.
 */
typedef size_t (*chardev_rx_fn)(void *opaque, const uint8_t *buf, size_t len);
int chardev_start(struct chardev *cd, chardev_rx_fn rx, void *opaque);
/* The consumer has room again; cheap, callable with the consumer's lock held. */
void chardev_kick(struct chardev *cd);

/*
 * For a UART: registers its region [base, base + len) on bus and starts
 * cd's reader feeding rx.  On failure (one error line naming what) the
 * region is gone again; cd stays the caller's to close either way.
 */
struct bus;
struct bus_ops;
int chardev_attach(struct chardev *cd, const char *what, struct bus *bus,
		   uint64_t base, uint64_t len, const struct bus_ops *ops,
		   chardev_rx_fn rx, void *opaque);
/* Undoes chardev_attach() and closes cd: no rx call runs past it. */
void chardev_detach(struct chardev *cd, struct bus *bus, uint64_t base,
		    void *opaque);

/* Blocking write of all of buf; errors are reported once and then dropped. */
void chardev_write(struct chardev *cd, const void *buf, size_t len);

/* Stops the reader thread, restores the terminal, closes and frees. */
void chardev_close(struct chardev *cd);

/*
 * Puts a terminal that "stdio" switched to raw mode back as it was.
 * Idempotent and async-signal-safe: the shutdown path may call it.
 */
void chardev_term_restore(void);

#endif
