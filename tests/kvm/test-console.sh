#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# test-console.sh: what a failed boot shows of its console
# (tests/kvm/lib/console.sh): an oops's first line survives however long
# the oops recursed, and the console's last lines are always there.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
. "$here/lib/console.sh"

# A console of N numbered lines with OOPS as line AT (none when AT is 0).
console() {
	local n=$1 at=$2 i
	for ((i = 1; i <= n; i++)); do
		if [ "$i" -eq "$at" ]; then echo "invalid opcode: 0000 [#1] PREEMPT SMP NOPTI"; else echo "line $i"; fi
	done
}
lines() { printf '%s\n' "$1" | grep -cF -- "$2"; }

out=$(console 10 0 | console_excerpt 30)
tap_check "a short console without an oops: all of it, as it was" [ "$out" = "$(console 10 0)" ]

out=$(console 500 0 | console_excerpt 30)
tap_check "a long console without an oops: its last 30 lines, as they were" [ "$out" = "$(console 500 0 | tail -n 30)" ]

out=$(console 500 100 | console_excerpt 30)
tap_check "an oops long before the end: its first line is shown" [ "$(lines "$out" "invalid opcode: 0000")" -eq 1 ]
tap_check "... with the line numbered where it was" [ "$(lines "$out" "from console line 100:")" -eq 1 ]
tap_check "... then 39 lines after it" [ "$(printf '%s\n' "$out" | grep -A1 'line 139$' | tail -n 1)" = "-- 331 lines left out" ]
tap_check "... and the console's last 30 lines end it" [ "$(printf '%s\n' "$out" | tail -n 30)" = "$(console 500 100 | tail -n 30)" ]

out=$(console 500 480 | console_excerpt 30)
tap_check "an oops inside the last lines: shown once, in the tail" [ "$out" = "$(console 500 480 | tail -n 30)" ]

out=$(console 100 60 | console_excerpt 30)
tap_check "an oops just before the tail: no line twice, none left out" [ "$out" = "$(printf '%s\n' "-- the first oops, from console line 60:"; console 100 60 | sed -n 60,70p; echo "-- the last lines:"; console 100 60 | tail -n 30)" ]

for oops in "BUG: kernel NULL pointer dereference" "Oops: 0002 [#1]" \
	"general protection fault, probably for non-canonical address" \
	"traps: PANIC: double fault, error_code: 0x0" \
	"BUG: stack guard page was hit at 0000000012345678" \
	"stack segment: 0000 [#1] PREEMPT SMP NOPTI" "int3: 0000 [#1] SMP" \
	"divide error: 0000 [#1] PREEMPT SMP NOPTI" "kernel BUG at mm/slub.c:379!" \
	"Unable to handle kernel paging request at virtual address dead000000000108" \
	"Insufficient stack space to handle exception!" \
	"Internal error: Oops: 96000004 [#1] SMP" "Kernel panic - not syncing: Fatal exception"; do
	out=$( { console 100 0; echo "$oops"; console 100 0; } | console_excerpt 30)
	tap_check "its first line is found: $oops" [ "$(lines "$out" "$oops")" -eq 1 ]
done

# console_show: on stderr and as TAP comments, even a last line without
# its newline; stderr appended to, as the nested hosts' logs are, keeps
# what was there.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "earlier stderr" >"$log"
out=$(printf 'ok 1 - not a TAP line\nlast' | console_show 2>>"$log")
tap_check "console_show: every line it prints is a TAP comment" \
	[ "$out" = "$(printf '#   ok 1 - not a TAP line\n#   last')" ]
tap_check "console_show: stderr gets the same lines, after what it had" \
	[ "$(cat "$log")" = "$(printf 'earlier stderr\nok 1 - not a TAP line\nlast')" ]
tap_done
