#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# test-console.sh: what a failed boot shows of its console
# (tests/kvm/lib/console.sh): an oops's first line survives however long
# the oops recursed, and the console's last lines are always there; why
# a boot failed and what a boot with a failed check shows
# (tests/kvm/lib/boot-end.sh).

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
. "$here/lib/console.sh"
. "$here/lib/boot-end.sh"

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

# boot-end.sh: why a boot ended as none should, as blk-tests.sh sets it up.
dir=$(mktemp -d)
trap 'rm -rf "$log" "$dir"' EXIT
log=$dir/split.log
console 100 0 >"$log"
echo "brisk: a line" >"$log.err"
guard_s=120 vm_who=brisk vm_hung="brisk hung past -timeout" vm_tail=40 vm_killed=0
why() { vm_rc=$1; vm_failure; }
tap_check "vm_failure: exit 0 is no failure" [ -z "$(why 0)" ]
tap_check "vm_failure: exit 2 is a panic" [ "$(why 2)" = "the guest kernel panicked" ]
tap_check "vm_failure: exit 124 names the -timeout" \
	[ "$(why 124)" = "the guest was still running at -timeout 120" ]
tap_check "vm_failure: exit 137 not asked for is a hang" [ "$(why 137)" = "brisk hung past -timeout" ]
tap_check "vm_failure: exit 137 asked for is no failure" [ -z "$(vm_killed=1 why 137)" ]
tap_check "vm_failure: exit 1 alone says nothing..." [ -z "$(why 1)" ]
echo "KVM: triple fault" >>"$log.err"
tap_check "... unless it triple faulted" [ "$(why 1)" = "the guest triple faulted" ]
# As vhost-user-tests.sh has it: QEMU exits 0 on a guest's reset.
vm_powered_off() { false; }
tap_check "vm_failure: exit 0 without the power-off is a reset" \
	[ "$(why 0)" = "the guest reset before its power-off" ]

# vcpu_places: where -timeout's line says the vCPUs were, named from a
# map written here as the kernel writes System.map.
mkdir "$dir/boot" && : >"$dir/boot/vmlinuz-9.9"
printf '%s\n' '0000000000000000 A fixed_percpu_data' 'ffffffff81000000 T _text' \
	'ffffffff81000000 T startup_64' 'ffffffff81001000 t a_local' \
	'ffffffff81002000 T default_idle' 'ffffffff81003000 D some_data' \
	'ffffffff81004000 T _etext' >"$dir/boot/System.map-9.9"
echo "brisk: timeout: guest still running after 80 s (vCPU 0 at 0xffffffff81002010," \
	"vCPU 1 at 0x4f3aff0, vCPU 2 at 0xffffffff81003010, vCPU 3 at 0xffffffff81001000)" >"$dir/t.err"
out=$(vcpu_places "$dir/boot/vmlinuz-9.9" "$dir/t.err")
tap_check "vcpu_places: a vCPU in the kernel's text is named by its function and offset" \
	[ "$(sed -n 1p <<<"$out")" = "vCPU 0 at 0xffffffff81002010: default_idle+0x10" ]
tap_check "vcpu_places: one outside it is said to be" \
	[ "$(sed -n 2p <<<"$out")" = "vCPU 1 at 0x4f3aff0: not in the kernel's text (user space, or before the kernel ran)" ]
tap_check "vcpu_places: only text symbols name a place, local ones too" \
	[ "$(sed -n 3,4p <<<"$out")" = "$(printf '%s\n' "vCPU 2 at 0xffffffff81003010: default_idle+0x1010" "vCPU 3 at 0xffffffff81001000: a_local+0x0")" ]
tap_check "vcpu_places: one line per vCPU" [ "$(wc -l <<<"$out")" -eq 4 ]
tap_check "vcpu_places: nothing without the kernel's map" \
	[ -z "$(vcpu_places "$dir/vmlinuz-9.9" "$dir/t.err")" ]
# Debian's System.map says only where the real one is: the running
# kernel's symbols stand in when it is the guest's.
mv "$dir/boot/System.map-9.9" "$dir/kallsyms"
echo "ffffffffffffffff B The real System.map is in the -dbg package" >"$dir/boot/System.map-9.9"
tap_check "vcpu_places: an empty map and another running kernel: nothing" \
	[ -z "$(vcpu_kallsyms=$dir/kallsyms vcpu_release=9.8 vcpu_places "$dir/boot/vmlinuz-9.9" "$dir/t.err")" ]
tap_check "vcpu_places: an empty map: the running kernel's symbols, when it is the guest's" \
	[ "$(vcpu_kallsyms=$dir/kallsyms vcpu_release=9.9 vcpu_places "$dir/boot/vmlinuz-9.9" "$dir/t.err")" = "$out" ]
sed 's/^ffffffff8100[0-9]000/0000000000000000/' "$dir/kallsyms" >"$dir/kallsyms0"
tap_check "vcpu_places: symbols whose addresses are hidden (kptr_restrict): nothing" \
	[ -z "$(vcpu_kallsyms=$dir/kallsyms0 vcpu_release=9.9 vcpu_places "$dir/boot/vmlinuz-9.9" "$dir/t.err")" ]

# finish_boot, in a subshell each: its checks count there.
out=$(finish_boot split 2>"$dir/err")
tap_check "finish_boot NAME: checks brisk's stderr..." \
	[ "$(printf '%s\n' "$out" | sed 's/^ok [0-9]* - //')" = "split: no sanitizer report on brisk's stderr" ]
tap_check "... and, all checks passed, shows nothing more" [ ! -s "$dir/err" ]
echo "==1==ERROR: AddressSanitizer: heap-use-after-free" >>"$log.err"
out=$(finish_boot split 2>"$dir/err")
tap_check "finish_boot NAME: a sanitizer report fails the boot..." \
	[ "$(printf '%s\n' "$out" | grep -c "^not ok .* - split: no sanitizer report on brisk's stderr: ==1==ERROR")" -eq 1 ]
tap_check "... and shows the console and stderr: on stderr..." \
	[ "$(head -n 1 "$dir/err")" = "== split.log: the console (its first oops, its last 40 lines), then brisk's stderr" ]
tap_check "... the console's last 40 lines..." [ "$(sed -n 2,41p "$dir/err")" = "$(console 100 0 | tail -n 40)" ]
tap_check "... ending with the VMM's last stderr lines" \
	[ "$(tail -n 3 "$dir/err")" = "$(cat "$log.err")" ]
tap_check "... and as TAP comments" [ "$(printf '%s\n' "$out" | grep -c '^#   ')" -eq "$(wc -l <"$dir/err")" ]
vm_who="the front-end" vm_tail=30
out=$( { tap_dirty=1; finish_boot; echo "tap_dirty=$tap_dirty"; } 2>"$dir/err")
tap_check "finish_boot: a failed check shows the console as vm_tail and vm_who say" \
	[ "$(head -n 1 "$dir/err")" = "== split.log: the console (its first oops, its last 30 lines), then the front-end's stderr" ]
tap_check "... with no check of its own" [ "$(grep -c '^ok\|^not ok' <<<"$out")" -eq 0 ]
tap_check "... and clears tap_dirty" [ "$(tail -n 1 <<<"$out")" = "tap_dirty=0" ]
tap_done
