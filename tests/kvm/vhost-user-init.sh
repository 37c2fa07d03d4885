#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# /init of the vhost-user interop guest (tests/kvm/vhost-user-tests.sh),
# in the image tests/bench/fio/mkimage.sh builds: busybox, fio and the
# virtio modules.  It judges nothing: it prints "VU ..." lines the host
# checks.  Disks are told apart by size in MiB, which the host picks.
# Work comes from the kernel command line, in this order:
#   vu.disks=N     wait for N virtio disks, list them (size, queues, ring)
#   vu.check=LIST  md5 of the 1 MiB regions at each MiB of LIST (a,b,c)
#   vu.fio=MIB     fio random writes with verify on every disk at once, two
#                  jobs per disk of MIB each, one per vCPU (so per queue)
#   vu.pause=1     say "VU idle", wait for a console line, then fio verify
#                  only (what the first run wrote) and a fresh run
#   vu.busy=MIB    on the disk of MIB MiB, fio random writes with verify
#                  (8 MiB at 16 MiB); once 100 writes are done, say "VU
#                  busy" and wait for a console line (the host kills that
#                  disk's back-end meanwhile), then "VU fio busy rc=N"
#   vu.write=N     N rounds: per disk, 1 MiB of random data at MiB 64+i,
#                  O_DIRECT and flushed, then "VU acked DISK MIB MD5"
# then power off.

/bin/busybox mkdir -p /proc /sys /dev /tmp /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1

say() { echo "VU $*"; }
stop() { say end; poweroff -f; sleep 5; echo o >/proc/sysrq-trigger; }

while read -r ko; do
	insmod "$ko" || say "error insmod $ko"
done </etc/fio-modules

arg() { # arg NAME: its value on the kernel command line
	for w in $(cat /proc/cmdline); do
		case $w in "vu.$1="*) echo "${w#*=}"; return ;; esac
	done
}

n=$(arg disks)
i=0
while [ "$(ls -d /sys/block/vd* 2>/dev/null | wc -l)" -lt "${n:-1}" ]; do
	i=$((i + 1))
	[ $i -gt 600 ] && { say "error only $(ls /sys/block | tr '\n' ' ') after 60 s"; stop; }
	sleep 0.1
done
disks=
for d in /sys/block/vd*; do
	v=${d##*/}
	while [ ! -b "/dev/$v" ]; do sleep 0.1; done
	disks="$disks $v"
	# The negotiated feature bits, bit 0 first: bit 34 is the packed ring.
	f=$(cat "$d/device/features")
	say disk "$v" mib=$(($(cat "$d/size") / 2048)) mq=$(ls "$d/mq" | wc -l) \
		packed=$(echo "$f" | cut -c35) virtio=$(basename "$(readlink -f "$d/device")")
done

md5_at() { dd if="/dev/$1" bs=1M skip="$2" count=1 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1; }

check=$(arg check)
for v in $disks; do
	for m in $(echo "$check" | tr ',' ' '); do
		say md5 "$v" "$m" "$(md5_at "$v" "$m")"
	done
done

# One job per disk and vCPU; each job its own region, so verify is exact.
fio_run() { # fio_run TAG [FIO OPTIONS]
	local tag=$1 v
	shift
	set -- "$@" --rw=randwrite --bs=4k --ioengine=libaio --iodepth=8 --direct=1 \
		--verify=crc32c --verify_fatal=1 --numjobs=2 --cpus_allowed=0-1 \
		--cpus_allowed_policy=split --size="${mib}M" --offset_increment="${mib}M"
	for v in $disks; do
		set -- "$@" --name="$v" --filename="/dev/$v"
	done
	fio "$@" >/tmp/fio.out 2>&1
	say fio "$tag" rc=$?
	grep -i "err\|verify" /tmp/fio.out | head -n 5 | sed 's/^/VU fio-out /'
}

mib=$(arg fio)
if [ -n "$mib" ]; then
	fio_run first
	if [ "$(arg pause)" = 1 ]; then
		say idle
		read -r line
		say resumed
		fio_run verify-only --verify_only
		fio_run again --randseed=7
	fi
	busy=$(arg busy)
	if [ -n "$busy" ]; then
		for v in $disks; do
			[ $(($(cat "/sys/block/$v/size") / 2048)) = "$busy" ] && bdev=$v
		done
		fio --name=busy --filename="/dev/$bdev" --rw=randwrite --bs=4k --ioengine=libaio \
			--iodepth=16 --direct=1 --verify=crc32c --verify_fatal=1 --size=8M \
			--offset=16M >/tmp/busy.out 2>&1 &
		fpid=$!
		# Writes completed (field 5 of stat): fio is under way, requests out.
		i=0
		while [ "$(awk '{ print $5 }' "/sys/block/$bdev/stat")" -lt 100 ] &&
		      kill -0 $fpid 2>/dev/null && [ $i -lt 600 ]; do
			i=$((i + 1))
			sleep 0.1
		done
		say busy
		read -r line
		wait $fpid
		say fio busy rc=$?
		grep -i "err\|verify" /tmp/busy.out | head -n 5 | sed 's/^/VU fio-out /'
	fi
	# Which queue's vector each disk's interrupts came on.
	grep 'virtio[0-9]*-req' /proc/interrupts |
		awk '{ s = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print "VU irq", $NF, s }'
fi

rounds=$(arg write)
i=0
while [ "$i" -lt "${rounds:-0}" ]; do
	for v in $disks; do
		dd if=/dev/urandom of=/tmp/p bs=1M count=1 2>/dev/null
		if dd if=/tmp/p of="/dev/$v" bs=1M seek=$((64 + i)) oflag=direct conv=fsync 2>/dev/null; then
			say acked "$v" $((64 + i)) "$(md5sum </tmp/p | cut -d' ' -f1)"
		else
			say error write "$v" $((64 + i))
		fi
	done
	i=$((i + 1))
done
stop
