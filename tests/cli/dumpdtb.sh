#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# dumpdtb.sh BRISK: -machine dumpdtb=FILE writes the board's device tree
# and exits, with no /dev/kvm; dtc decompiles it without a warning and it
# says what the command line asked.  A board without a tree (x86) refuses
# with one line.  In a cross build meson's exe wrapper runs BRISK.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../kvm/lib/arch.sh"
brisk=$1
# shellcheck disable=SC2206
run=(${MESON_EXE_WRAPPER:-} "$brisk")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "$(elf_arch "$brisk")" != arm64 ]; then
	"${run[@]}" -machine dumpdtb="$tmp/t.dtb" -kernel /dev/null 2>"$tmp/err"
	tap_check "x86: dumpdtb refused" [ $? -eq 1 ]
	tap_check "x86: with one line" [ "$(wc -l <"$tmp/err")" -eq 1 ]
	tap_check "x86: that says why" grep -q "not a device tree" "$tmp/err"
	tap_check "x86: no file written" [ ! -e "$tmp/t.dtb" ]
	tap_done
fi
command -v dtc >/dev/null || { tap_skip "dtc" "no dtc; apt-get install device-tree-compiler"; tap_done; }
"${run[@]}" -M virt,dumpdtb="$tmp/t.dtb" -smp 3 -m 768M \
	-append "console=ttyAMA0 root=/dev/vda x=a,b" 2>"$tmp/err"
tap_check "dumpdtb exits 0 with no kernel and no /dev/kvm" [ $? -eq 0 ]
tap_check "... silently" [ ! -s "$tmp/err" ]
dtc -I dtb -O dts -o "$tmp/t.dts" "$tmp/t.dtb" 2>"$tmp/dtc.err"
tap_check "dtc decompiles it" [ $? -eq 0 ]
tap_check "... without a warning" [ ! -s "$tmp/dtc.err" ]
tap_check "bootargs is -append" grep -q 'bootargs = "console=ttyAMA0 root=/dev/vda x=a,b";' "$tmp/t.dts"
tap_check "three CPUs" [ "$(grep -c 'device_type = "cpu"' "$tmp/t.dts")" -eq 3 ]
# 768 MiB from 1 GiB: reg = <0 0x40000000 0 0x30000000>.
tap_check "memory is -m" grep -q 'reg = <0x00 0x40000000 0x00 0x30000000>;' "$tmp/t.dts"
"${run[@]}" -M virt,dumpdtb="$tmp/none/t.dtb" 2>"$tmp/err"
tap_check "an unwritable path fails" [ $? -eq 1 ]
tap_check "... with one line" [ "$(wc -l <"$tmp/err")" -eq 1 ]
tap_done
