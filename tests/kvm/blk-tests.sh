#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# blk-tests.sh --brisk PATH [--outdir DIR] [--kernel BZIMAGE] [--only BOOT]
#
# Boots a busybox guest with virtio-blk disks and checks, from both sides,
# what reaches the disk files: sizes and serials as the guest sees them,
# patterns written by the guest (cmp in the host file after brisk exits)
# and by the host (md5 printed by the guest), split and packed rings,
# queue sizes 256 and 1024, two queues with two vCPUs, a read-only disk
# that refuses writes, several disks at once; durability (the host SIGKILLs
# brisk the moment the guest says its sync returned, then checks every
# byte), a reset by the guest driver (PCI unbind and bind) while reads and
# writes are in flight, and a status write of 0 behind the driver's back,
# which leaves requests in flight inside brisk when it resets.  The fs
# boot (-m 1G, -smp 4): an ext4 file system made, punched (fallocate -p)
# and checked in the guest and again from the host (e2fsck, debugfs),
# blkdiscard and blkdiscard -z with the host file checked after, four
# queues on two I/O threads, a packed ring of 16 wrapped hundreds of times
# under fio with verify, then typing into the guest's shell on a real
# terminal and leaving with Ctrl-A x.  A guest that crashes or hangs fails its checks; nothing is
# booted twice.  Every boot's stderr must be free of sanitizer reports.
# All boots share one with-kvm host.  Output is TAP.  --only runs the
# boots named, comma-separated: split, packed, durable, reset, fs
# (default $BRISK_BLK_TESTS_ONLY, or all).  An arm64 brisk boots
# Debian's arm64 kernel, in the nested arm64 host unless this host runs it
# natively; the fs boot, whose guest carries this host's
# programs, run only where brisk is built for this host's architecture.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
me=$here/$(basename "${BASH_SOURCE[0]}")

brisk= outdir=$PWD/blk-tests.d kernel= inner= only=${BRISK_BLK_TESTS_ONLY:-} no_fs=
while [ $# -gt 0 ]; do
	case $1 in
	--brisk) brisk=$2; shift 2 ;;
	--outdir) outdir=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--inner) inner=1; shift ;;
	--no-fs) no_fs=$2; shift 2 ;;	# brisk's arch, not the host's: the fs boot is a skip
	*) echo "usage: $0 --brisk PATH [--outdir DIR] [--kernel BZIMAGE] [--only BOOT]" >&2; exit 2 ;;
	esac
done
. "$here/../lib/die.sh"
need() { # need TOOL PACKAGE
	command -v "$1" >/dev/null || die "$1 not found; run: apt-get install $2"
}

# want BOOT: BOOT is among those to run; by default all.
want() {
	[ -n "$only" ] || return 0
	case ,$only, in *,"$1",*) true ;; *) false ;; esac
}
for b in ${only//,/ }; do
	case $b in split|packed|durable|reset|fs) ;; *) die "--only: no boot named $b" ;; esac
done
. "$here/lib/arch.sh"
arch=$(host_arch)
[ -n "$brisk" ] && arch=$(elf_arch "$brisk" 2>/dev/null || host_arch)
if [ "$arch" != "$(host_arch)" ]; then
	want fs && [ -n "$only" ] &&
		die "--only: the fs boot's guest runs this host's programs, and brisk is for $arch"
	[ -n "$only" ] || {
		only=split,packed,durable,reset
		no_fs=$arch
	}
fi

if [ -z "$inner" ]; then
	# Host side: everything that needs no /dev/kvm.
	[ -n "$brisk" ] || { echo "blk-tests: --brisk PATH required" >&2; exit 2; }
	[ -x "$brisk" ] || die "$brisk is not an executable"
	brisk=$(realpath "$brisk")
	need cmp diffutils
	need md5sum coreutils
	need mkfifo coreutils
	need timeout coreutils
	need script bsdutils
	need python3 python3
	for t in mkfs.ext4 e2fsck debugfs filefrag; do need $t e2fsprogs; done
	need blkdiscard util-linux
	need fallocate util-linux
	need fio fio
	if [ -z "$kernel" ]; then
		. "$here/lib/kmod.sh"
		KMOD_ROOT=$(arch_root "$arch") || exit 1
		kver=$(kmod_newest_kver) || die "no $arch kernel; run: apt-get install $(arch_kernel_pkg "$arch")"
		kernel=$KMOD_ROOT/boot/vmlinuz-$kver
	fi
	[ -r "$kernel" ] || die "cannot read kernel $kernel"
	mkdir -p "$outdir" && outdir=$(realpath "$outdir") || exit 1
	# Three 1 MiB patterns, fresh each run so no stale disk can match.
	for p in pa pb pc; do
		head -c 1048576 /dev/urandom >"$outdir/$p" || die "cannot write $outdir/$p"
	done
	pats=(-f "$outdir/pa:/pat/pa" -f "$outdir/pb:/pat/pb" -f "$outdir/pc:/pat/pc")
	if want split || want packed || want durable || want reset; then
		"$here/mkinitrd" -v -a "$arch" -o "$outdir/blk-guest.img" -i "$here/blk-init.sh" \
			"${pats[@]}" || exit 1
	fi
	# The fs boot's guest also carries e2fsprogs, util-linux's discard
	# tools and fio, with their libraries.
	if want fs; then
		"$here/mkinitrd" -v -a "$arch" -o "$outdir/blk-fs.img" -i "$here/blk-init.sh" "${pats[@]}" \
			-m ext4 -m crc32c_generic -b mkfs.ext4 -b e2fsck -b filefrag \
			-b blkdiscard -b fallocate -b fio || exit 1
	fi
	cd "$outdir" || exit 1
	exec "$here/with-kvm" --whole-stdout --timeout "${BRISK_BLK_TESTS_TIMEOUT:-900}" --mem 3072 \
		--brisk "$brisk" --work "$outdir" -- "$me" --inner --brisk "$brisk" --outdir "$outdir" --kernel "$kernel" ${only:+--only "$only"} ${no_fs:+--no-fs "$no_fs"}
fi

# ---- inside with-kvm -------------------------------------------------------
initrd=$outdir/blk-guest.img
# In the nested arm64 host brisk starts through remote-run, and SIGKILL
# reaches it as SIGUSR1 to remote-run.
run=(${BRISK_WITH_KVM_RUN:+"$BRISK_WITH_KVM_RUN"})
kill_sig=${BRISK_WITH_KVM_SIGKILL:-KILL}
console=$(arch_console "$arch")
# Bounds one boot should it hang; a nested boot takes about 40 s.
guard_s=${BRISK_BLK_TESTS_GUARD:-120}
MiB=1048576

. "$here/../lib/tap.sh"
. "$here/../lib/pty.sh"
. "$here/../lib/clock.sh"
. "$here/lib/console.sh"
. "$here/lib/boot-end.sh"
# What a boot's end says (boot-end.sh); finish_boot NAME checks brisk's
# stderr for sanitizer reports too.
vm_who=brisk vm_hung="brisk hung past -timeout" vm_tail=40 vm_kernel=$kernel

# mkdisk FILE BYTES [PAT@MIB]...: a sparse image with host patterns in it.
mkdisk() {
	local f=$1 s
	rm -f "$f"
	truncate -s "$2" "$f" || die "cannot create $f"
	shift 2
	for s in "$@"; do
		dd if="$outdir/${s%@*}" of="$f" bs=1M seek="${s#*@}" conv=notrunc status=none ||
			die "cannot write ${s%@*} into $f"
	done
}

# region_is FILE MIB PAT: 1 MiB at MIB in FILE equals pattern PAT (or
# zeros when PAT is "zero").
region_is() {
	local src=$outdir/$3
	[ "$3" = zero ] && src=/dev/zero
	cmp -s -n "$MiB" -i "$(($2 * MiB)):0" "$1" "$src"
}

# run_vm_once NAME MARK VMM-ARGS...: boots, keeps the serial console in
# NAME.log; when MARK is not empty, SIGKILLs brisk the moment the console
# prints MARK alone on a line.  Sets vm_rc and vm_killed.
run_vm_once() {
	local name=$1 mark=$2 line fifo dog pid
	shift 2
	log=$outdir/$name.log
	fifo=$(mktemp -u "${TMPDIR:-/tmp}/blk-tests.XXXXXX") && mkfifo "$fifo" || die "mkfifo failed"
	echo "# $name: brisk $*"
	: >"$log"
	"${run[@]}" "$brisk" -kernel "$kernel" -initrd "$initrd" -timeout "$guard_s" "$@" \
		</dev/null >"$fifo" 2>"$log.err" &
	pid=$!
	# brisk's own -timeout should end a hung guest; this is the backstop.
	( sleep $((guard_s + 15)); kill -s "$kill_sig" "$pid" 2>/dev/null ) >/dev/null 2>&1 &
	dog=$!
	local t0=$EPOCHREALTIME
	vm_killed=0
	while IFS= read -r line; do
		line=${line%$'\r'}
		printf '%s\n' "$line" >>"$log"
		if [ -n "$mark" ] && [ "$vm_killed" = 0 ] && [ "$line" = "$mark" ]; then
			kill -s "$kill_sig" "$pid"
			vm_killed=1
		fi
	done <"$fifo"
	wait "$pid" 2>/dev/null	# no "Killed" line for the kills made on purpose
	vm_rc=$?
	kill "$dog" 2>/dev/null
	wait "$dog" 2>/dev/null
	rm -f "$fifo"
	echo "# $name: exit $vm_rc after $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s"
}

# run_vm NAME MARK PREP VMM-ARGS...: PREP (a command making the disks)
# then run_vm_once.  A boot is never made twice: a guest that crashed or
# hung fails the boot's checks, in the nested host as natively.
run_vm() {
	local name=$1 mark=$2 prep=$3
	shift 3
	$prep
	run_vm_once "$name" "$mark" "$@"
}

# run_vm_tty NAME VMM-ARGS...: boots with brisk's console on a real
# terminal (pty.sh), typing into it: at the guest's "BLK-SHELL" a command
# for its shell, at that command's output (or 60 s later) Ctrl-A x; 30 s
# after that brisk is killed.  Sets vm_rc, tty_raw (brisk had the
# terminal in raw mode while the guest ran), tty_typed (the command's
# output came back), tty_restored (the terminal's settings afterwards
# are those from before) and tty_threads (the names of brisk's threads
# when the shell came up).
run_vm_tty() {
	local name=$1 line dog in out st typed_at= quit_at= now
	shift
	log=$outdir/$name.log st=$outdir/$name.tty
	in=$(mktemp -u "${TMPDIR:-/tmp}/blk-tests.XXXXXX") && mkfifo "$in" || die "mkfifo failed"
	out=$(mktemp -u "${TMPDIR:-/tmp}/blk-tests.XXXXXX") && mkfifo "$out" || die "mkfifo failed"
	echo "# $name: brisk $* (on a terminal)"
	: >"$log"
	pty_start "$st" "$in" "$out" "$brisk" -kernel "$kernel" -initrd "$initrd" \
		-timeout "$guard_s" "$@"
	exec 7>"$in" 8<"$out"
	( sleep $((guard_s + 15)); kill -KILL "$(cat "$st.pid")" ) >/dev/null 2>&1 &
	dog=$!
	local t0=$EPOCHREALTIME
	tty_raw=no tty_typed=no tty_threads= vm_killed=0
	local chunk partial= rc
	while :; do
		# A read that times out keeps what it got of a line: carry it.
		IFS= read -r -t 2 chunk <&8
		rc=$?
		if [ $rc -gt 128 ]; then
			partial=$partial$chunk
		elif [ $rc -ne 0 ] && [ -z "$partial$chunk" ]; then
			break	# end of the terminal's output: brisk and script are gone
		else
			line=$partial$chunk partial=
			# The terminal keeps output processing (as QEMU's does), so
			# the guest's \r\n arrives as \r\r\n.
			while [ "${line%$'\r'}" != "$line" ]; do line=${line%$'\r'}; done
			printf '%s\n' "$line" >>"$log"
			case $line in
			BLK-SHELL)
				echo "# $name: the guest's shell is up after" \
					"$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')s"
				pty_changed "$st" && tty_raw=yes
				tty_threads=$(cat /proc/"$(cat "$st.pid")"/task/*/comm 2>/dev/null | sort -u | tr '\n' ' ')
				# The guest's shell expands it: its output is no echo.
				printf 'echo typed-$((6 * 7))\r' >&7
				typed_at=$(mono_s) ;;
			typed-42)
				tty_typed=yes ;;
			esac
			[ $rc -eq 0 ] || break
		fi
		now=$(mono_s)
		if [ -n "$typed_at" ] && [ -z "$quit_at" ] &&
		   { [ $tty_typed = yes ] || [ $((now - typed_at)) -ge 60 ]; }; then
			printf '\001x' >&7
			quit_at=$now
		fi
		if [ -n "$quit_at" ] && [ $((now - quit_at)) -ge 30 ]; then
			kill -KILL "$(cat "$st.pid")" 2>/dev/null
			vm_killed=1
			quit_at=$((now + 100000))
		fi
	done
	exec 7>&- 8<&-
	wait "$PTY_PID" 2>/dev/null
	vm_rc=$(cat "$st.rc" 2>/dev/null)
	vm_rc=${vm_rc:-255}
	cp "$st.err" "$log.err" 2>/dev/null || : >"$log.err"
	tty_restored=no
	[ -s "$st.after" ] && [ "$(cat "$st.after")" = "$(cat "$st.before")" ] && tty_restored=yes
	kill "$dog" 2>/dev/null
	wait "$dog" 2>/dev/null
	rm -f "$in" "$out"
	echo "# $name: exit $vm_rc after $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s"
}

# is_hole FILE OFFSET LENGTH: no byte of the range is allocated.
is_hole() {
	python3 - "$@" <<'EOP'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
off, n = int(sys.argv[2]), int(sys.argv[3])
try:
    sys.exit(0 if os.lseek(fd, off, os.SEEK_DATA) >= off + n else 1)
except OSError:
    sys.exit(0)  # ENXIO: no data from off to the end
EOP
}

# Lines the guest printed with "BLK " in front, without it.
blk_lines() { sed -n 's/^BLK //p' "$log"; }

expect_exit() { # expect_exit NAME STATUS
	tap_status $((vm_rc != $2)) "$1: exit status $2" "got $vm_rc${3:-}$(vm_failure | sed 's/^/: /')"
}

check_disk() { # check_disk NAME SERIAL FILE RO [MQ]
	local l sectors size ro mq
	l=$(blk_lines | grep "^disk vd[a-z]* serial=$2 " | head -n 1)
	tap_status $([ -n "$l" ]; echo $?) "$1: guest sees a disk with serial '$2'" || return
	size=$(stat -c %s "$3")
	sectors=$(echo "$l" | sed -n 's/.* sectors=\([0-9]*\).*/\1/p')
	tap_status $(( ${sectors:-0} * 512 != size )) "$1: '$2' size == file size $size" "got ${sectors:-?} sectors"
	ro=$(echo "$l" | sed -n 's/.* ro=\([0-9]*\).*/\1/p')
	tap_status $(( ${ro:-9} != $4 )) "$1: '$2' ro == $4" "got '$ro'"
	if [ -n "${5:-}" ]; then
		mq=$(echo "$l" | sed -n 's/.* mq=\([0-9]*\).*/\1/p')
		tap_status $(( ${mq:-0} != $5 )) "$1: '$2' has $5 entries in mq/" "got '$mq'"
	fi
}

check_gwrite() { # check_gwrite NAME SERIAL FILE MIB PAT: guest wrote PAT there
	local rc
	rc=$(blk_lines | sed -n "s/^write $2 $4 rc=//p" | head -n 1)
	tap_status $([ "$rc" = 0 ]; echo $?) "$1: guest write to '$2' at ${4} MiB succeeded" "rc '${rc}'"
	region_is "$3" "$4" "$5"
	tap_status $? "$1: host file $(basename "$3") holds the guest's pattern at $4 MiB"
	region_is "$3" $(($4 - 1)) zero && region_is "$3" $(($4 + 1)) zero
	tap_status $? "$1: the MiB either side of it are untouched"
}

check_gread() { # check_gread NAME SERIAL MIB PAT: guest read PAT there
	local got want
	got=$(blk_lines | sed -n "s/^read $2 $3 md5=//p" | head -n 1)
	want=$(md5sum <"$outdir/$4" | cut -d' ' -f1)
	tap_status $([ "$got" = "$want" ]; echo $?) "$1: guest reads the host's pattern from '$2' at $3 MiB" \
		"md5 '$got', want '$want'"
}

echo "# route: ${BRISK_WITH_KVM_ROUTE:-unknown}, kernel: $kernel"
# Said at the start and in the summary: a retried start is never hidden.
tap_diag "with-kvm: nested host start retries: ${BRISK_WITH_KVM_RETRIES:-0}"

# ---- boot 1: split rings, queue-size 256, three disks, one read-only ------
# brisk-b also holds interrupts (irq-interval-us, irq-coalesce-us): its
# data must come and go the same with a real driver.
if want split; then
	b=split
	prep_split() {
		mkdisk a.raw $((64 * MiB + 7 * 512)) pb@5
		mkdisk b.raw $((48 * MiB)) pa@2
		mkdisk c.raw $((33 * MiB)) pc@1
		c_sum=$(md5sum <c.raw)
		mkdisk s.raw $((16 * MiB)) pb@3
		s_sum=$(md5sum <s.raw)
	}
	# snapshot=on: the guest reads back what it wrote, from brisk's
	# private copy (in a nested host, whose /var/tmp is read-only, in /tmp).
	run_vm $b "" prep_split -m 512M -smp 1 \
		-append "console=$console quiet nokaslr blk.w=brisk-a:3:pa blk.r=brisk-a:5 blk.w=brisk-b:7:pc blk.r=brisk-b:2 blk.r=brisk-ro:1 blk.ro=brisk-ro:1:pb blk.w=brisk-snap:3:pa blk.r=brisk-snap:3" \
		-drive file=a.raw,if=none,id=d0,format=raw,aio=io_uring,cache=none \
		-device virtio-blk-pci,drive=d0,packed=off,queue-size=256,serial=brisk-a \
		-drive file=b.raw,if=none,id=d1,format=raw,aio=threads,cache=writeback \
		-device virtio-blk-pci,drive=d1,packed=off,queue-size=256,serial=brisk-b,irq-interval-us=500,irq-coalesce-us=200 \
		-drive file=c.raw,if=none,id=d2,format=raw,readonly=on,cache=none \
		-device virtio-blk-pci,drive=d2,queue-size=256,serial=brisk-ro \
		-drive file=s.raw,if=none,id=d3,format=raw,snapshot=on,media=disk \
		-device virtio-blk-pci,drive=d3,serial=brisk-snap
	expect_exit $b 0
	grep -qx BLK-DONE "$log"
	tap_status $? "$b: guest finished its work"
	check_disk $b brisk-a a.raw 0
	check_disk $b brisk-b b.raw 0
	check_disk $b brisk-ro c.raw 1
	check_gwrite $b brisk-a a.raw 3 pa
	check_gread $b brisk-a 5 pb
	check_gwrite $b brisk-b b.raw 7 pc
	check_gread $b brisk-b 2 pa
	check_gread $b brisk-ro 1 pc
	for k in rowrite rowrite-buffered; do
		l=$(blk_lines | grep "^$k brisk-ro ")
		rc=$(echo "$l" | sed -n 's/.* rc=\([0-9]*\).*/\1/p')
		tap_status $([ -n "$rc" ] && [ "$rc" != 0 ]; echo $?) "$b: $k to the read-only disk fails" "'$l'"
		echo "# $l"
	done
	tap_status $([ "$(md5sum <c.raw)" = "$c_sum" ]; echo $?) "$b: read-only disk file unchanged"
	check_gread $b brisk-snap 3 pa
	tap_status $([ "$(md5sum <s.raw)" = "$s_sum" ]; echo $?) "$b: snapshot=on disk's image unchanged"
	finish_boot $b

	# -snapshot, for every drive (QEMU CI lines use it): the guest reads
	# back what it wrote, and the image is as it was.
	b=snapshot
	prep_snapshot() {
		mkdisk g.raw $((16 * MiB)) pb@3
		g_sum=$(md5sum <g.raw)
	}
	run_vm $b "" prep_snapshot -m 512M -smp 1 -snapshot \
		-append "console=$console quiet nokaslr blk.w=brisk-g:3:pa blk.r=brisk-g:3" \
		-drive file=g.raw,if=none,id=d0,format=raw \
		-device virtio-blk-pci,drive=d0,serial=brisk-g
	expect_exit $b 0
	grep -qx BLK-DONE "$log"
	tap_status $? "$b: guest finished its work"
	check_gread $b brisk-g 3 pa
	tap_status $([ "$(md5sum <g.raw)" = "$g_sum" ]; echo $?) "$b: -snapshot: the image is unchanged"
	finish_boot $b
fi

# ---- boot 2: packed rings, queue-size 1024, two queues on two vCPUs -------
if want packed; then
	b=packed
	prep_packed() {
		mkdisk p.raw $((80 * MiB)) pc@9
		mkdisk q.raw $((41 * MiB + 4096)) pb@4
	}
	run_vm $b "" prep_packed -m 512M -smp 2 \
		-append "console=$console quiet nokaslr blk.w=brisk-p:6:pb blk.r=brisk-p:9 blk.w=:12:pa blk.r=:4" \
		-drive file=p.raw,if=none,id=d0,format=raw,aio=io_uring,cache=none \
		-device virtio-blk-pci,drive=d0,packed=on,num-queues=2,queue-size=1024,serial=brisk-p \
		-drive file=q.raw,if=virtio,format=raw
	expect_exit $b 0
	grep -qx BLK-DONE "$log"
	tap_status $? "$b: guest finished its work"
	check_disk $b brisk-p p.raw 0 2
	check_disk $b "" q.raw 0
	check_gwrite $b brisk-p p.raw 6 pb
	check_gread $b brisk-p 9 pc
	check_gwrite $b "" q.raw 12 pa
	check_gread $b "" 4 pb
	finish_boot $b
fi

# ---- boot 3: durability: SIGKILL right after the guest's sync -------------
#
# The host's page cache outlives a killed brisk, so the images alone
# cannot tell a synced write from one left in that cache.  Where this host
# can make one (root, the kernel's dm-log-writes), each disk is a
# dm-log-writes device: its log holds the writes in the order the disk
# made them durable, each FLUSH among them.  Replayed up to a mark put in
# right after the kill, the log is the disk after a power cut at that
# moment: every byte the guest synced must be there.

# Why no dm-log-writes disk can be made here, on stdout; nothing if it can.
logw_missing() {
	[ "$(id -u)" = 0 ] || { echo "not root"; return; }
	[ -z "${BRISK_WITH_KVM_RUN:-}" ] ||
		{ echo "brisk runs in the nested arm64 host, where its disks are that host's files"; return; }
	command -v dmsetup >/dev/null || { echo "no dmsetup (apt-get install dmsetup)"; return; }
	modprobe -q dm-log-writes 2>/dev/null && modprobe -q loop 2>/dev/null ||
		echo "this kernel ($(uname -r)) has no dm-log-writes or loop module"
}

# What logw_up made, for logw_teardown: dm names and loop devices.
logw_dms= logw_loops=

# logw_up NAME IMAGE: IMAGE under dm-log-writes (named for this run), its
# log on IMAGE.log; prints the device.  What it made is undone by
# logw_teardown, also when it fails half way.
logw_up() {
	local dev logdev dm=brisk-$1-$$
	truncate -s $((256 * MiB)) "$2.log" || return 1
	dev=$(losetup -f --show "$2") || return 1
	logw_loops="$logw_loops $dev"
	logdev=$(losetup -f --show "$2.log") || return 1
	logw_loops="$logw_loops $logdev"
	# No udev in a nested host: dmsetup makes the node itself.
	DM_DISABLE_UDEV=1 dmsetup create "$dm" \
		--table "0 $(($(stat -c %s "$2") / 512)) log-writes $dev $logdev" >&2 || return 1
	logw_dms="$logw_dms $dm"
	echo "/dev/mapper/$dm"
}

# logw_down NAME: marks the log ("killed"), then removes the device,
# which writes the log's last entries and super block; it may still be
# held a moment by the io_uring of a killed brisk, hence --retry.
logw_down() {
	local dm=brisk-$1-$$
	dmsetup message "$dm" 0 mark killed &&
	DM_DISABLE_UDEV=1 dmsetup remove --retry "$dm" || return 1
	logw_dms=${logw_dms/ $dm/}
}

# Whatever logw_up made and logw_down did not undo; then the images.
logw_teardown_devices() {
	local dm dev
	for dm in $logw_dms; do
		DM_DISABLE_UDEV=1 dmsetup remove --retry "$dm" 2>/dev/null
	done
	for dev in $logw_loops; do
		losetup -d "$dev" 2>/dev/null
	done
	logw_dms= logw_loops=
}
logw_teardown() {
	logw_teardown_devices
	[ -n "${logw_dir:-}" ] && rm -rf "$logw_dir"
	logw_dir=
}

if want durable; then
	b=durable
	mark=BLK-SYNCED-KILL-NOW
	PATH=$PATH:/usr/sbin:/sbin
	logw_why=$(logw_missing)
	wimg=w.raw nimg=n.raw wdev=w.raw ndev=n.raw
	if [ -z "$logw_why" ]; then
		# Loop devices want a file system of this host's own, not the share.
		logw_dir=$(mktemp -d "${TMPDIR:-/tmp}/blk-durable.XXXXXX") || die "mktemp failed"
		trap logw_teardown EXIT
		wimg=$logw_dir/w.raw nimg=$logw_dir/n.raw
	fi
	prep_durable() {
		mkdisk "$wimg" $((64 * MiB))
		mkdisk "$nimg" $((64 * MiB))
		[ -z "$logw_why" ] || return 0
		# Not in $( ): a subshell would lose logw_up's record of what
		# it made.
		if logw_up wb "$wimg" >"$logw_dir/wdev" && logw_up nc "$nimg" >"$logw_dir/ndev"; then
			wdev=$(cat "$logw_dir/wdev") ndev=$(cat "$logw_dir/ndev")
			return 0
		fi
		logw_why="this host could not make the devices (loop, device-mapper)"
		logw_teardown_devices
		wdev=$wimg ndev=$nimg
	}
	dw=
	for m in 3 4 5 9; do dw="$dw blk.dw=brisk-wb:$m:pa blk.dw=brisk-nc:$m:pb"; done
	dw="$dw blk.dw=brisk-wb:10:pc blk.dw=brisk-nc:10:pc"
	# Made first: the drives' paths are known only then.
	prep_durable
	run_vm $b "$mark" true -m 512M -smp 2 \
		-append "console=$console quiet nokaslr$dw blk.sync=$mark" \
		-drive file="$wdev",if=none,id=d0,format=raw,aio=io_uring,cache=writeback \
		-device virtio-blk-pci,drive=d0,serial=brisk-wb \
		-drive file="$ndev",if=none,id=d1,format=raw,aio=io_uring,cache=none \
		-device virtio-blk-pci,drive=d1,packed=on,serial=brisk-nc
	tap_status $((vm_killed != 1)) "$b: guest reported its sync, brisk killed then"
	tap_status $((vm_rc != 137)) "$b: brisk died of SIGKILL" "exit $vm_rc"
	if [ -z "$logw_why" ]; then
		for s in wb:$wimg:pa nc:$nimg:pb; do
			ser=brisk-${s%%:*} f=${s#*:}; f=${f%:*} p=${s##*:}
			logw_down "${s%%:*}"
			tap_status $? "$b: $ser's dm-log-writes device marked at the kill and removed"
			rm -f "$f.cut"
			truncate -s $((64 * MiB)) "$f.cut"
			out=$("$here/lib/log-writes-replay" "$f.log" "$f.cut" killed 2>&1)
			tap_status $? "$b: $ser's dm-log-writes log replays up to the kill"
			printf '%s\n' "$out" | sed "s/^/# $b: $ser: /"
			bad=
			for m in 3 4 5 9; do region_is "$f.cut" $m $p || bad="$bad $m"; done
			region_is "$f.cut" 10 pc || bad="$bad 10"
			tap_status $([ -z "$bad" ]; echo $?) \
				"$b: every synced byte is on the disk after a power cut at the kill (cache=${ser#brisk-})" \
				"MiB$bad differ"
		done
	else
		tap_skip "$b: synced bytes survive a power cut" \
			"dm-log-writes: $logw_why; the images are checked, which the host's page cache can hide"
	fi
	for s in wb:$wimg:pa nc:$nimg:pb; do
		ser=brisk-${s%%:*} f=${s#*:}; f=${f%:*} p=${s##*:}
		rcs=$(blk_lines | sed -n "s/^dwrite $ser [0-9]* rc=//p" | sort -u | tr '\n' ' ')
		tap_status $([ "$rcs" = "0 " ]; echo $?) "$b: buffered writes to '$ser' succeeded" "rc '$rcs'"
		bad=
		for m in 3 4 5 9; do region_is "$f" $m $p || bad="$bad $m"; done
		region_is "$f" 10 pc || bad="$bad 10"
		tap_status $([ -z "$bad" ]; echo $?) "$b: every synced byte is in ${f##*/} (cache=${ser#brisk-})" "MiB$bad differ"
		bad=
		for m in 2 6 8 11; do region_is "$f" $m zero || bad="$bad $m"; done
		tap_status $([ -z "$bad" ]; echo $?) "$b: nothing else changed in ${f##*/}" "MiB$bad differ"
	done
	logw_teardown
	finish_boot $b
fi

# ---- boot 4: reset by the guest driver with I/O in flight -----------------
if want reset; then
	b=reset
	prep_reset() {
		mkdisk r.raw $((64 * MiB)) pb@2
		mkdisk s.raw $((64 * MiB)) pc@2
	}
	run_vm $b "" prep_reset -m 512M -smp 2 \
		-append "console=$console quiet nokaslr iomem=relaxed blk.reset=brisk-r1 blk.r=brisk-r1:2 blk.reset=brisk-r2 blk.r=brisk-r2:2 blk.reset=brisk-r1 blk.hardreset=brisk-r2" \
		-drive file=r.raw,if=none,id=d0,format=raw,aio=io_uring,cache=none \
		-device virtio-blk-pci,drive=d0,packed=off,queue-size=256,serial=brisk-r1 \
		-drive file=s.raw,if=none,id=d1,format=raw,aio=io_uring,cache=writeback \
		-device virtio-blk-pci,drive=d1,packed=on,num-queues=2,queue-size=1024,serial=brisk-r2
	expect_exit $b 0
	grep -qx BLK-DONE "$log"
	tap_status $? "$b: guest finished its work"
	blk_lines | grep '^\(hard\)\{0,1\}reset ' | sed 's/^/# /'
	# Every reset must have hit a busy device: reads and writes in flight
	# at the moment of the unbind (or of the status write).
	for k in "reset brisk-r1" "reset brisk-r2" "hardreset brisk-r2"; do
		want=1; [ "$k" = "reset brisk-r1" ] && want=2
		got=$(blk_lines | grep -c "^$k inflight=reads:[1-9][0-9]*,writes:[1-9][0-9]* wrote=yes ")
		tap_status $((got != want)) "$b: $k: reads and writes in flight, a write done, at each of $want" \
			"$(blk_lines | grep "^$k inflight=" | tr '\n' ' ')"
	done
	for s in brisk-r1:r.raw:pb brisk-r2:s.raw:pc; do
		ser=${s%%:*} f=${s#*:}; f=${f%:*} p=${s##*:}
		got=$(blk_lines | grep -c "^reset $ser unbind rc=0 gone=yes")
		want=1; [ "$ser" = brisk-r1 ] && want=2
		tap_status $((got != want)) "$b: '$ser' unbound with I/O running, disk gone ($want times)" "got $got"
		got=$(blk_lines | grep -c "^reset $ser back=yes")
		tap_status $((got != want)) "$b: '$ser' came back after bind ($want times)" "got $got"
		got=$(blk_lines | grep -c "^write $ser 40 rc=0")
		tap_status $((got != want)) "$b: '$ser' takes a fresh write after each rebind" "got $got"
		want_md5=$(md5sum <"$outdir/pc" | cut -d' ' -f1)
		got=$(blk_lines | sed -n "s/^read $ser 40 md5=//p" | sort -u)
		tap_status $([ "$got" = "$want_md5" ]; echo $?) "$b: '$ser' reads the fresh write back" "md5 '$got'"
		region_is "$f" 40 pc
		tap_status $? "$b: host file $f holds the write made after the rebind"
		check_gread $b "$ser" 2 "$p"
	done
	# Everything the I/O loops may write lies in 16..31 MiB, so the rest of the
	# file is exactly what the host and the post-rebind write put there.
	for s in r.raw:pb s.raw:pc; do
		f=${s%%:*} p=${s#*:}
		bad=
		for m in 1 3 15 32 39 41; do region_is "$f" $m zero || bad="$bad $m"; done
		region_is "$f" 2 "$p" || bad="$bad 2"
		tap_status $([ -z "$bad" ]; echo $?) "$b: no write outside the scratch area in $f" "MiB$bad differ"
		cmp -s -n $((16 * MiB)) -i $((16 * MiB)):0 "$f" /dev/zero
		tap_status $((! $?)) "$b: the I/O loops wrote into the scratch area of $f"
	done
	# The driver's rebind is no guest error; the status write behind its back
	# may be reported, but nothing may break.
	l=$(blk_lines | grep '^hardreset brisk-r2 wrote status=0 ')
	case $l in *" rc=0 now=0x00") true ;; *) false ;; esac
	tap_status $? "$b: status 0 written behind the driver's back reads 0 (polled)" "'$l'"
	grep -qi 'assert\|abort\|segmentation' "$log.err"
	tap_status $((! $?)) "$b: no crash report on brisk's stderr" "$(head -n 3 "$log.err" | tr '\n' ' ')"
	finish_boot $b
fi

# ---- boot 5 (fs): ext4, discard, fio, a terminal ---------------------------
# big_boot NAME MEM-GIB SMP: ext4 on a 4-queue disk served by 2 I/O
# threads, discard and write zeroes, fio on a packed ring of 16, a command
# typed on the terminal and Ctrl-A x.
big_boot() {
	local b=$1 gib=$2 smp=$3 qsize=16
	initrd=$outdir/blk-fs.img
	guard_s=${BRISK_BLK_TESTS_FS_GUARD:-400}
	# The disks lie where holes can be punched, so a discard can show as
	# one: the nested host's /tmp is a fresh tmpfs, natively $TMPDIR.
	# tmpfs takes no O_DIRECT here, hence cache=writeback.
	ddir=$(mktemp -d "${TMPDIR:-/tmp}/blk-$b.XXXXXX") || die "mktemp failed"
	trap 'rm -rf "$ddir"' EXIT
	mkdisk "$ddir/fs.raw" $((64 * MiB))
	mkdisk "$ddir/raw.raw" $((64 * MiB)) pc@7 pa@8 pb@9 pc@10 pa@11 pb@12 pc@13 pa@14 pb@15 pc@16
	mkdisk "$ddir/plain.raw" $((16 * MiB))
	head -c 65536 /dev/urandom >"$ddir/probe"
	punch=no
	fallocate -p -o 0 -l 65536 "$ddir/probe" 2>/dev/null && is_hole "$ddir/probe" 0 65536 && punch=yes
	run_vm_tty $b -m "${gib}G" -smp "$smp" \
		-append "console=$console quiet nokaslr blk.ext4=brisk-fs blk.discard=brisk-raw:8:4 blk.zero=brisk-raw:12:2 blk.fio=brisk-raw:32:8 blk.features=brisk-plain blk.fio=brisk-plain:0:8 blk.shell" \
		-drive "file=$ddir/fs.raw,if=none,id=d0,format=raw,aio=io_uring,cache=writeback" \
		-device virtio-blk-pci,drive=d0,num-queues=4,iothreads=2,serial=brisk-fs \
		-drive "file=$ddir/raw.raw,if=none,id=d1,format=raw,aio=threads,cache=writeback" \
		-device virtio-blk-pci,drive=d1,packed=on,queue-size=$qsize,serial=brisk-raw \
		-drive "file=$ddir/plain.raw,if=none,id=d2,format=raw,aio=io_uring,cache=writeback" \
		-device virtio-blk-pci,drive=d2,event_idx=off,indirect_desc=off,serial=brisk-plain
	expect_exit $b 0
	grep -q 'terminated by Ctrl-A x' "$log.err"
	tap_status $? "$b: brisk says Ctrl-A x ended it"
	tap_status $([ $tty_raw = yes ]; echo $?) "$b: the terminal was in raw mode while the guest ran"
	tap_status $([ $tty_typed = yes ]; echo $?) "$b: a command typed on the terminal ran in the guest's shell"
	tap_status $([ $tty_restored = yes ]; echo $?) "$b: the terminal's settings afterwards are those from before"
	# -m and -smp as the guest sees them; MemTotal as boot-tests.sh.
	l=$(blk_lines | sed -n 's/^sys //p' | head -n 1)
	got=$(echo "$l" | sed -n 's/.*nproc=\([0-9]*\).*/\1/p')
	tap_status $(( ${got:-0} != smp )) "$b: nproc == -smp $smp" "'$l'"
	got=$(echo "$l" | sed -n 's/.*memtotal_kb=\([0-9]*\).*/\1/p')
	pct=$(( ${got:-0} * 100 / (gib * 1024 * 1024) ))
	tap_status $(( pct < 87 || pct > 100 )) "$b: MemTotal $pct% of -m ${gib}G (87..100%)" "'$l'"
	big_disks
	finish_boot $b
	rm -rf "$ddir"
}

# The disks' checks for big_boot.
big_disks() {
	local l l0 l1 busy k rc f n p want want_md5 got ranges total bad off len s m
	# Four queues on two I/O threads, each queue used by the real driver.
	check_disk $b brisk-fs "$ddir/fs.raw" 0 4
	l0=$(blk_lines | sed -n 's/^ext4 irqs-before //p' | head -n 1)
	l1=$(blk_lines | sed -n 's/^ext4 irqs-after //p' | head -n 1)
	busy=$(printf '%s\n%s\n' "$l0" "$l1" | tr ' ' '\n' | awk -F= '/^q[0-9]+=/ {
		if ($1 in a) { if ($2 > a[$1]) n++ } else a[$1] = $2 } END { print n + 0 }')
	tap_status $((busy != 4)) "$b: each of the 4 queues of 'brisk-fs' completed requests (interrupts)" \
		"before '$l0', after '$l1'"
	# I/O thread j of a device is named vblkj: only brisk-fs can have a
	# second one.
	case " $tty_threads" in *" vblk1 "*) true ;; *) false ;; esac
	tap_status $? "$b: brisk runs a second I/O thread (vblk1) for 'brisk-fs' (iothreads=2)" \
		"threads: $tty_threads"
	l=$(blk_lines | grep "^disk vd[a-z]* serial=brisk-raw " | head -n 1)
	got=$(echo "$l" | sed -n 's/.* tags=\([0-9]*\).*/\1/p')
	tap_status $(( ${got:-0} < 1 || ${got:-0} > qsize )) \
		"$b: the driver keeps at most $qsize requests on 'brisk-raw' (queue-size=$qsize)" "'$l'"
	# ext4 from the guest's side, then from the host's.
	for k in mkfs mount punch umount fsck; do
		rc=$(blk_lines | sed -n "s/^ext4 $k rc=//p" | head -n 1)
		tap_status $([ "$rc" = 0 ]; echo $?) "$b: ext4 $k in the guest succeeded" "rc '$rc'"
	done
	e2fsck -fn "$ddir/fs.raw" >"$outdir/$b.fsck" 2>&1
	tap_status $? "$b: the host's e2fsck -fn finds the file system clean" "$(tail -n 3 "$outdir/$b.fsck" | tr '\n' ' ')"
	{ cat "$outdir/pb"; head -c $((2 * MiB)) /dev/zero; cat "$outdir/pb"; } >"$ddir/want.punch"
	for f in f0:pa f1:pb f2:pc f3:pa punch:; do
		n=${f%%:*} p=${f#*:}
		want=$ddir/want.punch
		[ -n "$p" ] && want=$outdir/$p
		want_md5=$(md5sum <"$want" | cut -d' ' -f1)
		got=$(blk_lines | sed -n "s/^ext4 md5 $n //p" | head -n 1)
		tap_status $([ "$got" = "$want_md5" ]; echo $?) "$b: ext4 /$n reads right in the guest" "'$got'"
		rm -f "$ddir/got"
		debugfs -R "dump /$n $ddir/got" "$ddir/fs.raw" >/dev/null 2>&1
		cmp -s "$ddir/got" "$want"
		tap_status $? "$b: ext4 /$n reads right from the host (debugfs)"
	done
	# The blocks the punch freed were discarded: zeros in the host file,
	# and a hole where its file system can have one.
	ranges=$(blk_lines | awk '$1 == "ext4" && $2 == "extent" {
		lo = $3 > 256 ? $3 : 256; hi = $4 < 767 ? $4 : 767
		if (lo <= hi) print ($5 + lo - $3) * 4096, (hi - lo + 1) * 4096 }')
	total=0 bad=
	while read -r off len; do
		[ -n "$off" ] || continue
		total=$((total + len))
		cmp -s -n "$len" -i "$off:0" "$ddir/fs.raw" /dev/zero || bad="$bad zeros@$off"
		[ $punch = no ] || is_hole "$ddir/fs.raw" "$off" "$len" || bad="$bad hole@$off"
	done <<<"$ranges"
	tap_status $([ $total -eq $((2 * MiB)) ] && [ -z "$bad" ]; echo $?) \
		"$b: the 2 MiB ext4 punched are discarded in the host file" "found $total bytes;$bad"
	# blkdiscard (MiB 8..11) and blkdiscard -z (12..13); the patterns
	# either side untouched.
	for k in "discard brisk-raw 8" "discard-z brisk-raw 12"; do
		rc=$(blk_lines | sed -n "s/^$k rc=//p" | head -n 1)
		tap_status $([ "$rc" = 0 ]; echo $?) "$b: ${k% *} from the guest succeeded" "rc '$rc'"
	done
	f=$ddir/raw.raw bad=
	for m in 8 9 10 11 12 13; do region_is "$f" $m zero || bad="$bad $m"; done
	tap_status $([ -z "$bad" ]; echo $?) "$b: discarded and zeroed MiB read zeros in the host file" "MiB$bad"
	if [ $punch = yes ]; then
		is_hole "$f" $((8 * MiB)) $((4 * MiB))
		tap_status $? "$b: the discarded MiB are a hole in the host file"
	else
		tap_skip "$b: the discarded MiB are a hole in the host file" \
			"$ddir's file system cannot punch holes"
	fi
	bad=
	for s in pc@7 pa@14 pb@15 pc@16; do region_is "$f" "${s#*@}" "${s%@*}" || bad="$bad ${s#*@}"; done
	tap_status $([ -z "$bad" ]; echo $?) "$b: the MiB around them are untouched" "MiB$bad"
	# The packed ring of 16 wrapped at least once per 16 requests.
	l=$(blk_lines | sed -n 's/^fio brisk-raw //p' | head -n 1)
	rc=$(echo "$l" | sed -n 's/^rc=\([0-9]*\).*/\1/p')
	tap_status $([ "$rc" = 0 ]; echo $?) "$b: fio with verify on the packed ring of $qsize succeeded" "'$l'"
	got=$(echo "$l" | sed -n 's/.*requests=\([0-9]*\).*/\1/p')
	tap_status $(( ${got:-0} < 100 * qsize )) "$b: ... over ${got:-0} requests: the ring wrapped $(( ${got:-0} / qsize )) times (100 at least)"
	# event_idx=off, indirect_desc=off: the driver was not offered them
	# (bits 28 and 29 of sysfs's string, bit 0 first), and fio verifies.
	l=$(blk_lines | sed -n 's/^features brisk-plain //p' | head -n 1)
	tap_status $([ "${l:28:2}" = 00 ] && [ "${l:32:1}" = 1 ]; echo $?) \
		"$b: event_idx=off,indirect_desc=off: no INDIRECT_DESC, no EVENT_IDX, VERSION_1" "'$l'"
	l=$(blk_lines | sed -n 's/^fio brisk-plain //p' | head -n 1)
	rc=$(echo "$l" | sed -n 's/^rc=\([0-9]*\).*/\1/p')
	tap_status $([ "$rc" = 0 ]; echo $?) "$b: fio with verify without EVENT_IDX or indirect descriptors" "'$l'"
}

if want fs; then
	big_boot fs 1 4
elif [ -n "$no_fs" ]; then
	tap_skip "fs" "its guest runs the build host's programs (mkfs.ext4, fio), and brisk is for $no_fs: ext4, discard, write zeroes, fio on a wrapping packed ring, 4 queues on 2 I/O threads, event_idx=off and the terminal are checked by the x86-64 kvm suite"
fi
tap_diag "with-kvm: nested host start retries: ${BRISK_WITH_KVM_RETRIES:-0}"
[ "$tap_failed" -eq 0 ] || tap_diag "$tap_failed of $tap_n checks failed"
tap_done
