#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-kvm.sh BRISK: brisk --check-kvm's verdict on this host agrees with
# what the host is, read independently of brisk (/sys/module, the CPU's
# flags), and a boot on a /dev/kvm that cannot run it ends at once with
# one line instead of a silent spin.  Run natively (cli suite) and inside
# the nested host (boot-tests.sh), so both kinds of answer are tried.

set -u
brisk=${1:?usage: check-kvm.sh path/to/brisk}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
has() { grep -q -- "$2" "$1"; }

cpu_virt=no
grep -qwE 'vmx|svm' /proc/cpuinfo && cpu_virt=yes
kind=
for m in kvm_intel kvm_amd kvm_pvm; do
	[ -e "/sys/module/$m" ] && { kind=$m; break; }
done
tap_diag "host: /dev/kvm $([ -e /dev/kvm ] && echo present || echo absent)," \
	"module ${kind:-none}, vmx/svm in cpuinfo: $cpu_virt"

timeout 20 "$brisk" --check-kvm >"$tmp/out" 2>"$tmp/err"
rc=$?
tap_diag "$(cat "$tmp/out" "$tmp/err")"

kernel=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1)
boot_refused() {
	if [ -z "$kernel" ]; then
		tap_skip "$1" "no kernel in /boot to try a boot with"
		return
	fi
	timeout 20 "$brisk" -kernel "$kernel" -m 256M -serial none \
		</dev/null >"$tmp/bout" 2>"$tmp/berr"
	local brc=$?
	tap_check "$1: exit 1, not a spin" [ $brc -eq 1 ]
	tap_check "$1: one line on stderr" [ "$(wc -l <"$tmp/berr")" -eq 1 ]
	tap_check "$1: the line says what it found" has "$tmp/berr" "$2"
	[ -z "${3:-}" ] || tap_check "$1: ... and how to boot anyway" has "$tmp/berr" "$3"
}

if [ ! -e /dev/kvm ]; then
	tap_check "no /dev/kvm: --check-kvm exits 1" [ $rc -eq 1 ]
	tap_check "no /dev/kvm: one line naming /dev/kvm" eval \
		'[ "$(wc -l <"$tmp/err")" -eq 1 ] && has "$tmp/err" /dev/kvm'
	boot_refused "no /dev/kvm: a boot" "/dev/kvm"
elif [ "$kind" = kvm_pvm ] && [ $cpu_virt = no ]; then
	tap_check "kvm_pvm: --check-kvm exits 1" [ $rc -eq 1 ]
	tap_check "kvm_pvm: names the module" has "$tmp/out" "^kvm-module: kvm_pvm$"
	tap_check "kvm_pvm: no vmx/svm seen either" has "$tmp/out" "^cpu-virt: none$"
	tap_check "kvm_pvm: not usable" has "$tmp/out" "^usable: no$"
	tap_check "kvm_pvm: the verdict says what runs there" has "$tmp/out" "only PVM-enabled guest kernels"
	boot_refused "kvm_pvm: a boot" "kvm_pvm" "check=off"
elif { [ "$kind" = kvm_intel ] || [ "$kind" = kvm_amd ]; } && [ $cpu_virt = yes ]; then
	tap_check "$kind: --check-kvm exits 0" [ $rc -eq 0 ]
	tap_check "$kind: names the module" has "$tmp/out" "^kvm-module: $kind$"
	tap_check "$kind: usable" has "$tmp/out" "^usable: yes$"
	tap_check "$kind: the test guest finished" has "$tmp/out" "^test-guest: [0-9.]* ms"
else
	tap_skip "--check-kvm's verdict" "a host brisk has no expectation for" \
		"(module ${kind:-none}, vmx/svm: $cpu_virt)"
fi
# Whatever the host, the answer is one of the two documented statuses.
tap_check "--check-kvm exits 0 or 1" [ $rc -eq 0 -o $rc -eq 1 ]
tap_done
