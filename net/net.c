// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The one place a -netdev's type becomes its back end: the NIC names a
 * -netdev by id and gets a struct netdev, whatever carries its frames.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "net/net.h"
#include "util/log.h"

struct netdev *netdev_new(const struct netdev_cfg *cfg, struct iothread *loop)
{
	assert(cfg->type);
	if (!strcmp(cfg->type, "user"))
		return netdev_user_new((const struct netdev_user_cfg *)cfg, loop);
	if (!strcmp(cfg->type, "stream"))
		return netdev_stream_new((const struct netdev_stream_cfg *)cfg);
	if (!strcmp(cfg->type, "tap"))
		return netdev_tap_new((const struct netdev_tap_cfg *)cfg);
	/* The object table lists no other -netdev type. */
	assert(!"a -netdev type without a back end");
	return NULL;
}

int netdev_error(const char *type, const char *id, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	error_report("-netdev %s,id=%s: %s", type, id, msg);
	return -1;
}
