#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# guest-faults.sh --brisk PATH [--runs N] [--workload reset|boot|io|mem]
#                 [--vmms brisk,qemu] [--outdir DIR] [--timeout S] [--trace]
#                 [--nested-mem MB]
#
# How often does the same guest crash under brisk and under
# qemu-system-x86_64 -accel kvm, booted alternately in one with-kvm host?
# Each boot ends in one of: ok, triple (brisk: "guest triple fault";
# QEMU: exit 0 without the guest's last line, which -no-reboot makes of a
# reset, and the guest here never reboots), panic (the guest kernel's own
# report, e.g. a double fault, reached pvpanic), hang (the guard timeout)
# or other.  Prints one line per boot, then the counts per VMM.  Console
# and stderr of every boot that was not ok are kept in DIR.  With --trace,
# KVM's own tracepoints (exits, entries, injected interrupts and
# exceptions) are on during each boot, and the last events before a boot
# that was not ok are kept too: what KVM did to the vCPU just before it
# died, whichever VMM asked for the VM.  --nested-mem sizes the nested
# host (with-kvm --mem), whose own memory pressure is one suspect.
#
# Workloads (the same kernel, initramfs, disks and command line for both
# VMMs):
#   reset  blk-init.sh's driver reset, 6 unbind/bind cycles per disk with
#          I/O in flight, -smp 2 (where guest faults were seen most)
#   io     blk-init.sh's plain reads and writes on a split and a packed
#          disk, -smp 2
#   boot   guest-init.sh: boot and power off, -smp 1
#   mem    blk-init.sh's tmpfs fill, 4 x 768 MiB, -m 6G -smp 8: memory
#          above 4 GiB, touched page by page (no disks)
# Only guests the VMMs can both run are used: no hardreset (QEMU keeps a
# device dead after a status write of 0 the same way, but the guest then
# hangs on the flush at poweroff under both).

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
me=$here/$(basename "${BASH_SOURCE[0]}")

brisk= runs=10 workload=reset vmms=brisk,qemu outdir=$src/build-bench/guest-faults
timeout= kernel= inner= trace= nested_mem=3072
while [ $# -gt 0 ]; do
	case $1 in
	--brisk) brisk=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--workload) workload=$2; shift 2 ;;
	--vmms) vmms=$2; shift 2 ;;
	--outdir) outdir=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--trace) trace=1; shift ;;
	--nested-mem) nested_mem=$2; shift 2 ;;
	--inner) inner=1; shift ;;
	*) sed -n '4,5s/^# \{0,1\}//p' "$me" >&2; exit 2 ;;
	esac
done
. "$here/../lib/die.sh"
case $runs in ''|*[!0-9]*) die "--runs: not a number: $runs" ;; esac
case $workload in reset|io|boot|mem) ;; *) die "--workload: reset, io, boot or mem" ;; esac
guard=150
MiB=1048576

if [ -z "$inner" ]; then
	[ -n "$brisk" ] && [ -x "$brisk" ] || die "--brisk PATH to a built brisk is required"
	brisk=$(realpath "$brisk")
	command -v qemu-system-x86_64 >/dev/null ||
		die "no qemu-system-x86_64; run: apt-get install qemu-system-x86"
	if [ -z "$kernel" ]; then
		. "$src/tests/kvm/lib/kmod.sh"
		kver=$(kmod_newest_kver) || die "no kernel in /boot; run: apt-get install linux-image-amd64"
		kernel=/boot/vmlinuz-$kver
	fi
	mkdir -p "$outdir" && outdir=$(realpath "$outdir") || exit 1
	if [ "$workload" = boot ]; then
		"$src/tests/kvm/mkinitrd" -o "$outdir/guest.img" -i "$src/tests/kvm/guest-init.sh" || exit 1
	else
		for p in pa pb pc; do head -c $MiB /dev/urandom >"$outdir/$p"; done
		"$src/tests/kvm/mkinitrd" -o "$outdir/guest.img" -i "$src/tests/kvm/blk-init.sh" \
			-f "$outdir/pa:/pat/pa" -f "$outdir/pb:/pat/pb" -f "$outdir/pc:/pat/pc" || exit 1
	fi
	n=$(( $(echo "$vmms" | tr ',' '\n' | wc -l) * runs ))
	cd "$outdir" || exit 1
	exec "$src/tests/kvm/with-kvm" --timeout "${timeout:-$((n * guard + 60))}" --mem "$nested_mem" \
		--brisk "$brisk" --work "$outdir" -- "$me" --inner --brisk "$brisk" \
		--runs "$runs" --workload "$workload" --vmms "$vmms" --outdir "$outdir" \
		--kernel "$kernel" ${trace:+--trace}
fi

# ---- inside with-kvm -------------------------------------------------------
cd "$outdir" || exit 1
case $workload in
reset)
	smp=2 last=BLK-DONE
	append="console=ttyS0 quiet"
	for i in 1 2 3 4 5 6; do append="$append blk.reset=brisk-r1 blk.reset=brisk-r2"; done ;;
io)
	smp=2 last=BLK-DONE
	append="console=ttyS0 quiet blk.w=brisk-r1:3:pa blk.r=brisk-r1:5 blk.w=brisk-r2:6:pb blk.r=brisk-r2:9"
	for i in 1 2 3 4 5 6; do append="$append blk.r=brisk-r1:5 blk.r=brisk-r2:9"; done ;;
boot)
	smp=1 last=action=poweroff
	append="console=ttyS0 quiet brisk.test=poweroff" ;;
mem)
	smp=8 mem=6G last=BLK-DONE
	append="console=ttyS0 quiet blk.mem=768:pa blk.mem=768:pb blk.mem=768:pc blk.mem=768:pa" ;;
esac
mem=${mem:-512M}
disks() {
	[ "$workload" = boot ] || [ "$workload" = mem ] && return
	rm -f r.raw s.raw
	truncate -s $((64 * MiB)) r.raw s.raw
	dd if=pb of=r.raw bs=1M seek=5 conv=notrunc status=none
	dd if=pc of=s.raw bs=1M seek=9 conv=notrunc status=none
}
brisk_disks=() qemu_disks=()
if [ "$workload" != boot ] && [ "$workload" != mem ]; then
	brisk_disks=(-drive file=r.raw,if=none,id=d0,format=raw,aio=io_uring,cache=none
		-device virtio-blk-pci,drive=d0,packed=off,queue-size=256,serial=brisk-r1
		-drive file=s.raw,if=none,id=d1,format=raw,aio=io_uring,cache=writeback
		-device virtio-blk-pci,drive=d1,packed=on,num-queues=2,queue-size=1024,serial=brisk-r2)
	qemu_disks=("${brisk_disks[@]}")
fi

tr=
if [ -n "$trace" ]; then
	tr=/sys/kernel/tracing
	[ -e $tr/trace ] || mount -t tracefs tracefs $tr || die "--trace: no tracefs"
	echo 8192 >$tr/buffer_size_kb
	for e in kvm_exit kvm_entry kvm_inj_virq kvm_inj_exception kvm_apic_accept_irq \
		kvm_msi_set_irq kvm_set_irq; do
		echo 1 >$tr/events/kvm/$e/enable || die "--trace: no kvm:$e tracepoint"
	done
fi

# boot VMM N: runs one boot, prints "N VMM OUTCOME SECONDS [DETAIL]".
boot() {
	local vmm=$1 i=$2 log=$outdir/$1-$2 rc t0 outcome detail
	disks
	if [ "$vmm" = brisk ]; then
		cmd=("$brisk" -kernel "$kernel" -initrd guest.img -append "$append"
			-m "$mem" -smp "$smp" -timeout "$guard" "${brisk_disks[@]}")
	else
		cmd=(timeout "$guard" qemu-system-x86_64 -accel kvm -cpu host -machine q35
			-m "$mem" -smp "$smp" -kernel "$kernel" -initrd guest.img
			-append "$append" -nodefaults -display none -vga none -monitor none
			-serial stdio -device pvpanic -action panic=exit-failure -no-reboot
			"${qemu_disks[@]}")
	fi
	[ -n "$tr" ] && : >$tr/trace && echo 1 >$tr/tracing_on
	t0=$EPOCHREALTIME
	timeout -s KILL $((guard + 20)) "${cmd[@]}" </dev/null >"$log.log" 2>"$log.err"
	rc=$?
	[ -n "$tr" ] && echo 0 >$tr/tracing_on
	detail=$(grep -m1 -aE 'double fault|general protection|Oops|BUG:|Kernel panic|triple fault|unhandled' \
		"$log.log" "$log.err" 2>/dev/null | sed 's/^[^:]*://' | tr -d '\r')
	if grep -qax "$last" <(tr -d '\r' <"$log.log"); then
		[ $rc -eq 0 ] && outcome=ok || outcome=other
	elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		outcome=hang
	elif [ "$vmm" = brisk ] && [ $rc -eq 1 ] && grep -q 'triple fault' "$log.err"; then
		outcome=triple
	elif [ "$vmm" = brisk ] && [ $rc -eq 2 ]; then
		outcome=panic
	elif [ "$vmm" = qemu ] && [ $rc -eq 0 ]; then
		outcome=triple
	elif [ "$vmm" = qemu ] && [ $rc -eq 1 ] && [ -n "$detail" ]; then
		outcome=panic
	else
		outcome=other
	fi
	if [ "$outcome" = ok ]; then
		rm -f "$log.log" "$log.err"
	elif [ -n "$tr" ]; then
		tail -n 2000 $tr/trace >"$log.trace"
	fi
	printf '%s %s %s %s rc=%s %s\n' "$i" "$vmm" "$outcome" \
		"$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')" "$rc" "$detail"
}

res=$outdir/results
: >"$res"
echo "# route ${BRISK_WITH_KVM_ROUTE:-unknown}, workload $workload, kernel $kernel," \
	"$(awk '/^MemTotal:/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo) here"
echo "# append: $append"
IFS=, read -r -a order <<<"$vmms"
for i in $(seq 1 "$runs"); do
	# The order rotates from run to run, so drifts hit every VMM alike.
	for k in "${!order[@]}"; do
		v=${order[$(( (k + i) % ${#order[@]} ))]}
		boot "$v" "$i" | tee -a "$res"
	done
done
echo "# vmm boots ok triple panic hang other"
for v in "${order[@]}"; do
	awk -v v="$v" '$2 == v { n++; c[$3]++ }
		END { printf "# %s %d %d %d %d %d %d\n", v, n, c["ok"], c["triple"], c["panic"], c["hang"], c["other"] }' "$res"
done
