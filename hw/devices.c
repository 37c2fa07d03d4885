// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Every device the command line can name, in one table.  Adding a device
 * is its own file plus one line here; the option parser, "-device help"
 * and hw/main.c read the table and nothing else.
 */
#include <stdlib.h>
#include <string.h>

#include "hw/block/virtio-blk.h"
#include "hw/device.h"
#include "hw/misc/debug-exit.h"
#include "hw/misc/pvpanic.h"
#include "hw/object.h"
#include "hw/virtio/virtio-net.h"
#include "hw/virtio/virtio-plug.h"
#include "hw/virtio/virtio-rng.h"
#include "util/compiler.h"
#include "util/log.h"

static const struct device_family *const families[] = {
	&virtio_blk_pci_family,
	&vhost_user_blk_pci_family,
	&virtio_rng_pci_family,
	&virtio_net_pci_family,
	&virtio_net_family,
	&isa_debug_exit_family,
	&pvpanic_family,
};

/* What -export serves: a device served to other processes' guests. */
static const struct device_family *const exports[] = {
	&vhost_user_blk_export_family,
};

static const struct device_family *find(const struct device_family *const *t,
					unsigned n, const char *name, size_t len)
{
	for (unsigned i = 0; i < n; i++)
		if (strlen(t[i]->name) == len && !strncmp(t[i]->name, name, len))
			return t[i];
	return NULL;
}

static void print_list(FILE *f, const char *title,
		       const struct device_family *const *t, unsigned n)
{
	fputs(title, f);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "  %-20s %s\n", t[i]->name, t[i]->help);
}

const struct device_family *device_find(const char *name, size_t len)
{
	return find(families, ARRAY_SIZE(families), name, len);
}

const struct device_family *export_find(const char *name, size_t len)
{
	return find(exports, ARRAY_SIZE(exports), name, len);
}

void device_print_list(FILE *f)
{
	print_list(f, "Devices (-device NAME,help lists a device's properties):\n",
		   families, ARRAY_SIZE(families));
}

void export_print_list(FILE *f)
{
	print_list(f, "Exports (-export TYPE,help lists an export's properties):\n",
		   exports, ARRAY_SIZE(exports));
}

struct device {
	const struct device_family *f;
	void *cfg;
	void *dev;		/* once created */
};

struct device_set {
	struct device *d;
	unsigned n;
};

struct device_set *device_set_new(void)
{
	return calloc(1, sizeof(struct device_set));
}

/* cfg claims what a member already did: true after one line. */
static bool claimed_before(const struct device_set *s, const struct device_family *f,
			   const void *cfg)
{
	const struct object_cfg *o = f->claims ? f->claims(cfg) : NULL;

	if (!o || !device_set_claimed(s, o))
		return false;
	error_report("-device %s: -netdev %s already has a NIC (a -netdev serves one)",
		     f->name, o->id);
	return true;
}

int device_set_add(struct device_set *s, const struct device_family *f,
		   const char *arg, const struct object_set *objects)
{
	struct device *d = realloc(s->d, (s->n + 1) * sizeof(*d));
	void *cfg;

	if (!d) {
		error_report("out of memory");
		return -1;
	}
	s->d = d;
	cfg = opts_parse_new(f->spec, f->cfg_size, f->defaults, arg, f->check);
	if (!cfg)
		return -1;
	if ((f->resolve && f->resolve(cfg, objects)) || claimed_before(s, f, cfg)) {
		opts_free(f->spec, cfg);
		free(cfg);
		return -1;
	}
	s->d[s->n++] = (struct device){ .f = f, .cfg = cfg };
	return 0;
}

bool device_set_claimed(const struct device_set *s, const void *cfg)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->d[i].f->claims && s->d[i].f->claims(s->d[i].cfg) == cfg)
			return true;
	return false;
}

int device_set_create(struct device_set *s, struct machine *m)
{
	for (unsigned i = 0; i < s->n; i++) {
		const struct device_family *f = s->d[i].f;
		struct virtio_plug *plug = NULL;

		if (f->pci_class && !(plug = virtio_pci_plug(m, f->pci_class)))
			return -1;
		s->d[i].dev = f->create(m, s->d[i].cfg, plug);
		if (!s->d[i].dev)
			return -1;
	}
	return 0;
}

void device_set_free(struct device_set *s)
{
	if (!s)
		return;
	for (unsigned i = s->n; i-- > 0;) {
		if (s->d[i].dev)
			s->d[i].f->destroy(s->d[i].dev);
		opts_free(s->d[i].f->spec, s->d[i].cfg);
		free(s->d[i].cfg);
	}
	free(s->d);
	free(s);
}
