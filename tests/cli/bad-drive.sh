#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bad-drive.sh BRISK: bad -drive/-device options and bad disk files must
# make brisk exit non-zero with exactly one stderr line naming the
# problem, before /dev/kvm is opened (so this runs on any host).

set -u
brisk=${1:?usage: bad-drive.sh path/to/brisk}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# Enough of an x86-64 bzImage header to pass brisk's kernel checks.
kernel=$tmp/bzImage
head -c 65536 /dev/zero >"$kernel"
put() { printf "$2" | dd of="$kernel" bs=1 seek=$(($1)) conv=notrunc status=none; }
put 0x1f1 '\x04'
put 0x1fe '\x55\xaa'
put 0x201 '\x66'
put 0x202 'HdrS'
put 0x206 '\x0f\x02'
put 0x211 '\x01'
put 0x236 '\x01\x00'
put 0x238 '\xff\x07\x00\x00'
put 0x260 '\x00\x00\x00\x01'

disk=$tmp/disk.img
truncate -s 1M "$disk"
: >"$tmp/empty.img"
head -c 1000 /dev/zero >"$tmp/odd.img"
mkdir "$tmp/dir.img"
mkfifo "$tmp/fifo.img"

# Each row: WORD|ARGS (ARGS split on spaces, @ stands for $tmp).  brisk
# must exit non-zero with one stderr line, starting "brisk: ", holding WORD.
table=$(cat <<'ROWS'
unknown option|--drive-bogus file=@/disk.img
needs an argument|-drive
unknown device|-device virtio-blk
file= is missing|-drive if=virtio
file= is empty|-drive file=,if=virtio
No such file|-drive file=@/missing.img
directory|-drive file=@/dir.img
is a directory|-drive file=@/dir.img,readonly=on
is empty|-drive file=@/empty.img
not a multiple of 512|-drive file=@/odd.img
not a regular file|-drive file=@/fifo.img
duplicate id|-drive file=@/disk.img,if=none,id=d0 -drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci,drive=d0
not used by any device|-drive file=@/disk.img,if=none,id=d0
no -drive with id=d1|-drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci,drive=d0 -device virtio-blk-pci,drive=d1
already in use|-drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci,drive=d0 -device virtio-blk-pci,drive=d0
drive= is missing|-drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci
queue-size|-drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci,drive=d0,queue-size=100
queue-size|-drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci,drive=d0,queue-size=2048
queue-size|-drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci,drive=d0,queue-size=-4
num-queues|-drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci,drive=d0,num-queues=0
num-queues|-drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci,drive=d0,num-queues=65
num-queues|-drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci,drive=d0,num-queues=two
unknown option 'colour'|-drive file=@/disk.img,colour=red
unknown option 'bogus'|-drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci,drive=d0,bogus=1
given twice|-drive file=@/disk.img,file=@/disk.img
format=qcow2|-drive file=@/disk.img,format=qcow2
if=scsi|-drive file=@/disk.img,if=scsi
aio=native|-drive file=@/disk.img,aio=native
cache=unsafe|-drive file=@/disk.img,cache=unsafe
readonly=maybe|-drive file=@/disk.img,readonly=maybe
needs id=|-drive file=@/disk.img,if=none
id=0d|-drive file=@/disk.img,if=none,id=0d
trailing|-drive file=@/disk.img,
empty option name|-drive file=@/disk.img,,,=x
packed=2|-drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci,drive=d0,packed=2
longer than 20|-drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci,drive=d0,serial=123456789012345678901
ROWS
)

while IFS='|' read -r word args; do
	read -r -a argv <<<"${args//@/$tmp}"
	timeout 10 "$brisk" -kernel "$kernel" -m 64M "${argv[@]}" </dev/null \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
	lines=$(wc -l <"$tmp/err")
	if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ] || [ "$lines" -ne 1 ] ||
	   ! grep -q "^brisk: " "$tmp/err" || ! grep -qF -- "$word" "$tmp/err" ||
	   grep -qi kvm "$tmp/err"; then
		echo "FAIL: $args -> status $rc, $lines stderr lines (want 1 with '$word'):"
		sed 's/^/    /' "$tmp/err"
		fails=$((fails + 1))
	else
		echo "ok: $args -> $(cat "$tmp/err")"
	fi
done <<<"$table"

# The same drives, valid, get past every check above: without /dev/kvm
# brisk then stops at opening it (with it, the fake kernel would boot).
if [ ! -c /dev/kvm ]; then
	timeout 10 "$brisk" -kernel "$kernel" -m 64M -drive "file=$disk,if=virtio" \
		-drive "file=$disk,if=none,id=d0,readonly=on" \
		-device virtio-blk-pci,drive=d0,queue-size=128,num-queues=2 \
		</dev/null >"$tmp/out" 2>"$tmp/err"
	if [ $? -ne 1 ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qi kvm "$tmp/err"; then
		echo "FAIL: valid drives did not get as far as /dev/kvm:"
		sed 's/^/    /' "$tmp/err"
		fails=$((fails + 1))
	else
		echo "ok: valid drives -> $(cat "$tmp/err")"
	fi
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
