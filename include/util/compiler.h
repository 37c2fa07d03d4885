/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_UTIL_COMPILER_H
#define BRISK_UTIL_COMPILER_H

#include <stddef.h>

/*
 * brisk builds with -ftrivial-auto-var-init=zero by default, so every
 * automatic variable is cleared on function entry.  That is cheap for
 * scalars but not for the multi-kilobyte arrays on the virtqueue pop paths,
 * which are rewritten before they are read on every request.
 *
 * BRISK_UNINITIALIZED opts one variable out.  Use it only for large stack
 * buffers on a hot path, and only where a benchmark (tests/bench/) shows the
 * cost; everywhere else the hardening is worth far more than it costs.
 *
 * The bench build can define BRISK_NO_UNINIT_ATTR to measure the cost of
 * leaving the attribute off.
 */
#if defined(__has_attribute) && !defined(BRISK_NO_UNINIT_ATTR)
# if __has_attribute(uninitialized)
#  define BRISK_UNINITIALIZED __attribute__((uninitialized))
# endif
#endif
#ifndef BRISK_UNINITIALIZED
# define BRISK_UNINITIALIZED
#endif

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define BRISK_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))

/*
 * A function whose address goes into an ops table but whose one hot
 * caller sees the table as a constant: inlined there all the same.
 */
#define BRISK_ALWAYS_INLINE inline __attribute__((always_inline))

#endif
