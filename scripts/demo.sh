#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The newcomer's first run: installs what is missing, builds brisk, boots
# Debian's kernel with a busybox + fio initramfs and a virtio-blk disk, and
# runs a short fio randread (4k, iodepth 64, io_uring, O_DIRECT) on
# /dev/vda inside the guest, printing its IOPS.  Where this machine's
# /dev/kvm cannot run an ordinary guest (none, or kvm_pvm's) the guest runs
# inside the nested host of tests/kvm/with-kvm (slow, but real KVM), and
# the script says why.
#
#   scripts/demo.sh [--runtime SECONDS] [--packed]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

runtime=5 packed=off
while [ $# -gt 0 ]; do
	case $1 in
	--runtime) runtime=$2; shift 2 ;;
	--packed) packed=on; shift ;;
	*) echo "usage: scripts/demo.sh [--runtime SECONDS] [--packed]" >&2; exit 2 ;;
	esac
done

scripts/setup-debian.sh
if [ -f build/build.ninja ]; then meson setup --reconfigure build >/dev/null; else meson setup build >/dev/null; fi
meson compile -C build >/dev/null
echo "demo: built build/brisk ($(build/brisk --version))"

work=$top/build/demo
mkdir -p "$work"
kernel=$(tests/bench/fio/mkimage.sh "$work/fio.cpio")
if [ ! -f "$work/disk.raw" ]; then
	# Written once with data so the reads hit allocated blocks.
	dd if=/dev/urandom of="$work/disk.raw.tmp" bs=1M count=256 status=none
	mv "$work/disk.raw.tmp" "$work/disk.raw"
fi

cat > "$work/run.sh" <<EOS
#!/bin/bash
cd "$work"
exec "$top/build/brisk" -kernel "$kernel" -initrd fio.cpio \\
	-append "console=ttyS0 quiet fio.runtime=$runtime fio.ramp_time=1" \\
	-m 1G -smp 1 -timeout 900 \\
	-drive file=disk.raw,if=none,id=d0,format=raw,aio=io_uring,cache=none \\
	-device virtio-blk-pci,drive=d0,packed=$packed,queue-size=256,serial=brisk-demo
EOS
chmod +x "$work/run.sh"

# with-kvm says which route it takes and why: natively only where brisk's
# own check finds that /dev/kvm runs ordinary guests, else a nested host
# (a few minutes).
echo "demo: brisk -kernel $kernel -initrd fio.cpio -m 1G -smp 1 -drive file=disk.raw,... -device virtio-blk-pci,drive=d0,packed=$packed"
status=0
tests/kvm/with-kvm --timeout 1200 --work "$work" -- "$work/run.sh" |
	tee "$work/console.log" || status=$?
if [ "$status" -ne 0 ]; then
	echo "demo: brisk exited with status $status" >&2
	exit 1
fi
# terse v3: field 8 is read IOPS
iops=$(awk -F';' '/^@@FIO terse 3;/ { print $8 }' "$work/console.log" | head -1)
[ -n "$iops" ] || { echo "demo: no fio result on the console" >&2; exit 1; }
echo "demo: guest saw /dev/vda (256 MiB virtio-blk, packed=$packed); fio randread 4k QD64: $iops IOPS"
