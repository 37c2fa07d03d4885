/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_UTIL_OPTS_H
#define BRISK_UTIL_OPTS_H

/*
 * QEMU-style option strings ("NAME,KEY=VALUE,...", ",," for a literal
 * ','), parsed against a table of properties.  Each property says its
 * type, range, default and help once; the parser, the error messages and
 * "help" output all come from that table, so no option parses by hand.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum opt_type {
	OPT_BOOL,	/* on|off|yes|no|true|false, into bool */
	OPT_UINT,	/* decimal or 0x hex in [min, max], into unsigned */
	OPT_U64,	/* the same, into uint64_t */
	OPT_SIZE,	/* a number with B/K/M/G/T suffix (bare: .scale), into uint64_t */
	OPT_ENUM,	/* one of .names, into int (an enum): .vals[i], or i */
	OPT_STR,	/* non-empty, up to .max bytes if set, strdup'ed into char * */
	OPT_STRBUF,	/* the same, copied into a char array of .max + 1 bytes */
	OPT_ID,		/* QEMU's id rule, strdup'ed into char * */
	OPT_LIST,	/* a string the key may give many times, into struct opt_list */
};

/* What an OPT_LIST property holds: every value given, in order. */
struct opt_list {
	char **v;
	unsigned n;
};

/* flags */
#define OPT_REQUIRED	(1u << 0)	/* "KEY= is missing" unless given */
#define OPT_POW2	(1u << 1)	/* OPT_UINT: a power of two */
#define OPT_PRINTABLE	(1u << 2)	/* OPT_STR*: printable ASCII only */
#define OPT_NOSTORE	(1u << 3)	/* checked, stored nowhere */
#define OPT_EMPTY	(1u << 4)	/* OPT_STR*: may be empty */
/* OPT_LIST: .max bounds the count of values (0: 64); OPT_PRINTABLE, OPT_EMPTY apply to each */

struct opt_prop {
	const char *name;
	enum opt_type type;
	size_t offset;			/* into the caller's config struct */
	size_t size;			/* of the field there */
	unsigned flags;
	unsigned long long min, max;	/* OPT_UINT/U64/SIZE range; OPT_STR* length */
	unsigned long long scale;	/* OPT_SIZE: unit of a bare number (1 if 0) */
	const char *const *names;	/* OPT_ENUM: the values, NULL-terminated */
	const int *vals;		/* OPT_ENUM: what each stores (NULL: index) */
	const char *alias;		/* another spelling of that property */
	const char *def;		/* default, for help */
	const char *help;
	const char *why;		/* OPT_ENUM: why only these (in the error) */
};

/*
 * The offset and size of FIELD in TYPE, refusing at compile time a field
 * whose size is not that of T.  opts_parse() asserts that the size is the
 * one the property's type stores, and that an OPT_STRBUF's .max fits.
 */
#define OPT_AT(TYPE, FIELD, T)							\
	(offsetof(TYPE, FIELD) +						\
	 0 * sizeof(char[sizeof(((TYPE *)0)->FIELD) == sizeof(T) ? 1 : -1])),	\
	sizeof(((TYPE *)0)->FIELD)
/* Where an OPT_NOSTORE property goes: nowhere. */
#define OPT_NOWHERE 0, 0

/* What one option string is checked against. */
struct opt_spec {
	const char *what;		/* "-drive", "-device virtio-blk-pci" */
	const char *implied;		/* key of a leading bare value ("size" for -m) */
	const struct opt_prop *props;	/* ends with a NULL name */
};

enum { OPTS_HELP = 1 };

/*
 * Parses "KEY=VALUE,..." into cfg, which the caller has filled with
 * defaults.  Returns 0, OPTS_HELP when one item is "help" (nothing else
 * is checked then), or -1 after one error line naming the option, the key
 * and what it accepts.  A key may appear once, but for an OPT_LIST's.  On error cfg may hold
 * some strdup'ed strings: opts_free() releases them either way.
 */
int opts_parse(const struct opt_spec *spec, const char *arg, void *cfg);
void opts_free(const struct opt_spec *spec, void *cfg);
/*
 * A new config of size bytes: defaults (size bytes) with arg parsed into
 * it, then check(cfg) if given.  NULL after one line (the config freed);
 * free it with opts_free() and free().  "help" is an error here: callers
 * answer it before.
 */
void *opts_parse_new(const struct opt_spec *spec, size_t size, const void *defaults,
		     const char *arg, int (*check)(void *cfg));
/* spec's properties with type, default and help, as "-device X,help" shows. */
void opts_print_help(FILE *f, const struct opt_spec *spec);
/*
 * The same properties in one wrapped synopsis for --help, after head
 * ("-device NAME"): KEY=VALUE for each, the required ones first and the
 * others in brackets; VALUE is the default where that is one word, else
 * the type.
 */
void opts_print_synopsis(FILE *f, const char *head, const struct opt_spec *spec);

/*
 * The first item of arg, "NAME" or FORM=NAME (QEMU's spelled-out
 * driver=, type=, backend=): its length into *len, a pointer to NAME
 * returned, and in *rest what follows the ',' ("" when nothing does).
 */
const char *opts_head(const char *arg, const char *form, size_t *len,
		      const char **rest);
/* Whether some item of arg is "help". */
bool opts_wants_help(const char *arg);
/* QEMU size syntax (a bare number times scale; B, K, M, G, T); -1 if bad. */
int opts_parse_size(const char *s, unsigned long long scale,
		    unsigned long long *out);

#endif
