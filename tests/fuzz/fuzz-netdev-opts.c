// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The network options: -netdev user's properties and check, and the
 * command lines that make a NIC (-netdev, -device virtio-net-pci, -nic,
 * -net nic and -net user), up to where hw/main.c would create devices.
 * fuzz-cli stops at cli_parse(), which only files these arguments away;
 * here they go through the object table, the device table and
 * nic_cmdline_add() as main.c's objects_parse() and devices_parse() do.
 *
 * Every refusal must be said in exactly one line on stderr ("brisk: ...",
 * ending in a newline), and nothing must leak (LeakSanitizer) or crash.
 * The stderr stream is captured in memory around each call.
 *
 * Input layout: u8 mode, then
 *   mode bit 0 clear: what follows "-netdev user," (up to a NUL), parsed
 *     by opts_parse_new() against netdev_user_spec with netdev_user_check()
 *     ("help", which opts.h leaves to the caller, is refused silently).
 *     A config it accepts has every address filled in, in one spelling
 *     that parses back; checking it again accepts it, silently, and
 *     changes nothing.
 *   mode bit 0 set: argv after "brisk -kernel k", split on NUL bytes, run
 *     through cli_parse(), then every -object and -netdev into an object
 *     set, every other -device into a device set (its netdev= resolved),
 *     then nic_cmdline_add(): each step that refuses says one line.  A
 *     command line accepted whole says at most one line (the warning for
 *     a -net back end without a -net nic).
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/cli.h"
#include "hw/device.h"
#include "hw/nic-cmdline.h"
#include "hw/object.h"
#include "net/net.h"
#include "util/opts.h"

#define MAX_ARGS 128
#define CAPTURE_MAX 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *real_stderr;
static FILE *cap_file;
static char *cap_buf;
static size_t cap_len;
static char captured[CAPTURE_MAX + 1];

/*
 * brisk reports through the stderr stream (util/log.c): point it at a
 * memory stream.  libFuzzer keeps the stream it started with, and the
 * sanitizers write to fd 2, so their reports are not captured.
 */
static void cap_begin(void)
{
	cap_file = open_memstream(&cap_buf, &cap_len);
	if (!cap_file)
		abort();
	real_stderr = stderr;
	stderr = cap_file;
}

/* The lines written since cap_begin(); what they were in captured. */
static unsigned cap_end(void)
{
	unsigned lines = 0;
	size_t n;

	fflush(cap_file);
	stderr = real_stderr;
	n = cap_len < CAPTURE_MAX ? cap_len : CAPTURE_MAX;
	memcpy(captured, cap_buf, n);
	captured[n] = '\0';
	for (size_t i = 0; i < cap_len; i++)
		lines += cap_buf[i] == '\n';
	/* Each line is a brisk report, and the last one is finished. */
	if (cap_len && (cap_buf[cap_len - 1] != '\n' || strncmp(cap_buf, "brisk: ", 7)))
		lines = 1000;
	for (char *p = memchr(cap_buf, '\n', cap_len); p && p + 1 < cap_buf + cap_len;
	     p = memchr(p + 1, '\n', (size_t)(cap_buf + cap_len - p - 1)))
		if (cap_buf + cap_len - (p + 1) < 7 || strncmp(p + 1, "brisk: ", 7))
			lines = 1000;
	fclose(cap_file);
	free(cap_buf);
	cap_buf = NULL;
	return lines;
}

static void fail(const char *what)
{
	fprintf(stderr, "fuzz-netdev-opts: %s; stderr was:\n%s", what, captured);
	abort();
}

#define REQUIRE(c, what) do { if (!(c)) fail(what); } while (0)

static void check_ipv4(const char *s, bool with_len)
{
	char buf[64];
	struct in_addr a;
	const char *slash;

	REQUIRE(s && strlen(s) < sizeof(buf), "an IPv4 address left out");
	strcpy(buf, s);
	slash = strchr(buf, '/');
	REQUIRE(with_len == !!slash, "an address spelt with or without /LEN unlike the rest");
	if (slash) {
		char *end;
		unsigned long len = strtoul(slash + 1, &end, 10);

		REQUIRE(!*end && len >= 4 && len <= 32, "net= filled with a bad prefix length");
		buf[slash - buf] = '\0';
	}
	REQUIRE(inet_pton(AF_INET, buf, &a) == 1, "an IPv4 address that does not parse back");
}

static void check_ipv6(const char *s, bool with_len)
{
	char buf[INET6_ADDRSTRLEN + 8];
	struct in6_addr a;
	char *slash;

	REQUIRE(s && strlen(s) < sizeof(buf), "an IPv6 address left out");
	strcpy(buf, s);
	slash = strchr(buf, '/');
	REQUIRE(with_len == !!slash, "an IPv6 address spelt with or without /LEN unlike the rest");
	if (slash) {
		char *end;
		unsigned long len = strtoul(slash + 1, &end, 10);

		REQUIRE(!*end && len <= 126, "ipv6-net= filled with a bad prefix length");
		*slash = '\0';
	}
	REQUIRE(inet_pton(AF_INET6, buf, &a) == 1, "an IPv6 address that does not parse back");
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* -netdev user,ARG alone. */
static void netdev_user(const char *arg)
{
	struct netdev_user_cfg *c, before;
	char *saved[7];
	unsigned lines;
	int ret;

	cap_begin();
	c = opts_parse_new(&netdev_user_spec, sizeof(*c), &netdev_user_defaults, arg,
			   netdev_user_check);
	lines = cap_end();
	if (!c) {
		/* opts.h: "help" is the caller's to answer first (cli.c does). */
		REQUIRE(lines == 1 || (lines == 0 && opts_wants_help(arg)),
			"a refused -netdev user said other than one line");
		return;
	}
	REQUIRE(!opts_wants_help(arg), "a config made of \"help\"");
	REQUIRE(lines == 0, "an accepted -netdev user said something");
	REQUIRE(c->head.id && *c->head.id, "accepted without an id");
	if (c->ipv4) {
		check_ipv4(c->net, true);
		check_ipv4(c->host, false);
		check_ipv4(c->dns, false);
		check_ipv4(c->dhcpstart, false);
	} else {
		REQUIRE(!c->net && !c->host && !c->dns && !c->dhcpstart && !c->hostfwd.n,
			"ipv4=off with IPv4 settings");
	}
	if (c->ipv6) {
		check_ipv6(c->ipv6_net, true);
		check_ipv6(c->ipv6_host, false);
		check_ipv6(c->ipv6_dns, false);
	} else {
		REQUIRE(!c->ipv6_net && !c->ipv6_host && !c->ipv6_dns,
			"ipv6=off with IPv6 settings");
	}
	REQUIRE(c->ipv4 || c->ipv6, "accepted with neither IPv4 nor IPv6");

	/* Checked again, the filled config stands as it is. */
	before = *c;
	saved[0] = c->net ? strdup(c->net) : NULL;
	saved[1] = c->host ? strdup(c->host) : NULL;
	saved[2] = c->dns ? strdup(c->dns) : NULL;
	saved[3] = c->dhcpstart ? strdup(c->dhcpstart) : NULL;
	saved[4] = c->ipv6_net ? strdup(c->ipv6_net) : NULL;
	saved[5] = c->ipv6_host ? strdup(c->ipv6_host) : NULL;
	saved[6] = c->ipv6_dns ? strdup(c->ipv6_dns) : NULL;
	cap_begin();
	ret = netdev_user_check(c);
	lines = cap_end();
	REQUIRE(ret == 0 && lines == 0, "the check refuses the config it filled in");
	REQUIRE(same(saved[0], c->net) && same(saved[1], c->host) && same(saved[2], c->dns) &&
		same(saved[3], c->dhcpstart) && same(saved[4], c->ipv6_net) &&
		same(saved[5], c->ipv6_host) && same(saved[6], c->ipv6_dns),
		"checking the filled config again changes it");
	REQUIRE(before.ipv4 == c->ipv4 && before.ipv6 == c->ipv6 &&
		before.restrict_ == c->restrict_ && before.hostfwd.n == c->hostfwd.n &&
		before.dnssearch.n == c->dnssearch.n, "checking again changes a setting");
	for (unsigned i = 0; i < 7; i++)
		free(saved[i]);
	opts_free(&netdev_user_spec, c);
	free(c);
}

/* What hw/main.c does with a command line before it opens anything. */
static void command_line(int argc, char **argv)
{
	struct object_set *objects = NULL;
	struct device_set *devices = NULL;
	struct cli_opts *o = malloc(sizeof(*o));
	unsigned lines;
	int ret;

	if (!o)
		return;
	cap_begin();
	ret = cli_parse(argc, argv, o);
	lines = cap_end();
	if (ret) {
		REQUIRE(lines == 1, "a refused command line said other than one line");
		goto out;
	}
	REQUIRE(lines == 0, "cli_parse() accepted and said something");
	if (o->action != CLI_RUN)
		goto out;
	REQUIRE(o->nr_objects <= CLI_MAX_OBJECTS && o->nr_devices <= CLI_MAX_DEVICES &&
		o->nr_nics <= CLI_MAX_NICS, "more options kept than there is room for");
	for (unsigned i = 0; i < o->nr_nics; i++)
		REQUIRE(o->nics[i].arg && o->nics[i].kind <= CLI_NET_BACKEND, "a bad -nic or -net kept");

	cap_begin();
	objects = object_set_new();
	devices = device_set_new();
	ret = !objects || !devices;
	for (unsigned i = 0; !ret && i < o->nr_objects; i++)
		ret = object_set_add(objects, o->objects[i].type, o->objects[i].props);
	for (unsigned i = 0; !ret && i < o->nr_devices; i++)
		ret = device_set_add(devices, o->devices[i].family, o->devices[i].props, objects);
	if (!ret)
		ret = nic_cmdline_add(o, objects, devices);
	lines = cap_end();
	if (ret)
		REQUIRE(lines == 1, "a refused -object, -netdev, -device, -nic or -net said other "
			"than one line");
	else
		REQUIRE(lines <= 1, "an accepted command line said more than one line");
	/* No device_set_create(): that needs a machine. */
out:
	device_set_free(devices);
	object_set_free(objects);
	free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *argv[MAX_ARGS + 1];
	int argc = 0;

	if (size < 1)
		return 0;
	buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	captured[0] = '\0';
	if (!(data[0] & 1)) {
		/* Its own block, so ASan sees an overread of it. */
		char *arg = strdup(buf);

		if (arg)
			netdev_user(arg);
		free(arg);
		free(buf);
		return 0;
	}
	argv[argc++] = "brisk";
	argv[argc++] = "-kernel";
	argv[argc++] = "k";
	for (size_t i = 0; i < size - 1 && argc < MAX_ARGS; ) {
		size_t len = strlen(buf + i);

		/* Each argument is its own block, as in fuzz-cli. */
		argv[argc] = malloc(len + 1);
		if (!argv[argc])
			break;
		memcpy(argv[argc++], buf + i, len + 1);
		i += len + 1;
	}
	argv[argc] = NULL;
	free(buf);
	command_line(argc, argv);
	for (int i = 3; i < argc; i++)
		free(argv[i]);
	return 0;
}
