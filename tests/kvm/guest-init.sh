# SPDX-License-Identifier: GPL-2.0-or-later
# Init of the boot-test guest (run by mkinitrd's /init with busybox sh).
# Reports what the host side asserts on, then ends the way the kernel
# command line's brisk.test=ACTION asks.
echo "BRISK-INIT-UP"
echo "nproc=$(nproc)"
echo "memtotal_kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
echo "cmdline=$(cat /proc/cmdline)"
# A property only a user's -dtb tree has (boot-tests' dtb boot).
echo "dt_user=$(tr -d '\0' 2>/dev/null </proc/device-tree/brisk-user-tree)"
# The RTC as the guest's own driver reads it, for the host to hold against
# its clock: seconds since the epoch, and busybox hwclock (/dev/rtc0).
echo "rtc=$(cat /sys/class/rtc/rtc0/since_epoch 2>/dev/null || echo none) $(cat /sys/class/rtc/rtc0/name 2>/dev/null)"
echo "hwclock=$(hwclock -r -u 2>&1 | head -n 1)"
# /dev/hwrng where a virtio-rng-pci backs it: its source, and two reads.
rng=$(cat /sys/class/misc/hw_random/rng_current 2>/dev/null)
if [ -n "$rng" ]; then
	echo "hwrng=$rng"
fi
if [ -n "$rng" ] && [ "$rng" != none ]; then
	echo "hwrng_a=$(head -c 32 /dev/hwrng | od -An -tx1 | tr -d ' \n')"
	echo "hwrng_b=$(head -c 32 /dev/hwrng | od -An -tx1 | tr -d ' \n')"
fi
action= dx= pv= hotplug=
for w in $(cat /proc/cmdline); do
	case $w in
	brisk.test=*) action=${w#brisk.test=} ;;
	brisk.dx=*) dx=${w#brisk.dx=} ;;
	brisk.pv=*) pv=${w#brisk.pv=} ;;
	brisk.hotplug) hotplug=1 ;;
	esac
done
# The last CPU taken offline and back (arm64: PSCI CPU_OFF, then CPU_ON).
if [ -n "$hotplug" ]; then
	c=/sys/devices/system/cpu/cpu$(($(nproc) - 1))/online
	echo 0 >"$c" && [ "$(cat "$c")" = 0 ] && echo "cpu_off=$(nproc)"
	echo 1 >"$c" && [ "$(cat "$c")" = 1 ] && echo "cpu_on=$(nproc)"
fi
echo "action=$action"
# The RTC's alarm interrupt, in the power-off boot only (it waits 3 s): the
# rtc0 line of /proc/interrupts before and after an alarm 2 s ahead.
rtc_irqs() { awk '/ rtc0$/ { n = 0; for (i = 2; $i ~ /^[0-9]+$/; i++) n += $i; print n }' /proc/interrupts; }
if [ "$action" = poweroff ] && [ -n "$(rtc_irqs)" ]; then
	echo "rtc_irqs_before=$(rtc_irqs)"
	echo +2 >/sys/class/rtc/rtc0/wakealarm
	sleep 3
	echo "rtc_irqs_after=$(rtc_irqs)"
fi
case $action in
poweroff) poweroff -f ;;
reboot) reboot -f ;;
# With reboot=t on the kernel's command line the reboot is a triple fault.
triplefault) reboot -f ;;
debug-exit=*)
	v=${action#debug-exit=}
	if [ -n "$dx" ]; then
		# A board without I/O ports (arm64): the register is MMIO at dx.
		devmem "$dx" 32 "$((v))"
	else
		# isa-debug-exit sits at port 0xf4 (244); /dev/port reaches it.
		printf "\\$(printf '%03o' "$((v))")" | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
	fi
	echo "debug-exit write returned"
	;;
pvpanic-write)
	# What the pvpanic driver does on a panic, by hand, for a kernel
	# without the driver: PANICKED (bit 0) to the MMIO register at pv.
	echo "BRISK-PANIC-NOW"
	devmem "$pv" 8 1
	echo "pvpanic write returned"
	;;
panic)
	echo "BRISK-PANIC-NOW"
	echo c >/proc/sysrq-trigger
	;;
sleep) ;;
*) echo "unknown action '$action'" ;;
esac
# Nothing above should return; idle so a stuck exit shows as a timeout.
while :; do sleep 1000; done
