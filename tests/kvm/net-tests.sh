#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# net-tests.sh --brisk PATH [--outdir DIR] [--kernel BZIMAGE]
#
# Boots a busybox guest with two virtio-net NICs on user networking, made
# the two ways CI systems write them: syzkaller's -device virtio-net-pci
# with -netdev user,restrict=on and hostfwd= forwards, and -nic user on
# another network (10.0.3.0/24).  Checks, from the host's side: each NIC's
# MAC (QEMU's default, counting up), a DHCP lease of QEMU's defaults on
# each network, that the restricted network cannot reach the host while
# the other one can, and $BRISK_NET_TESTS_MIB MiB (default 16) each way
# through the forwards, compared byte for byte: the guest sends its first
# disk and writes what it receives to its second (cmp on the host after
# brisk exits).  Where the host that runs brisk has /dev/net/tun, a third
# NIC is on a tap, rapido's way (-device virtio-net,netdev=,mac= with
# -netdev tap,script=,downscript=no): the guest takes the offloads the
# tap brings (its negotiated features are checked) and the same bytes go
# each way straight between the host's end of the tap and the guest's
# address, checked as above.  Everything runs in a network namespace of
# its own, so the tap and its address are never the host's.  The host's side (lib/net-peer.py) runs beside brisk; in
# the nested arm64 host, which has busybox and no python3, its twin
# lib/net-peer.sh (and no tap).  Output is TAP.
#
# Why 16 and not 64: every MiB is some 700 frames each way, each an exit
# or an interrupt through the nested host's emulated SVM, whose rare
# wrong world switch kills a guest (docs/testing.md, "Guest crashes in
# the nested host": a double fault at entry_SYSCALL_64's swapgs was seen
# once in the 64 MiB run).  64 MiB passes (BRISK_NET_TESTS_MIB=64); CI
# keeps the exposure small, since nothing judged is retried.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
me=$here/$(basename "${BASH_SOURCE[0]}")

brisk= outdir=$PWD/net-tests.d kernel= inner=
while [ $# -gt 0 ]; do
	case $1 in
	--brisk) brisk=$2; shift 2 ;;
	--outdir) outdir=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--inner) inner=1; shift ;;
	*) echo "usage: $0 --brisk PATH [--outdir DIR] [--kernel BZIMAGE]" >&2; exit 2 ;;
	esac
done
. "$here/../lib/die.sh"
. "$here/../lib/tap.sh"
. "$here/lib/arch.sh"
arch=$(host_arch)
[ -n "$brisk" ] && arch=$(elf_arch "$brisk" 2>/dev/null || host_arch)
mib=${BRISK_NET_TESTS_MIB:-16}

if [ -z "$inner" ]; then
	[ -n "$brisk" ] || { echo "net-tests: --brisk PATH required" >&2; exit 2; }
	[ -x "$brisk" ] || die "$brisk is not an executable"
	brisk=$(realpath "$brisk")
	command -v python3 >/dev/null || die "python3 not found; run: apt-get install python3"
	# A build without libslirp (a static one without -Dslirp_dir) has no
	# user networking: its refusal is in the binary, which may be of
	# another architecture than this host's and so not run here.
	if grep -q "user networking is not in this build" "$brisk"; then
		tap_skip "virtio-net on user networking" \
			"this brisk ($arch) was built without libslirp (docs/networking.md)"
		tap_done
	fi
	if [ -z "$kernel" ]; then
		. "$here/lib/kmod.sh"
		KMOD_ROOT=$(arch_root "$arch") || exit 1
		kver=$(kmod_newest_kver) || die "no $arch kernel; run: apt-get install $(arch_kernel_pkg "$arch")"
		kernel=$KMOD_ROOT/boot/vmlinuz-$kver
	fi
	mkdir -p "$outdir" && outdir=$(realpath "$outdir") || exit 1
	# Fresh each run, so no stale file can match.
	head -c $((mib << 20)) /dev/urandom >"$outdir/src.img" || die "cannot write $outdir/src.img"
	head -c $((mib << 20)) /dev/urandom >"$outdir/send.bin" || die "cannot write $outdir/send.bin"
	"$here/mkinitrd" -v -a "$arch" -o "$outdir/net-guest.img" -i "$here/net-init.sh" \
		-m virtio_net || exit 1
	cd "$outdir" || exit 1
	exec "$here/with-kvm" --whole-stdout --timeout "${BRISK_NET_TESTS_TIMEOUT:-900}" \
		--brisk "$brisk" --work "$outdir" -- "$me" --inner --brisk "$brisk" \
		--outdir "$outdir" --kernel "$kernel"
fi

# ---- inside with-kvm -------------------------------------------------------
# On the native route the tap and its address go in a namespace of this
# run's own, never among the user's interfaces; the nested host is a
# machine of the test's own already.
if [ "${BRISK_WITH_KVM_ROUTE:-}" = nested ]; then
	BRISK_NET_TESTS_NETNS=1
elif [ -z "${BRISK_NET_TESTS_NETNS:-}" ] && unshare -n true 2>/dev/null; then
	BRISK_NET_TESTS_NETNS=1 exec unshare -n sh -c 'ip link set lo up && exec "$@"' sh \
		"$me" --inner --brisk "$brisk" --outdir "$outdir" --kernel "$kernel"
fi
run=(${BRISK_WITH_KVM_RUN:+"$BRISK_WITH_KVM_RUN"})
console=$(arch_console "$arch")
guard_s=${BRISK_NET_TESTS_GUARD:-600}
log=$outdir/net.log
. "$here/lib/console.sh"
. "$here/lib/boot-end.sh"
vm_who=brisk vm_hung="brisk hung past -timeout" vm_tail=40 vm_killed=0
vm_powered_off() { grep -q '^NET done' "$log"; }

# rapido's tap NIC, where this host can make a tap in this namespace.
tap_why=
[ -c /dev/net/tun ] || tap_why="no /dev/net/tun in the host that runs brisk"
[ -n "$tap_why" ] || [ -n "${BRISK_NET_TESTS_NETNS:-}" ] ||
	tap_why="no network namespace of its own for the tap (unshare -n) on the native route"
[ ${#run[@]} -eq 0 ] || tap_why="the nested arm64 host's peer is busybox nc, with no tap side"
tap_mac=b8:ac:24:45:c5:01
tap_nic=() tap_peer=()
if [ -z "$tap_why" ]; then
	tap_nic=(-drive "file=$outdir/dst2.img,format=raw,if=none,id=dst2"
		-device virtio-blk-pci,drive=dst2
		-device "virtio-net,netdev=if0,mac=$tap_mac"
		-netdev "tap,id=if0,script=$here/lib/tap-up.sh,downscript=no,ifname=brisk-t0")
	tap_peer=("$outdir/tap-recv.bin")
fi

# The log too: the peer reads it for the guest's NET-LISTEN, and last
# run's would send it to forwards nobody listens on yet.
rm -f "$log" "$outdir/dst.img" "$outdir/dst2.img" "$outdir/recv.bin" "$outdir/tap-recv.bin" \
	"$outdir/ports"
truncate -s $((mib << 20)) "$outdir/dst.img" "$outdir/dst2.img" || die "cannot create dst.img"
# The peer runs beside brisk, where hostfwd listens: in the nested arm64
# host (through BRISK_WITH_KVM_RUN) its busybox twin, as no python3 is
# there.
peer_cmd=(python3 "$here/lib/net-peer.py")
[ ${#run[@]} -gt 0 ] && peer_cmd=("${run[@]}" sh "$here/lib/net-peer.sh")
"${peer_cmd[@]}" "$outdir/ports" "$log" "$outdir/src.img" \
	"$outdir/recv.bin" "$outdir/send.bin" "$guard_s" "${tap_peer[@]}" >"$outdir/peer.out" 2>&1 &
peer=$!
for _ in $(seq 600); do [ -s "$outdir/ports" ] && break; sleep 0.1; done
read -r lport p1 p2 <"$outdir/ports" || die "the host peer did not start: $(cat "$outdir/peer.out")"

cmd=("${run[@]}" "$brisk" -kernel "$kernel" -initrd "$outdir/net-guest.img"
	-append "console=$console quiet net.lport=$lport${tap_nic[*]:+ net.tap=$tap_mac}" -m 512M -nodefaults
	-serial stdio -no-reboot -timeout "$guard_s"
	-drive "file=$outdir/src.img,format=raw,if=none,id=src,readonly=on"
	-device virtio-blk-pci,drive=src
	-drive "file=$outdir/dst.img,format=raw,if=none,id=dst"
	-device virtio-blk-pci,drive=dst
	-device virtio-net-pci,netdev=net0
	-netdev "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:$p1-:5555,hostfwd=tcp:127.0.0.1:$p2-:5556"
	-nic user,model=virtio-net-pci,net=10.0.3.0/24 "${tap_nic[@]}")
echo "# ${cmd[*]}"
"${cmd[@]}" </dev/null >"$log" 2>"$log.err"
vm_rc=$?
wait "$peer"
sed 's/^/# peer: /' "$outdir/peer.out"

why=$(vm_failure)
tap_status $([ -z "$why" ] && [ "$vm_rc" = 0 ]; echo $?) "brisk exits 0 after the guest's power-off" \
	"exit $vm_rc${why:+: $why}"
line() { grep -m 1 "^NET $1" "$log" | tr -d '\r'; }
# The -device NICs come first, in the command line's order, then -nic's.
nic1=eth1
[ -n "$tap_why" ] || nic1=eth2
[ "$(line 'mac eth0')" = "NET mac eth0 52:54:00:12:34:56 mtu=1500" ]
tap_status $? "eth0: QEMU's first MAC, MTU 1500" "got '$(line 'mac eth0')'"
[ "$(line "mac $nic1")" = "NET mac $nic1 52:54:00:12:34:57 mtu=1500" ]
tap_status $? "$nic1: the next MAC" "got '$(line "mac $nic1")'"
# restrict=on: libslirp's DHCP offers neither router nor DNS server.
[ "$(line 'lease eth0')" = "NET lease eth0 ip=10.0.2.15 mask=24 router= dns=" ]
tap_status $? "eth0: DHCP lease 10.0.2.15/24, no router or DNS (restrict=on)" \
	"got '$(line 'lease eth0')'"
[ "$(line "lease $nic1")" = "NET lease $nic1 ip=10.0.3.15 mask=24 router=10.0.3.2 dns=10.0.3.3" ]
tap_status $? "$nic1: DHCP lease 10.0.3.15/24 on net=10.0.3.0/24" "got '$(line "lease $nic1")'"
[ "$(line 'connect 10.0.2.2')" = "NET connect 10.0.2.2 rc=1" ]
tap_status $? "restrict=on: the guest's connect to the host times out" \
	"got '$(line 'connect 10.0.2.2')'"
[ "$(line 'connect 10.0.3.2')" = "NET connect 10.0.3.2 rc=0" ]
tap_status $? "restrict=off: the guest connects to the host's 127.0.0.1" \
	"got '$(line 'connect 10.0.3.2')'"
peer_line() { grep -m 1 "^$1" "$outdir/peer.out"; }
[ "$(peer_line connections)" = "connections 1" ] &&
	[ "$(peer_line listener_got)" = "listener_got from-10.0.3" ]
tap_status $? "the host's listener saw the open network's bytes and no other connection" \
	"$(grep -E '^(connections|listener_got)' "$outdir/peer.out" | tr '\n' ' ')"
[ "$(peer_line received)" = "received $((mib << 20))" ]
tap_status $? "host <- guest: $mib MiB through hostfwd" "got '$(peer_line received)'"
cmp -s "$outdir/recv.bin" "$outdir/src.img"
tap_status $? "host <- guest: the bytes are the guest's disk's" \
	"$(cmp "$outdir/recv.bin" "$outdir/src.img" 2>&1 | head -n 1)"
[ "$(line 'send')" = "NET send rc=0" ] && [ "$(line 'recv')" = "NET recv rc=0" ]
tap_status $? "the guest's two nc ended cleanly" "$(line 'send') / $(line 'recv')"
[ "$(peer_line sent)" = "sent $((mib << 20))" ]
tap_status $? "host -> guest: $mib MiB through hostfwd" "got '$(peer_line sent)'"
cmp -s "$outdir/dst.img" "$outdir/send.bin"
tap_status $? "host -> guest: the guest wrote exactly those bytes to its disk" \
	"$(cmp "$outdir/dst.img" "$outdir/send.bin" 2>&1 | head -n 1)"

if [ -n "$tap_why" ]; then
	tap_skip "virtio-net on a tap (rapido's line)" "$tap_why"
else
	# VIRTIO 1.2 5.1.3: CSUM 0, GUEST_CSUM 1, GUEST_TSO4 7, HOST_TSO4 11.
	feat=$(line 'tap' | sed -n 's/.*features=\([01]*\).*/\1/p')
	[ "${feat:0:1}${feat:1:1}${feat:7:1}${feat:11:1}" = 1111 ]
	tap_status $? "tap: the guest took checksum and TSO offloads" "got '$(line 'tap')'"
	[ "$(peer_line tap_received)" = "tap_received $((mib << 20))" ] &&
		cmp -s "$outdir/tap-recv.bin" "$outdir/src.img"
	tap_status $? "tap: host <- guest: $mib MiB, the guest's disk's bytes" \
		"got '$(peer_line tap_received)' $(cmp "$outdir/tap-recv.bin" "$outdir/src.img" 2>&1 | head -n 1)"
	[ "$(line 'tap send')" = "NET tap send rc=0" ] && [ "$(line 'tap recv')" = "NET tap recv rc=0" ] &&
		[ "$(peer_line tap_sent)" = "tap_sent $((mib << 20))" ] &&
		cmp -s "$outdir/dst2.img" "$outdir/send.bin"
	tap_status $? "tap: host -> guest: $mib MiB, written to its disk exactly" \
		"$(line 'tap send') / $(line 'tap recv') / $(peer_line tap_sent) $(cmp "$outdir/dst2.img" "$outdir/send.bin" 2>&1 | head -n 1)"
fi
finish_boot net
tap_done
