/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_CAPTURE_H
#define BRISK_TESTS_CAPTURE_H

/*
 * What brisk writes on stderr between capture_begin() and capture_end(),
 * for tests of its "one line on stderr" promises.  Not nestable.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int saved_stderr = -1;
static FILE *captured;

static inline void capture_begin(void)
{
	fflush(stderr);
	captured = tmpfile();
	saved_stderr = dup(2);
	if (!captured || saved_stderr < 0)
		abort();
	/*
	 * fd 2 shares the reader's file offset: appending keeps a line that
	 * another thread writes while capture_wait_for() rewinds at the end.
	 */
	fcntl(fileno(captured), F_SETFL, O_APPEND);
	dup2(fileno(captured), 2);
}

/*
 * Whether NEEDLE has been written since capture_begin, waiting up to
 * WAIT_S seconds for it: for a line another thread prints after the
 * event the test waited for.
 */
static inline bool capture_wait_for(const char *needle, int wait_s)
{
	char buf[512];

	for (int tries = 0; tries <= wait_s * 100; tries++) {
		fflush(stderr);
		rewind(captured);
		while (fgets(buf, sizeof(buf), captured))
			if (strstr(buf, needle))
				return true;
		usleep(10000);
	}
	return false;
}

/* How many lines written since capture_begin hold NEEDLE. */
static inline int capture_count(const char *needle)
{
	char buf[512];
	int n = 0;

	fflush(stderr);
	rewind(captured);
	while (fgets(buf, sizeof(buf), captured))
		n += strstr(buf, needle) != NULL;
	return n;
}

/* Whether every line written since capture_begin holds one of NEEDLES
 * (NULL-terminated). */
static inline bool capture_only(const char *const *needles)
{
	char buf[512];

	fflush(stderr);
	rewind(captured);
	while (fgets(buf, sizeof(buf), captured)) {
		bool known = false;

		for (const char *const *n = needles; *n && !known; n++)
			known = strstr(buf, *n) != NULL;
		if (!known) {
			printf("# unexpected line: %.*s\n", (int)strcspn(buf, "\n"), buf);
			return false;
		}
	}
	return true;
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
