// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The devices the command line made, of any family: each parsed once by
 * its family's table, and made and undone by its family's hooks.
 */
#include <stdlib.h>
#include <string.h>

#include "hw/device.h"
#include "hw/object.h"
#include "hw/virtio/virtio-plug.h"
#include "util/log.h"

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

static void cfg_free(const struct device_family *f, void *cfg)
{
	opts_free(f->spec, cfg);
	free(cfg);
}

int device_set_add_cfg(struct device_set *s, const struct device_family *f, void *cfg,
		       const struct object_set *objects)
{
	struct device *d = realloc(s->d, (s->n + 1) * sizeof(*d));

	if (!d) {
		error_report("out of memory");
		cfg_free(f, cfg);
		return -1;
	}
	s->d = d;
	if ((f->resolve && f->resolve(cfg, objects)) || claimed_before(s, f, cfg)) {
		cfg_free(f, cfg);
		return -1;
	}
	s->d[s->n++] = (struct device){ .f = f, .cfg = cfg };
	return 0;
}

int device_set_add(struct device_set *s, const struct device_family *f,
		   const char *arg, const struct object_set *objects)
{
	void *cfg = opts_parse_new(f->spec, f->cfg_size, f->defaults, arg, f->check);

	return cfg ? device_set_add_cfg(s, f, cfg, objects) : -1;
}

void *device_set_get(const struct device_set *s, unsigned i, const struct device_family **f)
{
	if (i >= s->n)
		return NULL;
	*f = s->d[i].f;
	return s->d[i].cfg;
}

bool device_set_claimed(const struct device_set *s, const void *cfg)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->d[i].f->claims && s->d[i].f->claims(s->d[i].cfg) == cfg)
			return true;
	return false;
}

/* Stable: members of one order keep the order they were added in. */
static void sort_by_order(struct device_set *s)
{
	for (unsigned i = 1; i < s->n; i++) {
		struct device d = s->d[i];
		unsigned j = i;

		for (; j > 0 && s->d[j - 1].f->order > d.f->order; j--)
			s->d[j] = s->d[j - 1];
		s->d[j] = d;
	}
}

int device_set_create(struct device_set *s, struct machine *m)
{
	sort_by_order(s);
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
		cfg_free(s->d[i].f, s->d[i].cfg);
	}
	free(s->d);
	free(s);
}
