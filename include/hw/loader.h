/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_LOADER_H
#define BRISK_HW_LOADER_H

#include <stddef.h>
#include <stdint.h>

/*
 * What the boards' boot loaders share: reading the files the command line
 * names.  Each reports one error line naming what (e.g. "kernel") and
 * returns -1 on failure.
 */

/*
 * Reads all of path, a regular file or block device of min to max bytes,
 * into malloc'd *buf.
 */
int loader_read_file(const char *what, const char *path, size_t min,
		     size_t max, uint8_t **buf, size_t *size);
/*
 * Opens path, a regular file or block device (anything else, a FIFO
 * above all, is refused without waiting on it), for reading later;
 * *size is its size.
 */
int loader_open_file(const char *what, const char *path, uint64_t *size);
/* Reads size bytes of fd from offset 0 into dst. */
int loader_pread_all(const char *what, int fd, void *dst, uint64_t size);

#endif
