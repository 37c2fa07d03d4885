# SPDX-License-Identifier: GPL-2.0-or-later
# Init of the virtio-blk test guest (run by mkinitrd's /init, busybox sh).
#
# The host side (blk-tests.sh) asserts on what this prints; the guest itself
# judges nothing.  Disks are found by serial, never by name, since probe
# order and a rebind may change which vdX a disk gets.  Work comes from the
# kernel command line, in order:
#   blk.w=SERIAL:MIB:PAT    write /pat/PAT at MiB offset, O_DIRECT, then sync
#   blk.r=SERIAL:MIB        print the md5 of 1 MiB at MiB offset, O_DIRECT
#   blk.ro=SERIAL:MIB:PAT   try to write; print the status and the error
#   blk.dw=SERIAL:MIB:PAT   write through the page cache (no O_DIRECT)
#   blk.sync=MARK           sync, fsync every disk, print MARK, then wait to be killed
#   blk.reset=SERIAL        unbind and rebind the disk's PCI function while
#                           I/O is in flight, then a fresh write/read
#   blk.hardreset=SERIAL    write 0 to the device status behind the driver's
#                           back while I/O is in flight (needs iomem=relaxed);
#                           the disk stays dead, so this goes last
#   blk.mem=MIB:PAT         fill a tmpfs file with MIB copies of /pat/PAT;
#                           print its md5 and how much of the Normal zone
#                           (RAM above 4 GiB) it took
#   blk.ext4=SERIAL         mkfs.ext4, mount -o discard, write files f0..f3
#                           with O_DIRECT from four CPUs spread evenly (one
#                           per queue of a 4-queue disk), punch a hole with
#                           fallocate -p, umount, e2fsck; print each step's
#                           status, md5s, the punched blocks and each
#                           queue's interrupts before and after the writes
#   blk.discard=SERIAL:MIB:LEN    blkdiscard LEN MiB at MIB
#   blk.zero=SERIAL:MIB:LEN       blkdiscard -z (write zeroes) there
#   blk.features=SERIAL     print the virtio feature bits the driver took;
#   blk.fio=SERIAL:MIB:LEN  fio random writes and verify in LEN MiB at MIB;
#                           print its status and the requests it made
#   blk.shell               sync, print BLK-SHELL, then read commands from
#                           the console until the host ends the VM
# The programs beyond busybox (mkfs.ext4, e2fsck, filefrag, blkdiscard,
# fallocate, fio) come from the host through mkinitrd -b.  busybox's shell
# runs its own applet for a bare name, so the two that share a name with
# one (blkdiscard, fallocate) are called by their path.
# Each 1 MiB pattern /pat/PAT is also on the host.  Output lines start with
# "BLK " so the host can pick them out of the kernel's messages.

out() { echo "BLK $*"; }

# dev_of SERIAL: the vdX whose serial is SERIAL and whose /dev node is
# there (sysfs shows a new disk a moment before devtmpfs makes its node),
# or nothing.
dev_of() {
	local d s
	for d in /sys/block/vd*; do
		[ -e "$d/serial" ] && [ "${d##*/}" != "$dead" ] || continue
		s=$(cat "$d/serial" 2>/dev/null)
		[ "$s" = "$1" ] && [ -b "/dev/${d##*/}" ] && { echo "${d##*/}"; return 0; }
	done
	return 1
}

# The PCI function under a disk: /sys/block/vdX/device is its virtio
# device, whose parent folder is named after the PCI address.
pci_of() {
	local p
	p=$(readlink -f "/sys/block/$1/device") || return 1
	p=${p%/*}
	echo "${p##*/}"
}

list_disks() {
	local d n mq
	for d in /sys/block/vd*; do
		n=${d##*/}
		[ -e "$d" ] && [ "$n" != "$dead" ] || continue
		mq=$(ls "$d/mq" 2>/dev/null | wc -l)
		# tags: the requests the driver keeps on a queue, at most the
		# ring's size.
		out "disk $n serial=$(cat "$d/serial" 2>/dev/null) sectors=$(cat "$d/size")" \
			"ro=$(cat "$d/ro") mq=$mq tags=$(cat "$d/mq/0/nr_tags" 2>/dev/null)" \
			"pci=$(pci_of "$n")"
	done
}

md5_at() { # md5_at DEV MIB
	dd if="/dev/$1" bs=1M skip="$2" count=1 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1
}

do_write() { # do_write SERIAL MIB PAT [direct]
	local dev rc err flag=
	dev=$(dev_of "$1") || { out "write $1 $2 no-disk"; return; }
	[ "$4" = direct ] && flag=oflag=direct
	err=$(dd if="/pat/$3" of="/dev/$dev" bs=1M seek="$2" count=1 conv=notrunc,fsync $flag 2>&1)
	rc=$?
	[ $rc -eq 0 ] || echo "$err"
	out "write $1 $2 rc=$rc"
}

do_read() { # do_read SERIAL MIB
	local dev
	dev=$(dev_of "$1") || { out "read $1 $2 no-disk"; return; }
	out "read $1 $2 md5=$(md5_at "$dev" "$2")"
}

do_rowrite() { # do_rowrite SERIAL MIB PAT
	local dev rc err
	dev=$(dev_of "$1") || { out "rowrite $1 no-disk"; return; }
	err=$(dd if="/pat/$3" of="/dev/$dev" bs=1M seek="$2" count=1 conv=notrunc oflag=direct 2>&1)
	rc=$?
	out "rowrite $1 rc=$rc err=$(echo "$err" | grep -i 'dd:' | head -n 1)"
	# The page cache path as well: a buffered write plus sync must not
	# reach the device either.
	err=$(dd if="/pat/$3" of="/dev/$dev" bs=1M seek="$2" count=1 conv=notrunc,fsync 2>&1)
	rc=$?
	out "rowrite-buffered $1 rc=$rc err=$(echo "$err" | grep -i 'dd:' | head -n 1)"
}

do_dwrite() { # do_dwrite SERIAL MIB PAT: through the page cache
	local dev rc
	dev=$(dev_of "$1") || { out "dwrite $1 no-disk"; return; }
	dd if="/pat/$3" of="/dev/$dev" bs=64k seek=$(($2 * 16)) count=16 conv=notrunc 2>/dev/null
	rc=$?
	out "dwrite $1 $2 rc=$rc"
}

# Keeps I/O in flight on NODE until /tmp/stop.N appears or the disk dies:
# reads and writes in the scratch area at 16..31 MiB, random offsets.
# /tmp/wrote.N appears once a write has completed.  NODE is a private
# block node: once unbind removes /dev/vdX, a dd opening that name would
# create a regular file there and hide the disk's node when it comes back.
io_loop() { # io_loop NODE N
	while [ ! -e "/tmp/stop.$2" ]; do
		dd if="$1" of=/dev/null bs=64k count=32 skip=$((256 + RANDOM % 224)) \
			iflag=direct 2>/dev/null || break
		dd if=/pat/pa of="$1" bs=64k count=8 seek=$((256 + RANDOM % 248)) \
			conv=notrunc oflag=direct 2>/dev/null || break
		: >"/tmp/wrote.$2"
	done
}

# Centiseconds since the guest booted: a clock, unlike a count of sleeps,
# which a stalled or slow guest stretches.
now_cs() { local u; read -r u _ </proc/uptime; u=${u%.*}${u#*.}; echo $((10#$u)); }

# Waits (up to 90 s of the guest's clock) until the loops on DEV have
# completed a write and reads and writes are both in flight at the same
# moment, then returns at once, so what follows hits the device busy;
# prints what it saw.  A guest slowed by its host may take seconds to get
# the loops going, which a fixed sleep would not cover.
wait_busy() { # wait_busy DEV N LABEL
	local r=0 w=0 t0 t
	t0=$(now_cs) t=$t0
	while [ $((t - t0)) -lt 9000 ]; do
		read -r r w <"/sys/block/$1/inflight"
		[ -e "/tmp/wrote.$2" ] && [ "$r" -gt 0 ] && [ "$w" -gt 0 ] && break
		sleep 0.05
		t=$(now_cs)
	done
	out "$3 inflight=reads:$r,writes:$w wrote=$([ -e "/tmp/wrote.$2" ] && echo yes || echo no) waited=$(((t - t0) / 100))s"
}

do_reset() { # do_reset SERIAL
	local s=$1 dev pci i pids= t node
	dev=$(dev_of "$s") || { out "reset $s no-disk"; return; }
	pci=$(pci_of "$dev")
	node=/tmp/node.$s
	rm -f "$node" "/tmp/stop.$s"
	mknod "$node" b $(tr ':' ' ' <"/sys/block/$dev/dev") || { out "reset $s mknod failed"; return; }
	rm -f "/tmp/wrote.$s"
	for i in 1 2 3 4; do
		io_loop "$node" "$s" &
		pids="$pids $!"
	done
	wait_busy "$dev" "$s" "reset $s"
	echo "$pci" >/sys/bus/pci/drivers/virtio-pci/unbind
	out "reset $s unbind rc=$? gone=$([ -e /sys/block/$dev ] && echo no || echo yes)"
	: >"/tmp/stop.$s"
	# Loops still inside dd on the dead disk get errors and leave.
	t=0
	for i in $pids; do
		while kill -0 "$i" 2>/dev/null && [ $t -lt 300 ]; do
			sleep 0.1; t=$((t + 1))
		done
	done
	kill $pids 2>/dev/null
	wait $pids 2>/dev/null
	rm -f "$node"
	echo "$pci" >/sys/bus/pci/drivers/virtio-pci/bind
	out "reset $s bind rc=$?"
	t=0
	until dev=$(dev_of "$s"); do
		[ $t -ge 100 ] && break
		sleep 0.1; t=$((t + 1))
	done
	if [ -z "$dev" ]; then
		out "reset $s back=no"
		return
	fi
	out "reset $s back=yes dev=$dev"
	do_write "$s" 40 pc direct
	do_read "$s" 40
}

# Physical address of the device_status byte of a virtio PCI function:
# walks the capability list in config space to the common configuration
# (vendor cap 0x09, cfg_type 1), then adds its BAR's base.
status_addr() { # status_addr PCI
	local d=/sys/bus/pci/devices/$1 bar off base
	set -- $(od -An -tu1 -v "$d/config" | awk '
		{ for (i = 1; i <= NF; i++) b[n++] = $i }
		END {
			p = b[52]
			while (p && p < n) {
				if (b[p] == 9 && b[p + 3] == 1) {
					print b[p + 4], b[p + 8] + 256 * (b[p + 9] + 256 * (b[p + 10] + 256 * b[p + 11]))
					exit
				}
				p = b[p + 1]
			}
		}')
	bar=$1 off=$2
	[ -n "$off" ] || return 1
	base=$(sed -n "$((bar + 1))p" "$d/resource" | cut -d' ' -f1)
	printf '0x%x\n' $((base + off + 20))
}

do_hardreset() { # do_hardreset SERIAL
	local s=$1 dev pci addr i pids= rc now
	dev=$(dev_of "$s") || { out "hardreset $s no-disk"; return; }
	pci=$(pci_of "$dev")
	addr=$(status_addr "$pci") || { out "hardreset $s no-common-cfg"; return; }
	out "hardreset $s status=$(devmem "$addr" 8) at $addr"
	rm -f "/tmp/wrote.h$s"
	for i in 1 2 3 4; do
		io_loop "/dev/$dev" "h$s" &
		pids="$pids $!"
	done
	wait_busy "$dev" "h$s" "hardreset $s"
	devmem "$addr" 8 0
	rc=$?
	# A device with requests of the old driver in its backend reads
	# non-zero until they are back; drivers poll (VIRTIO 1.2, 4.1.4.3.2).
	for i in $(seq 1 200); do
		now=$(devmem "$addr" 8)
		[ "$now" = 0x00 ] && break
		sleep 0.01
	done
	out "hardreset $s wrote status=0 rc=$rc now=$now"
	# Its serial is read by a request too, which would never complete.
	dead=$dev
	: >"/tmp/stop.h$s"
	# Requests the device dropped never complete: the loops stay stuck
	# in D state and the guest goes on without them.  Kicks may still
	# come from the driver; the device must ignore them.
	sleep 3
	set -- $(cat "/sys/block/$dev/inflight")
	out "hardreset $s after inflight=reads:$1,writes:$2"
}

# Pages free in the Normal zone, the RAM above 4 GiB, and its first page.
normal_zone() { # normal_zone free|start
	awk -v want="$1" '$1 == "Node" { z = $4 }
		z == "Normal" && want == "free" && $1 == "pages" && $2 == "free" { print $3; exit }
		z == "Normal" && want == "start" && $1 == "start_pfn:" { print $2; exit }' /proc/zoneinfo
}

do_mem() { # do_mem MIB PAT
	local f0 f1 i=0
	mkdir -p /big && mount -t tmpfs -o size=$(($1 + 64))m,huge=never tmp /big ||
		{ out "mem mount failed"; return; }
	f0=$(normal_zone free)
	while [ $i -lt "$1" ]; do cat "/pat/$2"; i=$((i + 1)); done >/big/f
	f1=$(normal_zone free)
	out "mem normal_start_pfn=$(normal_zone start) normal_used_kb=$(( (f0 - f1) * 4 ))" \
		"md5=$(md5sum </big/f | cut -d' ' -f1)"
	umount /big
}

# Interrupts each request queue of DEV has raised, from its MSI-X
# vectors in /proc/interrupts: "q0=N q1=N ...".
queue_irqs() {
	local v
	v=$(readlink -f "/sys/block/$1/device") && v=${v##*/}
	awk -v v="$v" '{
		n = 0
		for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i
		if ($NF ~ "^" v "-req\\.[0-9]+$") { q = $NF; sub(/.*\./, "", q); printf "q%s=%d ", q, n }
	}' /proc/interrupts
}

do_ext4() { # do_ext4 SERIAL
	local dev c i pats="pa pb pc pa" p step
	dev=$(dev_of "$1") || { out "ext4 $1 no-disk"; return; }
	# nodiscard: the only discards this disk sees are the punch's.
	mkfs.ext4 -q -F -b 4096 -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "/dev/$dev"
	out "ext4 mkfs rc=$?"
	mkdir -p /mnt && mount -t ext4 -o discard "/dev/$dev" /mnt
	out "ext4 mount rc=$?"
	out "ext4 irqs-before $(queue_irqs "$dev")"
	# blk-mq spreads the queues evenly over the CPUs: CPU i * step is
	# on queue i.
	step=$(($(nproc) / 4))
	[ $step -ge 1 ] || step=1
	set -- $pats
	for i in 0 1 2 3; do
		p=$1; shift
		taskset -c $((i * step)) dd if="/pat/$p" of="/mnt/f$i" bs=64k oflag=direct conv=fsync 2>/dev/null &
	done
	wait
	for i in 0 1 2 3; do
		taskset -c $((i * step)) dd if="/mnt/f$i" of=/dev/null bs=64k iflag=direct 2>/dev/null
	done
	out "ext4 irqs-after $(queue_irqs "$dev")"
	for i in 1 2 3 4; do cat /pat/pb; done >/mnt/punch
	sync
	filefrag -v /mnt/punch | awk '$1 ~ /^[0-9]+:$/ {
		gsub(/\.\./, " "); gsub(/:/, " "); print "BLK ext4 extent", $2, $3, $4, $5 }'
	/bin/fallocate -p -o 1048576 -l 2097152 /mnt/punch
	out "ext4 punch rc=$?"
	# The freed blocks are discarded when the journal commits them.
	sync
	for i in 0 1 2 3; do out "ext4 md5 f$i $(md5sum </mnt/f$i | cut -d' ' -f1)"; done
	out "ext4 md5 punch $(md5sum </mnt/punch | cut -d' ' -f1)"
	umount /mnt
	out "ext4 umount rc=$?"
	e2fsck -fn "/dev/$dev" >/tmp/fsck.out 2>&1
	out "ext4 fsck rc=$?"
	[ -s /tmp/fsck.out ] && sed 's/^/fsck: /' /tmp/fsck.out | tail -n 5
}

do_discard() { # do_discard SERIAL MIB LEN [-z]
	local dev
	dev=$(dev_of "$1") || { out "discard$4 $1 no-disk"; return; }
	/bin/blkdiscard $4 -o $(($2 * 1048576)) -l $(($3 * 1048576)) "/dev/$dev"
	out "discard$4 $1 $2 rc=$?"
}

do_features() { # do_features SERIAL: bit 0 first, as sysfs has them
	local dev
	dev=$(dev_of "$1") || { out "features $1 no-disk"; return; }
	out "features $1 $(cat "/sys/block/$dev/device/features")"
}

do_fio() { # do_fio SERIAL MIB LEN
	local dev rc s0 s1
	dev=$(dev_of "$1") || { out "fio $1 no-disk"; return; }
	s0=$(awk '{ print $1 + $5 }' "/sys/block/$dev/stat")
	fio --name=wrap --filename="/dev/$dev" --offset=$(($2 * 1048576)) \
		--size=$(($3 * 1048576)) --ioengine=libaio --direct=1 --rw=randwrite \
		--bsrange=4k-32k --iodepth=32 --loops=4 --verify=crc32c --do_verify=1 \
		--verify_fatal=1 --eta=never --output=/tmp/fio.out
	rc=$?
	s1=$(awk '{ print $1 + $5 }' "/sys/block/$dev/stat")
	[ $rc -eq 0 ] || tail -n 20 /tmp/fio.out
	out "fio $1 rc=$rc requests=$((s1 - s0)) $(grep -o 'err= *[0-9]*' /tmp/fio.out | head -n 1)"
}

do_shell() {
	sync
	echo "BLK-SHELL"
	# The console is this shell's stdin: what the host types runs here.
	sh
}

dead=
echo "BLK-INIT-UP"
out "sys nproc=$(nproc) memtotal_kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
list_disks
for w in $(cat /proc/cmdline); do
	v=${w#*=}
	IFS=: read -r a b c <<EOF
$v
EOF
	case $w in
	blk.w=*) do_write "$a" "$b" "$c" direct ;;
	blk.r=*) do_read "$a" "$b" ;;
	blk.ro=*) do_rowrite "$a" "$b" "$c" ;;
	blk.dw=*) do_dwrite "$a" "$b" "$c" ;;
	blk.sync=*)
		# sync(2) writes a raw disk's cached pages but asks no disk to
		# flush; an fsync of each disk does (a virtio FLUSH).
		sync
		for d in /dev/vd[a-z]; do
			[ -b "$d" ] && sync "$d"
		done
		out "synced"
		# The host kills the VMM on this line; nothing after it may
		# be needed for the data to be on the host.
		echo "$v"
		while :; do sleep 1000; done
		;;
	blk.reset=*) do_reset "$v" ;;
	blk.hardreset=*) do_hardreset "$v" ;;
	blk.mem=*) do_mem "$a" "$b" ;;
	blk.ext4=*) do_ext4 "$v" ;;
	blk.discard=*) do_discard "$a" "$b" "$c" ;;
	blk.zero=*) do_discard "$a" "$b" "$c" -z ;;
	blk.features=*) do_features "$v" ;;
	blk.fio=*) do_fio "$a" "$b" "$c" ;;
	blk.shell) do_shell ;;
	esac
done
list_disks
# A disk whose device was reset behind the driver's back might never
# answer a flush.
[ -n "$dead" ] || sync
echo "BLK-DONE"
poweroff -f
