// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>
#include <stdio.h>
#include <stdatomic.h>

#include "util/log.h"

static void vreport(const char *fmt, va_list ap)
{
	char buf[1024], line[4 * sizeof(buf)];
	size_t n = 0;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	/*
	 * A file name or a guest's string may hold any byte: control
	 * characters are written as \xNN, so none reaches the terminal as a
	 * command and the report stays one line.
	 */
	for (const unsigned char *p = (const unsigned char *)buf; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			n += (size_t)snprintf(line + n, sizeof(line) - n, "\\x%02x", *p);
		else
			line[n++] = (char)*p;
	}
	line[n] = '\0';
	/* One write, so lines from different threads do not interleave. */
	fprintf(stderr, "brisk: %s\n", line);
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
