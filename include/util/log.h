/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_UTIL_LOG_H
#define BRISK_UTIL_LOG_H

#include <stdbool.h>
#include "util/compiler.h"

/* One line on stderr, prefixed "brisk: ".  No trailing newline needed. */
void error_report(const char *fmt, ...) BRISK_PRINTF(1, 2);

/*
 * Report at most once per *flag: device paths use this so a guest (or a
 * failing disk) cannot flood stderr with one line per request.
 */
void error_report_once(bool *flag, const char *fmt, ...) BRISK_PRINTF(2, 3);

#endif
