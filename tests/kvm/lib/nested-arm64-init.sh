# SPDX-License-Identifier: GPL-2.0-or-later
# The nested arm64 host's init (busybox sh), run by mkinitrd's /init once
# the modules are in: it mounts the ctl share and this host's folders at
# their own paths, then runs each job remote-run leaves in ctl/jobs until
# with-kvm asks it to stop.  It cannot chroot into this host's / as the
# x86 nested host does: the programs there are x86-64 ones.
mkdir -p /ctl /host
o=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o $o,cache=none ctl /ctl || { echo "init: no ctl share"; poweroff -f; }
. /ctl/config
bind_shares() {
	while read -r d; do
		[ -n "$d" ] || continue
		mkdir -p "$d" && mount -o bind "/host$d" "$d" || return 1
	done </ctl/binds
}
# /tmp first, so that a bound folder under /tmp is not hidden by it; the
# writable work share last, over any read-only folder holding it.
mount -t tmpfs tmp /tmp &&
mount -t 9p -o $o,ro,cache=loose hostroot /host &&
bind_shares &&
mkdir -p "$WORK" &&
mount -t 9p -o $o,cache=none work "$WORK" || { echo "init: mounts failed" >>/ctl/err; poweroff -f; }
[ -c /dev/kvm ] || echo "with-kvm: warning: no /dev/kvm in the nested arm64 host" >>/ctl/err
# A host has its loopback: user networking's forwards listen on 127.0.0.1.
/bin/busybox ip link set lo up || echo "with-kvm: warning: no loopback" >>/ctl/err
(while :; do date +%s >/ctl/beat; sleep 5; done) &
# Ahead of the guests' vCPUs: silence must mean a wedge, not a busy host.
busybox renice -n -20 -p $! >/dev/null
echo up >/ctl/up
# The kernel's line for each unhandled fault (arm64 leaves it off).
echo 1 >/proc/sys/debug/exception-trace 2>/dev/null
# Each job: remote-run leaves jobs/NAME/cmd and then jobs/NAME.go.
# A job that dies of a fault (SIGILL, SIGBUS, SIGFPE, SIGSEGV) gets the
# kernel's lines since it started on its stderr: the faulting thread, PC
# and registers, or an oops of this host's KVM, are known nowhere else
# (the console prints nothing at loglevel=0, and ctl goes with with-kvm).
run_job() {
	d=/ctl/jobs/$1
	(
		t0=$(cut -d' ' -f1 /proc/uptime)
		sh "$d/cmd" </dev/null >"$d/out" 2>"$d/err"
		rc=$?
		# Chosen by time stamp (a second's margin): a count of lines
		# stops growing once the ring buffer is full.
		case $rc in
		132|135|136|139)
			dmesg | awk -v t="$t0" '{ s = $0; sub(/^\[ */, "", s) }
				s + 1 >= t { print "nested arm64 host: " $0 }' >>"$d/err" ;;
		esac
		echo $rc >"$d/rc.tmp"
		mv "$d/rc.tmp" "$d/rc"
	) &
	while [ ! -e "$d/rc" ] && [ -d "$d" ]; do
		if [ -e "$d/kill" ] && [ -e "$d/pid" ]; then
			kill -"$(cat "$d/kill")" "$(cat "$d/pid" 2>/dev/null)" 2>/dev/null
			rm -f "$d/kill"
		fi
		sleep 0.1
	done
}
while [ ! -e /ctl/stop ]; do
	for g in /ctl/jobs/*.go; do
		[ -e "$g" ] || continue
		rm -f "$g"
		n=${g##*/}
		run_job "${n%.go}" &
	done
	sleep 0.1
done
poweroff -f
