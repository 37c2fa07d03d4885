#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# boot-tests.sh [--brisk PATH | --qemu] [--outdir DIR] [--kernel BZIMAGE]
#               [--only NAME[,NAME...]]
#
# For an arm64 brisk the guest is Debian's arm64 kernel (scripts/arm64-debs.sh)
# with an arm64 busybox initramfs, booted in the nested arm64 host unless
# this host runs it natively; the checks are the same.
#
# Boots a busybox guest several times and checks brisk's exit-status
# contract (include/hw/machine.h) and what the guest sees: the init marker,
# nproc == -smp, MemTotal close to -m, /proc/cmdline holding -append intact;
# on x86 its RTC (time read, and the alarm's interrupt) in the poweroff boot,
# in local time (-rtc base=localtime) in the reboot boot, /dev/hwrng read
# through -device virtio-rng-pci in the poweroff boot, and a triple fault
# (exit 1); in the 4-CPU boot a CPU taken offline and back (arm64: PSCI);
# -timeout's exit 124 and one line, naming where each vCPU was, with a
# guest that never makes progress.
# All boots share one with-kvm host, since a nested host costs tens of
# seconds to start.  --qemu runs the same boots under qemu-system-x86_64
# -accel kvm (where QEMU differs, e.g. its panic status, the expectation
# follows QEMU).  Output is TAP, one line per check.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
me=$here/$(basename "${BASH_SOURCE[0]}")

vmm=brisk brisk= outdir=$PWD/boot-tests.d kernel= inner= only=
while [ $# -gt 0 ]; do
	case $1 in
	--brisk) brisk=$2; shift 2 ;;
	--qemu) vmm=qemu; shift ;;
	--outdir) outdir=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--inner) inner=1; shift ;;
	--only) only=$2; shift 2 ;;
	*) echo "usage: $0 [--brisk PATH | --qemu] [--outdir DIR] [--kernel BZIMAGE] [--only NAME,...]" >&2; exit 2 ;;
	esac
done

. "$here/lib/arch.sh"
arch=$(host_arch)
[ "$vmm" = brisk ] && [ -n "$brisk" ] && arch=$(elf_arch "$brisk" 2>/dev/null || host_arch)
if [ -z "$inner" ]; then
	# Host side: everything that needs no /dev/kvm happens here, where it
	# is fast; the boots run inside with-kvm.
	if [ "$vmm" = brisk ]; then
		[ -n "$brisk" ] || { echo "boot-tests: --brisk PATH or --qemu required" >&2; exit 2; }
		[ -x "$brisk" ] || { echo "boot-tests: $brisk is not an executable" >&2; exit 1; }
		brisk=$(realpath "$brisk")
	fi
	if [ -z "$kernel" ]; then
		. "$here/lib/kmod.sh"
		KMOD_ROOT=$(arch_root "$arch") || exit 1
		kver=$(kmod_newest_kver) || { echo "boot-tests: no $arch kernel; run: apt-get install $(arch_kernel_pkg "$arch")" >&2; exit 1; }
		kernel=$KMOD_ROOT/boot/vmlinuz-$kver
	fi
	mkdir -p "$outdir" && outdir=$(realpath "$outdir") || exit 1
	"$here/mkinitrd" -v -a "$arch" -o "$outdir/guest.img" -i "$here/guest-init.sh" \
		-m virtio_rng || exit 1
	cd "$outdir" || exit 1
	args=(--inner --outdir "$outdir" --kernel "$kernel" ${only:+--only "$only"})
	wk=()
	[ "$vmm" = qemu ] && args+=(--qemu) || { args+=(--brisk "$brisk"); wk=(--brisk "$brisk"); }
	exec "$here/with-kvm" --whole-stdout --timeout "${BRISK_BOOT_TESTS_TIMEOUT:-720}" \
		"${wk[@]}" --work "$outdir" -- "$me" "${args[@]}"
fi

# ---- inside with-kvm -------------------------------------------------------
initrd=$outdir/guest.img
# In the nested arm64 host brisk starts through remote-run, and SIGKILL
# reaches it as SIGUSR1 to remote-run.
run=(${BRISK_WITH_KVM_RUN:+"$BRISK_WITH_KVM_RUN"})
kill_sig=${BRISK_WITH_KVM_SIGKILL:-KILL}
console=$(arch_console "$arch")
# Debian's arm64 kernel has no pvpanic driver: there a panic can only
# reboot (panic=-1), which brisk ends with 0; status 2 is then checked by
# pvpanic-write, whose guest writes the register by hand.
pvpanic=1
zcat "$initrd" | cpio -t 2>/dev/null | grep -q 'pvpanic-mmio\.ko$' || pvpanic=
# The arm64 board has no I/O ports: its debug-exit register is MMIO, and
# so is pvpanic (docs/architecture.md).
dx_addr= pv_addr=
[ "$arch" = arm64 ] && dx_addr=0x09030000 pv_addr=0x09020000
# Characters the kernel's parser could mangle if brisk passed the command
# line carelessly: dots, dashes, commas, slashes, percent, tilde, at, plus.
token="brisk.tok=Zq9-x_7.k,/%~@+Ab"
mem_floor=87
# Bounds one boot should it hang; a nested boot takes about 40 s.
guard_s=${BRISK_BOOT_TESTS_GUARD:-90}

. "$here/../lib/tap.sh"
. "$here/lib/console.sh"
. "$here/lib/stuck-image.sh"
# vcpu_places: where a boot that hung was.
. "$here/lib/boot-end.sh"
# Seconds between two $EPOCHREALTIME stamps.
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# rtc_check NAME LOG: the guest's rtc= and hwclock= lines are within
# rtc_slack seconds of the host's clock when the host read them, and its
# alarm raised the RTC's interrupt.
rtc_slack=3
# rtc_time_check NAME LOG OFFSET WHAT: the guest's since_epoch is the host's
# clock plus OFFSET seconds.
rtc_time_check() {
	local t v
	read -r t v _ < <(sed -n 's/^\([^ ]*\) rtc=/\1 /p' "$2" | head -n 1)
	awk -v t="${t:-0}" -v v="$v" -v o="$3" -v l="$rtc_slack" \
		'BEGIN { exit !(v ~ /^[0-9]+$/ && v - t - o <= l && t + o - v <= l) }'
	tap_status $? "$1: RTC since_epoch within ${rtc_slack}s of the host's clock + $3 s ($4)" \
		"guest ${v:-nothing}, host ${t:-never}"
}
rtc_check() {
	local name=$1 log=$2 ret=0 t v s
	rtc_time_check "$name" "$log" 0 "UTC" || ret=1
	read -r t v < <(sed -n 's/^\([^ ]*\) hwclock=/\1 /p' "$log" | head -n 1)
	# busybox prints ctime()'s form and "  0.000000 seconds".
	s=$(date -u -d "${v%  *seconds}" +%s 2>/dev/null)
	awk -v t="${t:-0}" -v v="$s" -v l="$rtc_slack" \
		'BEGIN { exit !(v ~ /^[0-9]+$/ && v - t <= l && t - v <= l) }'
	tap_status $? "$name: hwclock -r within ${rtc_slack}s of the host's clock" \
		"guest '${v:-nothing}', host ${t:-never}" || ret=1
	t=$(sed -n 's/^[^ ]* rtc_irqs_before=//p' "$log" | head -n 1)
	v=$(sed -n 's/^[^ ]* rtc_irqs_after=//p' "$log" | head -n 1)
	[ -n "$t" ] && [ -n "$v" ] && [ "$v" -gt "$t" ]
	tap_status $? "$name: an RTC alarm 2 s ahead interrupted the guest (IRQ 8)" \
		"rtc0 interrupts ${t:-?} before, ${v:-?} after" || ret=1
	return $ret
}

# boot NAME SMP MEM-MB ACTION EXPECTED-STATUS [VMM-ARGS...]
boot() {
	local name=$1 smp=$2 mem_mb=$3 action=$4 want=$5; shift 5
	case ,$only, in ,,|*,"$name",*) ;; *) return 0 ;; esac
	# nokaslr: the kernel's System.map names where a hung guest was.
	local append="console=$console quiet nokaslr brisk.test=$action $token"
	[ -n "$dx_addr" ] && append="$append brisk.dx=$dx_addr"
	[ -n "$pv_addr" ] && append="$append brisk.pv=$pv_addr"
	[ "$action" = panic ] && [ -z "$pvpanic" ] && append="$append panic=-1"
	[ "$action" = triplefault ] && append="$append reboot=t"
	[ "$smp" = 4 ] && append="$append brisk.hotplug"
	local log=$outdir/$name.log cmd tz= rng=
	case " $* " in *" virtio-rng-pci "* | *" virtio-rng-pci,"*) rng=1 ;; esac
	# TZ=... first among the VMM's arguments: brisk's time zone.
	case ${1:-} in TZ=*) tz=$1; shift ;; esac
	if [ "$vmm" = brisk ]; then
		# brisk's own -timeout before the guard's kill: a guest that
		# hangs then says where each vCPU was (in brisk's line on stderr).
		local limit=()
		case " $* " in *" -timeout "*) ;; *) limit=(-timeout $((guard_s - 10))) ;; esac
		cmd=("${run[@]}" ${tz:+env "$tz"} "$brisk" -kernel "$kernel" -initrd "$initrd" -append "$append"
			-m "${mem_mb}M" -smp "$smp" "$@" "${limit[@]}")
	else
		cmd=(qemu-system-x86_64 -accel kvm -cpu host -machine q35
			-m "$mem_mb" -smp "$smp" -kernel "$kernel" -initrd "$initrd"
			-append "$append" -display none -monitor none -serial stdio
			-device pvpanic -action panic=exit-failure -no-reboot)
		# brisk's -timeout has no QEMU twin: timeout(1) exits 124 too.
		while [ $# -gt 0 ]; do
			case $1 in
			-timeout) cmd=(timeout "$2" "${cmd[@]}"); shift 2 ;;
			-no-reboot) shift ;;
			*) cmd+=("$1"); shift ;;
			esac
		done
	fi
	echo "# $name: ${cmd[*]}"
	local t0=$EPOCHREALTIME line rc t_end
	# SIGKILL, not TERM, so a hung VMM (137) is never mistaken for -timeout.
	timeout --preserve-status -s "$kill_sig" "$guard_s" "${cmd[@]}" </dev/null 2>"$log.err" |
		while IFS= read -r line; do
			printf '%s %s\n' "$EPOCHREALTIME" "${line%$'\r'}"
		done >"$log"
	rc=${PIPESTATUS[0]}
	t_end=$EPOCHREALTIME
	echo "# $name: exit $rc after $(elapsed "$t0" "$t_end")s"

	local got l
	tap_dirty=0
	tap_status $((rc != want)) "$name: exit status $want" "got $rc"
	# Any ASan, UBSan or LSan report fails the boot, whatever its status.
	l=$(grep -m 3 -E 'runtime error:|ERROR: [A-Za-z]*Sanitizer|SUMMARY: [A-Za-z]*Sanitizer' "$log.err")
	tap_status $([ -z "$l" ]; echo $?) "$name: no sanitizer report on stderr" "$(echo "$l" | tr '\n' ' ')"
	if [ "$action" = sleep ]; then
		# The guest may not even reach init before -timeout in a nested
		# host; what matters is that brisk neither quit early nor hung.
		awk -v d="$(elapsed "$t0" "$t_end")" -v l="$timeout_s" 'BEGIN { exit !(d >= l) }'
		tap_status $? "$name: ran at least ${timeout_s}s"
		[ "$tap_dirty" -eq 0 ] || sed 's/^/#   stderr: /' "$log.err" | tail -n 10
		return
	fi
	grep -q ' BRISK-INIT-UP$' "$log"
	tap_status $? "$name: guest init ran (serial marker)"
	if [ "$name" = dtb-smp1 ]; then
		got=$(sed -n 's/^[^ ]* dt_user=//p' "$log" | head -n 1)
		[ "$got" = yes ]
		tap_status $? "$name: the guest booted on the -dtb tree (its brisk-user-tree property)" \
			"got '$got'"
	fi
	if [ "$smp" = 4 ]; then
		got=$(sed -n 's/^[^ ]* cpu_off=//p' "$log" | head -n 1)/$(sed -n 's/^[^ ]* cpu_on=//p' "$log" | head -n 1)
		[ "$got" = 3/4 ]
		tap_status $? "$name: CPU 3 taken offline and back (nproc 3, then 4)" "got '$got'"
	fi
	if [ "$action" = triplefault ]; then
		[ "$(wc -l <"$log.err")" = 1 ] && grep -q 'triple fault' "$log.err"
		tap_status $? "$name: one line on stderr says the guest triple faulted" \
			"$(head -n 3 "$log.err" | tr '\n' ' ')"
	fi
	if [ -n "$rng" ]; then
		got=$(sed -n 's/^[^ ]* hwrng=//p' "$log" | head -n 1)
		[ "$got" = virtio_rng.0 ]
		tap_status $? "$name: the guest's /dev/hwrng is the virtio-rng-pci device" \
			"rng_current '${got}'"
		local a b
		a=$(sed -n 's/^[^ ]* hwrng_a=//p' "$log" | head -n 1)
		b=$(sed -n 's/^[^ ]* hwrng_b=//p' "$log" | head -n 1)
		# 32 bytes each; equal or all zero would be 2^-256 by chance.
		[[ $a =~ ^[0-9a-f]{64}$ && $b =~ ^[0-9a-f]{64}$ ]] && [ "$a" != "$b" ] &&
			[ "$a" != "$(printf '0%.0s' {1..64})" ]
		tap_status $? "$name: two 32-byte reads of /dev/hwrng differ and are not zero" \
			"got '$a' and '$b'"
	fi
	got=$(sed -n 's/^[^ ]* nproc=//p' "$log" | head -n 1)
	[ "$got" = "$smp" ]
	tap_status $? "$name: nproc == -smp $smp" "got '${got}'"
	got=$(sed -n 's/^[^ ]* memtotal_kb=//p' "$log" | head -n 1)
	# The kernel keeps its image, struct pages and firmware ranges out of
	# MemTotal: about 40 MiB plus 1.6%, so 89% of 512M, 93% of 1G under
	# QEMU.  Never above -m.
	local pct=0
	[ -n "$got" ] && pct=$((got * 100 / (mem_mb * 1024)))
	[ "$pct" -ge "$mem_floor" ] && [ "$pct" -le 100 ]
	tap_status $? "$name: MemTotal $pct% of -m ${mem_mb}M (${mem_floor}..100%)" "got ${got:-nothing} kB"
	got=$(sed -n 's/^[^ ]* cmdline=//p' "$log" | head -n 1)
	case $got in *"$append"*) true ;; *) false ;; esac
	tap_status $? "$name: /proc/cmdline holds -append intact" "got '$got'"

	# The RTC: what the guest read against the host's time at that line,
	# in one boot (the QEMU CI options' -rtc base=utc).
	if [ -n "$tz" ]; then
		rtc_time_check "$name" "$log" "$tz_offset" "-rtc base=localtime, $tz"
	elif [ "$action" = poweroff ] && [ "$arch" = x86_64 ]; then
		rtc_check "$name" "$log"
	elif [ "$action" = poweroff ]; then
		tap_skip "$name: the guest's RTC" "the check counts the CMOS RTC's IRQ 8, x86's; arm64's PL031 (time, alarm, interrupt) is checked by the unit test primecell"
	fi
	if [ "$action" = panic ] && [ -z "$pvpanic" ]; then
		# Nothing skipped: status 0 was checked above, and pvpanic's
		# status 2 is the pvpanic-write boot's (arm64's guest kernel
		# has no pvpanic driver).
		tap_diag "$name: the guest kernel has no pvpanic driver: it rebooted (exit 0); pvpanic-write-smp1 checks exit 2"
	elif [ "$action" = panic ] || [ "$action" = pvpanic-write ]; then
		# The exit status above already tells a pvpanic exit from -timeout
		# or a hang; how long the exit took is only reported, never judged.
		local t_panic
		t_panic=$(awk '$2 == "BRISK-PANIC-NOW" { print $1; exit }' "$log")
		tap_status $([ -n "$t_panic" ]; echo $?) "$name: the guest reached its panic"
		[ -z "$t_panic" ] || tap_diag "$name: exit $(elapsed "$t_panic" "$t_end")s after the panic"
	fi
	if [ "$tap_dirty" -ne 0 ]; then
		# A test runner shows a failed test's stderr, not its TAP comments.
		{
			echo "== $name: the console (its first oops, its last 30 lines), then brisk's stderr"
			sed 's/^[^ ]* //' "$log" | console_excerpt 30
			tail -n 10 "$log.err"
			[ "$vmm" = brisk ] && vcpu_places "$kernel" "$log.err"
		} | console_show
	fi
}

if [ "$vmm" = brisk ]; then panic_rc=2; else panic_rc=1; fi
[ -z "$pvpanic" ] && panic_rc=0
echo "# route: ${BRISK_WITH_KVM_ROUTE:-unknown}, vmm: $vmm, kernel: $kernel"
tap_diag "with-kvm: nested host start retries: ${BRISK_WITH_KVM_RETRIES:-0}"
dx=(-device isa-debug-exit,iobase=0xf4,iosize=0x04)
timeout_s=5
if [ "$vmm" = brisk ]; then
	# with-kvm came here only where brisk's check passes (or the nested
	# host, kvm_amd): brisk must agree, or every boot below would be
	# refused.
	out=$(timeout 20 "${run[@]}" "$brisk" --check-kvm 2>&1)
	tap_status $? "brisk --check-kvm: usable on the ${BRISK_WITH_KVM_ROUTE:-} route" "$(echo $out)"
	echo "$out" | sed 's/^/# /'
fi
# On the x86 nested route this runs in the nested host: its LAPIC timer
# must tick the way with-kvm was asked to, since a one-shot one is what
# the emulator's lost wake-ups freeze (tests/kvm/with-kvm).
if [ "${BRISK_WITH_KVM_ROUTE:-}" = nested ] && [ "$arch" != arm64 ]; then
	case ${BRISK_WITH_KVM_TICK:-periodic} in
	periodic) want=tick_handle_periodic ;;
	*) want=hrtimer_interrupt ;;
	esac
	got=$(awk '/^Clock Event Device: lapic/ { l = 1 }
		l && /event_handler:/ { print $2; exit }' /proc/timer_list 2>&1)
	[ "$got" = "$want" ]
	tap_status $? "nested host: its LAPIC timer's handler is $want" "it is: ${got:-none}"
fi
# The options QEMU CI command lines carry (tests/cli/qemu-lines.txt), in a
# real boot: the console must still be the console, -nodefaults and all.
qemu_ci=()
if [ "$vmm" = brisk ]; then
	if [ "$arch" = arm64 ]; then mtype=virt; else mtype=q35; fi
	qemu_ci=(-enable-kvm -cpu host -machine "$mtype,accel=kvm" -nodefaults
		-no-user-config -display none -vga none -monitor none
		-serial mon:stdio -net none -nic none -device pvpanic
		-action panic=exit-failure,reboot=shutdown -rtc base=utc,clock=host)
fi
# With virtio-rng-pci, the guest's /dev/hwrng (QEMU's CI lines add one),
# fed from a file as QEMU's -object rng-random spells it.
boot poweroff-smp1 1 512 poweroff 0 "${qemu_ci[@]}" \
	-object rng-random,id=rng0,filename=/dev/urandom -device virtio-rng-pci,rng=rng0
# The guest's RTC in brisk's local time: a POSIX zone 5 hours east of UTC
# (needs no zoneinfo file), so the guest reads UTC + 18000 s.
tz_offset=18000
if [ "$arch" = x86_64 ] && [ "$vmm" = brisk ]; then
	boot reboot-smp2 2 1024 reboot 0 TZ=BRK-5 -no-reboot -rtc base=localtime
else
	boot reboot-smp2 2 1024 reboot 0 -no-reboot
	[ "$vmm" = brisk ] && tap_skip "reboot-smp2: -rtc base=localtime" \
		"the guest's clock is read through x86's CMOS RTC here; arm64's PL031 in local time is checked by the unit test primecell"
fi
boot debug-exit-1-smp4 4 1024 debug-exit=1 3 "${dx[@]}"
boot debug-exit-0x21-smp2 2 512 debug-exit=0x21 67 "${dx[@]}"
boot panic-smp1 1 512 panic "$panic_rc"
if [ "$arch" = arm64 ]; then
	# -device isa-debug-exit's defaults (iosize 2) with the documented
	# 32-bit store; pvpanic's status 2 without a guest pvpanic driver.
	boot debug-exit-default-smp1 1 512 debug-exit=5 11 -device isa-debug-exit
	[ "$vmm" = brisk ] && boot pvpanic-write-smp1 1 512 pvpanic-write 2
	# -dtb: brisk's own tree, dumped, with a property added that the
	# guest then finds in /proc/device-tree.
	if [ "$vmm" = brisk ]; then
		"${run[@]}" "$brisk" -M virt,dumpdtb="$outdir/own.dtb" -m 512M -smp 1 &&
			dtc -q -I dtb -O dts "$outdir/own.dtb" |
			sed '0,/^\/ {$/s//\/ {\n\tbrisk-user-tree = "yes";/' |
			dtc -q -I dts -O dtb -o "$outdir/user.dtb"
		tap_status $? "-dtb: a user's tree made from -machine dumpdtb and dtc"
		boot dtb-smp1 1 512 poweroff 0 -dtb "$outdir/user.dtb"
	fi
fi
# Linux's reboot=t resets by triple fault, an x86 thing; QEMU's -no-reboot
# exits 0 on one, brisk 1.
if [ "$arch" = x86_64 ] && [ "$vmm" = brisk ]; then
	boot triplefault-smp1 1 512 triplefault 1
elif [ "$vmm" = brisk ]; then
	tap_skip "triplefault-smp1" "the guest's reboot=t triple fault is x86's; arm64 has none"
fi
boot timeout-smp1 1 512 sleep 124 -timeout "$timeout_s"
# -timeout with a guest that makes no progress at all (lib/stuck-image.sh):
# the boot vCPU loops in the guest from its first instruction and never
# exits to brisk, the other is never started.  Teardown must stop vCPUs
# in those states as any other: exit 124 and the one line.  -snapshot and
# a disk, as in the blk test's -snapshot boot.
name=timeout-stuck-smp2
if [ "$vmm" = brisk ] && case ,$only, in ,,|*,"$name",*) true ;; *) false ;; esac; then
	stuck_image "$arch" "$outdir/stuck.img" && rm -f "$outdir/stuck.raw" &&
		truncate -s 1M "$outdir/stuck.raw"
	tap_status $? "$name: a kernel for $arch that loops at its first instruction"
	echo "# $name: brisk -kernel stuck.img"
	timeout --preserve-status -s "$kill_sig" "$guard_s" "${run[@]}" "$brisk" \
		-kernel "$outdir/stuck.img" -m 512M -smp 2 -timeout 2 -snapshot \
		-drive file="$outdir/stuck.raw",if=none,id=d0,format=raw \
		-device virtio-blk-pci,drive=d0 </dev/null >/dev/null 2>"$outdir/$name.err"
	rc=$?
	tap_status $((rc != 124)) "$name: exit status 124" "got $rc"
	[ "$(wc -l <"$outdir/$name.err")" = 1 ] && grep -q "^brisk: .*timeout" "$outdir/$name.err"
	tap_status $? "$name: one line on stderr, the timeout's" \
		"$(head -n 20 "$outdir/$name.err" | tr '\n' '|')"
	# The line says where the boot vCPU loops: the image's first
	# instruction, the 64-bit entry 0x200 into a kernel loaded at 1 MiB
	# (Documentation/arch/x86/boot.rst), or the start of RAM on arm64
	# (docs/architecture.md's map; text_offset 0).
	case $arch in x86_64) at=0x100200 ;; *) at=0x40000000 ;; esac
	grep -q "(vCPU 0 at $at, vCPU 1 at 0x[0-9a-f]*)$" "$outdir/$name.err"
	tap_status $? "$name: the line says vCPU 0 was at $at, and where vCPU 1 was" \
		"$(head -n 1 "$outdir/$name.err")"
fi
tap_diag "with-kvm: nested host start retries: ${BRISK_WITH_KVM_RETRIES:-0}"
[ "$tap_failed" -eq 0 ] || tap_diag "$tap_failed of $tap_n checks failed"
tap_done
