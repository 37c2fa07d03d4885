#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# boot-vs-qemu.sh --brisk PATH [-n RUNS] [--smp N] [--mem MB] [--kernel BZIMAGE]
#                 [--outdir DIR] [--no-doc]
#
# Time from process start to the guest init's first line on the serial
# console, brisk against qemu-system-x86_64 -accel kvm booting the same
# kernel, initramfs, memory and CPUs, interleaved (brisk, QEMU, brisk, ...)
# so drifts in host load hit both alike.  Runs where with-kvm finds
# /dev/kvm and says which.  Prints every run, the medians and the ratio, and
# rewrites the "## Boot time" section of docs/benchmarks.md unless --no-doc.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
me=$here/$(basename "${BASH_SOURCE[0]}")
cmdline_used="$0 $*"

runs=5 smp=2 mem=512 brisk= kernel= outdir=$(cd "$(dirname "$0")/../.." && pwd)/build-bench/boot-vs-qemu doc=1 inner=
while [ $# -gt 0 ]; do
	case $1 in
	--brisk) brisk=$2; shift 2 ;;
	-n) runs=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--outdir) outdir=$2; shift 2 ;;
	--no-doc) doc=; shift ;;
	--inner) inner=1; shift ;;
	*) sed -n '4,5s/^# \{0,1\}//p' "$me" >&2; exit 2 ;;
	esac
done
for v in "$runs" "$smp" "$mem"; do
	case $v in ''|*[!0-9]*) echo "boot-vs-qemu: not a number: $v" >&2; exit 2 ;; esac
done

marker=BRISK-INIT-UP
append="console=ttyS0 quiet brisk.test=poweroff"

# time_boot CMD... : prints milliseconds from exec to the marker, or
# "fail" when the marker never came.
time_boot() {
	local t0=$EPOCHREALTIME line t= pid
	exec 3< <(exec timeout -s KILL 120 "$@" </dev/null 2>/dev/null)
	pid=$!
	while IFS= read -r line <&3; do
		case $line in "$marker"*)
			t=$EPOCHREALTIME
			break ;;
		esac
	done
	# Shutdown is not what is measured: stop the VMM (timeout passes the
	# TERM on) and wait for it, so the next run starts on a quiet host.
	kill "$pid" 2>/dev/null
	cat <&3 >/dev/null
	exec 3<&-
	wait "$pid" 2>/dev/null
	if [ -n "$t" ]; then
		awk -v a="$t0" -v b="$t" 'BEGIN { printf "%.0f\n", (b - a) * 1000 }'
	else
		echo fail
	fi
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

if [ -n "$inner" ]; then
	initrd=$outdir/guest.img
	a=("$brisk" -kernel "$kernel" -initrd "$initrd" -append "$append"
		-m "${mem}M" -smp "$smp")
	b=(qemu-system-x86_64 -accel kvm -cpu host -m "$mem" -smp "$smp"
		-kernel "$kernel" -initrd "$initrd" -append "$append"
		-display none -monitor none -serial stdio -nic none -no-reboot)
	res=$outdir/results
	{
		echo "route=${BRISK_WITH_KVM_ROUTE:-unknown}"
		echo "brisk_cmd=${a[*]}"
		echo "qemu_cmd=${b[*]}"
	} >"$res"
	for i in $(seq 1 "$runs"); do
		ta=$(time_boot "${a[@]}")
		tb=$(time_boot "${b[@]}")
		echo "run $i $ta $tb" | tee -a "$res"
	done
	exit 0
fi

[ -n "$brisk" ] && [ -x "$brisk" ] || { echo "boot-vs-qemu: --brisk PATH to a built brisk is required" >&2; exit 2; }
brisk=$(realpath "$brisk")
if [ -z "$kernel" ]; then
	. "$src/tests/kvm/lib/kmod.sh"
	kver=$(kmod_newest_kver) || { echo "boot-vs-qemu: no kernel in /boot; run: apt-get install linux-image-amd64" >&2; exit 1; }
	kernel=/boot/vmlinuz-$kver
fi
mkdir -p "$outdir" && outdir=$(realpath "$outdir") || exit 1
"$src/tests/kvm/mkinitrd" -o "$outdir/guest.img" -i "$src/tests/kvm/guest-init.sh" || exit 1
rm -f "$outdir/results"
# Timed: the x86 nested host keeps its fine one-shot timers and its
# emulator's threads free to run on any CPU, as the figures in
# docs/benchmarks.md had them (with-kvm's periodic default puts its
# timers, brisk's and KVM's for its guests, on 4 ms ticks); a frozen or
# crashed host costs a rerun, not a verdict.
export BRISK_WITH_KVM_TICK=${BRISK_WITH_KVM_TICK:-oneshot}
export BRISK_WITH_KVM_PIN=${BRISK_WITH_KVM_PIN:-off}
(cd "$outdir" && "$src/tests/kvm/with-kvm" --timeout 3000 --brisk "$brisk" --work "$outdir" -- \
	"$me" --inner --brisk "$brisk" -n "$runs" --smp "$smp" --mem "$mem" \
	--kernel "$kernel" --outdir "$outdir") || exit 1

res=$outdir/results
route=$(sed -n 's/^route=//p' "$res")
if grep -q '^run .*fail' "$res"; then
	echo "boot-vs-qemu: some boots never printed the init marker:" >&2
	grep '^run' "$res" >&2
	exit 1
fi
ma=$(awk '/^run/ { print $3 }' "$res" | median)
mb=$(awk '/^run/ { print $4 }' "$res" | median)
ratio=$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.2f", a / b }')

table=$(
	echo "| run | brisk (ms) | QEMU (ms) |"
	echo "|----:|-----------:|----------:|"
	awk '/^run/ { printf "| %d | %d | %d |\n", $2, $3, $4 }' "$res"
	echo "| **median** | **$ma** | **$mb** |"
)
echo "$table"
echo "brisk/QEMU median ratio: $ratio ($route /dev/kvm)"

[ -n "$doc" ] || exit 0
section=$(
	echo "## Boot time"
	echo
	echo "Time from process start to the first line of the guest's init on"
	echo "the serial console, $runs runs each, interleaved, $(date -u +%Y-%m-%d)."
	echo "Kernel $(basename "$kernel"), busybox initramfs, -m ${mem}M, -smp $smp;"
	echo "/dev/kvm: $route$([ "$route" = nested ] && echo " (QEMU/TCG host: absolute times are inflated, the ratio is what to compare)")."
	echo
	echo "$table"
	echo
	echo "brisk/QEMU median ratio: **$ratio**"
	echo
	echo "QEMU ran as: \`$(sed -n 's/^qemu_cmd=//p' "$res")\`"
	echo
	echo "Rerun: \`tests/bench/boot-vs-qemu.sh --brisk BUILD/brisk -n $runs --smp $smp --mem $mem\`"
	echo "(this table came from \`$cmdline_used\`)."
)
mkdir -p "$src/docs"
md=$src/docs/benchmarks.md
[ -f "$md" ] || printf '# Benchmarks\n' >"$md"
# Replace only our section: from its heading to the next "## " or the end.
awk -v sec="$section" '
	/^## / { if (skip) skip = 0; if ($0 == "## Boot time") { skip = 1; done = 1; print sec; print ""; next } }
	!skip { print }
	END { if (!done) { print ""; print sec } }' "$md" >"$md.tmp" && mv "$md.tmp" "$md"
echo "boot-vs-qemu: wrote the \"## Boot time\" section of docs/benchmarks.md"
