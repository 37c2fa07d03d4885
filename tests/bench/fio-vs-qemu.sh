#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# fio 4k random reads (iodepth 64, io_uring, O_DIRECT) inside a guest whose
# disk is a virtio-blk PCI device, under brisk and under QEMU with the same
# kernel, initramfs, memory, vCPUs, disk file, cache mode and queues.  Runs
# are interleaved (A, B, A, B, ...) and summarised by medians; beside IOPS
# it reports VM exits, guest interrupts and VMM CPU time per I/O.
#
# Runs natively where /dev/kvm works, otherwise the whole series runs in one
# nested host (tests/kvm/with-kvm).  See docs/benchmarks.md.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
fio=$here/fio

usage() {
	cat <<'EOF'
usage: tests/bench/fio-vs-qemu.sh [options]
  --vmm-a brisk|qemu    first VMM (default brisk)
  --vmm-b brisk|qemu    second VMM (default qemu); the same twice is A/A
  --aa                  A/A validation: QEMU vs QEMU and brisk vs brisk
                        (brisk only if built), plus brisk/QEMU from the
                        same interleaved series
  --brisk-variants      build brisk with auto_var_init=off, =zero without
                        the BRISK_UNINITIALIZED opt-outs, =zero with them
                        (release builds) and compare the three
  --brisk PATH          brisk binary (default build/brisk)
  --brisk-b PATH        the second side's brisk when both are brisk
                        (default: --brisk), to compare two builds
  --opts-a OPTS         appended to the first VMM's -device virtio-blk-pci
  --opts-b OPTS         and the second's (e.g. --vmm-a brisk --vmm-b brisk
                        --opts-a poll-us=0 compares a device setting)
  --brisk-opts OPTS     appended to every brisk side's -device (also with
                        --aa and --brisk-variants), before --opts-a/-b
  --qemu PATH           QEMU binary (default qemu-system-x86_64)
  --runs N              runs per VMM and case (default 7: what it took in
                        a nested host for A/A medians to agree within 5%)
  --runtime S           measured seconds per run (default 10)
  --iodepth N           fio's queue depth per job (default 64; 1 shows
                        latency: at depth 1 IOPS is 1 / latency)
  --ramp S              fio warm-up seconds before measuring (default 3)
  --cases LIST          comma list of split-1q,packed-1q,split-2q,packed-2q
                        (default split-1q,packed-1q,split-2q)
  --quick               one short run each (smoke test)
  --out DIR             logs, CSVs, chart (default build-bench/fio-vs-qemu)
  --disk-mib N          disk image size (default 1024)
  --pin CPUS            taskset the VMMs onto CPUS
  --no-stage            nested host: read the disk from the 9p share
                        instead of staging it in the nested host's RAM
  --chart FILE          chart path (default OUT/fio-vs-qemu.svg)
EOF
	exit 2
}
. "$here/../lib/die.sh"
say() { echo "fio-vs-qemu: $*" >&2; }

vmm_a=brisk vmm_b=qemu opts_a= opts_b= aa= variants= brisk=$top/build/brisk brisk_b= brisk_opts=
qemu=$(command -v qemu-system-x86_64 || true)
runs=7 runtime=10 ramp=3 iodepth=64 cases=split-1q,packed-1q,split-2q quick=
out=$top/build-bench/fio-vs-qemu disk_mib=1024 pin= stage=1 chart=
while [ $# -gt 0 ]; do
	case $1 in
	--vmm-a) vmm_a=${2:?}; shift ;;
	--vmm-b) vmm_b=${2:?}; shift ;;
	--opts-a) opts_a=${2:?}; shift ;;
	--opts-b) opts_b=${2:?}; shift ;;
	--aa) aa=1 ;;
	--brisk-variants) variants=1 ;;
	--brisk) brisk=${2:?}; shift ;;
	--brisk-b) brisk_b=${2:?}; shift ;;
	--brisk-opts) brisk_opts=${2:?}; shift ;;
	--qemu) qemu=${2:?}; shift ;;
	--runs) runs=${2:?}; shift ;;
	--runtime) runtime=${2:?}; shift ;;
	--iodepth) iodepth=${2:?}; shift ;;
	--ramp) ramp=${2:?}; shift ;;
	--cases) cases=${2:?}; shift ;;
	--quick) quick=1 ;;
	--out) out=${2:?}; shift ;;
	--disk-mib) disk_mib=${2:?}; shift ;;
	--pin) pin=${2:?}; shift ;;
	--no-stage) stage= ;;
	--chart) chart=${2:?}; shift ;;
	-h|--help) usage ;;
	*) usage ;;
	esac
	shift
done
for v in "$runs" "$runtime" "$ramp" "$iodepth" "$disk_mib"; do
	case $v in ''|*[!0-9]*|0) die "not a positive number: $v" ;; esac
done
[ -n "$opts_a$opts_b" ] && [ -n "$aa$variants" ] &&
	die "--opts-a/--opts-b go with --vmm-a/--vmm-b, not --aa or --brisk-variants"
[ -n "$brisk_b" ] && [ -n "$aa$variants" ] &&
	die "--brisk-b goes with --vmm-a brisk --vmm-b brisk, not --aa or --brisk-variants"
for v in "$vmm_a" "$vmm_b"; do
	case $v in brisk|qemu) ;; *) die "--vmm-a/--vmm-b take brisk or qemu, not $v" ;; esac
done
[ -n "$quick" ] && runs=1 runtime=3 ramp=1
[ -n "$qemu" ] && [ -x "$qemu" ] ||
	die "no qemu-system-x86_64; run: apt-get install qemu-system-x86"
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd -P)
[ -n "$chart" ] || chart=$out/fio-vs-qemu.svg
brisk=$(readlink -f "$brisk" 2>/dev/null || echo "$brisk")
[ -n "$brisk_b" ] && brisk_b=$(readlink -f "$brisk_b" 2>/dev/null || echo "$brisk_b")

# Which VMMs take part, in interleaving order: LABEL=KIND:PATH.
vmms=() pairs= devopts=()
if [ -n "$variants" ]; then
	for v in off zero zeroattr; do
		case $v in
		off) opts=(-Dauto_var_init=off) ;;
		zero) opts=(-Dauto_var_init=zero -Duninit_attr=false) ;;
		zeroattr) opts=(-Dauto_var_init=zero -Duninit_attr=true) ;;
		esac
		b=$top/build-var-$v
		if [ -d "$b/meson-private" ]; then
			meson configure "$b" -Dbuildtype=release "${opts[@]}" >/dev/null
		else
			meson setup "$b" "$top" -Dbuildtype=release "${opts[@]}" >/dev/null
		fi || die "meson setup $b failed"
		say "building $b"
		ninja -C "$b" -j2 brisk >/dev/null || die "building brisk in $b failed"
		vmms+=("var-$v=brisk:$b/brisk")
	done
	pairs="var-zero:var-off,var-zeroattr:var-off,var-zeroattr:var-zero"
elif [ -n "$aa" ]; then
	if [ -x "$brisk" ]; then
		vmms=("brisk-a=brisk:$brisk" "qemu-a=qemu:$qemu" "brisk-b=brisk:$brisk" "qemu-b=qemu:$qemu")
		pairs="qemu-a:qemu-b,brisk-a:brisk-b,brisk-a:qemu-a,brisk-b:qemu-b"
	else
		say "no brisk at $brisk: A/A for QEMU only"
		vmms=("qemu-a=qemu:$qemu" "qemu-b=qemu:$qemu")
		pairs="qemu-a:qemu-b"
	fi
else
	path_of() { [ "$1" = brisk ] && echo "$brisk" || echo "$qemu"; }
	la=$vmm_a lb=$vmm_b
	[ "$la" = "$lb" ] && la=$vmm_a-a lb=$vmm_b-b
	pb=$(path_of "$vmm_b")
	[ "$vmm_b" = brisk ] && [ -n "$brisk_b" ] && pb=$brisk_b
	vmms=("$la=$vmm_a:$(path_of "$vmm_a")" "$lb=$vmm_b:$pb")
	pairs=$la:$lb
fi
# Each side's device options: --brisk-opts for every brisk, then its own.
declare -A side_opts
for v in "${vmms[@]}"; do
	l=${v%%=*} k=${v#*=}; k=${k%%:*} o=
	[ "$k" = brisk ] && o=$brisk_opts
	[ "$l" = "${la:-}" ] && o=${o:+$o,}$opts_a
	[ "$l" = "${lb:-}" ] && o=${o:+$o,}$opts_b
	o=${o%,}
	side_opts[$l]=$o
	[ -n "$o" ] && devopts+=(--dev-opts "$l=$o")
done
for v in "${vmms[@]}"; do
	p=${v#*=}; p=${p#*:}
	[ -x "$p" ] || die "no executable $p (build brisk first: meson setup build && ninja -C build)"
done

# Guest image and disk, built here; the series only reads them.
say "building the guest image"
kernel=$("$fio/mkimage.sh" "$out/fio.cpio") || die "guest image build failed"
disk=$out/disk.raw
if [ "$(stat -c %s "$disk" 2>/dev/null)" != $((disk_mib * 1048576)) ]; then
	say "writing ${disk_mib} MiB of random data to $disk (once)"
	dd if=/dev/urandom of="$disk.tmp" bs=1M count="$disk_mib" status=none &&
		mv "$disk.tmp" "$disk" || die "cannot write $disk"
fi

sargs=(--out "$out" --kernel "$kernel" --initrd "$out/fio.cpio" --disk "$disk"
	--runs "$runs" --runtime "$runtime" --ramp "$ramp" --iodepth "$iodepth")
for v in "${vmms[@]}"; do sargs+=(--vmm "$v"); done
sargs+=("${devopts[@]}")
IFS=, read -r -a clist <<< "$cases"
for c in "${clist[@]}"; do sargs+=(--case "$c"); done
[ -n "$pin" ] && sargs+=(--pin "$pin")

nruns=$((runs * ${#clist[@]} * ${#vmms[@]}))
withkvm=$top/tests/kvm/with-kvm
# Timed: the x86 nested host keeps its fine one-shot timers and its
# emulator's threads free to run on any CPU, as the figures in
# docs/benchmarks.md had them (with-kvm's periodic default puts its
# timers, brisk's and KVM's for its guests, on 4 ms ticks); a frozen or
# crashed host costs a rerun, not a verdict.
export BRISK_WITH_KVM_TICK=${BRISK_WITH_KVM_TICK:-oneshot}
export BRISK_WITH_KVM_PIN=${BRISK_WITH_KVM_PIN:-off}
[ -x "$withkvm" ] || die "missing $withkvm"
# Decided here, not left to with-kvm, because the time limits depend on it.
. "$top/tests/kvm/lib/route.sh"
kvm_route "${BRISK_WITH_KVM:-auto}" "BRISK_WITH_KVM=${BRISK_WITH_KVM:-}" "$brisk" || die "$ROUTE_WHY"
say "$ROUTE_WHY"
if [ "$ROUTE" = native ]; then
	per=$((ramp + runtime + 30)) start=60 mem=1024
else
	# Booting the inner guest at emulation speed takes a minute or two.
	per=$((ramp + runtime + 150)) start=240 mem=$((3072 + disk_mib))
	[ -n "$stage" ] && sargs+=(--stage-ram) || mem=3072
fi
sargs+=(--start-timeout "$start")
limit=$((nruns * per * 3 / 2 + 300))
say "$nruns runs (${#vmms[@]} VMMs x ${#clist[@]} cases x $runs), ${ramp}s warm-up + ${runtime}s each; time limit ${limit}s"
"$withkvm" "--$ROUTE" --timeout "$limit" --mem "$mem" --cpus 2 --work "$out" -- \
	"$fio/series.sh" "${sargs[@]}"
rc=$?
[ $rc -eq 124 ] && say "the series did not finish: it ran past ${limit}s, or the nested host failed twice (see above); the runs done so far follow"
[ "$(wc -l < "$out/results.csv")" -gt 1 ] || die "no results (status $rc), see $out/series.log"

{
	echo "# fio randread in the guest: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "# ${runs} runs per VMM and case, ${ramp}s warm-up + ${runtime}s measured, iodepth $iodepth"
	echo "# $(grep -h '^series: host:' "$out/series.log" 2>/dev/null | sed 's/^series: //')"
	echo "# $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs, $(free -g | awk '/^Mem:/ { print $2 }') GiB, Linux $(uname -r)"
	# Which binary and device options each side ran with.
	for v in "${vmms[@]}"; do
		l=${v%%=*} p=${v#*=}; p=${p#*:} o=${side_opts[$l]}
		echo "# $l: $p${o:+ (-device ...,$o)}"
	done
	awk -F, -v pairs="$pairs" -v dat="$out/medians.dat" -f "$fio/summary.awk" "$out/results.csv"
} | tee "$out/summary.md"
nv=$(head -n 1 "$out/medians.dat" | awk '{ print (NF - 1) / 2 }')
has_exits=$(awk 'NR > 1 && $5 != "" { print 1; exit }' FS=, "$out/results.csv")
gnuplot -e "dat='$out/medians.dat'; out='$chart'; nv=$nv; exits=${has_exits:-0}" \
	"$fio/plot.gp" && say "chart: $chart"
say "results: $out/results.csv, $out/summary.md, logs in $out/raw"
exit $rc
