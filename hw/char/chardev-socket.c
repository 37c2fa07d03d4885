// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hw/char/chardev-socket.h"
#include "util/log.h"

#define C(f, t) OPT_AT(struct chardev_socket_cfg, f, t)
static const struct opt_prop chardev_socket_props[] = {
	{ "id", OPT_ID, C(id, char *), OPT_REQUIRED,
	  .help = "the name a device's chardev= uses" },
	{ "path", OPT_STR, C(path, char *), .help = "the Unix socket to connect to" },
	{ "reconnect", OPT_UINT, C(reconnect_s, unsigned),
	  .max = CHARDEV_SOCKET_MAX_RECONNECT_S, .def = "0 (never)",
	  .help = "seconds between tries to reach a lost peer" },
	{ "server", OPT_ENUM, OPT_NOWHERE, OPT_NOSTORE,
	  .names = (const char *const[]){ "off", "no", "false", NULL }, .def = "off",
	  .why = "brisk connects to a back-end that listens",
	  .help = "brisk is the client" },
	/* QEMU's fd=: a socket the caller connected and brisk inherited. */
	{ "fd", OPT_UINT, C(fd, int), .max = INT_MAX,
	  .help = "an inherited socket, already connected" },
	{ NULL },
};
#undef C
const struct opt_spec chardev_socket_spec = {
	"-chardev socket", NULL, chardev_socket_props,
};

int chardev_socket_parse(const char *arg, struct chardev_socket_cfg *cfg)
{
	const char *rest;
	size_t len;
	const char *head = opts_head(arg, "backend", &len, &rest);
	int r;

	*cfg = (struct chardev_socket_cfg){ .fd = -1 };
	if (len != strlen("socket") || strncmp(head, "socket", len)) {
		error_report("-chardev %s: brisk's -chardev knows only socket (a Unix "
			     "socket to a vhost-user back-end: socket,id=ID,path=PATH)", arg);
		return -1;
	}
	r = opts_parse(&chardev_socket_spec, rest, cfg);
	if (r == OPTS_HELP) {
		error_report("-chardev socket: help is not a property (brisk -chardev "
			     "socket,help lists them)");
		r = -1;
	}
	if (r == 0 && !cfg->path == (cfg->fd < 0)) {
		error_report("-chardev socket: %s", cfg->path ?
			     "path= and fd= exclude each other" : "path= (or fd=) is missing");
		r = -1;
	}
	if (r == 0 && cfg->reconnect_s && !cfg->path) {
		error_report("-chardev socket: reconnect= needs path=");
		r = -1;
	}
	if (r)
		chardev_socket_free(cfg);
	return r;
}

void chardev_socket_free(struct chardev_socket_cfg *cfg)
{
	opts_free(&chardev_socket_spec, cfg);
}

int chardev_socket_check(const struct chardev_socket_cfg *cfg)
{
	struct stat st;

	if (!cfg->path)
		return 0;
	if (stat(cfg->path, &st) < 0) {
		error_report("-chardev %s: %s: %s", cfg->id, cfg->path, strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		error_report("-chardev %s: %s is not a socket (is the vhost-user "
			     "back-end running?)", cfg->id, cfg->path);
		return -1;
	}
	return 0;
}
