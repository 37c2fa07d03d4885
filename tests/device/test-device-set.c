// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hw/device-set.c with families of the test's own, which record what the
 * set asks of them.  The contract is device.h's: members are made in
 * ascending family order, then in the order added (so the disks keep the
 * first PCI slots whatever else the guest has), and undone in reverse.
 */
#include <stdint.h>
#include <stdlib.h>

#include "hw/device.h"

#include "check.h"

struct fake_cfg {
	unsigned n;
};

/* What create and destroy were called on, in the order called. */
static unsigned made[16], nr_made, undone[16], nr_undone;

static void *fake_create(struct machine *m, const void *cfg, struct virtio_plug *plug)
{
	const struct fake_cfg *c = cfg;

	(void)m;
	(void)plug;
	made[nr_made++] = c->n;
	return (void *)(uintptr_t)(c->n + 1);
}

static void fake_destroy(void *dev)
{
	undone[nr_undone++] = (unsigned)((uintptr_t)dev - 1);
}

static const struct opt_prop fake_props[] = {
	{ "n", OPT_UINT, OPT_AT(struct fake_cfg, n, unsigned), .help = "its number" },
	{ NULL },
};
static const struct opt_spec fake_spec = { "-device fake", NULL, fake_props };
static const struct fake_cfg fake_defaults;

#define FAMILY(NAME, ORDER) {						\
	.name = NAME, .help = "a test's", .spec = &fake_spec,		\
	.kind = DEVICE_PLUGGED, .cfg_size = sizeof(struct fake_cfg),	\
	.defaults = &fake_defaults, .order = (ORDER),			\
	.create = fake_create, .destroy = fake_destroy }
static const struct device_family first = FAMILY("first", -2);
static const struct device_family second = FAMILY("second", -1);
static const struct device_family rest = FAMILY("rest", 0);

/* Added as a command line might give them: made by order, then as given. */
static void test_order(void)
{
	struct device_set *s = device_set_new();
	static const unsigned want[] = { 1, 4, 5, 2, 0, 3 };
	const struct device_family *f;
	struct fake_cfg *cfg = malloc(sizeof(*cfg));

	CHECK(s && cfg);
	if (!s || !cfg)
		return;
	nr_made = nr_undone = 0;
	CHECK(device_set_add(s, &rest, "n=0", NULL) == 0);
	CHECK(device_set_add(s, &first, "n=1", NULL) == 0);
	CHECK(device_set_add(s, &second, "n=2", NULL) == 0);
	CHECK(device_set_add(s, &rest, "n=3", NULL) == 0);
	/* A member whose config its back end made, as -drive if=virtio's. */
	cfg->n = 4;
	CHECK(device_set_add_cfg(s, &first, cfg, NULL) == 0);
	CHECK(device_set_add(s, &first, "n=5", NULL) == 0);
	/* Before creation, the members read back in the order added. */
	CHECK(((struct fake_cfg *)device_set_get(s, 0, &f))->n == 0 && f == &rest);
	CHECK(((struct fake_cfg *)device_set_get(s, 4, &f))->n == 4 && f == &first);
	CHECK(device_set_get(s, 6, &f) == NULL);
	CHECK(device_set_create(s, NULL) == 0);
	CHECK_EQ(nr_made, 6);
	for (unsigned i = 0; i < 6; i++)
		CHECK_EQ(made[i], want[i]);
	device_set_free(s);
	CHECK_EQ(nr_undone, 6);
	for (unsigned i = 0; i < 6; i++)
		CHECK_EQ(undone[i], want[5 - i]);
}

int main(void)
{
	RUN(test_order());
	return check_done();
}
