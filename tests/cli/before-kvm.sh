#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# before-kvm.sh BRISK: every file and option of a command line is checked
# before /dev/kvm is touched (docs/architecture.md, "Init order"), so a
# host whose /dev/kvm cannot run guests still hears about the command
# line's own mistake, in one line, and not only about KVM.  Each case runs
# on a host that refuses KVM: this one if it has no /dev/kvm, else a mount
# namespace where /dev/kvm is /dev/null.  A valid command line there ends
# at /dev/kvm, which shows the host refuses.  Output is TAP.

set -u
brisk=${1:?usage: before-kvm.sh path/to/brisk}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/fake-bzimage.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

kernel=$tmp/bzImage
fake_bzimage "$kernel"
truncate -s 1M "$tmp/disk.img"
cp "$tmp/disk.img" "$tmp/q.img"
printf 'QFI\373\0\0\0\3' | dd of="$tmp/q.img" conv=notrunc status=none
mkfifo "$tmp/fifo"
mkdir "$tmp/dir"

# no_kvm ARGS...: brisk on a host that refuses KVM.
if [ ! -e /dev/kvm ]; then
	no_kvm() { "$brisk" "$@"; }
	how="no /dev/kvm here"
elif [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
	no_kvm() { unshare -m --propagation private sh -c \
		'mount --bind /dev/null /dev/kvm && exec "$@"' sh "$brisk" "$@"; }
	how="a mount namespace with /dev/null as /dev/kvm"
elif unshare -rm true 2>/dev/null; then
	no_kvm() { unshare -rm sh -c \
		'mount --bind /dev/null /dev/kvm && exec "$@"' sh "$brisk" "$@"; }
	how="a user and mount namespace with /dev/null as /dev/kvm"
else
	tap_skip "command lines checked before /dev/kvm" \
		"/dev/kvm is here and no mount namespace can hide it (not root, no user namespaces)"
	tap_done
fi
tap_diag "a host that refuses KVM: $how"

K=(-kernel "$kernel" -m 64M)
D="file=$tmp/disk.img,if=none,id=d0"
table=$(cat <<'ROWS'
/dev/kvm|
iothreads=3 exceeds num-queues=2 (the vCPU count)|-smp 2 -drive @D -device virtio-blk-pci,drive=d0,iothreads=3
iothreads=2 exceeds num-queues=1$|-drive @D -device virtio-blk-pci,drive=d0,num-queues=1,iothreads=2
serial: cannot open '@/dir/missing/log': No such file or directory|-serial file:@/dir/missing/log
serial: cannot open '@/dir': Is a directory|-serial file:@/dir
looks like a qcow2 image|-drive file=@/q.img,if=virtio
Failed to get "write" lock|-drive @D -drive file=@/disk.img,if=virtio -device virtio-blk-pci,drive=d0
initrd '@/fifo' is not a regular file or block device|-initrd @/fifo
No such file|-drive file=@/missing.img
No such file|-chardev socket,id=c0,path=@/missing.sock -device vhost-user-blk-pci,chardev=c0
period=0|-device virtio-rng-pci,period=0
ROWS
)
while IFS='|' read -r word args; do
	args=${args//@D/$D}
	word=${word//@/$tmp}
	read -r -a argv <<<"${args//@/$tmp}"
	timeout 20 bash -c "$(declare -f no_kvm); brisk=\$1; shift; no_kvm \"\$@\"" \
		sh "$brisk" "${K[@]}" "${argv[@]}" </dev/null >"$tmp/out" 2>"$tmp/err"
	rc=$?
	lines=$(wc -l <"$tmp/err")
	desc=${args//@/$tmp}
	desc=${desc:-a valid command line}
	if [ "$rc" -ne 1 ] || [ "$lines" -ne 1 ] || ! grep -q "^brisk: .*$word" "$tmp/err" ||
	   { [ "$word" != /dev/kvm ] && grep -qi kvm "$tmp/err"; }; then
		tap_fail "$desc: one line with '$word'" "status $rc, $lines stderr lines:
$(cat "$tmp/err")"
	else
		tap_check "$desc -> $(cat "$tmp/err")" true
	fi
done <<<"$table"
tap_done
