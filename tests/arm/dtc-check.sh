#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# dtc-check.sh TEST-ARM-BOARD: the arm64 board's device tree decompiles
# with dtc (device-tree-compiler) without a single warning.  In a cross
# build meson's exe wrapper runs TEST-ARM-BOARD.
set -u
command -v dtc >/dev/null || { echo "dtc not found; run: apt-get install device-tree-compiler" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086
${MESON_EXE_WRAPPER:-} "$@" "$tmp/t.dtb" || exit 1
dtc -I dtb -O dts -o "$tmp/t.dts" "$tmp/t.dtb" 2>"$tmp/err"
rc=$?
cat "$tmp/err" >&2
[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] || { echo "dtc: status $rc, warnings above" >&2; exit 1; }
grep -q 'compatible = "pci-host-ecam-generic"' "$tmp/t.dts" || { echo "no PCIe node in the decompiled tree" >&2; exit 1; }
echo "dtc: decompiled $(wc -l <"$tmp/t.dts") lines, no warnings"
