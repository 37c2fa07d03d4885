#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# qemu-tcg.sh [--brisk PATH] [--rings split,packed] [--out DIR]
#
# brisk's vhost-user-blk export against a real front-end, without KVM:
# QEMU (-accel tcg, 2 vCPUs, guest RAM in a shared memfd) boots the Debian
# kernel with a vhost-user-blk-pci disk of 2 queues served by
# `brisk -export`, and fio in the guest writes 32 MiB at random with
# crc32c verification, then reads it all back and checks it.  Once per
# ring kind.  Then brisk must end with status 0 on SIGTERM, having said
# nothing.  Emulated CPUs make it slow (minutes) and CPU hungry: run it
# alone.  Exit 0 when every ring kind passed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
brisk=$top/build/brisk rings=split,packed out=$top/build-bench/qemu-tcg
while [ $# -gt 0 ]; do
	case $1 in
	--brisk) brisk=${2:?}; shift ;;
	--rings) rings=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	*) sed -n '4,13s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
	shift
done
die() { echo "qemu-tcg: $*" >&2; exit 1; }
qemu=$(command -v qemu-system-x86_64) || die "no qemu-system-x86_64 (scripts/setup-debian.sh)"
[ -x "$brisk" ] || die "no brisk at $brisk (meson compile -C build)"
mkdir -p "$out"
img=$out/fio.cpio
if [ ! -f "$img" ]; then
	"$top/tests/bench/fio/mkimage.sh" "$img" >"$out/kernel" || die "cannot build the guest image"
fi
kernel=$(cat "$out/kernel")

fail=0
for ring in ${rings//,/ }; do
	disk=$out/disk.raw sock=$out/vu.sock log=$out/$ring
	rm -f "$disk" "$sock"
	truncate -s 256M "$disk"
	"$brisk" -drive "file=$disk,if=none,id=d0,cache=none" \
		-export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock,num-queues=2,writable=on" \
		</dev/null 2>"$log.brisk" &
	bpid=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
	packed=off
	[ "$ring" = packed ] && packed=on
	timeout 900 "$qemu" -accel tcg -cpu max -smp 2 -m 512 -nographic -no-reboot \
		-object memory-backend-memfd,id=mem,size=512M,share=on -numa node,memdev=mem \
		-chardev "socket,id=c0,path=$sock" \
		-device "vhost-user-blk-pci,chardev=c0,num-queues=2,packed=$packed" \
		-kernel "$kernel" -initrd "$img" \
		-append "console=ttyS0 loglevel=2 fio.rw=randwrite fio.verify=crc32c fio.size=32m fio.time_based=0 fio.ramp_time=0 fio.runtime=600 fio.iodepth=16 fio.numjobs=1 fio.output-format=normal" \
		</dev/null >"$log.console" 2>&1
	qrc=$?
	kill -TERM "$bpid"
	wait "$bpid"
	brc=$?
	ios=$(sed -n 's/^@@FIO ios \([0-9]*\).*/\1/p' "$log.console" | head -1)
	if [ $qrc -eq 0 ] && grep -q '^@@FIO done' "$log.console" &&
	   ! grep -q '^@@FIO error' "$log.console" && [ "${ios:-0}" -ge 8192 ] &&
	   [ $brc -eq 0 ] && [ ! -s "$log.brisk" ]; then
		echo "ok $ring: fio verified 32 MiB through 2 queues (${ios} reads checked)"
	else
		echo "FAIL $ring: qemu $qrc, brisk $brc, reads ${ios:-none}; see $log.console, $log.brisk"
		grep '^@@FIO \(error\|stderr\)' "$log.console" | head -5
		fail=1
	fi
done
exit $fail
