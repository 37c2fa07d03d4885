#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# brisk's virtio-blk device path against qemu-storage-daemon's, natively:
# both serve the same file over vhost-user-blk to the same front-end
# (tests/bench/vhost-blk-bench: closed-loop 4 KiB random reads, EVENT_IDX,
# split or packed rings, waiting on the call eventfd), and fio with
# io_uring on the file itself gives the limit.  No KVM, no guest: what is
# measured is the back-end's request path (pop, parse, io_uring, complete,
# push, notify) and its CPU time per I/O.
#
# Runs are interleaved (every back-end once per round, in a rotating
# order) and summarised by medians.  The front-end is pinned to one CPU,
# the back-end (and fio) to another.  Run it alone: other work on the
# machine shows up in the figures.  See docs/benchmarks.md.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

usage() {
	cat <<'EOF'
usage: tests/bench/vhost-blk-vs-qsd.sh [options]
  --rounds N          interleaved rounds (default 5)
  --seconds S         measured seconds per run (default 5)
  --warmup S          unmeasured seconds before (default 1)
  --rings LIST        split,packed (default both)
  --queues N          queues, each at the full depth (default 1)
  --depths LIST       per-queue depths (default 1,64)
  --caches LIST       writeback (page cache, warmed), none (O_DIRECT)
                      (default both)
  --backends LIST     of brisk, qsd, io_uring-limit, brisk-off,
                      brisk-zero (default brisk,qsd,io_uring-limit)
  --variants          add brisk-off and brisk-zero: brisk built with
                      auto_var_init=off, and =zero without the
                      BRISK_UNINITIALIZED opt-outs (brisk is =zero with them)
  --aa                add a second, separately started brisk and qsd
                      (brisk-aa, qsd-aa): A/A pairs
  --poll              the front-end polls the used rings instead of
                      sleeping on the call eventfd
  --brisk-opts OPTS   appended to brisk's -export (e.g. poll-us=0)
  --compare PATH      add brisk-cmp: another brisk binary (e.g. an older
                      build), to see what a change did
  --cpus F,B          the front-end's CPU and the back-end's (default 0,1)
  --disk-mib N        size of the file (default 1024)
  --out DIR           raw.csv, summary.txt, medians.dat, chart
                      (default build-bench/vhost-blk)
  --csv               print only backend,ring,queues,depth,cache,iops,
                      backend_cpu_ns_per_io lines (medians)
  --quick             1 round of 1 s, depth 64 only (smoke test)
  --build-only        build brisk's variants and the front-end, then stop
EOF
	exit 2
}
. "$here/../lib/die.sh"
say() { [ -n "$csv" ] || echo "vhost-blk-vs-qsd: $*" >&2; }

rounds=5 seconds=5 warmup=1 rings=split,packed queues=1 depths=1,64
caches=writeback,none backends=brisk,qsd,io_uring-limit variants= aa= poll=
brisk_opts= cmp= cpus=0,1 disk_mib=1024 out=$top/build-bench/vhost-blk csv= quick= build_only=
args="$*"
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=${2:?}; shift ;;
	--seconds) seconds=${2:?}; shift ;;
	--warmup) warmup=${2:?}; shift ;;
	--rings) rings=${2:?}; shift ;;
	--queues) queues=${2:?}; shift ;;
	--depths) depths=${2:?}; shift ;;
	--caches) caches=${2:?}; shift ;;
	--backends) backends=${2:?}; shift ;;
	--variants) variants=1 ;;
	--aa) aa=1 ;;
	--poll) poll=--poll ;;
	--brisk-opts) brisk_opts=,${2:?}; shift ;;
	--compare) cmp=$(readlink -f "${2:?}"); shift ;;
	--cpus) cpus=${2:?}; shift ;;
	--disk-mib) disk_mib=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--csv) csv=1 ;;
	--quick) quick=1 ;;
	--build-only) build_only=1 ;;
	*) usage ;;
	esac
	shift
done
[ -n "$quick" ] && { rounds=1 seconds=1 warmup=0.5 depths=64; }
[ -n "$variants" ] && backends=$backends,brisk-off,brisk-zero
[ -n "$aa" ] && backends=$backends,brisk-aa,qsd-aa
[ -n "$cmp" ] && backends=$backends,brisk-cmp
fcpu=${cpus%,*} bcpu=${cpus#*,}
[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs: the front-end and the back-end each take one"

# From a fresh clone: whatever is missing comes from Debian's packages.
for p in taskset fio qemu-storage-daemon python3 meson ninja gnuplot; do
	command -v $p >/dev/null && continue
	say "$p not found: running scripts/setup-debian.sh"
	"$top/scripts/setup-debian.sh" >&2 || die "scripts/setup-debian.sh failed"
	command -v $p >/dev/null || die "$p still not found"
done
mkdir -p "$out" || die "cannot create $out"

# Release builds: =zero with the opt-outs is brisk as shipped.
build() { # build NAME MESON-OPTIONS...: prints the build directory
	local b=$top/build-var-$1
	shift
	if [ -d "$b/meson-private" ]; then
		meson configure "$b" -Dbuildtype=release "$@" >/dev/null
	else
		meson setup "$b" "$top" -Dbuildtype=release "$@" >/dev/null
	fi || die "meson setup $b failed"
	ninja -C "$b" -j2 brisk tests/bench/vhost-blk-bench >/dev/null ||
		die "building in $b failed"
	echo "$b"
}
say "building (release)"
main_build=$(build zeroattr -Dauto_var_init=zero -Duninit_attr=true) || exit 1
bench=$main_build/tests/bench/vhost-blk-bench
declare -A bin=([brisk]=$main_build/brisk [brisk-aa]=$main_build/brisk [brisk-cmp]=$cmp)
case ,$backends, in *,brisk-off,*)
	bin[brisk-off]=$(build off -Dauto_var_init=off)/brisk || exit 1 ;;
esac
case ,$backends, in *,brisk-zero,*)
	bin[brisk-zero]=$(build zero -Dauto_var_init=zero -Duninit_attr=false)/brisk || exit 1 ;;
esac
[ -n "$build_only" ] && exit 0

disk=$out/disk.raw
if [ ! -f "$disk" ] || [ "$(stat -c %s "$disk")" -ne $((disk_mib << 20)) ]; then
	say "writing $disk ($disk_mib MiB of random data)"
	head -c $((disk_mib << 20)) /dev/urandom >"$disk" || die "cannot write $disk"
fi
sock=$out/vu.sock

# start_backend NAME CACHE: the back-end on its CPU, serving $sock; sets bpid.
start_backend() {
	local direct=off
	rm -f "$sock"
	[ "$2" = none ] && direct=on
	case $1 in
	qsd*)
		taskset -c "$bcpu" qemu-storage-daemon \
			--blockdev "driver=file,node-name=f0,filename=$disk,aio=io_uring,cache.direct=$direct" \
			--object iothread,id=t0 \
			--export "type=vhost-user-blk,id=e0,node-name=f0,addr.type=unix,addr.path=$sock,num-queues=$queues,iothread=t0" \
			</dev/null >"$out/backend.log" 2>&1 &
		;;
	*)
		taskset -c "$bcpu" "${bin[$1]}" \
			-drive "file=$disk,if=none,id=d0,aio=io_uring,cache=$2" \
			-export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock,num-queues=$queues$brisk_opts" \
			</dev/null >"$out/backend.log" 2>&1 &
		;;
	esac
	bpid=$!
	for _ in $(seq 200); do [ -S "$sock" ] && return 0; sleep 0.02; done
	kill "$bpid" 2>/dev/null
	die "$1 did not come up: $(cat "$out/backend.log")"
}

stop_backend() {
	kill -TERM "$bpid" 2>/dev/null
	wait "$bpid" 2>/dev/null
}

kv() { sed -n "s/.*\\b$1=\\([0-9.]*\\).*/\\1/p" <<<"$line"; }

# One measured point: appends round,backend,ring,queues,depth,cache,iops,
# cpu_ns,p50,p99 to raw.csv.  A failed run (an I/O error, a back-end that
# died, hung up or left a request unanswered) adds no point: it goes to
# failed.txt, and the summary says how many there were.
measure() { # measure ROUND BACKEND RING DEPTH CACHE
	local r=$1 b=$2 ring=$3 depth=$4 cache=$5 line rc gone
	if [ "$b" = io_uring-limit ]; then
		line=$(fio_limit "$depth" "$cache") || return
	else
		start_backend "$b" "$cache"
		line=$(taskset -c "$fcpu" "$bench" --socket "$sock" --ring "$ring" \
			--queues "$queues" --depth "$depth" --seconds "$seconds" \
			--warmup "$warmup" --backend-pid "$bpid" $poll 2>"$out/bench.err")
		rc=$?
		gone=
		kill -0 "$bpid" 2>/dev/null || gone=" (the back-end was gone before the end)"
		stop_backend
		if [ $rc -eq 3 ]; then
			say "$b: $(grep -v running "$out/bench.err") ($ring): skipped"
			return
		fi
		if [ $rc -ne 0 ] || [ -n "$gone" ]; then
			echo "round $r $b $ring q$queues d$depth $cache: $(grep -v running "$out/bench.err")$gone" \
				>>"$out/failed.txt"
			say "round $r $b $ring q$queues d$depth $cache: failed run, dropped: $(tail -n 1 "$out/failed.txt")"
			return
		fi
	fi
	echo "$r,$b,$ring,$queues,$depth,$cache,$(kv iops),$(kv backend_cpu_ns_per_io),$(kv p50_ns),$(kv p99_ns)" \
		>>"$out/raw.csv"
	say "round $r $b $ring q$queues d$depth $cache: $line"
}

# fio's io_uring reads of the same file on the back-end's CPU: the limit,
# at its best: batched submission and reaping, registered buffers and
# file, and the page cache left as it is (fio drops it by default).
fio_limit() { # fio_limit DEPTH CACHE: prints iops=... backend_cpu_ns_per_io=...
	local direct=0 depth=$(($1 * queues))
	[ "$2" = none ] && direct=1
	taskset -c "$bcpu" fio --name=limit --filename="$disk" --readonly --rw=randread \
		--bs=4k --ioengine=io_uring --iodepth="$depth" --direct=$direct \
		--invalidate=0 --iodepth_batch_submit="$depth" \
		--iodepth_batch_complete_min=1 --iodepth_batch_complete_max="$depth" \
		--fixedbufs=1 --registerfiles=1 \
		--time_based --runtime="$seconds" --ramp_time="$warmup" --numjobs=1 \
		--lat_percentiles=1 --output-format=json >"$out/fio.json" 2>"$out/fio.err" ||
		die "fio: $(cat "$out/fio.err")"
	python3 - "$out/fio.json" "$seconds" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))['jobs'][0]
rd = j['read']
ios = rd['total_ios'] or 1
cpu = (j['usr_cpu'] + j['sys_cpu']) / 100.0 * float(sys.argv[2]) * 1e9
pct = rd['lat_ns'].get('percentile', {})
print('iops=%.0f backend_cpu_ns_per_io=%.0f p50_ns=%d p99_ns=%d' % (
    rd['iops'], cpu / ios, pct.get('50.000000', 0), pct.get('99.000000', 0)))
PY
}

IFS=, read -r -a ring_l <<<"$rings"
IFS=, read -r -a depth_l <<<"$depths"
IFS=, read -r -a cache_l <<<"$caches"
IFS=, read -r -a back_l <<<"$backends"
echo "round,backend,ring,queues,depth,cache,iops,backend_cpu_ns_per_io,p50_ns,p99_ns" \
	>"$out/raw.csv"
: >"$out/failed.txt"
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "host: $(uname -srm), $(nproc) CPUs: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
	echo "qemu-storage-daemon: $(qemu-storage-daemon --version | head -1)"
	echo "fio: $(fio --version)"
	echo "brisk: $(git -C "$top" describe --always --dirty 2>/dev/null)"
	echo "command: tests/bench/vhost-blk-vs-qsd.sh $args"
	echo "front-end on CPU $fcpu, back-end and fio on CPU $bcpu; $rounds rounds of ${seconds}s after ${warmup}s"
} >"$out/info.txt"
[ -n "$csv" ] || cat "$out/info.txt" >&2

for ((r = 0; r < rounds; r++)); do
	for cache in "${cache_l[@]}"; do
		# The page-cache case measures the device path, not the disk.
		[ "$cache" = writeback ] && cat "$disk" >/dev/null
		for depth in "${depth_l[@]}"; do
			n=${#back_l[@]}
			for ((k = 0; k < n; k++)); do
				b=${back_l[$(((k + r) % n))]}
				if [ "$b" = io_uring-limit ]; then
					measure "$r" "$b" - "$depth" "$cache"
					continue
				fi
				for ring in "${ring_l[@]}"; do
					measure "$r" "$b" "$ring" "$depth" "$cache"
				done
			done
		done
	done
done

python3 - "$out" "$csv" <<'PY'
import csv, statistics, sys
out, csv_only = sys.argv[1], sys.argv[2] == '1'
rows = list(csv.DictReader(open(out + '/raw.csv')))
points = {}
for r in rows:
    key = (r['backend'], r['ring'], r['queues'], r['depth'], r['cache'])
    points.setdefault(key, []).append(r)
def med(rs, k):
    v = [float(r[k]) for r in rs if r[k]]
    return statistics.median(v) if v else float('nan')
def spread(rs, k):
    v = [float(r[k]) for r in rs if r[k]]
    return (max(v) - min(v)) / statistics.median(v) if len(v) > 1 else 0.0
names = ('brisk', 'brisk-off', 'brisk-zero', 'qsd', 'io_uring-limit')
lines = []
for (b, ring, q, d, c), rs in sorted(points.items()):
    if b in names:
        lines.append('%s,%s,%s,%s,%s,%.0f,%.0f' % (b, ring, q, d, c, med(rs, 'iops'),
                                                 med(rs, 'backend_cpu_ns_per_io')))
with open(out + '/medians.csv', 'w') as f:
    f.write('backend,ring,queues,depth,cache,iops,backend_cpu_ns_per_io\n')
    f.write('\n'.join(lines) + '\n')
if csv_only:
    print('\n'.join(lines))
txt = ['%-15s %-6s %2s %5s %-9s %9s %6s %9s %9s %9s' % (
    'backend', 'ring', 'q', 'depth', 'cache', 'IOPS', 'spread', 'cpu ns/IO', 'p50 us', 'p99 us')]
for (b, ring, q, d, c), rs in sorted(points.items(), key=lambda kv: (kv[0][4], int(kv[0][3]), kv[0][1], kv[0][0])):
    txt.append('%-15s %-6s %2s %5s %-9s %9.0f %5.1f%% %9.0f %9.1f %9.1f' % (
        b, ring, q, d, c, med(rs, 'iops'), 100 * spread(rs, 'iops'),
        med(rs, 'backend_cpu_ns_per_io'), med(rs, 'p50_ns') / 1e3, med(rs, 'p99_ns') / 1e3))
# Ratios the goals are stated in, where both sides were measured.
def get(b, ring, q, d, c, k):
    rs = points.get((b, ring, q, d, c))
    return med(rs, k) if rs else None
txt.append('')
for (b, ring, q, d, c) in sorted(points):
    if b != 'brisk':
        continue
    parts = []
    # qemu-storage-daemon has no packed rings: those compare with its split.
    qring = ring if ('qsd', ring, q, d, c) in points else 'split'
    qi = get('qsd', qring, q, d, c, 'iops')
    qc = get('qsd', qring, q, d, c, 'backend_cpu_ns_per_io')
    bi, bc = get(b, ring, q, d, c, 'iops'), get(b, ring, q, d, c, 'backend_cpu_ns_per_io')
    qname = 'qsd' if qring == ring else 'qsd split'
    if qi:
        parts.append('IOPS %.2fx %s, CPU/IO %.2fx %s' % (bi / qi, qname, bc / qc, qname))
    li = get('io_uring-limit', '-', q, d, c, 'iops')
    if li:
        parts.append('%.0f%% of the io_uring limit' % (100 * bi / li))
    for v in ('brisk-off', 'brisk-zero', 'brisk-aa', 'brisk-cmp'):
        vi = get(v, ring, q, d, c, 'iops')
        if vi:
            parts.append('%s %+.1f%%' % (v, 100 * (vi / bi - 1)))
    qa = get('qsd-aa', ring, q, d, c, 'iops')
    if qa and qi:
        parts.append('qsd-aa %+.1f%%' % (100 * (qa / qi - 1)))
    if d == '1':
        qp = get('qsd', qring, q, d, c, 'p50_ns')
        if qp:
            parts.append('p50 %.1f us vs %s %.1f us' % (get(b, ring, q, d, c, 'p50_ns') / 1e3,
                                                     qname, qp / 1e3))
    txt.append('%s q%s d%s %s: %s' % (ring, q, d, c, '; '.join(parts)))
open(out + '/summary.txt', 'w').write('\n'.join(txt) + '\n')
if not csv_only:
    print('\n'.join(txt))
# Chart data: one row per case, IOPS then CPU ns/IO per backend.
shown = [b for b in ('brisk', 'brisk-off', 'brisk-zero', 'qsd', 'io_uring-limit')
         if any(k[0] == b for k in points)]
cases = sorted({(k[1], k[3], k[4]) for k in points if k[1] != '-'},
               key=lambda x: (x[2], int(x[1]), x[0]))
with open(out + '/medians.dat', 'w') as f:
    f.write('case ' + ' '.join(shown) + ' ' + ' '.join(shown) + '\n')
    q = rows[0]['queues'] if rows else '1'
    for ring, d, c in cases:
        row = []
        for k in ('iops', 'backend_cpu_ns_per_io'):
            for b in shown:
                rs = points.get((b, '-' if b == 'io_uring-limit' else ring, q, d, c))
                row.append('%.0f' % med(rs, k) if rs else 'NaN')
        f.write('%s-d%s-%s %s\n' % (ring, d, 'page' if c == 'writeback' else 'direct', ' '.join(row)))
PY
if command -v gnuplot >/dev/null && [ -s "$out/medians.dat" ]; then
	nb=$(head -1 "$out/medians.dat" | wc -w)
	gnuplot -e "dat='$out/medians.dat'; out='$out/vhost-blk-vs-qsd.svg'; nb=$(((nb - 1) / 2))" \
		"$here/vhost-blk/plot.gp" 2>"$out/gnuplot.err" ||
		say "gnuplot failed: $(cat "$out/gnuplot.err")"
fi
if [ -s "$out/failed.txt" ]; then
	say "$(wc -l <"$out/failed.txt") failed runs, dropped from the medians (failed.txt):"
	sed 's/^/  /' "$out/failed.txt" >&2
	echo "failed runs, dropped: $(wc -l <"$out/failed.txt") (failed.txt)" >>"$out/summary.txt"
fi
say "results in $out (raw.csv, summary.txt, medians.csv, failed.txt, vhost-blk-vs-qsd.svg)"
