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

#endif
