#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# iothread-instructions.sh BRISK DEPTH [SECONDS [TOP]]: instructions per I/O of
# brisk -export's I/O threads (callgrind, collecting only inside
# iothread_main, so start-up and the control thread are left out), with
# polling off, serving tests/bench/vhost-blk-bench's 4 KiB random reads
# of a page-cached 256 MiB file at DEPTH on a split ring.  Exact: the
# same binary gives the same count whatever else the machine does.  With
# TOP, the TOP functions with most instructions of their own, per I/O.
# The bench binary is taken from BRISK's build directory.
set -u
brisk=$(readlink -f "${1:?usage: iothread-instructions.sh BRISK DEPTH [SECONDS [TOP]]}")
depth=${2:?usage: iothread-instructions.sh BRISK DEPTH [SECONDS [TOP]]}
seconds=${3:-6}
top=${4:-0}
bench=$(dirname "$brisk")/tests/bench/vhost-blk-bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
truncate -s 256M "$tmp/disk.raw"
cat "$tmp/disk.raw" >/dev/null
valgrind --tool=callgrind --toggle-collect=iothread_main --callgrind-out-file="$tmp/cg.out" \
	"$brisk" -drive "file=$tmp/disk.raw,if=none,id=d0,aio=io_uring,cache=writeback" \
	-export "vhost-user-blk,id=e0,drive=d0,addr.path=$tmp/s.sock,poll-us=0" 2>"$tmp/vg.err" &
p=$!
for _ in $(seq 400); do [ -S "$tmp/s.sock" ] && break; sleep 0.05; done
"$bench" --socket "$tmp/s.sock" --depth "$depth" --warmup 0 --seconds "$seconds" \
	>"$tmp/bench.out" 2>"$tmp/bench.err" ||
	{ kill $p; echo "iothread-instructions: $(cat "$tmp/bench.err")" >&2; exit 1; }
kill $p
wait $p
ios=$(sed -n 's/.*ios=\([0-9]*\).*/\1/p' "$tmp/bench.out")
tot=$(callgrind_annotate "$tmp/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
echo "depth $depth: $tot instructions / $ios I/Os = $(echo "scale=1; $tot / $ios" | bc)"
[ "$top" -gt 0 ] || exit 0
# callgrind_annotate's rows: "COUNT (PCT%)  FILE:FUNCTION [OBJECT]".
callgrind_annotate --inclusive=no "$tmp/cg.out" 2>/dev/null | sed -n '/file:function/,$p' |
	sed -n "3,$((top + 2))p" | awk -v n="$ios" '{
		gsub(/\( +/, "(")	# "( 5.68%)": one field
		v = $1; gsub(",", "", v); f = $3; sub(/.*:/, "", f)
		printf "%8.1f  %s  %s\n", v / n, $2, f }'
