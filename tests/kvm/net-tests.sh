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
# brisk exits).  The host's side (lib/net-peer.py) runs beside brisk; in
# the nested arm64 host, which has busybox and no python3, its twin
# lib/net-peer.sh.  Output is TAP.
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
	"$here/mkinitrd" -a "$arch" -o "$outdir/net-guest.img" -i "$here/net-init.sh" \
		-m virtio_net || exit 1
	cd "$outdir" || exit 1
	exec "$here/with-kvm" --whole-stdout --timeout "${BRISK_NET_TESTS_TIMEOUT:-900}" \
		--brisk "$brisk" --work "$outdir" -- "$me" --inner --brisk "$brisk" \
		--outdir "$outdir" --kernel "$kernel"
fi

# ---- inside with-kvm -------------------------------------------------------
run=(${BRISK_WITH_KVM_RUN:+"$BRISK_WITH_KVM_RUN"})
console=$(arch_console "$arch")
guard_s=${BRISK_NET_TESTS_GUARD:-600}
log=$outdir/net.log
. "$here/lib/console.sh"
. "$here/lib/boot-end.sh"
vm_who=brisk vm_hung="brisk hung past -timeout" vm_tail=40 vm_killed=0
vm_powered_off() { grep -q '^NET done' "$log"; }

rm -f "$outdir/dst.img" "$outdir/recv.bin" "$outdir/ports"
truncate -s $((mib << 20)) "$outdir/dst.img" || die "cannot create dst.img"
# The peer runs beside brisk, where hostfwd listens: in the nested arm64
# host (through BRISK_WITH_KVM_RUN) its busybox twin, as no python3 is
# there.
peer_cmd=(python3 "$here/lib/net-peer.py")
[ ${#run[@]} -gt 0 ] && peer_cmd=("${run[@]}" sh "$here/lib/net-peer.sh")
"${peer_cmd[@]}" "$outdir/ports" "$log" "$outdir/src.img" \
	"$outdir/recv.bin" "$outdir/send.bin" "$guard_s" >"$outdir/peer.out" 2>&1 &
peer=$!
for _ in $(seq 600); do [ -s "$outdir/ports" ] && break; sleep 0.1; done
read -r lport p1 p2 <"$outdir/ports" || die "the host peer did not start: $(cat "$outdir/peer.out")"

cmd=("${run[@]}" "$brisk" -kernel "$kernel" -initrd "$outdir/net-guest.img"
	-append "console=$console quiet net.lport=$lport" -m 512M -nodefaults
	-serial stdio -no-reboot -timeout "$guard_s"
	-drive "file=$outdir/src.img,format=raw,if=none,id=src,readonly=on"
	-device virtio-blk-pci,drive=src
	-drive "file=$outdir/dst.img,format=raw,if=none,id=dst"
	-device virtio-blk-pci,drive=dst
	-device virtio-net-pci,netdev=net0
	-netdev "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:$p1-:5555,hostfwd=tcp:127.0.0.1:$p2-:5556"
	-nic user,model=virtio-net-pci,net=10.0.3.0/24)
echo "# ${cmd[*]}"
"${cmd[@]}" </dev/null >"$log" 2>"$log.err"
vm_rc=$?
wait "$peer"
sed 's/^/# peer: /' "$outdir/peer.out"

why=$(vm_failure)
tap_status $([ -z "$why" ] && [ "$vm_rc" = 0 ]; echo $?) "brisk exits 0 after the guest's power-off" \
	"exit $vm_rc${why:+: $why}"
line() { grep -m 1 "^NET $1" "$log" | tr -d '\r'; }
[ "$(line 'mac eth0')" = "NET mac eth0 52:54:00:12:34:56 mtu=1500" ]
tap_status $? "eth0: QEMU's first MAC, MTU 1500" "got '$(line 'mac eth0')'"
[ "$(line 'mac eth1')" = "NET mac eth1 52:54:00:12:34:57 mtu=1500" ]
tap_status $? "eth1: the next MAC" "got '$(line 'mac eth1')'"
# restrict=on: libslirp's DHCP offers neither router nor DNS server.
[ "$(line 'lease eth0')" = "NET lease eth0 ip=10.0.2.15 mask=24 router= dns=" ]
tap_status $? "eth0: DHCP lease 10.0.2.15/24, no router or DNS (restrict=on)" \
	"got '$(line 'lease eth0')'"
[ "$(line 'lease eth1')" = "NET lease eth1 ip=10.0.3.15 mask=24 router=10.0.3.2 dns=10.0.3.3" ]
tap_status $? "eth1: DHCP lease 10.0.3.15/24 on net=10.0.3.0/24" "got '$(line 'lease eth1')'"
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
finish_boot net
tap_done
