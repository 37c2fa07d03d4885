/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_CAPTURE_H
#define BRISK_TESTS_CAPTURE_H

/*
 * What brisk writes on stderr between capture_begin() and capture_end(),
 * for tests of its "one line on stderr" promises.  Not nestable.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int saved_stderr = -1;
static FILE *captured;

static inline void capture_begin(void)
{
	fflush(stderr);
	captured = tmpfile();
	saved_stderr = dup(2);
	dup2(fileno(captured), 2);
}

/* The number of lines written since capture_begin; the first one in line. */
static inline int capture_end(char *line, size_t size)
{
	int n = 0;
	char buf[512];

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	rewind(captured);
	line[0] = '\0';
	while (fgets(buf, sizeof(buf), captured)) {
		if (n++ == 0 && size) {
			/* Cut to fit: gcc warns of snprintf's truncation here. */
			size_t len = strnlen(buf, size - 1);

			memcpy(line, buf, len);
			line[len] = '\0';
		}
	}
	fclose(captured);
	return n;
}

#endif
