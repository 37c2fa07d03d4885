/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_OPTS_REFUSED_H
#define BRISK_TESTS_OPTS_REFUSED_H

/*
 * One TAP case: arg refused by spec's parse and check, before anything is
 * opened, with exactly one line on stderr holding says.  Needs check.h,
 * capture.h and util/opts.h included before it.
 */
#include <stdlib.h>

static inline void opts_refused(const struct opt_spec *spec, size_t size, const void *defaults,
				int (*check)(void *), const char *arg, const char *says)
{
	void *cfg;
	char line[512];
	int lines;

	capture_begin();
	cfg = opts_parse_new(spec, size, defaults, arg, check);
	lines = capture_end(line, sizeof(line));
	CHECK(!cfg);
	CHECK_EQ(lines, 1);
	CHECK(strstr(line, says));
	if (!strstr(line, says))
		printf("# %s: %s", arg, line);
	if (cfg) {
		opts_free(spec, cfg);
		free(cfg);
	}
	check_case("refused: %s,%s", spec->what, arg);
}

#endif
