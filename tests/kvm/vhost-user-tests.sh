#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vhost-user-tests.sh --brisk PATH [--outdir DIR] [--only BOOT]
#
# vhost-user-blk with real peers: {brisk, QEMU} front-end x {brisk -export,
# qemu-storage-daemon} back-end.  Three disks, each with two queues on two
# vCPUs: one served by qemu-storage-daemon (split ring: it has no packed),
# one by brisk split, one by brisk packed.  Three boots of the Debian kernel
# in one with-kvm host, all on the same three back-ends, which so serve
# one front-end after another:
#   brisk-fe    fio with verify on every disk at once; the guest idles, the
#               split back-ends are SIGKILLed and started again (brisk
#               reconnects, reconnect=1), fio verifies what was written
#               and writes and verifies again; then, while fio writes to
#               brisk's split disk, its back-end is SIGKILLed and started
#               again: the new one takes up the requests the old one had
#               out (INFLIGHT_SHMFD), and fio's verify passes; a clean
#               power-off.
#   brisk-kill  the guest writes and flushes 1 MiB regions, saying each
#               one acknowledged; brisk is SIGKILLed in the middle of it.
#               The back-ends live on, every acknowledged region is in the
#               disk files.
#   qemu-fe     the next front-end, qemu-system-x86_64: it reads those
#               regions back, then does what brisk-fe did.
# Last, the back-ends end on SIGTERM, cleanly, with every acknowledged
# byte in their files.  In the nested host a guest now and then crashes
# with no fault of the front-end's; such a boot is said and made once
# more.  Output is TAP.  --only runs the boots up to and including BOOT.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
me=$here/$(basename "${BASH_SOURCE[0]}")
. "$here/../lib/tap.sh"
. "$here/lib/console.sh"
. "$here/lib/boot-end.sh"
# What a boot's end says (boot-end.sh).
vm_who="the front-end" vm_hung="the front-end hung" vm_tail=30

brisk= outdir=$PWD/vhost-user-tests.d inner= only= kernel= initrd=
while [ $# -gt 0 ]; do
	case $1 in
	--brisk) brisk=$2; shift 2 ;;
	--outdir) outdir=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--inner) inner=1; shift ;;
	--kernel) kernel=$2; shift 2 ;;
	--initrd) initrd=$2; shift 2 ;;
	*) echo "usage: $0 --brisk PATH [--outdir DIR] [--only BOOT]" >&2; exit 2 ;;
	esac
done
. "$here/../lib/die.sh"
case $only in ''|brisk-fe|brisk-kill|qemu-fe) ;; *) die "--only: no boot named $only" ;; esac

if [ -z "$inner" ]; then
	[ -n "$brisk" ] || die "--brisk PATH required"
	[ -x "$brisk" ] || die "$brisk is not an executable"
	brisk=$(realpath "$brisk")
	for t in qemu-storage-daemon qemu-system-x86_64; do
		if ! command -v $t >/dev/null; then
			echo "1..0 # SKIP no $t (scripts/setup-debian.sh installs it)"
			exit 0
		fi
	done
	mkdir -p "$outdir" && outdir=$(realpath "$outdir") || exit 1
	kernel=$("$here/../bench/fio/mkimage.sh" "$outdir/vu-guest.cpio" "$here/vhost-user-init.sh") ||
		die "cannot build the guest image"
	cd "$outdir" || exit 1
	exec "$here/with-kvm" --whole-stdout --timeout "${BRISK_VU_TESTS_TIMEOUT:-900}" \
		--brisk "$brisk" --work "$outdir" -- "$me" --inner --brisk "$brisk" \
		--outdir "$outdir" --kernel "$kernel" --initrd "$outdir/vu-guest.cpio" \
		${only:+--only "$only"}
fi

# ---- inside with-kvm -------------------------------------------------------
# Bounds one boot should it hang.
guard_s=${BRISK_VU_TESTS_GUARD:-400}
MiB=1048576
# Disks by size: the guest tells them apart so.
Q_MIB=96 S_MIB=104 P_MIB=112
FIO_MIB=2 ROUNDS=40 KILL_AT=7
# Sockets and disks in the host's own tmpfs: a 9p share has no sockets.
run=$(mktemp -d "${TMPDIR:-/tmp}/vu-tests.XXXXXX") || die "mktemp failed"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$run"
}
trap cleanup EXIT

t_start=$(date +%s)
tap_diag "route: ${BRISK_WITH_KVM_ROUTE:-unknown}, kernel: $kernel"
truncate -s $((Q_MIB * MiB)) "$run/q.raw"
truncate -s $((S_MIB * MiB)) "$run/s.raw"
truncate -s $((P_MIB * MiB)) "$run/p.raw"

wait_sock() { # wait_sock PATH PID: until PATH is a socket (10 s), PID alive
	local i=0
	while [ ! -S "$1" ] && kill -0 "$2" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -S "$1" ]
}

# The back-ends: q (qemu-storage-daemon), s and p (brisk, one process each,
# so that s can be killed alone: a packed ring cannot resume).
start_be() { # start_be q|s|p; sets be_pid_X
	local k=$1 sock=$run/$1.sock
	if [ "$k" = q ]; then
		qemu-storage-daemon \
			--blockdev "driver=file,node-name=n0,filename=$run/q.raw" \
			--export "type=vhost-user-blk,id=e0,node-name=n0,addr.type=unix,addr.path=$sock,writable=on,num-queues=2" \
			>>"$outdir/be-q.log" 2>&1 &
	else
		"$brisk" -drive "file=$run/$k.raw,if=none,id=d0,format=raw,aio=io_uring" \
			-export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock,writable=on,num-queues=2" \
			>>"$outdir/be-$k.log" 2>&1 &
	fi
	eval "be_pid_$k=$!"
	pids+=($!)
	wait_sock "$sock" $!
}

be_alive() { kill -0 "$(eval echo "\$be_pid_$1")" 2>/dev/null; }

# What each front-end is given: its chardevs and devices, the same disks.
fe_args() { # fe_args brisk|qemu
	local k props
	args=()
	for k in q s p; do
		props="vhost-user-blk-pci,chardev=c$k,num-queues=2"
		[ $k = p ] && props="$props,packed=on"
		args+=(-chardev "socket,id=c$k,path=$run/$k.sock,reconnect=1" -device "$props")
	done
	if [ "$1" = qemu ]; then
		# A back-end maps guest RAM: QEMU wants it shared, brisk makes it so.
		args=(qemu-system-x86_64 -accel kvm -cpu host -M q35,memory-backend=mem
			-object memory-backend-memfd,id=mem,size=512M,share=on
			-nodefaults -no-user-config -display none -monitor none -serial stdio
			-no-reboot "${args[@]}")
		[ -r /usr/share/qemu/qboot.rom ] && args+=(-bios /usr/share/qemu/qboot.rom)
	else
		args=("$brisk" -timeout "$guard_s" "${args[@]}")
	fi
}

# on_line LINE: what the host does as the guest speaks; set per boot.
on_line() { :; }

# boot NAME brisk|qemu APPEND: runs a front-end with the console on a pair
# of FIFOs, calls on_line for each line; sets vm_rc, log, fe_pid (and
# vm_killed to 0, which on_line sets to 1 where it kills the front-end).
boot() {
	local name=$1 kind=$2 append=$3 in out dog line t0=$EPOCHREALTIME
	log=$outdir/$name.log
	: >"$log"
	in=$run/$name.in out=$run/$name.out
	mkfifo "$in" "$out" || die "mkfifo failed"
	fe_args "$kind"
	tap_diag "$name: ${args[*]}"
	"${args[@]}" -m 512M -smp 2 -kernel "$kernel" -initrd "$initrd" -append "$append" \
		<"$in" >"$out" 2>"$log.err" &
	fe_pid=$! vm_killed=0 acks=0
	exec 7>"$in" 8<"$out"
	( sleep "$((guard_s + 15))"; kill -KILL "$fe_pid" 2>/dev/null ) >/dev/null 2>&1 &
	dog=$!
	while IFS= read -r line <&8; do
		line=${line%$'\r'}
		printf '%s\n' "$line" >>"$log"
		on_line "$line"
	done
	exec 7>&- 8<&-
	wait "$fe_pid" 2>/dev/null
	vm_rc=$?
	kill "$dog" 2>/dev/null
	wait "$dog" 2>/dev/null
	rm -f "$in" "$out"
	tap_diag "$name: exit $vm_rc after $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s"
}

vu_lines() { sed -n 's/^VU //p' "$log"; }

# QEMU (-no-reboot) exits 0 on a triple fault or a panic's reboot, so
# a guest that never reached its power-off tells those (vm_failure).
vm_powered_off() { vu_lines | grep -qx end; }

# boot_once NAME KIND APPEND: boot, and say why a guest that crashed or
# hung did (the checks that follow fail it; nothing is booted again).
boot_once() {
	local why
	boot "$@"
	why=$(vm_failure)
	[ -z "$why" ] || tap_diag "$1: $why"
}
dev_of() { vu_lines | awk -v m="mib=$1" '$1 == "disk" && $3 == m { print $2 }'; }
mib_of() { vu_lines | awk -v d="$1" '$1 == "disk" && $2 == d { sub("mib=", "", $3); print $3 }'; }

check_disks() { # check_disks NAME
	local k mib dev l packed
	for k in q:$Q_MIB:0 s:$S_MIB:0 p:$P_MIB:1; do
		mib=${k#*:}; packed=${mib#*:}; mib=${mib%:*}
		l=$(vu_lines | awk -v m="mib=$mib" '$1 == "disk" && $3 == m')
		tap_status "$([ -n "$l" ]; echo $?)" "$1: guest sees the ${k%%:*} disk ($mib MiB)"
		echo "$l" | grep -q " mq=2 "
		tap_status $? "$1: ${k%%:*} disk has two queues" "$l"
		echo "$l" | grep -q " packed=$packed "
		tap_status $? "$1: ${k%%:*} disk ring is $([ "$packed" = 1 ] && echo packed || echo split)" "$l"
	done
}

# Each disk's two request queues took interrupts: both queues carried I/O.
check_queues() { # check_queues NAME
	local k dev v n
	for k in q:$Q_MIB s:$S_MIB p:$P_MIB; do
		dev=$(dev_of "${k#*:}")
		v=$(vu_lines | awk -v d="$dev" '$1 == "disk" && $2 == d { sub("virtio=", "", $6); print $6 }')
		n=$(vu_lines | awk -v v="$v" '$1 == "irq" && index($2, v "-req.") == 1 && $3 > 0' | wc -l)
		tap_status "$([ "$n" = 2 ]; echo $?)" "$1: ${k%%:*} disk's two queues both interrupted the guest" \
			"$(vu_lines | grep "^irq $v-")"
	done
}

check_fio() { # check_fio NAME TAG
	local rc
	rc=$(vu_lines | sed -n "s/^fio $2 rc=//p")
	tap_status "$([ "$rc" = 0 ]; echo $?)" "$1: fio $2 with verify on all three disks" \
		"rc '$rc'; $(vu_lines | grep '^fio-out' | head -n 3)"
}

restart_backends() { # restart_backends K...: SIGKILLed, then started again
	local k
	for k in "$@"; do
		kill -KILL "$(eval echo "\$be_pid_$k")"
		wait "$(eval echo "\$be_pid_$k")" 2>/dev/null
	done
	for k in "$@"; do start_be $k || echo "# back-end $k did not come back" >&2; done
}

# The matrix boot of one front-end: fio, back-ends restarted, fio, power-off.
# Busy: brisk's split back-end dies under the guest's writes.
matrix_line() {
	case $1 in
	"VU idle") restart_backends q s; echo go >&7 ;;
	"VU busy") restart_backends s; echo go >&7 ;;
	esac
}

matrix() { # matrix NAME brisk|qemu [CHECK-LIST]
	local name=$1 k busy= gone=2 rc
	on_line() { matrix_line "$@"; }
	[ "$2" = brisk ] && busy=" vu.busy=$S_MIB" gone=3
	boot_once "$name" "$2" "console=ttyS0 quiet loglevel=2 panic=-1 vu.disks=3${3:+ vu.check=$3} vu.fio=$FIO_MIB vu.pause=1$busy"
	tap_status "$(vu_lines | grep -qx end; [ $? = 0 ] && [ "$vm_rc" = 0 ]; echo $?)" "$name: clean power-off, exit 0" \
		"exit $vm_rc"
	check_disks "$name"
	check_fio "$name" first
	vu_lines | grep -qx resumed
	tap_status $? "$name: the guest went on after its split back-ends were restarted"
	check_fio "$name" verify-only
	check_fio "$name" again
	check_queues "$name"
	if [ "$2" = brisk ]; then
		# INFLIGHT_SHMFD: the new back-end serves what the old one had out, once.
		rc=$(vu_lines | sed -n "s/^fio busy rc=//p")
		tap_status "$([ "$rc" = 0 ]; echo $?)" \
			"$name: fio wrote and verified through its back-end's SIGKILL and restart" "rc '$rc'; $(vu_lines | grep '^fio-out' | tail -n 3)"
		n=$(grep -c "went away" "$log.err")
		tap_status "$([ "$n" = $gone ]; echo $?)" "$name: brisk said a back-end went away $gone times" \
			"$(cat "$log.err")"
		n=$(grep -c "reconnected" "$log.err")
		tap_status "$([ "$n" = $gone ]; echo $?)" "$name: brisk reconnected $gone times" \
			"$(cat "$log.err")"
		! grep -q "needs reset" "$log.err"
		tap_status $? "$name: no device needed a reset" "$(cat "$log.err")"
	fi
	for k in q s p; do
		be_alive $k
		tap_status $? "$name: back-end $k still serving"
	done
	finish_boot
}

# A front-end SIGKILLed while its guest writes: acknowledged writes stay.
kill_line() {
	case $1 in
	"VU acked "*)
		acks=$((acks + 1))
		[ "$acks" = "$KILL_AT" ] && kill -KILL "$fe_pid" && vm_killed=1 ;;
	esac
}

file_of() { # file_of DEV: the disk file behind the guest's DEV
	case $(mib_of "$1") in $Q_MIB) echo "$run/q.raw" ;; $S_MIB) echo "$run/s.raw" ;; $P_MIB) echo "$run/p.raw" ;; esac
}

# Every region acknowledged in the last boot holds what the guest wrote.
check_acked_in_files() { # check_acked_in_files NAME
	local dev m sum f bad= n=0
	while read -r dev m sum; do
		f=$(file_of "$dev")
		n=$((n + 1))
		[ "$(dd if="$f" bs=1M skip="$m" count=1 status=none | md5sum | cut -d' ' -f1)" = "$sum" ] ||
			bad="$bad $dev@$m"
	done < <(vu_lines | sed -n 's/^acked //p')
	tap_status "$([ -z "$bad" ]; echo $?)" "$1: all $n acknowledged writes are in the disk files" \
		"differ:$bad"
}

kill_boot() { # kill_boot NAME brisk|qemu
	local name=$1 k
	on_line() { kill_line "$@"; }
	boot_once "$name" "$2" "console=ttyS0 quiet loglevel=2 panic=-1 vu.disks=3 vu.write=$ROUNDS"
	tap_status "$([ "$vm_rc" = 137 ] && [ "$acks" -ge "$KILL_AT" ]; echo $?)" \
		"$name: the front-end died of SIGKILL after $KILL_AT acknowledged writes" "exit $vm_rc, $acks acks"
	tap_status "$(vu_lines | grep -q '^end$'; [ $? -ne 0 ]; echo $?)" \
		"$name: the guest was still writing when it was killed"
	# What was in flight in the back-ends completes in a moment.
	sleep 1
	for k in q s p; do
		be_alive $k
		tap_status $? "$name: back-end $k survived its front-end"
	done
	check_acked_in_files "$name"
	finish_boot
}

want() { [ -z "$only" ] || ! [ "$done_only" = 1 ]; }
done_only=0
after() { [ "$only" = "$1" ] && done_only=1; }

for k in q s p; do
	start_be $k || die "back-end $k did not start; see $outdir/be-$k.log"
done

if want; then matrix brisk-fe brisk; after brisk-fe; fi
if want; then
	kill_boot brisk-kill brisk
	# By disk size: the next front-end may name the disks otherwise.
	acked=$(vu_lines | sed -n 's/^acked //p' | while read -r dev m sum; do
		echo "$(mib_of "$dev") $m $sum"; done) acked_log=$log
	after brisk-kill
fi
if want; then
	list=$(echo "$acked" | awk '{ print $2 }' | sort -un | tr '\n' ',' | sed 's/,$//')
	matrix qemu-fe qemu "$list"
	# The next front-end read what the killed one had acknowledged.
	bad=
	while read -r mib m sum; do
		dev=$(dev_of "$mib")
		got=$(vu_lines | awk -v d="$dev" -v m="$m" '$1 == "md5" && $2 == d && $3 == m { print $4 }')
		[ -n "$dev" ] && [ "$got" = "$sum" ] || bad="$bad ${mib}MiB-disk@$m"
	done <<<"$acked"
	tap_status "$([ -z "$bad" ]; echo $?)" \
		"qemu-fe: reads back every region brisk had acknowledged before it was killed" "differ:$bad"
	finish_boot
	after qemu-fe
fi

# The back-ends end cleanly on SIGTERM; the files keep every acknowledged byte.
for k in q s p; do
	p=$(eval echo "\$be_pid_$k")
	kill -TERM "$p"
	wait "$p"
	tap_status $? "back-end $k ends with status 0 on SIGTERM" "$(tail -n 3 "$outdir/be-$k.log")"
done
if [ -n "${acked:-}" ]; then
	log=$acked_log
	check_acked_in_files "after the back-ends ended"
fi
tap_diag "all boots and checks: $(( $(date +%s) - t_start ))s"
tap_done
