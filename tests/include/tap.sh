# SPDX-License-Identifier: GPL-2.0-or-later
# TAP for the shell tests, as check.h is for the C ones: one line per
# check, a skip says why, and the plan and exit status come from tap_done.

tap_n=0 tap_failed=0

# tap_check DESCRIPTION COMMAND...: ok when COMMAND succeeds.
tap_check() {
	local desc=$1
	shift
	tap_n=$((tap_n + 1))
	if "$@"; then
		echo "ok $tap_n - $desc"
	else
		echo "not ok $tap_n - $desc"
		tap_failed=$((tap_failed + 1))
	fi
}

# tap_fail DESCRIPTION [DETAIL]: a check that failed, DETAIL as a comment.
tap_fail() {
	tap_n=$((tap_n + 1))
	tap_failed=$((tap_failed + 1))
	echo "not ok $tap_n - $1"
	[ -z "${2:-}" ] || printf '%s\n' "$2" | sed 's/^/#   /'
}

tap_skip() {
	tap_n=$((tap_n + 1))
	echo "ok $tap_n - $1 # SKIP $2"
}

tap_diag() { printf '%s\n' "$*" | sed 's/^/# /'; }

tap_done() {
	echo "1..$tap_n"
	[ "$tap_failed" -eq 0 ]
	exit
}
