# SPDX-License-Identifier: GPL-2.0-or-later
# What a failed boot's console shows the reader.

# console_excerpt TAIL < CONSOLE: the first kernel oops from its first
# line (at most 40 lines), then the console's last TAIL lines.  An oops
# names its exception and error code at its start; one that recurses
# (an entry that faults again until its stack runs out) pushes that start
# out of any tail, and the next run overwrites the log.
# First lines: x86's die() ("invalid opcode: 0000 [#1]", "stack segment:
# 0000 [#1]"), BUG()s, faults that print before any die(), arm64's
# ("Unable to handle kernel ...", "Internal error: ...").
console_excerpt() {
	awk -v n="$1" -v k=40 '
	{ line[NR] = $0 }
	!first && /(: [0-9a-f][0-9a-f][0-9a-f][0-9a-f] \[#[0-9]+\]|BUG:|kernel BUG at|Oops|Kernel panic|general protection fault|invalid opcode|divide error|double fault|stack guard page|kernel stack overflow|Unable to handle kernel|Insufficient stack space|Internal error)/ { first = NR }
	END {
		tail = NR - n + 1
		if (tail < 1) tail = 1
		if (first && first < tail) {
			stop = first + k - 1
			if (stop >= tail) stop = tail - 1
			print "-- the first oops, from console line " first ":"
			for (i = first; i <= stop; i++) print line[i]
			if (stop < tail - 1) print "-- " tail - 1 - stop " lines left out"
			print "-- the last lines:"
		}
		for (i = tail; i <= NR; i++) print line[i]
	}'
}

# console_show: its input on stderr, where a test runner shows a failed
# test, and as TAP comment lines.  Written once and printed twice: a
# reopened /dev/stderr would truncate a log that stderr appends to.
console_show() {
	local text
	text=$(cat)
	printf '%s\n' "$text" >&2
	printf '%s\n' "$text" | awk '{ print "#   " $0 }'
}
