// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * util/opts.c against QEMU's option syntax and opts.h's contract: every
 * type, range, escape and error, and the help text, on a table of our own.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/compiler.h"
#include "util/opts.h"

#include "capture.h"
#include "check.h"

struct cfg {
	bool flag;
	unsigned n, p2;
	uint64_t big, size;
	int mode;
	char *name, *id;
	char label[9];
	char *alias_target;
};

static const char *const modes[] = { "fast", "safe", NULL };
static const int mode_vals[] = { 7, 9 };

#define F(f, t) OPT_AT(struct cfg, f, t)
static const struct opt_prop props[] = {
	{ "flag", OPT_BOOL, F(flag, bool), .def = "off", .help = "a switch" },
	{ "n", OPT_UINT, F(n, unsigned), .min = 1, .max = 10, .help = "a count" },
	{ "p2", OPT_UINT, F(p2, unsigned), OPT_POW2, .min = 2, .max = 1024 },
	{ "big", OPT_U64, F(big, uint64_t) },
	{ "size", OPT_SIZE, F(size, uint64_t), .scale = 1 << 20, .min = 1 << 20,
	  .max = 1ull << 40 },
	{ "mode", OPT_ENUM, F(mode, int), .names = modes, .vals = mode_vals,
	  .why = "only these exist" },
	{ "name", OPT_STR, F(name, char *), OPT_REQUIRED, .help = "a name" },
	{ "id", OPT_ID, F(id, char *) },
	{ "label", OPT_STRBUF, F(label, char[9]), OPT_PRINTABLE | OPT_EMPTY, .max = 8 },
	{ "other-name", OPT_STR, F(name, char *), .alias = "name" },
	{ "ignored", OPT_ENUM, OPT_NOWHERE, OPT_NOSTORE, .names = modes },
	{ NULL },
};
static const struct opt_spec spec = { "-thing", "name", props };

/* opts_parse's result, and the one stderr line it wrote (if any) in err. */
static int parse(const char *arg, struct cfg *c, char *err, size_t size)
{
	int r;

	*c = (struct cfg){ .mode = -1 };
	capture_begin();
	r = opts_parse(&spec, arg, c);
	int lines = capture_end(err, size);

	CHECK(lines == (r < 0 ? 1 : 0));
	return r;
}

static void test_values(void)
{
	struct cfg c;
	char err[512];

	CHECK(parse("x,flag=on,n=10,p2=0x40,big=18446744073709551615,size=2G,"
		    "mode=safe,id=a-b.c_d,label=12345678", &c, err, sizeof(err)) == 0);
	CHECK(!strcmp(c.name, "x"));			/* the implied key */
	CHECK(c.flag && c.n == 10 && c.p2 == 64 && c.big == UINT64_MAX);
	CHECK(c.size == 2ull << 30 && c.mode == 9 && !strcmp(c.id, "a-b.c_d"));
	CHECK(!strcmp(c.label, "12345678"));
	opts_free(&spec, &c);
	/* QEMU reads integer properties with base 0: a leading 0 is octal. */
	CHECK(parse("x,n=010", &c, err, sizeof(err)) == 0 && c.n == 8);
	opts_free(&spec, &c);
	CHECK(c.name == NULL && c.id == NULL);

	/* A bare size is in .scale units; B, K... are bytes times 1024^k. */
	CHECK(parse("name=y,size=3", &c, err, sizeof(err)) == 0 && c.size == 3ull << 20);
	opts_free(&spec, &c);
	CHECK(parse("name=y,size=1048576B", &c, err, sizeof(err)) == 0 && c.size == 1 << 20);
	opts_free(&spec, &c);
	CHECK(parse("name=y,size=1024k", &c, err, sizeof(err)) == 0 && c.size == 1 << 20);
	opts_free(&spec, &c);
	CHECK(parse("name=y,size=1T", &c, err, sizeof(err)) == 0 && c.size == 1ull << 40);
	opts_free(&spec, &c);

	/* ",," is a literal ',' in a value; an '=' after the first is data. */
	CHECK(parse("name=a,,b,,,id=z", &c, err, sizeof(err)) == 0);
	CHECK(!strcmp(c.name, "a,b,") && !strcmp(c.id, "z"));
	opts_free(&spec, &c);
	CHECK(parse("name=k=v", &c, err, sizeof(err)) == 0 && !strcmp(c.name, "k=v"));
	opts_free(&spec, &c);
	CHECK(parse("name=a,,", &c, err, sizeof(err)) == 0 && !strcmp(c.name, "a,"));
	opts_free(&spec, &c);

	/* Every spelling of a boolean QEMU takes. */
	static const char *const on[] = { "on", "yes", "true" }, *const off[] = { "off", "no", "false" };
	for (unsigned i = 0; i < 3; i++) {
		char arg[64];

		snprintf(arg, sizeof(arg), "name=b,flag=%s", on[i]);
		CHECK(parse(arg, &c, err, sizeof(err)) == 0 && c.flag);
		opts_free(&spec, &c);
		snprintf(arg, sizeof(arg), "name=b,flag=%s", off[i]);
		c.flag = true;
		CHECK(parse(arg, &c, err, sizeof(err)) == 0 && !c.flag);
		opts_free(&spec, &c);
	}

	/* An alias fills its target; a stored-nowhere key changes nothing. */
	CHECK(parse("other-name=q,ignored=fast,label=", &c, err, sizeof(err)) == 0);
	CHECK(!strcmp(c.name, "q") && c.mode == -1 && c.label[0] == '\0');
	opts_free(&spec, &c);

	/* Enum without vals stores the index; driver=NAME heads. */
	size_t len;
	const char *rest;
	const char *h = opts_head("driver=virtio-rng-pci,max-bytes=1", "driver", &len, &rest);

	CHECK(len == strlen("virtio-rng-pci") && !strncmp(h, "virtio-rng-pci", len));
	CHECK(!strcmp(rest, "max-bytes=1"));
	h = opts_head("pvpanic", "driver", &len, &rest);
	CHECK(len == 7 && !strcmp(h, "pvpanic") && *rest == '\0');
}

/* Each bad string: -1, one line naming the option and the key. */
static void test_errors(void)
{
	static const struct {
		const char *arg, *says;
	} bad[] = {
		{ "name=a,flag=maybe", "-thing: flag=maybe: expected on or off" },
		{ "name=a,n=0", "-thing: n=0: need 1 to 10" },
		{ "name=a,n=11", "-thing: n=11: need 1 to 10" },
		{ "name=a,n=-1", "-thing: n=-1: expected a number" },
		{ "name=a,n=5x", "-thing: n=5x: expected a number" },
		{ "name=a,n=09", "-thing: n=09: expected a number" },
		{ "name=a,n=", "-thing: n=: expected a number" },
		{ "name=a,n=99999999999999999999999", "expected a number" },
		{ "name=a,p2=48", "-thing: p2=48: need a power of two from 2 to 1024" },
		{ "name=a,big=18446744073709551616", "expected a number" },
		{ "name=a,size=1023K", "-thing: size=1023K: need 1M to 1T" },
		{ "name=a,size=2X", "-thing: size=2X: expected a size" },
		{ "name=a,size=17179869184T", "expected a size" },
		{ "name=a,mode=slow", "-thing: mode=slow: only these exist (mode=fast or safe)" },
		{ "name=", "-thing: name= is empty" },
		{ "n=1", "-thing: name= is missing" },
		{ "name=a,id=0a", "-thing: id=0a: an id starts with a letter" },
		{ "name=a,id=a b", "an id starts with a letter" },
		{ "name=a,label=123456789", "-thing: label=123456789: longer than 8 bytes" },
		{ "name=a,label=a\tb", "-thing: label= holds a non-printable byte" },
		{ "name=a,colour=red", "-thing: unknown option 'colour' (known: flag, n, p2," },
		{ "name=a,flag", "-thing: flag needs a value (flag=...)" },
		{ "name=a,name=b", "-thing: name= given twice" },
		{ "name=a,other-name=b", "-thing: name= given twice" },
		{ "name=a,", "-thing: trailing ','" },
		{ "=a", "-thing: empty option name" },
		{ "name=a,,,=b", "-thing: empty option name" },
	};
	struct cfg c;
	char err[512];

	for (unsigned i = 0; i < ARRAY_SIZE(bad); i++) {
		int r = parse(bad[i].arg, &c, err, sizeof(err));
		bool said = strstr(err, bad[i].says) != NULL;

		CHECK(r == -1 && said);
		if (r != -1 || !said)
			printf("# '%s': %d, \"%.*s\"\n", bad[i].arg, r,
			       (int)strcspn(err, "\n"), err);
		opts_free(&spec, &c);
	}
}

/*
 * Items up to the parser's buffer (4200 bytes with both NULs: a PATH_MAX
 * path and its key fit) and one byte past it: refused with one line,
 * never written past (the sanitizer build runs this too).
 */
static void test_long_items(void)
{
	static char arg[8200];
	struct cfg c;
	char err[512];

	memset(arg, 'a', 4199);
	strcpy(arg + 4199, "=x");			/* a key that fills it */
	CHECK(parse(arg, &c, err, sizeof(err)) == -1 && strstr(err, "option too long"));
	/* The key's start, and the limit: key, '=' and value in 4198 bytes. */
	CHECK(strstr(err, ": aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...: ") &&
	      strstr(err, "at most 4198 bytes"));
	arg[4198] = '=';				/* key, '=', 1 byte */
	arg[4199] = '\0';
	CHECK(parse(arg, &c, err, sizeof(err)) == -1 && strstr(err, "option too long"));
	strcpy(arg, "name=");
	memset(arg + 5, 'v', 4194);
	arg[5 + 4194] = '\0';				/* the longest value */
	CHECK(parse(arg, &c, err, sizeof(err)) == 0 && c.name && strlen(c.name) == 4194);
	opts_free(&spec, &c);
	strcpy(arg + 5 + 4194, "v");			/* one more */
	CHECK(parse(arg, &c, err, sizeof(err)) == -1 && strstr(err, "option too long"));
	CHECK(strstr(err, ": name=: option too long") && strstr(err, "at most 4198 bytes"));
	strcpy(arg + 5 + 4194, ",,");			/* an escape that does not fit */
	CHECK(parse(arg, &c, err, sizeof(err)) == -1 && strstr(err, "option too long"));
	memset(arg, 'h', 5000);				/* help is looked for safely too */
	strcpy(arg + 5000, ",help");
	CHECK(opts_wants_help(arg));
}

static void test_help(void)
{
	struct cfg c;
	char err[8], out[4096] = "";
	FILE *f = fmemopen(out, sizeof(out) - 1, "w");

	/* "help" anywhere asks for help; nothing else is checked then. */
	CHECK(parse("help", &c, err, sizeof(err)) == OPTS_HELP);
	CHECK(parse("n=99,help", &c, err, sizeof(err)) == OPTS_HELP);
	CHECK(opts_wants_help("a,b=c,help") && !opts_wants_help("a,b=help"));
	CHECK(!opts_wants_help("helpful") && !opts_wants_help("a,,help"));
	opts_print_help(f, &spec);
	fclose(f);
	CHECK(strstr(out, "-thing options:\n") == out);
	CHECK(strstr(out, "  flag=<on|off>") && strstr(out, "a switch (default: off)"));
	CHECK(strstr(out, "  mode=<fast|safe>"));
	CHECK(strstr(out, "  name=<str>") && strstr(out, "a name (required)"));
	CHECK(strstr(out, "  other-name=<str>") && strstr(out, "the same as name="));
	CHECK(strstr(out, "  size=<size>") && strstr(out, "  id=<id>"));
}

static void test_sizes(void)
{
	unsigned long long v;

	/* QEMU's size syntax: no sign, one suffix letter, no overflow. */
	CHECK(opts_parse_size("512", 1 << 20, &v) == 0 && v == 512ull << 20);
	CHECK(opts_parse_size("512", 0, &v) == 0 && v == 512);
	CHECK(opts_parse_size("4G", 1 << 20, &v) == 0 && v == 4ull << 30);
	CHECK(opts_parse_size("16777215T", 1, &v) == 0 && v == 16777215ull << 40);
	CHECK(opts_parse_size("16777216T", 1, &v) == -1);
	CHECK(opts_parse_size("18014398509481984", 1024, &v) == -1);
	CHECK(opts_parse_size("-1", 1, &v) == -1);
	CHECK(opts_parse_size("1GB", 1, &v) == -1);
	CHECK(opts_parse_size("", 1, &v) == -1);
	CHECK(opts_parse_size(" 1", 1, &v) == -1);
}

/* OPT_LIST: every value, in order; a cap on the count; freed whole. */
struct lcfg {
	struct opt_list fwd;
	char *id;
};

static void test_lists(void)
{
	static const struct opt_prop lprops[] = {
		{ "fwd", OPT_LIST, OPT_AT(struct lcfg, fwd, struct opt_list), OPT_PRINTABLE,
		  .max = 3 },
		{ "id", OPT_ID, OPT_AT(struct lcfg, id, char *) },
		{ NULL },
	};
	static const struct opt_spec lspec = { "-list", NULL, lprops };
	struct lcfg c = { { NULL, 0 }, NULL };
	char err[512];

	capture_begin();
	int r = opts_parse(&lspec, "fwd=a,id=x,fwd=b,,c,fwd=d", &c);

	CHECK(capture_end(err, sizeof(err)) == 0 && r == 0);
	CHECK(c.fwd.n == 3 && !strcmp(c.fwd.v[0], "a") && !strcmp(c.fwd.v[1], "b,c") &&
	      !strcmp(c.fwd.v[2], "d"));
	opts_free(&lspec, &c);
	CHECK(c.fwd.n == 0 && c.fwd.v == NULL && c.id == NULL);
	capture_begin();
	r = opts_parse(&lspec, "fwd=a,fwd=b,fwd=c,fwd=d", &c);
	CHECK(capture_end(err, sizeof(err)) == 1 && r == -1 &&
	      strstr(err, "-list: fwd= given more than 3 times"));
	opts_free(&lspec, &c);
	capture_begin();
	r = opts_parse(&lspec, "fwd=a,fwd=", &c);
	CHECK(capture_end(err, sizeof(err)) == 1 && r == -1 && strstr(err, "-list: fwd= is empty"));
	opts_free(&lspec, &c);
	capture_begin();
	r = opts_parse(&lspec, "fwd=a,fwd=b\tc", &c);
	CHECK(capture_end(err, sizeof(err)) == 1 && r == -1 &&
	      strstr(err, "-list: fwd= holds a non-printable byte"));
	opts_free(&lspec, &c);
	/* Only a list may repeat. */
	capture_begin();
	r = opts_parse(&lspec, "id=a,id=b", &c);
	CHECK(capture_end(err, sizeof(err)) == 1 && r == -1 && strstr(err, "id= given twice"));
	opts_free(&lspec, &c);
}

int main(void)
{
	RUN(test_values());
	RUN(test_errors());
	RUN(test_long_items());
	RUN(test_help());
	RUN(test_sizes());
	RUN(test_lists());
	return check_done();
}
