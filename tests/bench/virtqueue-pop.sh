#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# What -ftrivial-auto-var-init=zero costs on the virtqueue pop path, and
# what BRISK_UNINITIALIZED wins back.  Builds tests/bench/virtqueue-pop three
# ways (release builds, separate build directories), runs them interleaved
# for several rounds and prints the median ns per request of each variant:
#   off        -Dauto_var_init=off
#   zero       -Dauto_var_init=zero -Duninit_attr=false
#   zero+attr  -Dauto_var_init=zero (the default brisk build)
#
# usage: tests/bench/virtqueue-pop.sh [--csv] [--rounds N] [--seconds S] [--callgrind] [--arm64]
#   --csv       print ring,chain,variant,ns_per_req lines only
#   --rounds N  interleaved rounds (default 5)
#   --seconds S minimum length of one timed run (default 0.3)
#   --callgrind instead of timing, count the instructions of one pop
#               (virtqueue_pop and all it calls) under valgrind's
#               callgrind: exact, and blind to the host's load
#   --arm64     cross-build for arm64 and run under qemu-aarch64 (user
#               mode): the ring checks and the zeroing sequences in the
#               pop functions hold; emulated ns/req say nothing about arm64
# BUILD_PREFIX (default ./build-bench, ./build-bench-arm64) names the
# build directories.
set -eu

csv=0
rounds=5
seconds=0.3
callgrind=0
arm64=0
while [ $# -gt 0 ]; do
	case "$1" in
	--csv) csv=1 ;;
	--arm64) arm64=1 ;;
	--rounds) rounds=$2; shift ;;
	--seconds) seconds=$2; shift ;;
	--callgrind) callgrind=1 ;;
	*) echo "usage: $0 [--csv] [--rounds N] [--seconds S] [--callgrind] [--arm64]" >&2; exit 2 ;;
	esac
	shift
done
if [ "$callgrind" = 1 ] && [ "$arm64" = 1 ]; then
	echo "virtqueue-pop.sh: --callgrind counts this host's own build only" >&2
	exit 2
fi
if [ "$callgrind" = 1 ] && ! command -v valgrind >/dev/null; then
	echo "virtqueue-pop.sh: valgrind not found; run scripts/setup-debian.sh" >&2
	exit 1
fi

src=$(cd "$(dirname "$0")/../.." && pwd)
prefix=${BUILD_PREFIX:-$src/build-bench}
cross= run= objdump=objdump
if [ "$arm64" = 1 ]; then
	prefix=${BUILD_PREFIX:-$src/build-bench-arm64}
	cross="--cross-file $src/scripts/cross/aarch64-linux-gnu.ini
-Dfdt_libdir=$("$src/scripts/arm64-debs.sh")/root/usr/lib/aarch64-linux-gnu"
	run="qemu-aarch64 -L /usr/aarch64-linux-gnu"
	objdump=aarch64-linux-gnu-objdump
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log() { [ "$csv" = 1 ] || echo "$@"; }
# table FILE COLUMN UNIT: ring,chain,variant,... lines as one row per case.
table() {
	awk -F, -v col="$2" -v unit="$3" '
	{ x[$1 "," $2, $3] = $col; if (!(($1 "," $2) in seen)) { seen[$1 "," $2] = 1; order[++m] = $1 "," $2 } }
	END {
		printf "| ring   | chain | off %s | zero %s | zero+attr %s | zero/off | zero+attr/off |\n", unit, unit, unit
		printf "|--------|------:|-----------:|------------:|-----------------:|---------:|--------------:|\n"
		for (i = 1; i <= m; i++) {
			k = order[i]; split(k, p, ",")
			o = x[k, "off"]; z = x[k, "zero"]; a = x[k, "zero+attr"]
			printf "| %-6s | %5s | %10.1f | %11.1f | %16.1f | %8.2f | %13.3f |\n", p[1], p[2], o, z, a, z / o, a / o
		}
	}' "$1"
}

variants="off zero zero+attr"
dir_of() { echo "$prefix-$(echo "$1" | tr + -)"; }
opts_of() {
	case "$1" in
	off) echo "-Dauto_var_init=off" ;;
	zero) echo "-Dauto_var_init=zero -Duninit_attr=false" ;;
	zero+attr) echo "-Dauto_var_init=zero -Duninit_attr=true" ;;
	esac
}

for v in $variants; do
	d=$(dir_of "$v")
	# shellcheck disable=SC2046
	if [ -d "$d" ]; then
		meson configure "$d" --buildtype=release $(opts_of "$v") >/dev/null
	else
		meson setup "$d" "$src" --buildtype=release $cross $(opts_of "$v") >/dev/null
	fi
	ninja -C "$d" tests/bench/virtqueue-pop >/dev/null
done

# The pop functions of each build: a large memset (call or rep stos) is
# the zeroing of the gather arrays.
for v in $variants; do
	d=$(dir_of "$v")
	for f in virtqueue_split_pop virtqueue_packed_pop; do
		obj=$(find "$d/virtio" -name "virtqueue-$(echo $f | cut -d_ -f2).c.o" | head -n1)
		n=$($objdump -dr --no-show-raw-insn "$obj" |
			awk -v f="<$f>:" '$2 == f { on = 1; next } /^$/ { on = 0 } on' |
			grep -cE 'memset|rep stos' || true)
		log "$(printf '%-10s %-22s zeroing sequences: %s' "$v" "$f" "$n")"
	done
done
log ""

if [ "$callgrind" = 1 ]; then
	# Instructions per pop: N pops after the binary's 1000-pop warm-up,
	# counted only inside virtqueue_pop.
	n=20000
	for v in $variants; do
		for c in "split 3" "split 64" "packed 3" "packed 64"; do
			# shellcheck disable=SC2086
			set -- $c
			valgrind --tool=callgrind --toggle-collect=virtqueue_pop \
				--callgrind-out-file="$work/cg" \
				"$(dir_of "$v")/tests/bench/virtqueue-pop" --count "$1" "$2" "$n" \
				>/dev/null 2>"$work/cg.err" || { cat "$work/cg.err" >&2; exit 1; }
			awk -v r="$1" -v c="$2" -v v="$v" -v n="$n" \
				'/^(summary|totals):/ { printf "%s,%s,%s,%.1f\n", r, c, v, $2 / (n + 1000); exit }' \
				"$work/cg" >>"$work/ir"
		done
	done
	if [ "$csv" = 1 ]; then
		echo "ring,chain,variant,instructions_per_pop"
		cat "$work/ir"
		exit 0
	fi
	echo "Instructions per pop (callgrind):"
	table "$work/ir" 4 Ir/pop
	exit 0
fi

for r in $(seq 1 "$rounds"); do
	for v in $variants; do
		$run "$(dir_of "$v")/tests/bench/virtqueue-pop" "$seconds" |
			awk -F, -v v="$v" 'NR > 1 { print $1 "," $2 "," v "," $3 "," $4 }' >>"$work/all"
	done
	log "round $r/$rounds done"
done

# Per ring, chain and variant: the best run of all rounds, and the median
# over the rounds of each run's median.  On a busy host the minimum is the
# steadier figure; the median shows the spread.
sort -t, -k1,1r -k2,2n -k3,3 "$work/all" | awk -F, '
	{
		k = $1 "," $2 "," $3
		if (!(k in n)) { order[++m] = k; best[k] = $4 }
		if ($4 < best[k]) best[k] = $4
		v[k, ++n[k]] = $5
	}
	END {
		for (i = 1; i <= m; i++) {
			k = order[i]; c = n[k]
			for (a = 1; a <= c; a++)
				for (b = a + 1; b <= c; b++)
					if (v[k, b] < v[k, a]) { t = v[k, a]; v[k, a] = v[k, b]; v[k, b] = t }
			med = (c % 2) ? v[k, (c + 1) / 2] : (v[k, c / 2] + v[k, c / 2 + 1]) / 2
			printf "%s,%.1f,%.1f\n", k, best[k], med
		}
	}' >"$work/stats"

if [ "$csv" = 1 ]; then
	echo "ring,chain,variant,ns_per_req"
	cut -d, -f1-4 "$work/stats"
	exit 0
fi
log "Best of $rounds rounds (ns per request):"
table "$work/stats" 4 ns/req
log ""
log "Median of $rounds rounds:"
table "$work/stats" 5 ns/req
