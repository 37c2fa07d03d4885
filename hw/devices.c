// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Every device the command line can name, in one table.  Adding a device
 * is its own file plus one line here; the option parser, "-device help"
 * and hw/main.c read the table and nothing else.
 */
#include <string.h>

#include "hw/block/virtio-blk.h"
#include "hw/device.h"
#include "hw/misc/debug-exit.h"
#include "hw/misc/pvpanic.h"
#include "hw/virtio/virtio-net.h"
#include "hw/virtio/virtio-rng.h"
#include "util/compiler.h"

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

/* text from column 22 on, wrapped at 78, as the rest of --help is. */
static void print_wrapped(FILE *f, const char *text)
{
	int col = 0;

	while (*text) {
		int len = (int)strcspn(text, " ");

		if (col && col + 1 + len > 78) {
			fputc('\n', f);
			col = 0;
		}
		if (col)
			col += fprintf(f, " %.*s", len, text);
		else
			col = fprintf(f, "%22s%.*s", "", len, text);
		text += len + (text[len] == ' ');
	}
	fputc('\n', f);
}

static void print_synopses(FILE *f, const char *option,
			   const struct device_family *const *t, unsigned n)
{
	char head[64];

	for (unsigned i = 0; i < n; i++) {
		snprintf(head, sizeof(head), "%s %s", option, t[i]->name);
		opts_print_synopsis(f, head, t[i]->spec);
		print_wrapped(f, t[i]->help);
	}
}

void device_print_synopses(FILE *f)
{
	print_synopses(f, "-device", families, ARRAY_SIZE(families));
	print_synopses(f, "-export", exports, ARRAY_SIZE(exports));
}

void export_print_list(FILE *f)
{
	print_list(f, "Exports (-export TYPE,help lists an export's properties):\n",
		   exports, ARRAY_SIZE(exports));
}
