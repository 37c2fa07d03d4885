#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# net-vs-qemu.sh [--brisk PATH] [--qemu PATH] [--rounds N] [--mib N]
#                [--pings N] [--mtu 1500|65520|1500,65520] [--out DIR]
#                [--also NIC-OPTIONS] [--brisk-x PATH]
#
# TCP through user networking, brisk against QEMU: a guest with one
# virtio-net-pci NIC on -netdev user,restrict=on whose forwards
# (hostfwd=tcp:127.0.0.1:PORT-:PORT) the host reaches on 127.0.0.1:
# round-trip time of one-byte echoes, host -> guest and guest -> host
# throughput of --mib MiB each (tests/bench/net/: the guest's init and
# the host's peer).  The same kernel, initramfs, memory, one vCPU and
# NIC options under both; QEMU is qemu-system-x86_64 -accel kvm -cpu host.
# Each round boots brisk, QEMU and brisk again (brisk-a, qemu, brisk-b:
# the two brisk rows are the A/A check), one measurement of each kind per
# boot; medians over the rounds (a first boot of each, round 0, is left
# out).  With --also (e.g. tx=timer,x-txtimer=500000) each round boots a
# fourth, brisk-x, whose NIC has those options too; with --brisk-x (another
# build, e.g. main's before a change; not under /tmp, which the nested
# host has its own of) brisk-x runs that binary.  With --mtu 65520 the NIC has
# host_mtu=65520, which the guest takes as its MTU; with both, each round
# runs both.
#
# Runs natively where /dev/kvm works, otherwise in one nested host
# (tests/kvm/with-kvm, its QEMU on one host CPU unless
# BRISK_WITH_KVM_PIN=off), where every VM exit is emulated: the figures then
# measure the exits far more than either device; so the guest also
# counts what its guest -> host transfer cost it, which no load moves:
# frames sent, and the NIC's transmit and receive interrupts per frame
# (from its /proc/interrupts).  Results in --out
# (default build-bench/net-vs-qemu): results.csv, summary.txt, logs.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
me=$here/$(basename "${BASH_SOURCE[0]}")
. "$here/../lib/die.sh"
say() { echo "net-vs-qemu: $*" >&2; }

brisk=$top/build/brisk qemu=$(command -v qemu-system-x86_64 || true)
rounds=5 mib=16 pings=200 mtu=1500 out=$top/build-bench/net-vs-qemu inner='' kernel='' also=''
brisk_x=''
while [ $# -gt 0 ]; do
	case $1 in
	--brisk) brisk=${2:?}; shift ;;
	--qemu) qemu=${2:?}; shift ;;
	--rounds) rounds=${2:?}; shift ;;
	--mib) mib=${2:?}; shift ;;
	--pings) pings=${2:?}; shift ;;
	--mtu) mtu=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--kernel) kernel=${2:?}; shift ;;
	--also) also=${2:?}; shift ;;
	--brisk-x) brisk_x=${2:?}; shift ;;
	--inner) inner=1 ;;
	*) sed -n '4,6s/^# \{0,1\}//p' "$me" >&2; exit 2 ;;
	esac
	shift
done
for v in "$rounds" "$mib" "$pings"; do
	case $v in ''|*[!0-9]*|0) die "not a positive number: $v" ;; esac
done
case $also in *[!A-Za-z0-9_=,.-]*) die "--also takes NIC options (KEY=VALUE,...), not $also" ;; esac
vmms="brisk-a qemu brisk-b"
[ -z "$also$brisk_x" ] || vmms+=" brisk-x"
case $mtu in 1500|65520|1500,65520|65520,1500) ;; *) die "--mtu takes 1500, 65520 or both, not $mtu" ;; esac
mtus=${mtu//,/ }
nmtu=$(echo $mtus | wc -w)

# The medians of results.csv, per MTU, into summary.txt.
summarise() {
	for m in $mtus; do
		echo "# TCP through -netdev user,restrict=on,hostfwd (virtio-net-pci, MTU $m), $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "# route: ${BRISK_WITH_KVM_ROUTE:-${ROUTE:-this machine}}; $rounds rounds of ${vmms// /, }, one boot each; $pings round trips, $mib MiB each way"
		[ -z "$also" ] || echo "# brisk-x: the NIC also has $also"
		[ -z "$brisk_x" ] || echo "# brisk-x: $brisk_x"
		echo "# brisk: $brisk ($(cd "$top" && git describe --always --dirty 2>/dev/null))"
		echo "# qemu: $("$qemu" --version | head -n 1)"
		awk -F, -v mtu="$m" 'NR > 1 && $2 == mtu && $3 > 0 && $4 != "" {
			k = $1; n[k]++; for (c = 4; c <= 6; c++) v[k, c, n[k]] = $c
			# Interrupts per frame sent, for the boots whose counts came back.
			if ($7 > 0) { f[k]++; v[k, 7, f[k]] = $8 / $7; v[k, 8, f[k]] = $9 / $7 }
		}
		function med(k, c,    a, i, j, t, m) {
			m = c >= 7 ? f[k] : n[k]
			if (!m) return 0
			for (i = 1; i <= m; i++) a[i] = v[k, c, i]
			for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
		}
		END {
			printf "%-10s %5s %14s %18s %18s %14s %14s\n", "vmm", "runs", "rtt_us (med)", "h2g MB/s (med)", "g2h MB/s (med)", "g2h tx irq/fr", "g2h rx irq/fr"
			split("brisk-a qemu brisk-b brisk-x", ks, " ")
			for (i = 1; i <= 4; i++) { k = ks[i]; if (!n[k]) continue
				for (c = 4; c <= 8; c++) m[k, c] = med(k, c)
				printf "%-10s %5d %14.1f %18.2f %18.2f %14.3f %14.3f\n", k, n[k], m[k, 4], m[k, 5], m[k, 6], m[k, 7], m[k, 8] }
			if (n["brisk-a"] && n["qemu"])
				printf "%-10s %5s %14.3f %18.3f %18.3f\n", "a/qemu", "", m["brisk-a", 4] / m["qemu", 4], m["brisk-a", 5] / m["qemu", 5], m["brisk-a", 6] / m["qemu", 6]
			if (n["brisk-a"] && n["brisk-b"])
				printf "%-10s %5s %14.3f %18.3f %18.3f\n", "a/b (A/A)", "", m["brisk-a", 4] / m["brisk-b", 4], m["brisk-a", 5] / m["brisk-b", 5], m["brisk-a", 6] / m["brisk-b", 6]
			if (n["brisk-x"] && n["qemu"])
				printf "%-10s %5s %14.3f %18.3f %18.3f\n", "x/qemu", "", m["brisk-x", 4] / m["qemu", 4], m["brisk-x", 5] / m["qemu", 5], m["brisk-x", 6] / m["qemu", 6]
			if (n["brisk-x"] && n["brisk-a"])
				printf "%-10s %5s %14.3f %18.3f %18.3f\n", "x/a", "", m["brisk-x", 4] / m["brisk-a", 4], m["brisk-x", 5] / m["brisk-a", 5], m["brisk-x", 6] / m["brisk-a", 6]
		}' "$res"
		echo
	done >"$out/summary.txt"
}

if [ -z "$inner" ]; then
	[ -x "$brisk" ] || die "no brisk at $brisk (meson setup build && meson compile -C build)"
	[ -z "$brisk_x" ] || [ -x "$brisk_x" ] || die "no brisk at $brisk_x (--brisk-x)"
	[ -z "$brisk_x" ] || brisk_x=$(readlink -f "$brisk_x")
	[ -n "$qemu" ] && [ -x "$qemu" ] || die "no qemu-system-x86_64; run: apt-get install qemu-system-x86"
	command -v python3 >/dev/null || die "python3 not found; run: apt-get install python3"
	brisk=$(readlink -f "$brisk") qemu=$(readlink -f "$qemu")
	mkdir -p "$out" && out=$(cd "$out" && pwd -P) || die "cannot create $out"
	. "$top/tests/kvm/lib/kmod.sh"
	kver=$(kmod_newest_kver) || die "no kernel; run: apt-get install linux-image-amd64"
	[ -n "$kernel" ] || kernel=/boot/vmlinuz-$kver
	"$top/tests/kvm/mkinitrd" -o "$out/guest.img" -i "$here/net/init.sh" -m virtio_net ||
		die "guest image build failed"
	. "$top/tests/kvm/lib/arch.sh"
	. "$top/tests/kvm/lib/route.sh"
	kvm_route "${BRISK_WITH_KVM:-auto}" "BRISK_WITH_KVM=${BRISK_WITH_KVM:-}" "$brisk" ||
		die "$ROUTE_WHY"
	say "$ROUTE_WHY"
	# Fine timers in the nested host, as fio-vs-qemu.sh; but its QEMU on
	# one host CPU, as the KVM suite's: free on two, the emulated SVM
	# crashed most brisk guests in their guest -> host transfer
	# (docs/benchmarks.md, "x-txhold").  BRISK_WITH_KVM_PIN=off frees it.
	export BRISK_WITH_KVM_TICK=${BRISK_WITH_KVM_TICK:-oneshot}
	export BRISK_WITH_KVM_PIN=${BRISK_WITH_KVM_PIN:-on}
	per=$([ "$ROUTE" = native ] && echo 60 || echo 300)
	"$top/tests/kvm/with-kvm" "--$ROUTE" --timeout $(((rounds * nmtu * $(echo $vmms | wc -w) + 2) * per + 300)) --mem 2048 \
		--cpus 2 --brisk "$brisk" --work "$out" -- "$me" --inner --brisk "$brisk" \
		--qemu "$qemu" --rounds "$rounds" --mib "$mib" --pings "$pings" --mtu "$mtu" \
		--out "$out" --kernel "$kernel" ${also:+--also "$also"} ${brisk_x:+--brisk-x "$brisk_x"}
	rc=$?
	# Here, so that a nested host that stopped midway still gives the
	# rounds it finished.
	[ "$(wc -l <"$out/results.csv" 2>/dev/null || echo 0)" -gt 1 ] ||
		die "no results (status $rc); logs in $out/raw"
	[ $rc -ne 0 ] && say "the series stopped early (status $rc): what it finished follows"
	res=$out/results.csv
	summarise
	cat "$out/summary.txt"
	exit $rc
fi

# ---- inside with-kvm, or natively -----------------------------------------
mkdir -p "$out/raw"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
res=$out/results.csv
echo "vmm,mtu,round,rtt_us,h2g_mbyte_s,g2h_mbyte_s,g2h_frames,g2h_tx_irqs,g2h_rx_irqs" >"$res"
free_ports() {
	python3 -c 'import socket
ss = [socket.socket() for _ in range(4)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))'
}
qboot=/usr/share/qemu/qboot.rom

# run_one LABEL ROUND MTU: one boot, one line of results.csv (empty fields when
# the guest never got ready).
run_one() {
	local label=$1 round=$2 mtu=$3 kind=${1%-*} name=$1-mtu$3-r$2 pid t=0 r
	local p1 p2 p3 p4 nic=virtio-net-pci,netdev=n0 argv
	# Polled while it grows: not on --out, which may be a 9p share.
	local log=$tmp/$name.log
	read -r p1 p2 p3 p4 <<<"$(free_ports)"
	[ "$mtu" = 65520 ] && nic+=,host_mtu=65520
	[ "$label" = brisk-x ] && [ -n "$also" ] && nic+=,$also
	argv=()
	if [ "$kind" = qemu ]; then
		argv=("$qemu" -accel kvm -cpu host -M q35 -nodefaults -no-user-config
			-nographic -no-reboot)
		[ -r "$qboot" ] && argv+=(-bios "$qboot")
	else
		argv=("$brisk" -nodefaults -no-reboot)
		[ "$label" = brisk-x ] && [ -n "$brisk_x" ] && argv[0]=$brisk_x
	fi
	argv+=(-m 512M -smp 1 -serial stdio -kernel "$kernel" -initrd "$out/guest.img"
		-append "console=ttyS0 quiet panic=-1 netb.mib=$mib"
		-device "$nic"
		-netdev "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:$p1-:5601,hostfwd=tcp:127.0.0.1:$p2-:5602,hostfwd=tcp:127.0.0.1:$p3-:5603,hostfwd=tcp:127.0.0.1:$p4-:5604")
	printf '%q ' "${argv[@]}" >"$log.cmd"
	"${argv[@]}" </dev/null >"$log" 2>&1 &
	pid=$!
	# Polling the console's log: a benchmark, so a wait here judges nothing.
	while ! grep -q NETB-READY "$log" && kill -0 $pid 2>/dev/null && [ $t -lt 3000 ]; do
		sleep 0.1
		t=$((t + 1))
	done
	r=
	if grep -q NETB-READY "$log"; then
		python3 "$here/net/peer.py" "$p1" "$p2" "$p3" "$mib" "$pings" "$p4" >"$log.peer" 2>&1
		r=$(awk '{ v[$1] = $2 } END { printf "%s,%s,%s,%s,%s,%s", v["rtt_us"], v["h2g_mbyte_s"],
			v["g2h_mbyte_s"], v["g2h_frames"], v["g2h_tx_irqs"], v["g2h_rx_irqs"] }' "$log.peer")
		grep -q "^g2h_bytes $((mib << 20))\$" "$log.peer" || r=,,,,,
	fi
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	cp "$log" "$log".* "$out/raw/" 2>/dev/null
	echo "$label,$mtu,$round,${r:-,,,,,}" >>"$res"
	echo "net-vs-qemu: $label mtu $mtu round $round: ${r:-no result, see $out/raw/$name.log}" >&2
}

# Round 0, left out of the medians: each VMM's first boot in a fresh
# nested host reads its binary, kernel and image through 9p.
for v in brisk-a qemu; do
	run_one "$v" 0 "${mtus%% *}"
done
for r in $(seq "$rounds"); do
	for m in $mtus; do
		for v in $vmms; do
			run_one "$v" "$r" "$m"
		done
	done
done

summarise
