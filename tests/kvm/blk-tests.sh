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
# byte), a reset by the guest driver (PCI unbind and bind) with I/O in
# flight, and a status write of 0 behind the driver's back, which leaves
# requests in flight inside brisk when it resets.  All boots share one with-kvm host.  Output is TAP.  --only runs
# the boots named, comma-separated: split, packed, durable, reset (default
# $BRISK_BLK_TESTS_ONLY, or all).  An arm64 brisk boots Debian's
# arm64 kernel, in the nested arm64 host unless this host runs it natively.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
me=$here/$(basename "${BASH_SOURCE[0]}")

brisk= outdir=$PWD/blk-tests.d kernel= inner= only=${BRISK_BLK_TESTS_ONLY:-}
while [ $# -gt 0 ]; do
	case $1 in
	--brisk) brisk=$2; shift 2 ;;
	--outdir) outdir=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--inner) inner=1; shift ;;
	*) echo "usage: $0 --brisk PATH [--outdir DIR] [--kernel BZIMAGE] [--only BOOT]" >&2; exit 2 ;;
	esac
done
die() { echo "blk-tests: $*" >&2; exit 1; }
need() { # need TOOL PACKAGE
	command -v "$1" >/dev/null || die "$1 not found; run: apt-get install $2"
}

for b in ${only//,/ }; do
	case $b in split|packed|durable|reset) ;; *) die "--only: no boot named $b" ;; esac
done
. "$here/lib/arch.sh"
arch=$(host_arch)
[ -n "$brisk" ] && arch=$(elf_arch "$brisk" 2>/dev/null || host_arch)

if [ -z "$inner" ]; then
	# Host side: everything that needs no /dev/kvm.
	[ -n "$brisk" ] || { echo "blk-tests: --brisk PATH required" >&2; exit 2; }
	[ -x "$brisk" ] || die "$brisk is not an executable"
	brisk=$(realpath "$brisk")
	need cmp diffutils
	need md5sum coreutils
	need mkfifo coreutils
	need timeout coreutils
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
	"$here/mkinitrd" -a "$arch" -o "$outdir/blk-guest.img" -i "$here/blk-init.sh" \
		-f "$outdir/pa:/pat/pa" -f "$outdir/pb:/pat/pb" -f "$outdir/pc:/pat/pc" || exit 1
	cd "$outdir" || exit 1
	exec "$here/with-kvm" --whole-stdout --timeout "${BRISK_BLK_TESTS_TIMEOUT:-480}" \
		--brisk "$brisk" --work "$outdir" -- "$me" --inner --brisk "$brisk" --outdir "$outdir" --kernel "$kernel" ${only:+--only "$only"}
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

n=0 failed=0 dump=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); dump=1; echo "not ok $n - $*"; }
check() { # check COND-STATUS DESCRIPTION [DETAIL]
	if [ "$1" -eq 0 ]; then ok "$2"; return 0; fi
	not_ok "$2${3:+: $3}"
	return 1
}

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

# Why the last boot ended as no boot here ever should (the guest crashed
# or hung), on stdout; nothing when it did not.
vm_failure() {
	case $vm_rc in
	2) echo "the guest kernel panicked" ;;
	124) echo "the guest was still running at -timeout ${guard_s}" ;;
	137) [ "$vm_killed" = 1 ] || echo "brisk hung past -timeout" ;;
	1) grep -q 'triple fault' "$log.err" && echo "the guest triple faulted" ;;
	esac
}

# run_vm NAME MARK PREP VMM-ARGS...: PREP (a command making the disks)
# then run_vm_once.  In the nested host a guest crashes or hangs now and
# then with no fault of brisk's (its emulated SVM has also been seen to
# panic the nested host's own kernel), so there a boot that crashed or
# hung is said on stdout and stderr and made once more from fresh disks,
# and only that second boot is checked.  Natively, never.
run_vm() {
	local name=$1 mark=$2 prep=$3 why
	shift 3
	$prep
	run_vm_once "$name" "$mark" "$@"
	why=$(vm_failure)
	[ -n "$why" ] && [ "${BRISK_WITH_KVM_ROUTE:-}" = nested ] || return 0
	echo "# $name: $why; console kept in $name.log.1; booting once more"
	{
		echo "blk-tests: $name: $why in the nested host; booting once more. Its console:"
		tail -n 20 "$log"
		tail -n 5 "$log.err"
	} >&2
	mv "$log" "$log.1"
	mv "$log.err" "$log.err.1"
	$prep
	run_vm_once "$name" "$mark" "$@"
}

# Lines the guest printed with "BLK " in front, without it.
blk_lines() { sed -n 's/^BLK //p' "$log"; }

finish_boot() { # finish_boot NAME
	# On stderr as well: a test runner shows a failed test's stderr, not
	# its TAP comments.
	if [ "$dump" -ne 0 ]; then
		sed 's/^/#   /' "$log" | tail -n 40
		sed 's/^/#   stderr: /' "$log.err" | tail -n 10
		{
			echo "== ${log##*/}: last 40 console lines, then brisk's stderr"
			tail -n 40 "$log"
			tail -n 10 "$log.err"
		} >&2
	fi
	dump=0
}

expect_exit() { # expect_exit NAME STATUS
	check $((vm_rc != $2)) "$1: exit status $2" "got $vm_rc"
}

check_disk() { # check_disk NAME SERIAL FILE RO [MQ]
	local l sectors size ro mq
	l=$(blk_lines | grep "^disk vd[a-z]* serial=$2 " | head -n 1)
	check $([ -n "$l" ]; echo $?) "$1: guest sees a disk with serial '$2'" || return
	size=$(stat -c %s "$3")
	sectors=$(echo "$l" | sed -n 's/.* sectors=\([0-9]*\).*/\1/p')
	check $(( ${sectors:-0} * 512 != size )) "$1: '$2' size == file size $size" "got ${sectors:-?} sectors"
	ro=$(echo "$l" | sed -n 's/.* ro=\([0-9]*\).*/\1/p')
	check $(( ${ro:-9} != $4 )) "$1: '$2' ro == $4" "got '$ro'"
	if [ -n "${5:-}" ]; then
		mq=$(echo "$l" | sed -n 's/.* mq=\([0-9]*\).*/\1/p')
		check $(( ${mq:-0} != $5 )) "$1: '$2' has $5 entries in mq/" "got '$mq'"
	fi
}

check_gwrite() { # check_gwrite NAME SERIAL FILE MIB PAT: guest wrote PAT there
	local rc
	rc=$(blk_lines | sed -n "s/^write $2 $4 rc=//p" | head -n 1)
	check $([ "$rc" = 0 ]; echo $?) "$1: guest write to '$2' at ${4} MiB succeeded" "rc '${rc}'"
	region_is "$3" "$4" "$5"
	check $? "$1: host file $(basename "$3") holds the guest's pattern at $4 MiB"
	region_is "$3" $(($4 - 1)) zero && region_is "$3" $(($4 + 1)) zero
	check $? "$1: the MiB either side of it are untouched"
}

check_gread() { # check_gread NAME SERIAL MIB PAT: guest read PAT there
	local got want
	got=$(blk_lines | sed -n "s/^read $2 $3 md5=//p" | head -n 1)
	want=$(md5sum <"$outdir/$4" | cut -d' ' -f1)
	check $([ "$got" = "$want" ]; echo $?) "$1: guest reads the host's pattern from '$2' at $3 MiB" \
		"md5 '$got', want '$want'"
}

want() { [ -z "$only" ] || case ,$only, in *,"$1",*) true ;; *) false ;; esac; }

echo "# route: ${BRISK_WITH_KVM_ROUTE:-unknown}, kernel: $kernel"

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
	}
	run_vm $b "" prep_split -m 512M -smp 1 \
		-append "console=$console quiet blk.w=brisk-a:3:pa blk.r=brisk-a:5 blk.w=brisk-b:7:pc blk.r=brisk-b:2 blk.r=brisk-ro:1 blk.ro=brisk-ro:1:pb" \
		-drive file=a.raw,if=none,id=d0,format=raw,aio=io_uring,cache=none \
		-device virtio-blk-pci,drive=d0,packed=off,queue-size=256,serial=brisk-a \
		-drive file=b.raw,if=none,id=d1,format=raw,aio=threads,cache=writeback \
		-device virtio-blk-pci,drive=d1,packed=off,queue-size=256,serial=brisk-b,irq-interval-us=500,irq-coalesce-us=200 \
		-drive file=c.raw,if=none,id=d2,format=raw,readonly=on,cache=none \
		-device virtio-blk-pci,drive=d2,queue-size=256,serial=brisk-ro
	expect_exit $b 0
	grep -qx BLK-DONE "$log"
	check $? "$b: guest finished its work"
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
		check $([ -n "$rc" ] && [ "$rc" != 0 ]; echo $?) "$b: $k to the read-only disk fails" "'$l'"
		echo "# $l"
	done
	check $([ "$(md5sum <c.raw)" = "$c_sum" ]; echo $?) "$b: read-only disk file unchanged"
	finish_boot
fi

# ---- boot 2: packed rings, queue-size 1024, two queues on two vCPUs -------
if want packed; then
	b=packed
	prep_packed() {
		mkdisk p.raw $((80 * MiB)) pc@9
		mkdisk q.raw $((41 * MiB + 4096)) pb@4
	}
	run_vm $b "" prep_packed -m 512M -smp 2 \
		-append "console=$console quiet blk.w=brisk-p:6:pb blk.r=brisk-p:9 blk.w=:12:pa blk.r=:4" \
		-drive file=p.raw,if=none,id=d0,format=raw,aio=io_uring,cache=none \
		-device virtio-blk-pci,drive=d0,packed=on,num-queues=2,queue-size=1024,serial=brisk-p \
		-drive file=q.raw,if=virtio,format=raw
	expect_exit $b 0
	grep -qx BLK-DONE "$log"
	check $? "$b: guest finished its work"
	check_disk $b brisk-p p.raw 0 2
	check_disk $b "" q.raw 0
	check_gwrite $b brisk-p p.raw 6 pb
	check_gread $b brisk-p 9 pc
	check_gwrite $b "" q.raw 12 pa
	check_gread $b "" 4 pb
	finish_boot
fi

# ---- boot 3: durability: SIGKILL right after the guest's sync -------------
if want durable; then
	b=durable
	mark=BLK-SYNCED-KILL-NOW
	prep_durable() {
		mkdisk w.raw $((64 * MiB))
		mkdisk n.raw $((64 * MiB))
	}
	dw=
	for m in 3 4 5 9; do dw="$dw blk.dw=brisk-wb:$m:pa blk.dw=brisk-nc:$m:pb"; done
	dw="$dw blk.dw=brisk-wb:10:pc blk.dw=brisk-nc:10:pc"
	run_vm $b "$mark" prep_durable -m 512M -smp 2 \
		-append "console=$console quiet$dw blk.sync=$mark" \
		-drive file=w.raw,if=none,id=d0,format=raw,aio=io_uring,cache=writeback \
		-device virtio-blk-pci,drive=d0,serial=brisk-wb \
		-drive file=n.raw,if=none,id=d1,format=raw,aio=io_uring,cache=none \
		-device virtio-blk-pci,drive=d1,packed=on,serial=brisk-nc
	check $((vm_killed != 1)) "$b: guest reported its sync, brisk killed then"
	check $((vm_rc != 137)) "$b: brisk died of SIGKILL" "exit $vm_rc"
	for s in wb:w.raw:pa nc:n.raw:pb; do
		ser=brisk-${s%%:*} f=${s#*:}; f=${f%:*} p=${s##*:}
		rcs=$(blk_lines | sed -n "s/^dwrite $ser [0-9]* rc=//p" | sort -u | tr '\n' ' ')
		check $([ "$rcs" = "0 " ]; echo $?) "$b: buffered writes to '$ser' succeeded" "rc '$rcs'"
		bad=
		for m in 3 4 5 9; do region_is "$f" $m $p || bad="$bad $m"; done
		region_is "$f" 10 pc || bad="$bad 10"
		check $([ -z "$bad" ]; echo $?) "$b: every synced byte is in $f (cache=${ser#brisk-})" "MiB$bad differ"
		bad=
		for m in 2 6 8 11; do region_is "$f" $m zero || bad="$bad $m"; done
		check $([ -z "$bad" ]; echo $?) "$b: nothing else changed in $f" "MiB$bad differ"
	done
	finish_boot
fi

# ---- boot 4: reset by the guest driver with I/O in flight -----------------
if want reset; then
	b=reset
	prep_reset() {
		mkdisk r.raw $((64 * MiB)) pb@2
		mkdisk s.raw $((64 * MiB)) pc@2
	}
	run_vm $b "" prep_reset -m 512M -smp 2 \
		-append "console=$console quiet iomem=relaxed blk.reset=brisk-r1 blk.r=brisk-r1:2 blk.reset=brisk-r2 blk.r=brisk-r2:2 blk.reset=brisk-r1 blk.hardreset=brisk-r2" \
		-drive file=r.raw,if=none,id=d0,format=raw,aio=io_uring,cache=none \
		-device virtio-blk-pci,drive=d0,packed=off,queue-size=256,serial=brisk-r1 \
		-drive file=s.raw,if=none,id=d1,format=raw,aio=io_uring,cache=writeback \
		-device virtio-blk-pci,drive=d1,packed=on,num-queues=2,queue-size=1024,serial=brisk-r2
	expect_exit $b 0
	grep -qx BLK-DONE "$log"
	check $? "$b: guest finished its work"
	blk_lines | grep '^\(hard\)\{0,1\}reset ' | sed 's/^/# /'
	for s in brisk-r1:r.raw:pb brisk-r2:s.raw:pc; do
		ser=${s%%:*} f=${s#*:}; f=${f%:*} p=${s##*:}
		got=$(blk_lines | grep -c "^reset $ser unbind rc=0 gone=yes")
		want=1; [ "$ser" = brisk-r1 ] && want=2
		check $((got != want)) "$b: '$ser' unbound with I/O running, disk gone ($want times)" "got $got"
		got=$(blk_lines | grep -c "^reset $ser back=yes")
		check $((got != want)) "$b: '$ser' came back after bind ($want times)" "got $got"
		got=$(blk_lines | grep -c "^write $ser 40 rc=0")
		check $((got != want)) "$b: '$ser' takes a fresh write after each rebind" "got $got"
		want_md5=$(md5sum <"$outdir/pc" | cut -d' ' -f1)
		got=$(blk_lines | sed -n "s/^read $ser 40 md5=//p" | sort -u)
		check $([ "$got" = "$want_md5" ]; echo $?) "$b: '$ser' reads the fresh write back" "md5 '$got'"
		region_is "$f" 40 pc
		check $? "$b: host file $f holds the write made after the rebind"
		check_gread $b "$ser" 2 "$p"
	done
	# Everything the I/O loops may write lies in 16..31 MiB, so the rest of the
	# file is exactly what the host and the post-rebind write put there.
	for s in r.raw:pb s.raw:pc; do
		f=${s%%:*} p=${s#*:}
		bad=
		for m in 1 3 15 32 39 41; do region_is "$f" $m zero || bad="$bad $m"; done
		region_is "$f" 2 "$p" || bad="$bad 2"
		check $([ -z "$bad" ]; echo $?) "$b: no write outside the scratch area in $f" "MiB$bad differ"
		cmp -s -n $((16 * MiB)) -i $((16 * MiB)):0 "$f" /dev/zero
		check $((! $?)) "$b: the I/O loops wrote into the scratch area of $f"
	done
	# The driver's rebind is no guest error; the status write behind its back
	# may be reported, but nothing may break.
	l=$(blk_lines | grep '^hardreset brisk-r2 wrote status=0 ')
	case $l in *" rc=0 now=0x00") true ;; *) false ;; esac
	check $? "$b: status 0 written behind the driver's back reads 0 (polled)" "'$l'"
	grep -qi 'assert\|abort\|sanitizer\|segmentation' "$log.err"
	check $((! $?)) "$b: no crash report on brisk's stderr" "$(head -n 3 "$log.err" | tr '\n' ' ')"
	finish_boot
fi

echo "1..$n"
[ "$failed" -eq 0 ] || { echo "# $failed of $n checks failed"; exit 1; }
