// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>
#include <stdio.h>
#include <stdatomic.h>

#include "util/log.h"

static void vreport(const char *fmt, va_list ap)
{
	char buf[1024];

	/* One write, so lines from different threads do not interleave. */
	vsnprintf(buf, sizeof(buf), fmt, ap);
	fprintf(stderr, "brisk: %s\n", buf);
}

void error_report(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
}

void error_report_once(bool *flag, const char *fmt, ...)
{
	va_list ap;

	if (__atomic_exchange_n(flag, true, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
}
