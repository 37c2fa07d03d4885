# SPDX-License-Identifier: GPL-2.0-or-later
# TAP for the shell tests, as check.h is for the C ones: one line per
# check, a skip says why, and the plan and exit status come from tap_done.

# tap_dirty: set by every failure, cleared by a caller that dumps a log
# after a boot with one.
tap_n=0 tap_failed=0 tap_dirty=0

# tap_check DESCRIPTION COMMAND...: ok when COMMAND succeeds.
tap_check() {
	local desc=$1
	shift
	if "$@"; then
		tap_n=$((tap_n + 1))
		echo "ok $tap_n - $desc"
	else
		tap_fail "$desc"
	fi
}

# tap_fail DESCRIPTION [DETAIL]: a check that failed, DETAIL as a comment.
tap_fail() {
	tap_n=$((tap_n + 1))
	tap_failed=$((tap_failed + 1))
	tap_dirty=1
	echo "not ok $tap_n - $1"
	[ -z "${2:-}" ] || printf '%s\n' "$2" | sed 's/^/#   /'
}

# tap_status STATUS DESCRIPTION [DETAIL]: ok when STATUS is 0.  A failure's
# one-line DETAIL follows the description, which is the line scripts/test.sh
# quotes in its summary; a longer one follows as comment lines.  Returns 0
# or 1, as STATUS was 0 or not.
tap_status() {
	if [ "$1" -eq 0 ]; then
		tap_check "$2" true
		return 0
	fi
	case ${3:-} in
	*$'\n'*) tap_fail "$2" "$3" ;;
	*) tap_fail "$2${3:+: $3}" ;;
	esac
	return 1
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
