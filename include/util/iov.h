/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_UTIL_IOV_H
#define BRISK_UTIL_IOV_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

/*
 * Copies len bytes between buf and the vector, starting skip bytes into
 * the vector: into buf (to_buf) or out of it.  The caller checked that
 * the vector holds skip + len bytes.
 */
static inline void iov_copy(const struct iovec *iov, unsigned int n, uint64_t skip,
			    void *buf, uint64_t len, bool to_buf)
{
	uint8_t *p = buf;

	for (unsigned int i = 0; i < n && len; i++) {
		uint64_t l = iov[i].iov_len;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		l -= skip;
		if (l > len)
			l = len;
		if (to_buf)
			memcpy(p, (uint8_t *)iov[i].iov_base + skip, l);
		else
			memcpy((uint8_t *)iov[i].iov_base + skip, p, l);
		p += l;
		len -= l;
		skip = 0;
	}
}

/* The bytes n buffers hold. */
static inline size_t iov_size(const struct iovec *iov, unsigned n)
{
	size_t sum = 0;

	for (unsigned i = 0; i < n; i++)
		sum += iov[i].iov_len;
	return sum;
}

/* Drops the first skip bytes of iov in place; returns the new start. */
static inline struct iovec *iov_skip(struct iovec *iov, unsigned *n, size_t skip)
{
	while (*n && skip >= iov->iov_len) {
		skip -= iov->iov_len;
		iov++;
		(*n)--;
	}
	if (*n && skip) {
		iov->iov_base = (uint8_t *)iov->iov_base + skip;
		iov->iov_len -= skip;
	}
	return iov;
}

#endif
