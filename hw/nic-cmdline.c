// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * QEMU's one-option NICs: -nic TYPE,... and the -net nic / -net TYPE pair.
 * Each becomes what the long form says: a -netdev of TYPE and a -device
 * virtio-net-pci naming it, so they are parsed, checked and made by the
 * same code as the long form, before /dev/kvm.
 *
 * QEMU's -net joins every -net option into one hub; brisk has no hub, so
 * it takes the pair (one -net nic, one back end) that CI systems write.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/cli.h"
#include "hw/device.h"
#include "hw/nic-cmdline.h"
#include "hw/object.h"
#include "util/log.h"

/*
 * What brisk adds to an option's items: "netdev=" or "id=", an id, a ','.
 * The items only ever shrink (macaddr= becomes mac=), so an argument's
 * length plus this is room for anything made of it.
 */
#define NIC_ADDED 32

/* Two strings with room for what is made of arg; false after one line. */
static bool nic_bufs(const char *arg, char **a, char **b)
{
	size_t size = strlen(arg) + NIC_ADDED;

	*a = calloc(1, size);
	*b = calloc(1, size);
	if (*a && *b)
		return true;
	free(*a);
	free(*b);
	error_report("out of memory");
	return false;
}

/* The length of the item at s, up to its ',' (",," is a literal comma). */
static size_t item_len(const char *s)
{
	size_t n = 0;

	while (s[n] && (s[n] != ',' || s[n + 1] == ','))
		n += s[n] == ',' ? 2 : 1;
	return n;
}

static bool item_is(const char *item, size_t len, const char *key)
{
	size_t k = strlen(key);

	return len > k && !strncmp(item, key, k) && item[k] == '=';
}

/* The room was counted by nic_bufs(). */
static void append(char *buf, const char *item, size_t len)
{
	size_t at = strlen(buf);

	if (at)
		buf[at++] = ',';
	memcpy(buf + at, item, len);
	buf[at + len] = '\0';
}

/* model=: virtio-net-pci under any of QEMU's names for it, or one line. */
static int nic_model(const char *opt, const char *m, size_t len)
{
	static const char *const ok[] = { "virtio", "virtio-net-pci", "virtio-net", NULL };

	for (unsigned i = 0; ok[i]; i++)
		if (strlen(ok[i]) == len && !strncmp(ok[i], m, len))
			return 0;
	error_report("%s: model=%.*s: brisk's network device is virtio-net-pci "
		     "(model=virtio-net-pci, or leave model= out)", opt, (int)len, m);
	return -1;
}

/*
 * Sorts the items of arg: the NIC's (model=, mac= or, for -net nic,
 * macaddr=) into nic as virtio-net-pci properties, the rest into be; with
 * id, -nic's id= (the -netdev's, as QEMU's) into *id, at most idsz - 1
 * bytes of it.
 */
static void nic_split(const char *arg, char *nic, char *be, char *id, size_t idsz)
{
	for (const char *s = arg; *s;) {
		size_t len = item_len(s);

		/* A second id= goes with the rest, for the -netdev to refuse. */
		if (id && item_is(s, len, "id")) {
			snprintf(id, idsz, "%.*s", (int)(len - 3), s + 3);
			id = NULL;
		} else if (item_is(s, len, "model")) {
			/* nic_cmdline_check() took it as the command line was read. */
		} else if (item_is(s, len, "mac") || item_is(s, len, "macaddr")) {
			size_t key = (size_t)(strchr(s, '=') - s);

			append(nic, "mac", 3);
			strncat(nic, s + key, len - key);
		} else {
			append(be, s, len);
		}
		s += len + (s[len] == ',');
	}
}

int nic_cmdline_check(const char *opt, const char *arg)
{
	for (const char *s = arg; *s;) {
		size_t len = item_len(s);

		if (item_is(s, len, "model") && nic_model(opt, s + 6, len - 6))
			return -1;
		s += len + (s[len] == ',');
	}
	return 0;
}

/* A -netdev TYPE,id=ID,be and a -device virtio-net-pci,netdev=ID,nic. */
static int nic_make(const char *opt, const char *type, size_t type_len, const char *id,
		    const char *nic, const char *be, struct object_set *objects,
		    struct device_set *devices)
{
	const struct object_type *t = netdev_type_find(type, type_len);
	const struct device_family *f = device_find("virtio-net-pci", 14);
	char *a, *d;
	int r;

	if (!t) {
		error_report("%s %.*s: no such network back end (brisk -netdev help "
			     "lists them)", opt, (int)type_len, type);
		return -1;
	}
	if (asprintf(&a, "id=%s%s%s", id, *be ? "," : "", be) < 0)
		a = NULL;
	if (asprintf(&d, "netdev=%s%s%s", id, *nic ? "," : "", nic) < 0)
		d = NULL;
	r = !a || !d ? (error_report("out of memory"), -1) :
	    object_set_add(objects, t, a) || device_set_add(devices, f, d, objects) ? -1 : 0;
	free(a);
	free(d);
	return r;
}

/* -nic TYPE[,model=][,mac=][,back end's properties]. */
static int nic_one(const char *arg, unsigned index, struct object_set *objects,
		   struct device_set *devices)
{
	size_t type_len = item_len(arg);
	const char *rest = arg + type_len + (arg[type_len] == ',');
	char *nic, *be, *id;
	int r = -1;

	if (!nic_bufs(rest, &nic, &be))
		return -1;
	/* Room for the id= the argument may hold, or for brisk's own. */
	id = calloc(1, strlen(rest) + 16);
	if (id) {
		snprintf(id, 16, "nic.%u", index);
		nic_split(rest, nic, be, id, strlen(rest) + 16);
		r = nic_make("-nic", arg, type_len, id, nic, be, objects, devices);
	} else {
		error_report("out of memory");
	}
	free(id);
	free(nic);
	free(be);
	return r;
}

/* The -net nic and -net TYPE pair. */
static int net_pair(const struct cli_nic *n, const struct cli_nic *be_arg,
		    struct object_set *objects, struct device_set *devices)
{
	const char *type = be_arg ? be_arg->arg : NULL;
	size_t type_len = type ? item_len(type) : 0;
	char *nic, *unused;
	int r = -1;

	if (!n) {
		/* QEMU runs a hub with no NIC too, and says so. */
		error_report("warning: -net %.*s: no -net nic, so the guest has no NIC "
			     "for it", (int)type_len, type);
		return 0;
	}
	if (!nic_bufs(n->arg, &nic, &unused))
		return -1;
	nic_split(n->arg, nic, unused, NULL, 0);
	if (*unused)
		error_report("-net nic: %.*s: brisk's -net nic takes model= and macaddr=",
			     (int)item_len(unused), unused);
	else if (!type)		/* QEMU's NIC on an empty hub: link up, nothing behind it */
		r = device_set_add(devices, device_find("virtio-net-pci", 14), nic, objects);
	else
		r = nic_make("-net", type, type_len, "net.0", nic,
			     type + type_len + (type[type_len] == ','), objects, devices);
	free(nic);
	free(unused);
	return r;
}

int nic_cmdline_add(const struct cli_opts *o, struct object_set *objects,
		    struct device_set *devices)
{
	const struct cli_nic *net_nic = NULL, *net_be = NULL;
	unsigned nics = 0;

	for (unsigned i = 0; i < o->nr_nics; i++) {
		const struct cli_nic *n = &o->nics[i];
		const struct cli_nic **slot = n->kind == CLI_NET_NIC ? &net_nic : &net_be;

		if (n->kind == CLI_NIC) {
			if (nic_one(n->arg, nics++, objects, devices))
				return -1;
			continue;
		}
		if (*slot) {
			error_report("-net %s: a second one (brisk joins one -net nic to "
				     "one -net back end; use -nic or -netdev for more)",
				     n->kind == CLI_NET_NIC ? "nic" : n->arg);
			return -1;
		}
		*slot = n;
	}
	return net_nic || net_be ? net_pair(net_nic, net_be, objects, devices) : 0;
}
