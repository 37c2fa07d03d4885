#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# net-instructions.sh BENCH [FRAMES [BATCH [TOP]]]: instructions per frame
# of virtio-net-pci, guest to back end (tx) and back end to guest (rx; and
# rx-copy and rx-direct, from a socket as from a tap: read into a buffer and
# copied, or read straight into the guest's buffers), for frames of 64,
# 1500 and 65520 bytes (the last with host_mtu=65520) on split and packed
# rings.  BENCH is tests/bench/virtio-net-frames of a build
# directory (a release build: what brisk ships); each case moves FRAMES
# frames (default 10240) in rounds of BATCH (default 1: a kick or an rx_fd
# wakeup per frame; rx of 65520 bytes takes at most 16, said on stderr) after an uncounted warm-up, under callgrind collecting
# only inside net_bench_round(), the main loop serving one round.  Exact:
# the same binary gives the same count whatever else the machine does.
# Prints CSV "direction,frame_bytes,ring,instructions_per_frame"; with TOP,
# then for each case the TOP functions with most instructions of their own,
# per frame.
set -u
usage="usage: net-instructions.sh BENCH [FRAMES [BATCH [TOP]]]"
bench=$(readlink -f "${1:?$usage}")
frames=${2:-10240}
batch=${3:-1}
top=${4:-0}
if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then
	echo "net-instructions: valgrind not found; run scripts/setup-debian.sh" >&2
	exit 77
fi
[ -x "$bench" ] || { echo "net-instructions: $bench: no such program" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "direction,frame_bytes,ring,instructions_per_frame"
for dir in tx rx rx-copy rx-direct; do
	for bytes in 64 1500 65520; do
		for ring in split packed; do
			out=$tmp/cg.$dir.$bytes.$ring
			valgrind --tool=callgrind --toggle-collect=net_bench_round \
				--callgrind-out-file="$out" \
				"$bench" "$dir" "$bytes" "$ring" "$frames" "$batch" \
				>"$tmp/out" 2>"$tmp/err" ||
				{ cat "$tmp/err" >&2; exit 1; }
			grep -q "^frames=$frames " "$tmp/out" ||
				{ echo "net-instructions: $dir $bytes $ring: $(cat "$tmp/out")" >&2; exit 1; }
			grep -q " batch=$batch\$" "$tmp/out" ||
				echo "net-instructions: $dir $bytes $ring: $(sed 's/.* //' "$tmp/out"), all the ring holds" >&2
			awk -v d="$dir" -v b="$bytes" -v r="$ring" -v n="$frames" \
				'/^summary:/ { printf "%s,%s,%s,%.1f\n", d, b, r, $2 / n; exit }' "$out"
		done
	done
done
[ "$top" -gt 0 ] || exit 0
for dir in tx rx rx-copy rx-direct; do
	for bytes in 64 1500 65520; do
		for ring in split packed; do
			echo
			echo "$dir $bytes $ring, per frame:"
			# callgrind_annotate's rows: "COUNT (PCT%)  FILE:FUNCTION [OBJECT]".
			callgrind_annotate --inclusive=no "$tmp/cg.$dir.$bytes.$ring" 2>/dev/null |
				sed -n '/file:function/,$p' | sed -n "3,$((top + 2))p" |
				awk -v n="$frames" 'NF >= 3 {
					gsub(/\( +/, "(")	# "( 5.68%)": one field
					v = $1; gsub(",", "", v); f = $3; sub(/.*:/, "", f); sub(/@.*/, "", f)
					printf "%8.1f  %s  %s\n", v / n, $2, f }'
		done
	done
done
