/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_CHAR_CHARDEV_SOCKET_H
#define BRISK_HW_CHAR_CHARDEV_SOCKET_H

/*
 * -chardev socket,id=ID,path=PATH|fd=N[,reconnect=SECONDS]: a Unix socket
 * brisk connects to (brisk is never the server), the way to a vhost-user
 * back-end.  Parsing opens nothing; chardev_socket_check() looks at the
 * path once the whole command line is known.
 */
#include "util/opts.h"

#define CHARDEV_SOCKET_MAX_RECONNECT_S 3600

struct chardev_socket_cfg {
	char *id;
	char *path;		/* NULL when fd is given */
	int fd;			/* an inherited connected socket, or -1 */
	unsigned reconnect_s;	/* 0: never */
};

extern const struct opt_spec chardev_socket_spec;

/*
 * "socket,KEY=VALUE..." (or backend=socket,...) into cfg; OPTS_HELP for
 * "help"; -1 after one error line, cfg then freed.
 */
int chardev_socket_parse(const char *arg, struct chardev_socket_cfg *cfg);
void chardev_socket_free(struct chardev_socket_cfg *cfg);
/* Whether path= names a socket now, so a typo fails before the VM is made. */
int chardev_socket_check(const struct chardev_socket_cfg *cfg);

#endif
