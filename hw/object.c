// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Every type -object can make, in one table, and the set of those the
 * command line made.  Devices find them by id (object_find()).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hw/object.h"
#include "net/net.h"
#include "util/compiler.h"
#include "util/log.h"

#define ID_PROP(T, F) { "id", OPT_ID, OPT_AT(T, F, char *), OPT_REQUIRED, \
			.help = "the name devices use" }

static const struct opt_prop rng_random_props[] = {
	ID_PROP(struct object_rng_cfg, head.id),
	{ "filename", OPT_STR, OPT_AT(struct object_rng_cfg, filename, char *),
	  .def = "/dev/urandom", .help = "the file the bytes are read from" },
	{ NULL },
};
static const struct opt_spec rng_random_spec = { "-object rng-random", NULL,
						 rng_random_props };

/*
 * Opened now, before /dev/kvm, as the device will open it: a character
 * device or regular file (a FIFO could make the main loop wait).
 */
static int rng_random_check(void *cfg)
{
	struct object_rng_cfg *c = cfg;
	struct stat st;
	int fd;

	if (!c->filename && !(c->filename = strdup("/dev/urandom"))) {
		error_report("out of memory");
		return -1;
	}
	fd = open(c->filename, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		error_report("-object rng-random %s: %s: %s", c->head.id, c->filename,
			     strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !(S_ISCHR(st.st_mode) || S_ISREG(st.st_mode))) {
		error_report("-object rng-random %s: %s: not a character device or "
			     "regular file", c->head.id, c->filename);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static const struct opt_prop rng_builtin_props[] = {
	ID_PROP(struct object_rng_cfg, head.id),
	{ NULL },
};
static const struct opt_spec rng_builtin_spec = { "-object rng-builtin", NULL,
						  rng_builtin_props };

/*
 * QEMU's iothread runs a device's I/O off its main loop; every brisk disk
 * has I/O threads of its own anyway (iothreads=), so there is nothing to
 * set but the name.
 */
static const struct opt_prop iothread_props[] = {
	ID_PROP(struct object_cfg, id),
	{ NULL },
};
static const struct opt_spec iothread_spec = { "-object iothread", NULL, iothread_props };

#undef ID_PROP

static const struct object_rng_cfg rng_defaults;
static const struct object_cfg plain_defaults;

static const struct object_type types[] = {
	{ "-object", "rng-random", "virtio-rng's bytes read from a file (filename=, default "
	  "/dev/urandom)", &rng_random_spec, sizeof(struct object_rng_cfg), &rng_defaults,
	  rng_random_check },
	{ "-object", "rng-builtin", "virtio-rng's bytes from the host's getrandom(2), as without rng=",
	  &rng_builtin_spec, sizeof(struct object_rng_cfg), &rng_defaults, NULL },
	{ "-object", "iothread", "a name for virtio-blk-pci's iothread=; each brisk disk has its "
	  "own I/O threads", &iothread_spec, sizeof(struct object_cfg), &plain_defaults, NULL },
	{ "-netdev", "user", "QEMU's user networking (libslirp): DHCP, DNS, hostfwd= port "
	  "forwards", &netdev_user_spec, sizeof(struct netdev_user_cfg), &netdev_user_defaults,
	  netdev_user_check },
	{ "-netdev", "stream", "frames over a unix socket, as passt serves them, or TCP "
	  "(addr.type=unix|inet|fd, server=on|off)", &netdev_stream_spec, sizeof(struct netdev_stream_cfg),
	  &netdev_stream_defaults, netdev_stream_check },
	{ "-netdev", "tap", "a Linux tap interface (ifname=, script=no), with checksum and TSO "
	  "offloads", &netdev_tap_spec, sizeof(struct netdev_tap_cfg), &netdev_tap_defaults,
	  netdev_tap_check },
};

/* A -netdev's config is an object's: its id and type first. */
static_assert(offsetof(struct netdev_cfg, id) == offsetof(struct object_cfg, id) &&
	      offsetof(struct netdev_cfg, type) == offsetof(struct object_cfg, type),
	      "a -netdev config starts as an object's");

static const struct object_type *type_find(const char *option, const char *name,
					   size_t len)
{
	for (unsigned i = 0; i < ARRAY_SIZE(types); i++)
		if (!strcmp(types[i].option, option) && strlen(types[i].name) == len &&
		    !strncmp(types[i].name, name, len))
			return &types[i];
	return NULL;
}

const struct object_type *object_type_find(const char *name, size_t len)
{
	return type_find("-object", name, len);
}

const struct object_type *netdev_type_find(const char *name, size_t len)
{
	return type_find("-netdev", name, len);
}

void object_print_list(FILE *f, const char *option)
{
	fprintf(f, "%s (%s TYPE,help lists a type's properties):\n",
		strcmp(option, "-netdev") ? "Objects" : "Network back ends", option);
	for (unsigned i = 0; i < ARRAY_SIZE(types); i++)
		if (!strcmp(types[i].option, option))
			fprintf(f, "  %-20s %s\n", types[i].name, types[i].help);
}

struct object {
	const struct object_type *t;
	struct object_cfg *cfg;
};

struct object_set {
	struct object *o;
	unsigned n;
};

struct object_set *object_set_new(void)
{
	return calloc(1, sizeof(struct object_set));
}

static void object_cfg_free(const struct object_type *t, void *cfg)
{
	opts_free(t->spec, cfg);
	free(cfg);
}

int object_set_add(struct object_set *s, const struct object_type *t, const char *arg)
{
	struct object *o = realloc(s->o, (s->n + 1) * sizeof(*o));
	struct object_cfg *cfg;

	if (!o) {
		error_report("out of memory");
		return -1;
	}
	s->o = o;
	cfg = opts_parse_new(t->spec, t->cfg_size, t->defaults, arg, t->check);
	if (!cfg)
		return -1;
	for (unsigned i = 0; i < s->n; i++) {
		if (!strcmp(s->o[i].cfg->id, cfg->id)) {
			error_report("%s: duplicate id '%s'", t->option, cfg->id);
			object_cfg_free(t, cfg);
			return -1;
		}
	}
	cfg->type = t->name;
	s->o[s->n++] = (struct object){ t, cfg };
	return 0;
}

const struct object_cfg *object_find(const struct object_set *s, const char *id,
				     const char *const *types_ok, const char *who)
{
	char names[128] = "";

	for (unsigned j = 0; types_ok[j]; j++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 !j ? "" : types_ok[j + 1] ? ", " : " or ", types_ok[j]);
	for (unsigned i = 0; s && i < s->n; i++) {
		if (strcmp(s->o[i].cfg->id, id))
			continue;
		for (unsigned j = 0; types_ok[j]; j++)
			if (!strcmp(s->o[i].t->name, types_ok[j]))
				return s->o[i].cfg;
		error_report("%s: %s %s is %s, not %s", who, s->o[i].t->option, id,
			     s->o[i].t->name, names);
		return NULL;
	}
	error_report("%s: no %s with that id (of type %s)", who,
		     type_find("-netdev", types_ok[0], strlen(types_ok[0])) ? "-netdev" : "-object",
		     names);
	return NULL;
}

const struct object_cfg *object_set_get(const struct object_set *s, unsigned i)
{
	return s && i < s->n ? s->o[i].cfg : NULL;
}

void object_set_free(struct object_set *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->n; i++)
		object_cfg_free(s->o[i].t, s->o[i].cfg);
	free(s->o);
	free(s);
}
