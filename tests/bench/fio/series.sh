#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One interleaved series of fio guests on the host this runs on, which needs
# a working /dev/kvm (natively, or inside the nested host of with-kvm; the
# whole series runs in one host so that every run sees the same machine).
#
# Each run boots the fio image under one VMM and reads the guest's "@@FIO"
# lines from its serial console.  On "begin" and "end" it snapshots KVM's
# exit counters for that VM and the VMM's CPU time, so exits and CPU time
# per I/O cover the same window as the guest's interrupt and I/O counts.
#
# Output in --out: results.csv (vmm,case,run,iops,exits_per_io,irqs_per_io,
# cpu_us_per_io), raw.csv (every counter), raw/*.log (serial logs).
set -uo pipefail

usage() {
	cat <<'EOF'
usage: series.sh --out DIR --kernel K --initrd I --disk D
                 --vmm LABEL=qemu|brisk:PATH [--vmm ...] [--case NAME ...]
                 [--runs N] [--runtime S] [--ramp S] [--iodepth N] [--mem SIZE]
                 [--pin CPUS] [--start-timeout S] [--accel kvm|tcg]
                 [--dev-opts LABEL=OPTS ...]
cases: split-1q packed-1q (smp 1, 1 queue, 1 job), split-2q packed-2q
       (smp 2, 2 queues, 2 jobs)
--dev-opts appends ,OPTS to that VMM's virtio-blk-pci -device line.
EOF
	exit 2
}

declare -A devopts
out= kernel= initrd= disk= runs=3 runtime=8 ramp=2 iodepth=64 mem=1G pin=
start_timeout=180 accel=kvm stage=
vmms=() cases=()
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift ;;
	--kernel) kernel=$2; shift ;;
	--initrd) initrd=$2; shift ;;
	--disk) disk=$2; shift ;;
	--vmm) vmms+=("$2"); shift ;;
	--case) cases+=("$2"); shift ;;
	--runs) runs=$2; shift ;;
	--runtime) runtime=$2; shift ;;
	--iodepth) iodepth=$2; shift ;;
	--ramp) ramp=$2; shift ;;
	--mem) mem=$2; shift ;;
	--pin) pin=$2; shift ;;
	--start-timeout) start_timeout=$2; shift ;;
	--accel) accel=$2; shift ;;
	--stage-ram) stage=1 ;;
	--dev-opts) devopts[${2%%=*}]=${2#*=}; shift ;;
	*) usage ;;
	esac
	shift
done
[ -n "$out" ] && [ -n "$kernel" ] && [ -n "$initrd" ] && [ -n "$disk" ] &&
	[ ${#vmms[@]} -gt 0 ] || usage
[ ${#cases[@]} -gt 0 ] || cases=(split-1q packed-1q split-2q)

log() {
	echo "series: $*" >&2
	[ -d "$out" ] && echo "series: $*" >> "$out/series.log"
}

mkdir -p "$out/raw"
: > "$out/series.log"
res=$out/results.csv raw=$out/raw.csv
echo "vmm,case,run,iops,exits_per_io,irqs_per_io,cpu_us_per_io" > "$res"
kstats="exits io_exits mmio_exits halt_exits irq_exits irq_injections"
echo "vmm,case,run,attempt,status,iops,ios,irqs,${kstats// /,},utime_tck,stime_tck,guest_tck,clk_tck,pages_4k,pages_2m" > "$raw"

kvmdbg=/sys/kernel/debug/kvm
if [ "$accel" = kvm ] && [ ! -d "$kvmdbg" ]; then
	mountpoint -q /sys/kernel/debug ||
		mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
fi
[ -r "$kvmdbg/exits" ] || log "no $kvmdbg/exits: exits per I/O will be empty"
clk=$(getconf CLK_TCK)
qboot=/usr/share/qemu/qboot.rom
case ${BRISK_WITH_KVM_ROUTE:-} in
nested) log "host: nested host under QEMU/TCG (with-kvm)" ;;
native) log "host: native /dev/kvm (with-kvm)" ;;
*) log "host: this machine ($accel)" ;;
esac

# In a nested host the work folder is a 9p share, whose latency and jitter
# would swamp what the VMMs differ in.  --stage-ram copies the image onto
# an ext4 on a RAM block device (O_DIRECT works there, unlike tmpfs), so
# both VMMs still open a regular raw file with cache=none.
if [ -n "$stage" ]; then
	size=$(stat -c %s "$disk") || exit 1
	stage_dir=${TMPDIR:-/tmp}/fio-stage
	modprobe ext4 2>/dev/null
	modprobe brd rd_nr=1 rd_size=$((size / 1024 + 131072)) max_part=0 &&
		mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/ram0 &&
		mkdir -p "$stage_dir" && mount /dev/ram0 "$stage_dir" &&
		dd if="$disk" of="$stage_dir/disk.raw" bs=1M oflag=direct status=none ||
		{ log "could not stage $disk in RAM"; exit 1; }
	trap 'umount "$stage_dir"; rmmod brd' EXIT
	log "disk staged: $stage_dir/disk.raw (ext4 on /dev/ram0, copied from $disk)"
	disk=$stage_dir/disk.raw
fi

# case NAME -> packed smp queues jobs
case_params() {
	case $1 in
	split-1q) echo off 1 1 1 ;;
	packed-1q) echo on 1 1 1 ;;
	split-2q) echo off 2 2 2 ;;
	packed-2q) echo on 2 2 2 ;;
	*) return 1 ;;
	esac
}
for c in "${cases[@]}"; do
	case_params "$c" >/dev/null || { log "unknown case $c"; usage; }
done

# The per-VM debugfs folder is named after the VMM's pid; fall back to the
# global sums, which are exact as long as this is the only VM.  Builtins
# only: in a nested host every fork costs more than the guest's pause.
# Sets d (the callers' local).
kvm_vm_dir() {
	local f
	d=$kvmdbg
	for f in "$kvmdbg/$1"-*; do [ -d "$f" ] && d=$f && break; done
}
kvm_snap() {
	local d f x v=
	kvm_vm_dir "$1"
	for f in $kstats; do
		x=NA
		read -r x < "$d/$f" 2>/dev/null
		v="$v ${x:-NA}"
	done
	echo $v
}
# Guest RAM KVM maps with 4 KiB and with 2 MiB entries (gauges, not counts).
kvm_pages() {
	local d f x v=
	kvm_vm_dir "$1"
	for f in pages_4k pages_2m; do
		x=
		read -r x < "$d/$f" 2>/dev/null
		v="$v,$x"
	done
	echo "${v#,}"
}
# utime stime guest_time of the whole process, in clock ticks; the comm
# field may hold spaces, so count fields from the closing parenthesis.
cpu_snap() {
	local s=
	read -r s < "/proc/$1/stat" 2>/dev/null
	[ -n "$s" ] || { echo "NA NA NA"; return; }
	s=${s##*) }
	set -- $s
	echo "${12} ${13} ${41}"
}

vmm_argv() { # kind path case label -> argv in the array "argv"
	local kind=$1 path=$2 packed smp nq njobs append extra=${devopts[$4]:-}
	# No process substitution: a chroot may lack /dev/fd.
	set -- $(case_params "$3")
	packed=$1 smp=$2 nq=$3 njobs=$4
	# panic=-1 reboots at once, which ends either VMM; loglevel=2 keeps
	# the oops and panic lines (ALERT, EMERG) that tell such a run from a
	# triple fault, and nothing else of the kernel's on the console.
	append="console=ttyS0 quiet loglevel=2 panic=-1 fio_wait=60"
	append+=" fio.runtime=$runtime fio.ramp_time=$ramp fio.numjobs=$njobs fio.iodepth=$iodepth"
	# One job per vCPU, so each job drives its own queue.
	[ "$njobs" -gt 1 ] && append+=" fio.cpus_allowed=0-$((smp - 1)) fio.cpus_allowed_policy=split"
	argv=("$path")
	if [ "$kind" = qemu ]; then
		argv+=(-accel "$accel" -M q35 -nodefaults -no-user-config
			-nographic -serial stdio -no-reboot)
		[ "$accel" = kvm ] && argv+=(-cpu host)
		# qboot boots Linux in a fraction of SeaBIOS's time; firmware is
		# long gone by the time fio runs, so only the series gets faster.
		[ -r "$qboot" ] && argv+=(-bios "$qboot")
	fi
	argv+=(-m "$mem" -smp "$smp" -kernel "$kernel" -initrd "$initrd"
		-append "$append"
		-drive "file=$disk,if=none,id=d0,format=raw,aio=io_uring,cache=none"
		-device "virtio-blk-pci,drive=d0,packed=$packed,num-queues=$nq,queue-size=256${extra:+,$extra}")
}

# run_one LABEL KIND PATH CASE RUN ATTEMPT; returns 0 ok, 1 failed, 3 hung
# before the guest began measuring (worth one retry).
run_one() {
	local label=$1 kind=$2 path=$3 cs=$4 run=$5 att=$6
	local logf=$out/raw/${cs}_${label}_r${run}_a${att}.log fifo pid line rc
	local phase=boot deadline terse= irqs= ios= k0= k1= c0= c1= pages=, st=ok
	local argv
	vmm_argv "$kind" "$path" "$cs" "$label"
	printf '%q ' "${argv[@]}" > "$logf"; echo >> "$logf"
	sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
	# Not in --out: that may be a 9p share, where FIFOs do not work.
	fifo=$(mktemp -u "${TMPDIR:-/tmp}/fio-series.XXXXXX")
	mkfifo "$fifo" || return 1
	if [ -n "$pin" ]; then
		(exec taskset -c "$pin" "${argv[@]}" < /dev/null > "$fifo" 2>&1) &
	else
		(exec "${argv[@]}" < /dev/null > "$fifo" 2>&1) &
	fi
	pid=$!
	exec 3< "$fifo"
	rm -f "$fifo"
	local t0=$SECONDS tb= te=
	deadline=$((SECONDS + start_timeout))
	while :; do
		local left=$((deadline - SECONDS))
		if [ $left -le 0 ]; then st=timeout; break; fi
		IFS= read -r -t "$left" -u 3 line; rc=$?
		[ $rc -gt 128 ] && { st=timeout; break; }
		[ $rc -ne 0 ] && [ -z "$line" ] && break
		line=${line%$'\r'}
		printf '%s\n' "$line" >> "$logf"
		case $line in *"@@FIO "*) line=${line#*@@FIO } ;; *) continue ;; esac
		case $line in
		begin*)
			c0=$(cpu_snap "$pid"); k0=$(kvm_snap "$pid"); phase=run tb=$SECONDS
			echo "@@HOST begin kvm $k0 cpu $c0" >> "$logf"
			deadline=$((SECONDS + ramp + runtime + 60 + start_timeout / 2)) ;;
		end*)
			c1=$(cpu_snap "$pid"); k1=$(kvm_snap "$pid"); phase=post te=$SECONDS
			pages=$(kvm_pages "$pid")
			echo "@@HOST end kvm $k1 cpu $c1 pages $pages" >> "$logf"
			deadline=$((SECONDS + 60)) ;;
		"terse "*) terse=${line#terse } ;;
		"irqs "*) irqs=${line#irqs } ;;
		"ios "*) ios=${line#ios } ;;
		error*) st=guest-error ;;
		done*) phase=over ;;
		esac
	done
	if [ "$st" = timeout ]; then
		log "$label $cs run $run: no progress in phase '$phase', killing it"
		# Where each VMM thread is stuck: guest mode, or waiting in the host.
		for task in /proc/"$pid"/task/*; do
			echo "@@HOST thread $(cat "$task/comm" 2>/dev/null) state $(awk '{ print $3 }' "$task/stat" 2>/dev/null) wchan $(cat "$task/wchan" 2>/dev/null)"
			sed 's/^/@@HOST   /' "$task/stack" 2>/dev/null
		done >> "$logf"
		kill -9 "$pid" 2>/dev/null
	fi
	# The guest powered off; give the VMM a moment to exit on its own.
	local w=0
	while kill -0 "$pid" 2>/dev/null && [ $w -lt 100 ]; do sleep 0.1; w=$((w + 1)); done
	kill -9 "$pid" 2>/dev/null
	wait "$pid"; rc=$?
	exec 3<&-
	[ "$st" = ok ] && [ "$phase" != over ] && st=exit-$rc
	[ "$st" = ok ] && [ $rc -ne 0 ] && log "$label $cs run $run: VMM exit status $rc"

	local iops
	iops=$(echo "$terse" | awk -F';' '{ print $8 }')
	[ "$st" = ok ] && [ -z "$iops" ] && st=no-result
	echo "$label,$cs,$run,$att,$st,$iops,$ios,$irqs,$(echo "$k0 $k1" | awk -v n="$(echo $kstats | wc -w)" '
		{ for (i = 1; i <= n; i++) { d = ($i == "NA" || $(i + n) == "NA" || NF < 2 * n) ? "" : $(i + n) - $i
		  printf "%s%s", d, (i < n ? "," : "") } }'),$(echo "$c0 $c1" | awk '
		{ for (i = 1; i <= 3; i++) printf "%s,", (NF < 6 || $i == "NA" || $(i + 3) == "NA") ? "" : $(i + 3) - $i }')$clk,$pages" >> "$raw"
	if [ "$st" != ok ]; then
		log "$label $cs run $run: FAILED ($st), log in $logf"
		[ "$phase" = boot ] && [ "$st" = timeout ] && return 3
		return 1
	fi
	tail -n 1 "$raw" | awk -F, -v OFS=, '{
		ios = $7; if (ios <= 0) ios = ""
		ex = ($9 == "" || ios == "") ? "" : sprintf("%.3f", $9 / ios)
		ir = ($8 == "" || ios == "") ? "" : sprintf("%.3f", $8 / ios)
		cu = ($15 == "" || ios == "") ? "" : sprintf("%.2f", ($15 + $16) * 1e6 / $18 / ios)
		print $1, $2, $3, $6, ex, ir, cu }' >> "$res"
	log "$label $cs run $run: $(tail -n 1 "$res") (boot $((tb - t0))s, fio $((te - tb))s, total $((SECONDS - t0))s)"
	return 0
}

fails=0
# Each round starts one VMM later (A B, B A, A B, ...), so none always
# runs first or last in its round: a drift across a round, which this
# host has, then weighs on every VMM alike instead of on one.
nv=${#vmms[@]}
for run in $(seq 1 "$runs"); do
	for cs in "${cases[@]}"; do
		for ((i = 0; i < nv; i++)); do
			v=${vmms[$(((i + run - 1) % nv))]}
			label=${v%%=*} spec=${v#*=}
			kind=${spec%%:*} path=${spec#*:}
			run_one "$label" "$kind" "$path" "$cs" "$run" 1; rc=$?
			if [ $rc -eq 3 ]; then
				log "$label $cs run $run: hung at start, retrying once"
				run_one "$label" "$kind" "$path" "$cs" "$run" 2; rc=$?
			fi
			[ $rc -eq 0 ] || fails=$((fails + 1))
		done
	done
done
[ $fails -eq 0 ] || { log "$fails run(s) failed"; exit 1; }
exit 0
