#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# brisk's virtio-blk device path against qemu-storage-daemon's, natively:
# both serve the same file over vhost-user-blk to the same front-end
# (tests/bench/vhost-blk-bench: 4 KiB random reads, EVENT_IDX, split or
# packed rings, waiting on the call eventfd), closed loop or at a fixed
# offered rate.  tests/bench/uring-limit, the same reads with the least
# io_uring code, gives the limit; fio with io_uring is a peer.  No KVM,
# no guest: what is measured is the back-end's request path (pop, parse,
# io_uring, complete, push, notify) and its CPU time per I/O.
# qemu-storage-daemon runs as Debian 12's 7.2 (qsd) and as the 11.x of
# Debian trixie-backports (qsd11), fetched and unpacked under
# build-bench/trixie and run through trixie's own dynamic loader.
# --instructions counts each back-end's instructions per I/O under
# callgrind instead.
#
# Runs are interleaved (every back-end once per round, in a rotating
# order) and summarised by medians.  The front-end is pinned to one CPU,
# the back-end (and the limit, and fio) to another.  Run it alone: other
# work on the machine shows up in the figures.  See docs/benchmarks.md.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

usage() {
	cat <<'EOF'
usage: tests/bench/vhost-blk-vs-qsd.sh [options]
  --rounds N          interleaved rounds (default 5; --instructions: 2)
  --seconds S         measured seconds per run (default 5)
  --warmup S          unmeasured seconds before (default 1)
  --rings LIST        split,packed (default both)
  --queues N          queues, each at the full depth (default 1)
  --depths LIST       per-queue depths (default 1,64; --instructions: 1,32)
  --caches LIST       writeback (page cache, warmed), none (O_DIRECT)
                      (default both)
  --devices LIST      file (the file in --out), shm (a copy in /dev/shm),
                      null_blk (/dev/nullb0, modprobe null_blk)
                      (default file)
  --rates LIST        offered IOPS, 0 = closed loop; the rates above 0
                      run at the deepest depth only (default 0,5000,20000);
                      uring-limit at a rate is the reference for CPU per
                      I/O: the same reads, paced by its own timer
  --backends LIST     of brisk, qsd (7.2), qsd11, uring-limit, fio,
                      uring-limit-notify, brisk-off, brisk-zero,
                      brisk-polloff (default brisk,qsd,qsd11,uring-limit,
                      fio; io_uring-limit is fio); uring-limit-notify is
                      uring-limit --notify write: after each batch it
                      also wakes a thread on the front-end's CPU, as a
                      back end wakes its front end
  --variants          add brisk-off and brisk-zero: brisk built with
                      auto_var_init=off, and =zero without the
                      BRISK_UNINITIALIZED opt-outs (brisk is =zero with them)
  --poll-off          add brisk-polloff: brisk with poll-us=0
  --aa                add a second, separately started brisk, qsd and
                      qsd11 (brisk-aa, qsd-aa, qsd11-aa): A/A pairs
  --poll              the front-end polls the used rings instead of
                      sleeping on the call eventfd
  --brisk-opts OPTS   appended to brisk's -export (e.g. poll-us=0)
  --compare PATH      add brisk-cmp: another brisk binary (e.g. an older
                      build), to see what a change did
  --cpus F,B          the front-end's CPU and the back-end's (default 0,1)
  --disk-mib N        size of the file (default 1024)
  --out DIR           raw.csv, summary.txt, medians.csv, chart
                      (default build-bench/vhost-blk)
  --csv               print only the medians: backend,peer_version,ring,
                      queues,depth,cache,device,rate,iops,
                      backend_cpu_ns_per_io,p50_ns,p99_ns
  --instructions      instructions per I/O of brisk, brisk-off, brisk-zero,
                      qsd and qsd11 under callgrind, polling off, page
                      cache, split ring: backend,peer_version,depth,
                      instructions_per_io
  --ios N             measured I/Os per --instructions run (default
                      20000, after N/10 unmeasured)
  --quick             1 round of 1 s, depth 64, closed loop (a smoke
                      test); --instructions: 2 rounds of 2000 I/Os
  --build-only        build brisk's variants and the front-end, then stop
EOF
	exit 2
}
. "$here/../lib/die.sh"
say() { [ -n "$csv" ] || echo "vhost-blk-vs-qsd: $*" >&2; }

rounds=5 seconds=5 warmup=1 rings=split,packed queues=1 depths=1,64
caches=writeback,none devices=file rates=0,5000,20000
backends=brisk,qsd,qsd11,uring-limit,fio variants= aa= poll= polloff=
brisk_opts= cmp= cpus=0,1 disk_mib=1024 out=$top/build-bench/vhost-blk csv= quick= build_only=
instr= ios=20000 rounds_set= depths_set=
args="$*"
# --quick sets defaults first: options given with it still count.
case " $* " in *" --quick "*) quick=1 rounds=1 seconds=1 warmup=0.5 depths=64 rates=0 ios=2000 ;; esac
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=${2:?} rounds_set=1; shift ;;
	--seconds) seconds=${2:?}; shift ;;
	--warmup) warmup=${2:?}; shift ;;
	--rings) rings=${2:?}; shift ;;
	--queues) queues=${2:?}; shift ;;
	--depths) depths=${2:?} depths_set=1; shift ;;
	--caches) caches=${2:?}; shift ;;
	--devices) devices=${2:?}; shift ;;
	--rates) rates=${2:?}; shift ;;
	--backends) backends=${2:?}; shift ;;
	--variants) variants=1 ;;
	--poll-off) polloff=1 ;;
	--aa) aa=1 ;;
	--poll) poll=--poll ;;
	--brisk-opts) brisk_opts=,${2:?}; shift ;;
	--compare) cmp=$(readlink -f "${2:?}"); shift ;;
	--cpus) cpus=${2:?}; shift ;;
	--disk-mib) disk_mib=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--csv) csv=1 ;;
	--instructions) instr=1 ;;
	--ios) ios=${2:?}; shift ;;
	--quick) ;;
	--build-only) build_only=1 ;;
	*) usage ;;
	esac
	shift
done
backends=${backends//io_uring-limit/fio}
if [ -n "$instr" ]; then
	# Two rounds at least: the counts must repeat exactly, and that is checked.
	[ -n "$rounds_set" ] || rounds=2
	[ -n "$depths_set" ] || depths=1,32
	# Polling is off for all of them here: brisk-polloff would be brisk.
	backends=brisk,brisk-off,brisk-zero,qsd,qsd11 polloff= variants=
fi
[ -n "$variants" ] && backends=$backends,brisk-off,brisk-zero
[ -n "$polloff" ] && [ -z "$instr" ] && backends=$backends,brisk-polloff
if [ -n "$aa" ]; then
	for b in brisk qsd qsd11; do
		case ,$backends, in *,$b,*) backends=$backends,$b-aa ;; esac
	done
fi
[ -n "$cmp" ] && backends=$backends,brisk-cmp
fcpu=${cpus%,*} bcpu=${cpus#*,}
[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs: the front-end and the back-end each take one"
has() { case ,$backends, in *,$1,*) return 0 ;; esac; return 1; }
drop() { backends=$(sed "s/\(^\|,\)$1\(,\|$\)/\1/; s/,,/,/; s/^,//; s/,$//" <<<"$backends"); }

# From a fresh clone: whatever is missing comes from Debian's packages.
for p in taskset fio qemu-storage-daemon python3 meson ninja gnuplot valgrind; do
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
	ninja -C "$b" -j2 brisk tests/bench/vhost-blk-bench tests/bench/uring-limit >/dev/null ||
		die "building in $b failed"
	echo "$b"
}
say "building (release)"
main_build=$(build zeroattr -Dauto_var_init=zero -Duninit_attr=true) || exit 1
bench=$main_build/tests/bench/vhost-blk-bench
declare -A bin=([brisk]=$main_build/brisk [brisk-aa]=$main_build/brisk
	[brisk-polloff]=$main_build/brisk [brisk-cmp]=$cmp)
if has brisk-off; then bin[brisk-off]=$(build off -Dauto_var_init=off)/brisk || exit 1; fi
if has brisk-zero; then
	bin[brisk-zero]=$(build zero -Dauto_var_init=zero -Duninit_attr=false)/brisk || exit 1
fi
[ -n "$build_only" ] && exit 0

# Debian trixie's qemu-storage-daemon (backports' 11.x, else trixie's own)
# and valgrind 3.24 (Debian 12's 3.19 hangs as qsd 11 starts, under glibc
# 2.41), unpacked with dpkg -x: installing them would replace the host's
# glibc.  A private apt configuration and state keep the host's apt
# untouched; the libraries come from the packages' Depends, recursively,
# and ld.so --list then checks that nothing is missing.  Everything runs
# through trixie's own loader with --library-path, so no host library is
# mixed in (valgrind's tools are static; its launcher and vgdb are not).
tx=$top/build-bench/trixie
tx_fetch() { # in a subshell, under a lock; the reason on stderr when it fails
	local apt_o arch pkg ver deb interp
	[ -f "$tx/ok" ] && return 0
	rm -rf "$tx/apt" "$tx/root" "$tx/debs"
	mkdir -p "$tx/apt/state/lists/partial" "$tx/apt/cache/archives/partial" "$tx/root" "$tx/debs" || return 1
	for s in trixie trixie-backports; do
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $s main"
	done >"$tx/apt/sources.list"
	: >"$tx/apt/state/status"
	arch=$(dpkg --print-architecture)
	apt_o=(-o "Dir::Etc::SourceList=$tx/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
		-o "Dir::State=$tx/apt/state" -o "Dir::State::status=$tx/apt/state/status"
		-o "Dir::Cache=$tx/apt/cache" -o "APT::Architecture=$arch" -o "APT::Architectures=$arch"
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root)
	apt-get -q "${apt_o[@]}" update >"$tx/log" 2>&1 ||
		{ echo "apt-get update failed: $(grep -m1 '^[EW]:' "$tx/log")" >&2; return 1; }
	ver=$(apt-cache "${apt_o[@]}" madison qemu-utils | awk -F' *[|] *' '
		$3 ~ /trixie-backports/ { print $2; exit } $3 ~ /trixie\/main/ && !v { v = $2 }
		END { if (v) print v }' | head -1)
	# An unreachable mirror is only a warning to apt-get update.
	[ -n "$ver" ] || { echo "no qemu-utils in trixie: $(grep -m1 '^[WE]:' "$tx/log")" >&2; return 1; }
	# qemu-storage-daemon moved from qemu-system-common to qemu-utils in 11.
	mkdir -p "$tx/debs/q" &&
		(cd "$tx/debs/q" && apt-get -q "${apt_o[@]}" download "qemu-utils=$ver" "qemu-system-common=$ver") \
		>>"$tx/log" 2>&1 || { echo "apt-get download of qemu $ver failed" >&2; return 1; }
	for deb in "$tx"/debs/q/*.deb; do
		dpkg-deb -c "$deb" >"$tx/list" || return 1
		grep -q '/usr/bin/qemu-storage-daemon$' "$tx/list" &&
			pkg=$(dpkg-deb -f "$deb" Package) && mv "$deb" "$tx/debs/"
	done
	rm -rf "$tx/debs/q"
	[ -n "${pkg:-}" ] || { echo "no qemu-storage-daemon in qemu $ver" >&2; return 1; }
	(cd "$tx/debs" && apt-get -q "${apt_o[@]}" download $(apt-cache "${apt_o[@]}" depends \
		--recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
		--no-enhances "$pkg=$ver" valgrind | grep -v '^[ <]' | grep -vx "$pkg" | sort -u)) \
		>>"$tx/log" 2>&1 || { echo "apt-get download of the libraries failed" >&2; return 1; }
	for deb in "$tx"/debs/*.deb; do
		dpkg -x "$deb" "$tx/root" 2>>"$tx/log" || { echo "dpkg -x $deb failed" >&2; return 1; }
	done
	interp=$(readelf -l "$tx/root/usr/bin/qemu-storage-daemon" | sed -n 's/.*interpreter: \(.*\)]/\1/p')
	for l in "$tx/root$interp" "$tx/root/usr$interp"; do [ -f "$l" ] && ln -sf "$l" "$tx/ld.so"; done
	[ -e "$tx/ld.so" ] || { echo "no $interp in trixie's libc6" >&2; return 1; }
	echo "$tx/root/usr/lib/$(gcc -dumpmachine):$tx/root/lib/$(gcc -dumpmachine)" >"$tx/libpath"
	for e in usr/bin/qemu-storage-daemon usr/bin/valgrind.bin usr/bin/vgdb; do
		"$tx/ld.so" --library-path "$(cat "$tx/libpath")" --list "$tx/root/$e" >"$tx/ldd" 2>&1 &&
			! grep 'not found' "$tx/ldd" >&2 || { echo "$e: libraries missing" >&2; return 1; }
	done
	rm -rf "$tx/apt" "$tx/debs" "$tx/list" "$tx/ldd"
	touch "$tx/ok"
}
# tx_run PROGRAM ARGS...: a program of trixie's, through trixie's loader.
tx_run() { "$tx/ld.so" --library-path "$(cat "$tx/libpath")" "$tx/root/usr/bin/$@"; }
tx_err=
if has qsd11 || [ -n "$instr" ]; then
	say "fetching Debian trixie's qemu-storage-daemon and valgrind (cached in $tx)"
	mkdir -p "$tx"
	tx_err=$( (flock 9 && tx_fetch) 9>"$tx/lock" 2>&1 >/dev/null | tail -n 1) || true
	[ -f "$tx/ok" ] || tx_err="cannot fetch Debian trixie's qemu-storage-daemon: ${tx_err:-see $tx/log} ($tx/log)"
fi
skipped=()
if [ -n "$tx_err" ]; then
	for b in qsd11 qsd11-aa; do has $b && drop $b && skipped+=("$b: $tx_err"); done
fi

declare -A ver=([fio]=$(fio --version) [uring-limit]=liburing-$(pkg-config --modversion liburing 2>/dev/null))
ver[uring-limit-notify]=${ver[uring-limit]}
ver[qsd]=$(qemu-storage-daemon --version | sed -n '1s/.*version \([^ ]*\).*/\1/p')
[ -f "$tx/ok" ] && ver[qsd11]=$(tx_run qemu-storage-daemon --version | sed -n '1s/.*version \([^ ]*\).*/\1/p')
ver[brisk]=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
peer_version() { # the version of back-end $1 (its A/A run's is the same)
	case $1 in
	brisk-cmp) echo "$cmp" ;;
	brisk*) echo "${ver[brisk]}" ;;
	*) echo "${ver[${1%-aa}]:-}" ;;
	esac
}
# Which qemu-storage-daemons run, in one line; a fetch that failed is said
# even with --csv (on stderr), and counted among the skipped.
qsds=
has qsd && qsds="qsd ${ver[qsd]} (Debian 12)"
has qsd11 && qsds="${qsds:+$qsds and }qsd11 ${ver[qsd11]} (Debian trixie, in $tx)"
say "qemu-storage-daemon: ${qsds:-none}"
[ -n "$tx_err" ] && echo "vhost-blk-vs-qsd: qsd11 skipped: $tx_err" >&2

disk=$out/disk.raw
if [ ! -f "$disk" ] || [ "$(stat -c %s "$disk")" -ne $((disk_mib << 20)) ]; then
	say "writing $disk ($disk_mib MiB of random data)"
	head -c $((disk_mib << 20)) /dev/urandom >"$disk" || die "cannot write $disk"
fi
sock=$out/vu.sock

# The devices: the file, a copy of it in /dev/shm, a null_blk disk.
declare -A dev_path=([file]=$disk) no_direct=()
nullblk_loaded= shm_file=
cleanup() {
	[ -n "$shm_file" ] && rm -f "$shm_file"
	[ -n "$nullblk_loaded" ] && rmmod null_blk 2>/dev/null
}
trap cleanup EXIT
IFS=, read -r -a dev_l <<<"$devices"
ok_devs=()
for d in "${dev_l[@]}"; do
	case $d in
	file) ;;
	shm)
		shm_file=/dev/shm/vhost-blk-vs-qsd.$$.raw
		cp "$disk" "$shm_file" || { skipped+=("shm: cannot copy the file to /dev/shm"); continue; }
		dev_path[shm]=$shm_file ;;
	null_blk)
		[ -d /sys/module/null_blk ] || nullblk_loaded=1
		if ! err=$(modprobe null_blk nr_devices=1 gb=$(((disk_mib + 1023) / 1024)) 2>&1) ||
		   ! [ -b /dev/nullb0 ]; then
			nullblk_loaded=
			skipped+=("null_blk: modprobe null_blk failed: ${err:-no /dev/nullb0}")
			continue
		fi
		dev_path[null_blk]=/dev/nullb0 ;;
	*) die "--devices: no device $d (file, shm, null_blk)" ;;
	esac
	# tmpfs takes O_DIRECT from Linux 6.6 on; elsewhere the case is left out.
	if [[ ,$caches, == *,none,* ]] &&
	   ! err=$(dd if="${dev_path[$d]}" of=/dev/null bs=4096 count=1 iflag=direct 2>&1); then
		no_direct[$d]=1
		skipped+=("$d cache=none: O_DIRECT fails there: $(tail -n 1 <<<"$err")")
	fi
	ok_devs+=("$d")
done

# start_backend NAME CACHE DEVICE [OPTS]: the back-end on its CPU, serving
# $sock, under $vg_cmd when set (--instructions); sets bpid.  OPTS: poll
# off (brisk's poll-us=0, QEMU's poll-max-ns=0).
start_backend() {
	local direct=off path=${dev_path[$3]} drv=file cmd=() nopoll=${4:-} opts=$brisk_opts
	rm -f "$sock"
	[ "$2" = none ] && direct=on
	[ -b "$path" ] && drv=host_device
	case $1 in
	qsd11*) cmd=("$tx/ld.so" --library-path "$(cat "$tx/libpath")" "$tx/root/usr/bin/qemu-storage-daemon") ;;
	qsd*) cmd=(qemu-storage-daemon) ;;
	esac
	case $1 in
	qsd*)
		taskset -c "$bcpu" "${vg_cmd[@]}" "${cmd[@]}" \
			--blockdev "driver=$drv,node-name=f0,filename=$path,aio=io_uring,cache.direct=$direct" \
			--object "iothread,id=t0${nopoll:+,poll-max-ns=0}" \
			--export "type=vhost-user-blk,id=e0,node-name=f0,addr.type=unix,addr.path=$sock,num-queues=$queues,iothread=t0" \
			</dev/null >"$out/backend.log" 2>&1 &
		;;
	*)
		# poll-us given twice is refused: the variant's replaces the user's.
		[ "$1" = brisk-polloff ] && nopoll=1
		[ -n "$nopoll" ] && opts=$(sed 's/,poll-us=[0-9]*//g' <<<"$opts"),poll-us=0
		taskset -c "$bcpu" "${vg_cmd[@]}" "${bin[$1]}" \
			-drive "file=$path,if=none,id=d0,aio=io_uring,cache=$2" \
			-export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock,num-queues=$queues$opts" \
			</dev/null >"$out/backend.log" 2>&1 &
		;;
	esac
	bpid=$!
	# Under callgrind qsd takes seconds to start.
	for _ in $(seq $((${#vg_cmd[@]} ? 3000 : 200))); do [ -S "$sock" ] && return 0; sleep 0.02; done
	kill "$bpid" 2>/dev/null
	die "$1 did not come up: $(cat "$out/backend.log")"
}
vg_cmd=()

stop_backend() {
	kill -TERM "$bpid" 2>/dev/null
	wait "$bpid" 2>/dev/null
}

# The page-cache case measures the device path, not the disk.
warm() { [ "$1" = writeback ] && [ "$2" != shm ] && cat "${dev_path[$2]}" >/dev/null; }

if [ -n "$instr" ]; then
	# Instructions per I/O: callgrind counts the back-end's instructions
	# over a fixed number of I/Os, so they neither depend on the machine's
	# speed nor on its load.  It runs with --instr-atstart=no, and the
	# bench's --window-cmd switches instrumentation on once the warm-up
	# I/Os are answered and the back-end sleeps, and off once the measured
	# ones are: the count at exit is the measured window alone, without
	# start-up, connection, warm-up or shutdown.  The switch is vgdb's
	# "instrumentation on|off", the monitor command callgrind_control -i
	# sends (callgrind_control would run trixie's vgdb without trixie's
	# loader).  --step makes the back-end's work the same in every run
	# (vhost-blk-bench.c says why), and polling is off, as a spinning
	# back-end's count is its spinning.
	if [ -f "$tx/ok" ]; then
		export VALGRIND_LIB=$tx/root/usr/libexec/valgrind
		vg_cmd=("$tx/ld.so" --library-path "$(cat "$tx/libpath")" "$tx/root/usr/bin/valgrind.bin"
			"--extra-debuginfo-path=$tx/root/usr/lib/debug")
		vgdb=("$tx/ld.so" --library-path "$(cat "$tx/libpath")" "$tx/root/usr/bin/vgdb")
		say "valgrind: $(tx_run valgrind.bin --version) (Debian trixie)"
	else
		vg_cmd=(valgrind) vgdb=(vgdb)
		say "valgrind: $(valgrind --version) (Debian 12; trixie's: $tx_err)"
	fi
	vg_cmd+=(--tool=callgrind --instr-atstart=no "--callgrind-out-file=$out/callgrind.out")
	IFS=, read -r -a depth_l <<<"$depths"
	IFS=, read -r -a back_l <<<"$backends"
	echo "round,backend,depth,instructions,ios" >"$out/instructions-raw.csv"
	warm writeback file
	for ((r = 0; r < rounds; r++)); do
		for depth in "${depth_l[@]}"; do
			n=${#back_l[@]}
			for ((k = 0; k < n; k++)); do
				b=${back_l[$(((k + r) % n))]}
				rm -f "$out/callgrind.out"
				start_backend "$b" writeback file nopoll
				line=$(taskset -c "$fcpu" "$bench" --socket "$sock" --depth "$depth" \
					--ios "$ios" --warmup-ios $((ios / 10)) --step --backend-pid "$bpid" \
					--window-cmd "$(printf '%q ' "${vgdb[@]}") --pid=$bpid instrumentation >/dev/null" \
					2>"$out/bench.err")
				rc=$?
				stop_backend
				n_ins=$(sed -n 's/^totals: *//p' "$out/callgrind.out" 2>/dev/null)
				if [ $rc -ne 0 ] || [ -z "$n_ins" ]; then
					echo "round $r $b d$depth: $(grep -v running "$out/bench.err") $(tail -n 2 "$out/backend.log")" \
						>>"$out/failed.txt"
					say "round $r $b d$depth: failed run, dropped: $(tail -n 1 "$out/failed.txt")"
					continue
				fi
				echo "$r,$b,$depth,$n_ins,$ios" >>"$out/instructions-raw.csv"
				say "round $r $b d$depth: $n_ins instructions for $ios I/Os"
				# The profile behind the count: callgrind_annotate reads it.
				mv "$out/callgrind.out" "$out/callgrind.$b.d$depth.out"
			done
		done
	done
	for b in "${back_l[@]}"; do echo "$b,$(peer_version "$b")"; done >"$out/versions.csv"
	python3 - "$out" <<'PY'
import csv, statistics, sys
out = sys.argv[1]
ver = dict(l.strip().split(',', 1) for l in open(out + '/versions.csv'))
pts = {}
for r in csv.DictReader(open(out + '/instructions-raw.csv')):
    pts.setdefault((r['backend'], int(r['depth'])), []).append(int(r['instructions']) / int(r['ios']))
lines = ['backend,peer_version,depth,instructions_per_io']
same = []
for (b, d), v in sorted(pts.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    lines.append('%s,%s,%d,%.1f' % (b, ver.get(b, ''), d, statistics.median(v)))
    same.append(len(set(v)) == 1)
open(out + '/instructions.csv', 'w').write('\n'.join(lines) + '\n')
print('\n'.join(lines))
rounds = min((len(v) for v in pts.values()), default=0)
if all(same) and rounds > 1:
    print('instruction counts: identical in all %d rounds at every point' % rounds, file=sys.stderr)
else:
    for (b, d), v in sorted(pts.items()):
        if len(set(v)) > 1:
            print('instruction counts of %s at depth %d differ between rounds: %s' % (
                b, d, ' '.join('%.1f' % x for x in v)), file=sys.stderr)
    if rounds < 2:
        print('instruction counts: one round, not checked for repeating', file=sys.stderr)
PY
	for s in "${skipped[@]}"; do echo "vhost-blk-vs-qsd: skipped: $s" >&2; done
	[ -s "$out/failed.txt" ] && say "$(wc -l <"$out/failed.txt") failed runs (failed.txt)"
	exit 0
fi

kv() { sed -n "s/.*\\b$1=\\([0-9.]*\\).*/\\1/p" <<<"$line"; }

# One measured point: appends round,backend,ring,queues,depth,cache,device,
# rate,iops,cpu_ns,p50,p99 to raw.csv.  A failed run (an I/O error, a
# back-end that died, hung up or left a request unanswered) adds no point:
# it goes to failed.txt, and the summary says how many there were.
measure() { # measure ROUND BACKEND RING DEPTH CACHE DEVICE RATE
	local r=$1 b=$2 ring=$3 depth=$4 cache=$5 dev=$6 rate=$7 line rc gone
	local what="round $r $b $ring q$queues d$depth $cache $dev rate $rate"
	case $b in
	fio) line=$(fio_limit "$depth" "$cache" "$dev") || return ;;
	uring-limit | uring-limit-notify)
		line=$(taskset -c "$bcpu" "$main_build/tests/bench/uring-limit" --file "${dev_path[$dev]}" \
			--depth $((depth * queues)) --seconds "$seconds" --warmup "$warmup" \
			$([ "$cache" = none ] && echo --direct) --rate "$rate" \
			$([ "$b" = uring-limit-notify ] && echo --notify write --notify-cpu "$fcpu") \
			2>"$out/bench.err") || {
			echo "$what: $(cat "$out/bench.err")" >>"$out/failed.txt"
			say "$what: failed run, dropped: $(tail -n 1 "$out/failed.txt")"
			return
		} ;;
	*)
		start_backend "$b" "$cache" "$dev"
		line=$(taskset -c "$fcpu" "$bench" --socket "$sock" --ring "$ring" \
			--queues "$queues" --depth "$depth" --seconds "$seconds" \
			--warmup "$warmup" --backend-pid "$bpid" --rate "$rate" $poll 2>"$out/bench.err")
		rc=$?
		gone=
		kill -0 "$bpid" 2>/dev/null || gone=" (the back-end was gone before the end)"
		stop_backend
		if [ $rc -eq 3 ]; then
			say "$b: $(grep -v running "$out/bench.err") ($ring): skipped"
			return
		fi
		if [ $rc -ne 0 ] || [ -n "$gone" ]; then
			echo "$what: $(grep -v running "$out/bench.err")$gone" >>"$out/failed.txt"
			say "$what: failed run, dropped: $(tail -n 1 "$out/failed.txt")"
			return
		fi
		;;
	esac
	echo "$r,$b,$ring,$queues,$depth,$cache,$dev,$rate,$(kv iops),$(kv backend_cpu_ns_per_io),$(kv p50_ns),$(kv p99_ns)" \
		>>"$out/raw.csv"
	say "$what: $line"
}

# fio's io_uring reads of the same file on the back-end's CPU: a peer at
# its best: batched submission and reaping, registered buffers and file,
# and the page cache left as it is (fio drops it by default).
fio_limit() { # fio_limit DEPTH CACHE DEVICE: prints iops=... backend_cpu_ns_per_io=...
	local direct=0 depth=$(($1 * queues))
	[ "$2" = none ] && direct=1
	taskset -c "$bcpu" fio --name=limit --filename="${dev_path[$3]}" --readonly --rw=randread \
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
IFS=, read -r -a rate_l <<<"$rates"
IFS=, read -r -a back_l <<<"$backends"
deepest=$(tr , '\n' <<<"$depths" | sort -n | tail -n 1)
echo "round,backend,ring,queues,depth,cache,device,rate,iops,backend_cpu_ns_per_io,p50_ns,p99_ns" \
	>"$out/raw.csv"
: >"$out/failed.txt"
for b in "${back_l[@]}"; do echo "$b,$(peer_version "$b")"; done >"$out/versions.csv"
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "host: $(uname -srm), $(nproc) CPUs: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
	echo "qemu-storage-daemon: qsd ${ver[qsd]} (Debian 12)${ver[qsd11]:+, qsd11 ${ver[qsd11]} (Debian trixie)}"
	echo "fio: ${ver[fio]}; uring-limit: ${ver[uring-limit]}"
	echo "brisk: ${ver[brisk]}"
	echo "command: tests/bench/vhost-blk-vs-qsd.sh $args"
	echo "front-end (and uring-limit-notify's woken thread) on CPU $fcpu, back-end, uring-limit and fio on CPU $bcpu; $rounds rounds of ${seconds}s after ${warmup}s"
} >"$out/info.txt"
[ -n "$csv" ] || cat "$out/info.txt" >&2

for ((r = 0; r < rounds; r++)); do
	for dev in "${ok_devs[@]}"; do
		for cache in "${cache_l[@]}"; do
			[ "$cache" = none ] && [ -n "${no_direct[$dev]:-}" ] && continue
			warm "$cache" "$dev"
			for depth in "${depth_l[@]}"; do
				for rate in "${rate_l[@]}"; do
					# An offered rate needs room in flight: the deepest depth.
					[ "$rate" != 0 ] && [ "$depth" != "$deepest" ] && continue
					n=${#back_l[@]}
					for ((k = 0; k < n; k++)); do
						b=${back_l[$(((k + r) % n))]}
						case $b in
						fio)
							[ "$rate" = 0 ] && measure "$r" "$b" - "$depth" "$cache" "$dev" 0
							continue ;;
						uring-limit | uring-limit-notify)
							# At a rate: the reference for CPU per I/O.
							measure "$r" "$b" - "$depth" "$cache" "$dev" "$rate"
							continue ;;
						esac
						for ring in "${ring_l[@]}"; do
							measure "$r" "$b" "$ring" "$depth" "$cache" "$dev" "$rate"
						done
					done
				done
			done
		done
	done
done

python3 - "$out" "$csv" <<'PY'
import csv, statistics, sys
out, csv_only = sys.argv[1], sys.argv[2] == '1'
ver = dict(l.strip().split(',', 1) for l in open(out + '/versions.csv'))
rows = list(csv.DictReader(open(out + '/raw.csv')))
K = ('backend', 'ring', 'queues', 'depth', 'cache', 'device', 'rate')
points = {}
for r in rows:
    points.setdefault(tuple(r[k] for k in K), []).append(r)
def med(rs, k):
    v = [float(r[k]) for r in rs if r[k]]
    return statistics.median(v) if v else float('nan')
def spread(rs, k):
    v = [float(r[k]) for r in rs if r[k]]
    return (max(v) - min(v)) / statistics.median(v) if len(v) > 1 else 0.0
def order(k):  # device, cache, depth, rate, ring, back-end
    b, ring, q, d, c, dev, rate = k
    return (dev, c, int(d), int(rate), ring, b)
def num(v):
    return '' if v != v else '%.0f' % v
lines = ['backend,peer_version,ring,queues,depth,cache,device,rate,iops,backend_cpu_ns_per_io,p50_ns,p99_ns']
for k in sorted(points, key=order):
    rs = points[k]
    b, ring, q, d, c, dev, rate = k
    lines.append(','.join([b, ver.get(b, ''), ring, q, d, c, dev, rate] +
                          [num(med(rs, f)) for f in ('iops', 'backend_cpu_ns_per_io', 'p50_ns', 'p99_ns')]))
open(out + '/medians.csv', 'w').write('\n'.join(lines) + '\n')
if csv_only:
    print('\n'.join(lines))
txt = ['%-18s %-6s %2s %5s %-9s %-8s %6s %9s %6s %9s %9s %9s' % (
    'backend', 'ring', 'q', 'depth', 'cache', 'device', 'rate', 'IOPS', 'spread',
    'cpu ns/IO', 'p50 us', 'p99 us')]
for k in sorted(points, key=order):
    rs = points[k]
    b, ring, q, d, c, dev, rate = k
    txt.append('%-18s %-6s %2s %5s %-9s %-8s %6s %9.0f %5.1f%% %9.0f %9.1f %9.1f' % (
        b, ring, q, d, c, dev, rate, med(rs, 'iops'), 100 * spread(rs, 'iops'),
        med(rs, 'backend_cpu_ns_per_io'), med(rs, 'p50_ns') / 1e3, med(rs, 'p99_ns') / 1e3))
# Ratios the goals are stated in, where both sides were measured.
def get(b, ring, q, d, c, dev, rate, k):
    rs = points.get((b, ring, q, d, c, dev, rate))
    return med(rs, k) if rs else None
def peer_ring(n, ring, at):
    # qemu-storage-daemon has no packed rings: a packed row compares with
    # its split.  The references have no ring.
    return next((r for r in (ring, '-') if (n, r) + at in points), 'split')
txt.append('')
for key in sorted(points, key=order):
    b, ring, q, d, c, dev, rate = key
    if b != 'brisk':
        continue
    at = (q, d, c, dev, rate)
    bi, bc = get(b, ring, *at, 'iops'), get(b, ring, *at, 'backend_cpu_ns_per_io')
    parts = []
    if rate != '0':
        # A back end below the rate ran as a closed loop: its CPU per I/O is not a fixed-rate figure.
        slow = []
        for n in sorted({k[0] for k in points if k[2:] == at}):
            nring = peer_ring(n, ring, at)
            ni = get(n, nring, *at, 'iops')
            if ni is not None and ni < 0.98 * float(rate):
                slow.append(n if nring in (ring, '-') else n + ' split')
        if slow:
            parts.append('rate not reached by %s' % ', '.join(slow))
    for qs in ('qsd', 'qsd11'):
        qring = peer_ring(qs, ring, at)
        qi, qc = get(qs, qring, *at, 'iops'), get(qs, qring, *at, 'backend_cpu_ns_per_io')
        qname = qs if qring == ring else qs + ' split'
        if qi and qc:
            parts.append('IOPS %.2fx %s, CPU/IO %.2fx' % (bi / qi, qname, bc / qc))
        if qi and d == '1' and rate == '0':
            parts.append('p50 %.1f us vs %s %.1f us' % (get(b, ring, *at, 'p50_ns') / 1e3, qname,
                                                     get(qs, qring, *at, 'p50_ns') / 1e3))
        if qi and rate != '0':
            parts.append('p99 %.1f us vs %s %.1f us' % (get(b, ring, *at, 'p99_ns') / 1e3, qname,
                                                     get(qs, qring, *at, 'p99_ns') / 1e3))
    for lim in ('uring-limit', 'uring-limit-notify', 'fio'):
        li, lc = get(lim, '-', *at, 'iops'), get(lim, '-', *at, 'backend_cpu_ns_per_io')
        if li and rate == '0':
            parts.append('%.0f%% of %s' % (100 * bi / li, lim))
        elif lc:
            parts.append('CPU/IO %.2fx %s' % (bc / lc, lim))
    for v in ('brisk-off', 'brisk-zero', 'brisk-polloff', 'brisk-aa', 'brisk-cmp'):
        vi = get(v, ring, *at, 'iops')
        if vi:
            parts.append('%s %+.1f%%' % (v, 100 * (vi / bi - 1)))
    for qs in ('qsd', 'qsd11'):
        qa, qi = get(qs + '-aa', ring, *at, 'iops'), get(qs, ring, *at, 'iops')
        if qa and qi:
            parts.append('%s-aa %+.1f%%' % (qs, 100 * (qa / qi - 1)))
    txt.append('%s q%s d%s %s %s rate %s: %s' % (ring, q, d, c, dev, rate, '; '.join(parts)))
open(out + '/summary.txt', 'w').write('\n'.join(txt) + '\n')
if not csv_only:
    print('\n'.join(txt))
# Chart data, closed loop on the file: one row per case, IOPS then CPU ns/IO per backend.
limits = ('uring-limit', 'fio')
shown = [b for b in ('brisk', 'brisk-off', 'brisk-zero', 'brisk-polloff', 'qsd', 'qsd11') + limits
         if any(k[0] == b and k[5] == 'file' and k[6] == '0' for k in points)]
cases = sorted({(k[1], k[3], k[4]) for k in points if k[1] != '-' and k[5] == 'file' and k[6] == '0'},
               key=lambda x: (x[2], int(x[1]), x[0]))
with open(out + '/medians.dat', 'w') as f:
    f.write('case ' + ' '.join(shown) + ' ' + ' '.join(shown) + '\n')
    q = rows[0]['queues'] if rows else '1'
    for ring, d, c in cases:
        row = []
        for k in ('iops', 'backend_cpu_ns_per_io'):
            for b in shown:
                rs = points.get((b, '-' if b in limits else ring, q, d, c, 'file', '0'))
                row.append('%.0f' % med(rs, k) if rs else 'NaN')
        f.write('%s-d%s-%s %s\n' % (ring, d, 'page' if c == 'writeback' else 'direct', ' '.join(row)))
PY
if command -v gnuplot >/dev/null && [ "$(wc -l <"$out/medians.dat")" -gt 1 ]; then
	nb=$(head -1 "$out/medians.dat" | wc -w)
	gnuplot -e "dat='$out/medians.dat'; out='$out/vhost-blk-vs-qsd.svg'; nb=$(((nb - 1) / 2))" \
		"$here/vhost-blk/plot.gp" 2>"$out/gnuplot.err" ||
		say "gnuplot failed: $(cat "$out/gnuplot.err")"
fi
# Said even with --csv (on stderr): a case left out is never silent.
if [ ${#skipped[@]} -gt 0 ]; then
	echo "vhost-blk-vs-qsd: ${#skipped[@]} skipped:" >&2
	for s in "${skipped[@]}"; do echo "  $s" >&2; echo "skipped: $s" >>"$out/summary.txt"; done
fi
if [ -s "$out/failed.txt" ]; then
	say "$(wc -l <"$out/failed.txt") failed runs, dropped from the medians (failed.txt):"
	sed 's/^/  /' "$out/failed.txt" >&2
	echo "failed runs, dropped: $(wc -l <"$out/failed.txt") (failed.txt)" >>"$out/summary.txt"
fi
say "results in $out (raw.csv, summary.txt, medians.csv, failed.txt, vhost-blk-vs-qsd.svg)"
