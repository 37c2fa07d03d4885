#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bad-drive.sh BRISK: bad -drive/-device/-chardev options and bad disk files must
# make brisk exit non-zero with exactly one stderr line naming the
# problem, before /dev/kvm is opened (so this runs on any host); the same
# drives, valid, boot a stand-in kernel.  Output is TAP.

set -u
brisk=${1:?usage: bad-drive.sh path/to/brisk}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/fake-bzimage.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

kernel=$tmp/bzImage
fake_bzimage "$kernel"

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
media=cdrom|-drive file=@/disk.img,media=cdrom
snapshot=maybe|-drive file=@/disk.img,snapshot=maybe
needs id=|-drive file=@/disk.img,if=none
id=0d|-drive file=@/disk.img,if=none,id=0d
trailing|-drive file=@/disk.img,
empty option name|-drive file=@/disk.img,,,=x
packed=2|-drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci,drive=d0,packed=2
longer than 20|-drive file=@/disk.img,if=none,id=d0 -device virtio-blk-pci,drive=d0,serial=123456789012345678901
chardev= is missing|-device vhost-user-blk-pci
chardev= is missing|-device vhost-user-blk-pci,num-queues=2
no -chardev with id=c1|-chardev socket,id=c0,path=@/s.sock -device vhost-user-blk-pci,chardev=c1
not used by any device|-chardev socket,id=c0,path=@/s.sock
already used|-chardev socket,id=c0,path=@/s.sock -device vhost-user-blk-pci,chardev=c0 -device vhost-user-blk-pci,chardev=c0
path= (or fd=) is missing|-chardev socket,id=c0 -device vhost-user-blk-pci,chardev=c0
exclude each other|-chardev socket,id=c0,path=@/s.sock,fd=3 -device vhost-user-blk-pci,chardev=c0
server=on|-chardev socket,id=c0,path=@/s.sock,server=on -device vhost-user-blk-pci,chardev=c0
reconnect= needs path=|-chardev socket,id=c0,fd=3,reconnect=1 -device vhost-user-blk-pci,chardev=c0
reconnect=x|-chardev socket,id=c0,path=@/s.sock,reconnect=x -device vhost-user-blk-pci,chardev=c0
Unix socket|-chardev stdio,id=c0 -device vhost-user-blk-pci,chardev=c0
duplicate id|-chardev socket,id=c0,path=@/a -chardev socket,id=c0,path=@/b -device vhost-user-blk-pci,chardev=c0
id=0c|-chardev socket,id=0c,path=@/s.sock -device vhost-user-blk-pci,chardev=0c
queue-size|-chardev socket,id=c0,path=@/s.sock -device vhost-user-blk-pci,chardev=c0,queue-size=100
num-queues|-chardev socket,id=c0,path=@/s.sock -device vhost-user-blk-pci,chardev=c0,num-queues=0
packed=2|-chardev socket,id=c0,path=@/s.sock -device vhost-user-blk-pci,chardev=c0,packed=2
unknown option 'drive'|-chardev socket,id=c0,path=@/s.sock -device vhost-user-blk-pci,chardev=c0,drive=d0
No such file|-chardev socket,id=c0,path=@/s.sock -device vhost-user-blk-pci,chardev=c0
not a socket|-chardev socket,id=c0,path=@/disk.img -device vhost-user-blk-pci,chardev=c0
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
		tap_fail "$args: one line with '$word'" "status $rc, $lines stderr lines:
$(cat "$tmp/err")"
	else
		tap_check "$args -> $(cat "$tmp/err")" true
	fi
done <<<"$table"

# The same drives, valid, get past every check above: the stand-in kernel
# boots with them (-accel kvm,check=off: any /dev/kvm that makes a VM
# will do) and exits with its own status, or, with no /dev/kvm here,
# brisk stops there with one line.
valid=(-kernel "$kernel" -m 64M -drive "file=$disk,if=virtio,media=disk,snapshot=on"
       -drive "file=$disk,if=none,id=d0,readonly=on"
       -device virtio-blk-pci,drive=d0,queue-size=128,num-queues=2
       -device isa-debug-exit,iobase=0xf4,iosize=0x04 -timeout 20)
timeout 30 "$brisk" -accel kvm,check=off "${valid[@]}" </dev/null >"$tmp/out" 2>"$tmp/err"
rc=$?
if have_kvm_dev; then
	tap_check "valid drives: the guest ran (status $FAKE_BZIMAGE_EXIT)" [ $rc -eq "$FAKE_BZIMAGE_EXIT" ]
	tap_check "valid drives: nothing on stderr" [ ! -s "$tmp/err" ]
else
	tap_check "valid drives: no /dev/kvm, status 1" [ $rc -eq 1 ]
	tap_check "valid drives: one line naming /dev/kvm" eval \
		'[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "/dev/kvm" "$tmp/err"'
fi
[ -s "$tmp/err" ] && tap_diag "stderr: $(cat "$tmp/err")"
tap_done
