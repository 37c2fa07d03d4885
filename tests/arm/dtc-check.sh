#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# dtc-check.sh TEST-ARM-BOARD: the arm64 board's device tree decompiles
# with dtc (device-tree-compiler) without a single warning.  In a cross
# build meson's exe wrapper runs TEST-ARM-BOARD.  Output is TAP.
set -u
. "$(dirname "$0")/../lib/tap.sh"
command -v dtc >/dev/null || { tap_skip "dtc" "no dtc; apt-get install device-tree-compiler"; tap_done; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086
tap_check "the board writes its tree" ${MESON_EXE_WRAPPER:-} "$@" "$tmp/t.dtb"
dtc -I dtb -O dts -o "$tmp/t.dts" "$tmp/t.dtb" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && [ ! -s "$tmp/err" ]; then
	tap_check "dtc decompiles it without a warning ($(wc -l <"$tmp/t.dts") lines)" true
else
	tap_fail "dtc decompiles it without a warning" "status $rc: $(cat "$tmp/err")"
fi
tap_check "the tree has a PCIe node" grep -q 'compatible = "pci-host-ecam-generic"' "$tmp/t.dts"
tap_done
