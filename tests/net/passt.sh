#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# passt.sh TEST-STREAM: -netdev stream against passt itself, the way passt
# serves a VM.  Everything runs in a network namespace of its own, whose
# one interface (a dummy one, or a veth pair where the kernel has no
# dummy driver) has 192.0.2.10/24 (TEST-NET-1) and a default route via
# 192.0.2.1: passt copies that address and gateway to its guest.  Nothing
# leaves the namespace: passt forwards no ports (-t none -u none), and
# the guest's frames are one DHCP DISCOVER and one ARP request, which
# passt answers itself.  TEST-STREAM --passt plays the guest and prints
# the TAP; without passt, or without a namespace to run it in (not root
# and no unprivileged user namespaces), one counted skip says why.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
test_stream=${1:?usage: passt.sh TEST-STREAM}
addr=192.0.2.10 gw=192.0.2.1

skip() {
	tap_skip "DHCP and ARP from passt over -netdev stream" "$1"
	tap_done
}

# Outside: find passt, then run this script again in a namespace.
if [ -z "${PASST_SH_NETNS:-}" ]; then
	command -v passt >/dev/null || skip "no passt (Debian: apt-get install passt)"
	command -v ip >/dev/null || skip "no ip(8) (Debian: iproute2)"
	# A user namespace first, so passt runs as the user it was started as.
	for un in "unshare -rn" "unshare -n"; do
		if $un true 2>/dev/null; then
			PASST_SH_NETNS=1 exec $un "$0" "$@"
		fi
	done
	skip "no network namespace (not root, and no unprivileged user namespaces)"
fi

# Inside: the interface passt takes its address and gateway from.
setup() {
	ip link set lo up || return
	if ! ip link add d0 type dummy 2>/dev/null; then
		ip link add d0 type veth peer name d1 && ip link set d1 up || return
	fi
	ip link set d0 up && ip addr add "$addr/24" dev d0 &&
		ip route add default via "$gw"
}
setup || skip "cannot make an interface in the namespace"

tap_diag "passt: $(dpkg-query -W -f '${Version}' passt 2>/dev/null || passt --version | head -1)"
dir=$(mktemp -d) || exit 1
pid=
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

# passt says it is ready on stderr, once it listens: read through a FIFO,
# each line waited for at most 20 s, then drained so passt never blocks.
mkfifo "$dir/log" || exit 1
passt -f -e -1 -t none -u none -s "$dir/passt.sock" 2>"$dir/log" >/dev/null &
pid=$!
exec 3<"$dir/log"
ready=
while IFS= read -r -t 20 line <&3; do
	case $line in
	*"You can now start qemu"*) ready=1; break ;;
	esac
	case $line in
	"Failed to send"*" to syslog") ;;
	*) tap_diag "passt: $line" ;;
	esac
done
cat <&3 >/dev/null &
exec 3<&-
if [ -z "$ready" ]; then
	tap_fail "passt listens at $dir/passt.sock" "passt never said it listens"
	tap_done
fi
"$test_stream" --passt "$dir/passt.sock" "$addr" "$gw"
