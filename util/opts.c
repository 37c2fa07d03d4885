// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The one option-string parser: every -drive, -device, -export, -chardev,
 * -machine... goes through opts_parse() with its property table.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/opts.h"

/* At most this many properties per table: the seen set is one word. */
#define OPTS_MAX_PROPS 64
/* The longest KEY=VALUE item: a path of PATH_MAX bytes fits. */
#define OPTS_ITEM_MAX 4200

int opts_parse_size(const char *s, unsigned long long scale,
		    unsigned long long *out)
{
	unsigned long long shift = 0;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);

	if (errno)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'B': scale = 1; break;
	case 'K': scale = 1; shift = 10; break;
	case 'M': scale = 1; shift = 20; break;
	case 'G': scale = 1; shift = 30; break;
	case 'T': scale = 1; shift = 40; break;
	default: return -1;
	}
	if (*end && end[1])
		return -1;
	if (!scale)
		scale = 1;
	if (v > (UINT64_MAX >> shift) / scale)
		return -1;
	*out = (v << shift) * scale;
	return 0;
}

/*
 * As QEMU reads its integer properties: decimal, 0x hex or 0 octal;
 * no sign, space or suffix.
 */
static int parse_number(const char *s, unsigned long long *out)
{
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || *end ? -1 : 0;
}

static bool id_valid(const char *id)
{
	if (!isalpha((unsigned char)*id))
		return false;
	for (const char *p = id + 1; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' && *p != '_')
			return false;
	return true;
}

/* "a, b or c" (sep NULL) or "a|b|c": the accepted values of an enum. */
static void enum_list(const struct opt_prop *p, const char *sep, char *buf,
		      size_t size)
{
	unsigned n = 0;

	buf[0] = '\0';
	while (p->names[n])
		n++;
	for (unsigned i = 0; i < n; i++) {
		size_t len = strlen(buf);

		snprintf(buf + len, size - len, "%s%s", i == 0 ? "" : sep ? sep :
			 i + 1 < n ? ", " : " or ", p->names[i]);
	}
}

/* A size as it would be written: 64M rather than 67108864. */
static void fmt_size(unsigned long long v, char *buf, size_t size)
{
	static const char units[] = "BKMGT";
	unsigned u = 0;

	while (u + 1 < sizeof(units) - 1 && v && !(v & 1023)) {
		v >>= 10;
		u++;
	}
	snprintf(buf, size, "%llu%c", v, units[u]);
}

static const char *type_name(const struct opt_prop *p)
{
	static const char *const names[] = {
		[OPT_BOOL] = "on|off", [OPT_UINT] = "uint", [OPT_U64] = "uint64",
		[OPT_SIZE] = "size", [OPT_ENUM] = "enum", [OPT_STR] = "str",
		[OPT_STRBUF] = "str", [OPT_ID] = "id", [OPT_LIST] = "str, repeatable",
	};
	return names[p->type];
}

static int set_number(const char *w, const struct opt_prop *p, const char *val,
		      void *field)
{
	unsigned long long v, max = p->max ? p->max :
		p->type == OPT_UINT ? UINT32_MAX : UINT64_MAX;
	int r = p->type == OPT_SIZE ? opts_parse_size(val, p->scale, &v) :
		parse_number(val, &v);

	if (r) {
		error_report("%s: %s=%s: expected %s", w, p->name, val,
			     p->type == OPT_SIZE ? "a size (a number, or with "
			     "suffix B, K, M, G or T)" : "a number");
		return -1;
	}
	if (v < p->min || v > max || ((p->flags & OPT_POW2) && (v & (v - 1)))) {
		char lo[32], hi[32];

		if (p->type == OPT_SIZE) {
			fmt_size(p->min, lo, sizeof(lo));
			fmt_size(max, hi, sizeof(hi));
		} else {
			snprintf(lo, sizeof(lo), "%llu", p->min);
			snprintf(hi, sizeof(hi), "%llu", max);
		}
		error_report("%s: %s=%s: need %s%s to %s", w, p->name, val,
			     p->flags & OPT_POW2 ? "a power of two from " : "", lo, hi);
		return -1;
	}
	if (p->flags & OPT_NOSTORE)
		return 0;
	if (p->type == OPT_UINT)
		*(unsigned *)field = (unsigned)v;
	else
		*(uint64_t *)field = v;
	return 0;
}

/* What every string value must be: not empty, an id, short, printable, as p says. */
static int check_string(const char *w, const struct opt_prop *p, const char *val,
			size_t max)
{
	if (!*val && !(p->flags & OPT_EMPTY)) {
		error_report("%s: %s= is empty", w, p->name);
		return -1;
	}
	if (p->type == OPT_ID && !id_valid(val)) {
		error_report("%s: %s=%s: an id starts with a letter and holds "
			     "letters, digits, '-', '.', '_'", w, p->name, val);
		return -1;
	}
	if (strlen(val) > max) {
		error_report("%s: %s=%s: longer than %zu bytes", w, p->name, val, max);
		return -1;
	}
	for (const char *c = val; (p->flags & OPT_PRINTABLE) && *c; c++) {
		if (*c < 0x20 || *c > 0x7e) {
			error_report("%s: %s= holds a non-printable byte", w, p->name);
			return -1;
		}
	}
	return 0;
}

static int set_string(const char *w, const struct opt_prop *p, const char *val,
		      void *field)
{
	size_t max = p->type == OPT_STRBUF || p->max ? (size_t)p->max : SIZE_MAX;

	if (check_string(w, p, val, max))
		return -1;
	if (p->flags & OPT_NOSTORE)
		return 0;
	if (p->type == OPT_STRBUF) {
		strcpy(field, val);
		return 0;
	}
	char *copy = strdup(val);

	if (!copy) {
		error_report("out of memory");
		return -1;
	}
	free(*(char **)field);
	*(char **)field = copy;
	return 0;
}

/* One more value of an OPT_LIST. */
static int add_string(const char *w, const struct opt_prop *p, const char *val,
		      struct opt_list *l)
{
	unsigned max = p->max ? (unsigned)p->max : 64;
	char **v;

	if (check_string(w, p, val, SIZE_MAX))
		return -1;
	if (l->n == max) {
		error_report("%s: %s= given more than %u times", w, p->name, max);
		return -1;
	}
	if (!(v = realloc(l->v, (l->n + 1) * sizeof(*v))) || !(v[l->n] = strdup(val))) {
		if (v)
			l->v = v;
		error_report("out of memory");
		return -1;
	}
	l->v = v;
	l->n++;
	return 0;
}

static int set_prop(const char *w, const struct opt_prop *p, const char *val,
		    void *field)
{
	char list[256];

	switch (p->type) {
	case OPT_BOOL: {
		bool on = !strcmp(val, "on") || !strcmp(val, "true") || !strcmp(val, "yes");

		if (!on && strcmp(val, "off") && strcmp(val, "false") && strcmp(val, "no")) {
			error_report("%s: %s=%s: expected on or off", w, p->name, val);
			return -1;
		}
		if (!(p->flags & OPT_NOSTORE))
			*(bool *)field = on;
		return 0;
	}
	case OPT_ENUM:
		for (unsigned i = 0; p->names[i]; i++) {
			if (strcmp(val, p->names[i]))
				continue;
			if (!(p->flags & OPT_NOSTORE))
				*(int *)field = p->vals ? p->vals[i] : (int)i;
			return 0;
		}
		enum_list(p, NULL, list, sizeof(list));
		if (p->why)
			error_report("%s: %s=%s: %s (%s=%s)", w, p->name, val, p->why,
				     p->name, list);
		else
			error_report("%s: %s=%s: expected %s", w, p->name, val, list);
		return -1;
	case OPT_STR:
	case OPT_STRBUF:
	case OPT_ID:
		return set_string(w, p, val, field);
	case OPT_LIST:
		return add_string(w, p, val, field);
	default:
		return set_number(w, p, val, field);
	}
}

static const struct opt_prop *find_prop(const struct opt_prop *props,
					const char *key)
{
	for (const struct opt_prop *p = props; p->name; p++)
		if (!strcmp(p->name, key))
			return p;
	return NULL;
}

/* The size each type stores: a table entry that disagrees is our bug. */
static size_t type_size(enum opt_type t)
{
	static const size_t sizes[] = {
		[OPT_BOOL] = sizeof(bool), [OPT_UINT] = sizeof(unsigned),
		[OPT_U64] = sizeof(uint64_t), [OPT_SIZE] = sizeof(uint64_t),
		[OPT_ENUM] = sizeof(int), [OPT_STR] = sizeof(char *),
		[OPT_ID] = sizeof(char *), [OPT_LIST] = sizeof(struct opt_list),
	};
	return sizes[t];
}

static void check_spec(const struct opt_spec *spec)
{
	unsigned n = 0;

	for (const struct opt_prop *p = spec->props; p->name; p++, n++) {
		const struct opt_prop *to = p->alias ? find_prop(spec->props, p->alias) : p;

		assert(to && !to->alias && to->offset == p->offset);
		assert(p->type != OPT_ENUM || p->names);
		if (p->flags & OPT_NOSTORE)
			continue;
		if (p->type == OPT_STRBUF)
			assert(p->max && p->max < p->size);
		else
			assert(p->size == type_size(p->type));
	}
	assert(n <= OPTS_MAX_PROPS);
}

static void unknown_key(const struct opt_spec *spec, const char *key)
{
	char known[512] = "";
	size_t len = 0;

	for (const struct opt_prop *p = spec->props; p->name && len < sizeof(known); p++)
		len += (size_t)snprintf(known + len, sizeof(known) - len, "%s%s",
					p == spec->props ? "" : ", ", p->name);
	if (spec->props->name)
		error_report("%s: unknown option '%s' (known: %s)", spec->what, key, known);
	else
		error_report("%s: unknown option '%s' (it has none)", spec->what, key);
}

/*
 * The next item of *s into buf: its key, and after the first '=' its
 * value with ",," unescaped to ','; *val is NULL without '='.  0 at the
 * end, -1 on an empty key, a trailing ',' or an item too long (with one
 * line, unless what is NULL).
 */
static int next_item(const char *what, const char **s, char *buf, size_t size,
		     char **val)
{
	const char *p = *s, *why = NULL;
	size_t n = 0;

	if (!*p)
		return 0;
	*val = NULL;
	/* n + 1 < size everywhere below: the NUL always has its byte. */
	while (*p && *p != '=' && *p != ',' && n + 1 < size)
		buf[n++] = *p++;
	if (n == 0)
		why = "empty option name";
	if (*p == '=' && n + 2 < size) {
		buf[n++] = '\0';
		*val = buf + n;
		for (p++; *p && (*p != ',' || p[1] == ',') && n + 1 < size; n++) {
			buf[n] = *p;
			p += *p == ',' ? 2 : 1;
		}
	}
	buf[n] = '\0';
	/* Whatever the loops could not take (an escaped ',' too) did not fit. */
	if ((*p && *p != ',') || (*val && *p == ',' && p[1] == ',')) {
		/* Named by its key, or the key's start when that did not fit. */
		if (what)
			error_report("%s: %.40s%s: option too long (its key and value "
				     "take at most %zu bytes)", what, buf,
				     *val ? "=" : "...", size - 2);
		return -1;
	}
	if (*p == ',' && !p[1])
		why = "trailing ','";
	if (why) {
		if (what)
			error_report("%s: %s", what, why);
		return -1;
	}
	*s = *p ? p + 1 : p;
	return 1;
}

/*
 * Split as next_item() splits, with no buffer, so an item of any length
 * is passed over; at a malformed item the parser's error comes first.
 */
bool opts_wants_help(const char *arg)
{
	for (const char *p = arg; *p;) {
		const char *item = p;
		bool value = false;

		while (*p && (*p != ',' || (value && p[1] == ','))) {
			value |= *p == '=';
			p += *p == ',' ? 2 : 1;
		}
		if (p == item)
			return false;
		if (p - item == 4 && !strncmp(item, "help", 4))
			return true;
		p += *p == ',';
	}
	return false;
}

int opts_parse(const struct opt_spec *spec, const char *arg, void *cfg)
{
	const char *w = spec->what;
	uint64_t seen = 0;
	bool first = true;
	char buf[OPTS_ITEM_MAX];
	char *key, *val;
	int r;

	check_spec(spec);
	if (opts_wants_help(arg))
		return OPTS_HELP;
	while ((r = next_item(w, &arg, buf, sizeof(buf), &val)) > 0) {
		key = buf;
		if (!val && first && spec->implied) {
			val = key;
			key = (char *)spec->implied;
		}
		first = false;
		const struct opt_prop *p = find_prop(spec->props, key);

		if (!p) {
			unknown_key(spec, key);
			return -1;
		}
		if (!val) {
			error_report("%s: %s needs a value (%s=...)", w, key, key);
			return -1;
		}
		if (p->alias)
			p = find_prop(spec->props, p->alias);
		unsigned bit = (unsigned)(p - spec->props);

		if ((seen & (1ull << bit)) && p->type != OPT_LIST) {
			error_report("%s: %s= given twice", w, p->name);
			return -1;
		}
		seen |= 1ull << bit;
		if (set_prop(w, p, val, (char *)cfg + p->offset))
			return -1;
	}
	if (r < 0)
		return -1;
	for (const struct opt_prop *p = spec->props; p->name; p++) {
		if ((p->flags & OPT_REQUIRED) && !(seen & (1ull << (p - spec->props)))) {
			error_report("%s: %s= is missing", w, p->name);
			return -1;
		}
	}
	return 0;
}

void *opts_parse_new(const struct opt_spec *spec, size_t size, const void *defaults,
		     const char *arg, int (*check)(void *cfg))
{
	void *cfg = malloc(size ? size : 1);

	if (!cfg) {
		error_report("out of memory");
		return NULL;
	}
	memcpy(cfg, defaults, size);
	if (opts_parse(spec, arg, cfg) || (check && check(cfg))) {
		opts_free(spec, cfg);
		free(cfg);
		return NULL;
	}
	return cfg;
}

void opts_free(const struct opt_spec *spec, void *cfg)
{
	for (const struct opt_prop *p = spec->props; p->name; p++) {
		if (p->alias || (p->flags & OPT_NOSTORE))
			continue;
		if (p->type == OPT_LIST) {
			struct opt_list *l = (struct opt_list *)((char *)cfg + p->offset);

			for (unsigned i = 0; i < l->n; i++)
				free(l->v[i]);
			free(l->v);
			*l = (struct opt_list){ NULL, 0 };
			continue;
		}
		if (p->type != OPT_STR && p->type != OPT_ID)
			continue;
		char **field = (char **)((char *)cfg + p->offset);

		free(*field);
		*field = NULL;
	}
}

void opts_print_help(FILE *f, const struct opt_spec *spec)
{
	char list[256], type[280];

	check_spec(spec);
	fprintf(f, "%s options:\n", spec->what);
	if (!spec->props->name)
		fputs("  (none)\n", f);
	for (const struct opt_prop *p = spec->props; p->name; p++) {
		if (p->type == OPT_ENUM) {
			enum_list(p, "|", list, sizeof(list));
			snprintf(type, sizeof(type), "<%s>", list);
		} else {
			snprintf(type, sizeof(type), "<%s>", type_name(p));
		}
		fprintf(f, "  %s=%-*s", p->name,
			(int)(strlen(p->name) < 22 ? 22 - strlen(p->name) : 0), type);
		if (p->alias)
			fprintf(f, " - the same as %s=", p->alias);
		else
			fprintf(f, " - %s", p->help ? p->help : "");
		if (p->flags & OPT_REQUIRED)
			fprintf(f, " (required)");
		else if (p->def)
			fprintf(f, " (default: %s)", p->def);
		fputc('\n', f);
	}
}

/* Where --help's synopsis lines wrap, and where their next lines start. */
#define SYNOPSIS_WIDTH 78
#define SYNOPSIS_INDENT 9

/* ",KEY=VALUE" or "[,KEY=VALUE]" for p: the default when it is one word. */
static void synopsis_item(const struct opt_prop *p, char *buf, size_t size)
{
	bool req = p->flags & OPT_REQUIRED;
	char list[256], value[280];

	if (p->def && !strpbrk(p->def, " ,")) {
		snprintf(value, sizeof(value), "%s", p->def);
	} else if (p->type == OPT_ENUM) {
		enum_list(p, "|", list, sizeof(list));
		snprintf(value, sizeof(value), "<%s>", list);
	} else {
		snprintf(value, sizeof(value), "<%s>", type_name(p));
	}
	snprintf(buf, size, "%s,%s=%s%s", req ? "" : "[", p->name, value, req ? "" : "]");
}

void opts_print_synopsis(FILE *f, const char *head, const struct opt_spec *spec)
{
	int col = fprintf(f, "  %s", head);
	char item[320];

	check_spec(spec);
	/* The required properties first, as a command line would give them. */
	for (int req = 1; req >= 0; req--) {
		for (const struct opt_prop *p = spec->props; p->name; p++) {
			if (p->alias || !(p->flags & OPT_REQUIRED) != !req)
				continue;
			synopsis_item(p, item, sizeof(item));
			if (col + (int)strlen(item) > SYNOPSIS_WIDTH)
				col = fprintf(f, "\n%*s", SYNOPSIS_INDENT, "") - 1;
			col += fprintf(f, "%s", item);
		}
	}
	fputc('\n', f);
}

const char *opts_head(const char *arg, const char *form, size_t *len,
		      const char **rest)
{
	size_t n = strlen(form);

	if (!strncmp(arg, form, n) && arg[n] == '=')
		arg += n + 1;
	*len = strcspn(arg, ",");
	*rest = arg[*len] ? arg + *len + 1 : arg + *len;
	return arg;
}
