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
# off, vm_powered_off (a command, true when it did); vm_kernel (the guest
# kernel's file, whose System.map beside it names where a hung guest was).

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

# vcpu_places KERNEL ERRFILE: for each "vCPU N at 0xADDR" of brisk's
# -timeout line in ERRFILE, the kernel function there, one line each,
# from the System.map beside KERNEL (vmlinuz-V: System.map-V) where it
# has symbols, else from the running kernel's /proc/kallsyms when that
# kernel is V (Debian ships an empty System.map; the nested hosts boot
# the guests' own kernel, without KASLR); nothing without either.  The
# guests boot with nokaslr, so these addresses are the guest kernel's.
vcpu_kallsyms=/proc/kallsyms vcpu_release=$(uname -r)
vcpu_places() {
	local v=${1##*/vmlinuz-} map line
	map=${1%/*}/System.map-$v
	if ! grep -q ' _text$' "$map" 2>/dev/null; then
		map=$vcpu_kallsyms
		[ "$v" = "$vcpu_release" ] && grep -q '^[0-9a-f]*[1-9a-f][0-9a-f]* . _text$' "$map" 2>/dev/null ||
			return 0
	fi
	line=$(grep -m 1 'timeout: .*(vCPU 0 at ' "$2" 2>/dev/null) || return 0
	grep -o 'vCPU [0-9]* at 0x[0-9a-f]*' <<<"$line" | while read -r _ n _ pc; do
		# The map's addresses are 16 zero-padded hex digits, so text order
		# is numeric order; awk's numbers would lose the low bits.
		awk -v pc="$(printf '%016x' "$pc")" '
			$3 == "_text" { text = $1 }
			$3 == "_etext" { etext = $1 }
			# Compared as text ("" makes a string), never as numbers.
			($2 == "T" || $2 == "t") && ($1 "") <= pc && ($1 "") >= best { best = $1; sym = $3 }
			END {
				if (text == "" || pc < (text "") || etext == "" || pc >= (etext "")) exit 1
				print best, sym
			}' "$map" | {
			local base sym
			if read -r base sym; then
				printf 'vCPU %s at %s: %s+0x%x\n' "$n" "$pc" "$sym" $((pc - 0x$base))
			else
				echo "vCPU $n at $pc: not in the kernel's text (user space, or before the kernel ran)"
			fi
		}
	done
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
			vcpu_places "${vm_kernel:-}" "$log.err"
		} | console_show
	fi
	tap_dirty=0
}
