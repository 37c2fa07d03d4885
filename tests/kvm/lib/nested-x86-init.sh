#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The nested x86 host's /init (busybox sh): it loads the modules, mounts
# this host's / read-only over 9p, the work folder writable and the ctl
# share, then runs with-kvm's command chrooted into that view, with two
# heartbeats beside it.  The work share goes last so a work dir under /tmp
# or /run is not hidden by the tmpfs mounted there.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# No /dev/console node in the initramfs: take it from devtmpfs so what
# goes wrong here lands in the console log.
exec </dev/console >/dev/console 2>&1
while read -r m; do
	insmod "/lib/modules/$m" 2>/dev/null
done </lib/modules/order
o=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o $o,cache=none ctl /ctl || { echo "init: no ctl share"; poweroff -f; }
. /ctl/config
r=/root
# Host paths under /tmp or /run the command needs, one per line.
bind_shares() {
	while read -r d; do
		[ -n "$d" ] || continue
		mkdir -p "$r$d" && mount -o bind "/hv$d" "$r$d" || return 1
	done </ctl/shares
}
mount -t 9p -o $o,ro,cache=loose hostroot $r &&
mount -t proc proc $r/proc &&
mount -t sysfs sys $r/sys &&
mount -t devtmpfs dev $r/dev &&
mkdir -p /hv/tmp /hv/run &&
mount -o bind $r/tmp /hv/tmp &&
mount -o bind $r/run /hv/run &&
mount -t tmpfs tmp $r/tmp &&
mount -t tmpfs run $r/run &&
mkdir -p $r/run/with-kvm $r/dev/pts $r/dev/shm &&
mount -t devpts pts $r/dev/pts &&
mount -t tmpfs shm $r/dev/shm &&
ln -s /proc/self/fd $r/dev/fd &&
ln -s /proc/self/fd/0 $r/dev/stdin &&
ln -s /proc/self/fd/1 $r/dev/stdout &&
ln -s /proc/self/fd/2 $r/dev/stderr &&
bind_shares &&
mkdir -p "$r$WORK" &&
mount -t 9p -o $o,cache=none work "$r$WORK" &&
mount -o bind /ctl $r/run/with-kvm || { echo "init: mounts failed"; cat /proc/mounts; poweroff -f; }
[ -c /dev/kvm ] || echo "init: warning: no /dev/kvm in the nested host" >>/ctl/err
# A host has its loopback: user networking's forwards listen on 127.0.0.1.
/bin/busybox ip link set lo up || echo "init: warning: no loopback" >>/ctl/err
echo "inner host up" >/ctl/up
# Two heartbeats, ahead of the guests' vCPUs (nice -20), so that silence
# means a wedge, not a busy host: one through the ctl share (9p), one on
# the serial console (a port write the emulator takes at once), so that a
# stalled 9p share is told apart from a stalled host.
(n=0; while :; do n=$((n + 1)); echo $n >/ctl/beat; sleep 5; done) &
/bin/busybox renice -n -20 -p $! >/dev/null
(n=0; while :; do n=$((n + 1)); echo "with-kvm: beat $n" >/dev/console; sleep 5; done) &
/bin/busybox renice -n -20 -p $! >/dev/null
chroot $r /bin/bash /run/with-kvm/cmd.sh </dev/null >>/ctl/out 2>>/ctl/err &
pid=$!
(sleep "$TIMEOUT"; echo 124 >/ctl/rc; echo "with-kvm: timed out after ${TIMEOUT}s" >>/ctl/err; poweroff -f) &
wait $pid
echo $? >/ctl/rc
poweroff -f
