# SPDX-License-Identifier: GPL-2.0-or-later
# The end of a boot in blk-tests.sh and vhost-user-tests.sh: why it ended
# as none should, and, when one of its checks failed, what the reader is
# shown of it.  Sourced after tap.sh and console.sh.
#
# What the script's boot function sets: vm_rc (the VMM's exit status),
# vm_killed (1: the script killed the VMM on purpose), log (the console;
# the VMM's stderr in $log.err).  What the script sets once: guard_s (the
# VMM's -timeout), vm_who (the VMM as the reader knows it), vm_hung (what
# is said of a VMM that had to be killed), vm_tail (console lines shown),
# and, where the VMM's exit 0 does not by itself mean the guest powered
# off, vm_powered_off (a command, true when it did).

vm_powered_off() { :; }

# vm_failure: why the last boot ended as no boot here ever should (the
# guest crashed or hung), on stdout; nothing when it did not.
vm_failure() {
	case $vm_rc in
	2) echo "the guest kernel panicked" ;;
	124) echo "the guest was still running at -timeout ${guard_s}" ;;
	137) [ "$vm_killed" = 1 ] || echo "$vm_hung" ;;
	1) grep -q 'triple fault' "$log.err" && echo "the guest triple faulted" ;;
	0) vm_powered_off || echo "the guest reset before its power-off" ;;
	esac
}

# Any report of ASan, UBSan or LSan on the VMM's stderr fails the boot,
# whatever its exit status.
check_no_sanitizer() { # check_no_sanitizer NAME
	local l
	l=$(grep -m 3 -E 'runtime error:|ERROR: [A-Za-z]*Sanitizer|SUMMARY: [A-Za-z]*Sanitizer' "$log.err")
	tap_status $([ -z "$l" ]; echo $?) "$1: no sanitizer report on $vm_who's stderr" "$(echo "$l" | tr '\n' ' ')"
}

# finish_boot [NAME]: the boot's last check, with NAME (check_no_sanitizer:
# only brisk runs under the sanitizers), then, where any of its checks
# failed, its console (the first oops, the last $vm_tail lines) and the
# end of the VMM's stderr; on stderr as well, as a test runner shows a
# failed test's stderr, not its TAP comments.
finish_boot() {
	[ $# -eq 0 ] || check_no_sanitizer "$1"
	if [ "$tap_dirty" -ne 0 ]; then
		{
			echo "== ${log##*/}: the console (its first oops, its last $vm_tail lines), then $vm_who's stderr"
			console_excerpt "$vm_tail" < "$log"
			tail -n 10 "$log.err"
		} | console_show
	fi
	tap_dirty=0
}
