#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# user-dtb.sh BRISK: -dtb FILE on the arm64 board.  A blob that is cut
# short or corrupt is refused with one line before anything else (no
# /dev/kvm needed), with or without -kernel; a good one is what
# -machine dumpdtb writes, with -append as its bootargs.  In a cross
# build meson's exe wrapper runs BRISK.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
brisk=$1
# shellcheck disable=SC2206
run=(${MESON_EXE_WRAPPER:-} "$brisk")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v dtc >/dev/null || { tap_skip "dtc" "no dtc; apt-get install device-tree-compiler"; tap_done; }

# A user's tree: brisk's own for 768 MiB, so a dump for 2 GiB can tell
# which tree it wrote.
"${run[@]}" -M virt,dumpdtb="$tmp/user.dtb" -m 768M -append old 2>"$tmp/err"
tap_check "a tree to start from" [ $? -eq 0 ]
size=$(stat -c %s "$tmp/user.dtb")
head -c $((size - 100)) "$tmp/user.dtb" >"$tmp/short.dtb"
head -c 20 "$tmp/user.dtb" >"$tmp/header.dtb"
# get32 FILE OFFSET, put32 FILE OFFSET VALUE: a big-endian word, as
# every field of a blob is (devicetree specification 5.2).
get32() { od -An -tu1 -j"$2" -N4 "$1" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }'; }
put32() {
	# shellcheck disable=SC2059
	printf "$(printf '\\x%02x' $(($3 >> 24 & 255)) $(($3 >> 16 & 255)) \
		$(($3 >> 8 & 255)) $(($3 & 255)))" |
		dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
# 5.2: off_dt_struct is the word at byte 8; the block's first token is
# FDT_BEGIN_NODE (1): make it 0x55555555.
cp "$tmp/user.dtb" "$tmp/bad.dtb"
struct=$(get32 "$tmp/bad.dtb" 8)
put32 "$tmp/bad.dtb" "$struct" $((0x55555555))
tap_check "the corrupt blob's first token is 0x55555555" \
	[ "$(get32 "$tmp/bad.dtb" "$struct")" -eq $((0x55555555)) ]
# 5.4.1: the root node's name is empty (a padded word), then its first
# property: FDT_PROP (3), its length, its name.  A length of -12 in 32
# bits ends the property where it began.
cp "$tmp/user.dtb" "$tmp/loop.dtb"
tap_check "the root's first token is a property" [ "$(get32 "$tmp/loop.dtb" $((struct + 8)))" -eq 3 ]
put32 "$tmp/loop.dtb" $((struct + 12)) $((0xfffffff4))
# 5.3: the reservation block (at the word at byte 16) is 8-byte aligned:
# 4 bytes before it move it and every block after it (the total size and
# the three offsets, bytes 4 to 19, grow by 4).
rsv=$(get32 "$tmp/user.dtb" 16)
{ head -c "$rsv" "$tmp/user.dtb"; head -c 4 /dev/zero; tail -c +$((rsv + 1)) "$tmp/user.dtb"; } >"$tmp/align.dtb"
for at in 4 8 12 16; do
	put32 "$tmp/align.dtb" $at $(($(get32 "$tmp/align.dtb" $at) + 4))
done
# An Image header (booting.rst): magic "ARM\x64" at 56, image_size 1 MiB.
{ head -c 16 /dev/zero; printf '\0\0\x10\0\0\0\0\0'; head -c 32 /dev/zero
  printf 'ARM\x64'; head -c 4100 /dev/zero; } >"$tmp/Image"

refused() { # refused NAME DTB [ARGS...]
	local name=$1 dtb=$2; shift 2
	rm -f "$tmp/out.dtb"
	"${run[@]}" -dtb "$dtb" "$@" 2>"$tmp/err"
	tap_check "$name: exit 1" [ $? -eq 1 ]
	tap_check "$name: one line" [ "$(wc -l <"$tmp/err")" -eq 1 ]
	tap_check "$name: that names the blob" grep -q "not a usable device tree blob" "$tmp/err"
	tap_check "$name: no tree written" [ ! -e "$tmp/out.dtb" ]
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || tap_diag "$(cat "$tmp/err")"
}
refused "truncated, dumpdtb" "$tmp/short.dtb" -M virt,dumpdtb="$tmp/out.dtb"
refused "corrupt, dumpdtb" "$tmp/bad.dtb" -M virt,dumpdtb="$tmp/out.dtb"
refused "truncated, -kernel" "$tmp/short.dtb" -kernel "$tmp/Image" -m 256M
refused "corrupt, -kernel" "$tmp/bad.dtb" -kernel "$tmp/Image" -m 256M
refused "cut in its header" "$tmp/header.dtb" -M virt,dumpdtb="$tmp/out.dtb"
refused "a property that ends where it began" "$tmp/loop.dtb" -M virt,dumpdtb="$tmp/out.dtb"
refused "a misaligned reservation block" "$tmp/align.dtb" -M virt,dumpdtb="$tmp/out.dtb"
tap_check "... that says what is wrong" grep -q "FDT_ERR_ALIGNMENT" "$tmp/err"

"${run[@]}" -M virt,dumpdtb="$tmp/out.dtb" -dtb "$tmp/user.dtb" -m 2G \
	-append "console=ttyAMA0 new" 2>"$tmp/err"
tap_check "-dtb with dumpdtb: exit 0" [ $? -eq 0 ]
dtc -I dtb -O dts -o "$tmp/out.dts" "$tmp/out.dtb" 2>/dev/null
tap_check "... writes the -dtb tree (768 MiB, not -m 2G)" \
	grep -q 'reg = <0x00 0x40000000 0x00 0x30000000>;' "$tmp/out.dts"
tap_check "... with -append as bootargs" grep -q 'bootargs = "console=ttyAMA0 new";' "$tmp/out.dts"
tap_done
