# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=sh
# net-peer.py's twin for the nested arm64 host, whose userland is busybox
# (no python3 there): the same arguments (SRC unused, as there), the same
# work, the same lines.
#   sh net-peer.sh PORTFILE LOG SRC RECV SEND GUARD_S
# busybox nc does the sockets.  That host runs nothing but the test, so
# the ports are fixed ones.  Each transfer runs its end as nc's -e
# program, so that nc closes the socket when the program is done and not
# before: nc left to itself ends at the first EOF from the network, and
# the guest's receiving nc (stdin /dev/null) sends its EOF at once.
set -u
portfile=$1 log=$2 recv=$4 send=$5 guard=$6
lport=15600 p1=15601 p2=15602
deadline=$(($(date +%s) + guard))
left() { n=$((deadline - $(date +%s))); [ $n -gt 0 ] && echo $n || echo 1; }
tmp=$(mktemp -d) || exit 1
: >"$tmp/got"

# The listener: one line per connection, whatever it carried.
# shellcheck disable=SC2016 # the program's own sh expands them
nc -ll -p $lport -e sh -c 'd=$(cat); echo "listener_got ${d:-(nothing)}" >>"$0"' "$tmp/got" &
lpid=$!
# Listening (state 0A; busybox nc listens on IPv6's any address) before
# the ports are told.
hex=$(printf '%04X' $lport)
while ! grep -qE ":$hex [0:]+ 0A" /proc/net/tcp /proc/net/tcp6; do
	[ "$(date +%s)" -lt $deadline ] || { echo "listener never"; exit 0; }
	sleep 0.1
done
echo "$lport $p1 $p2" >"$portfile.tmp" && mv "$portfile.tmp" "$portfile"

while ! grep -q NET-LISTEN "$log" 2>/dev/null; do
	[ "$(date +%s)" -lt $deadline ] || { echo "listen never"; kill $lpid; exit 0; }
	sleep 0.2
done
# shellcheck disable=SC2016 # the program's own sh expands it
timeout "$(left)" nc 127.0.0.1 $p1 -e sh -c 'cat >"$0"' "$recv"
rc=$?
[ $rc = 0 ] || echo "recv_error exit $rc"
echo "received $(wc -c <"$recv")"
if timeout "$(left)" nc 127.0.0.1 $p2 -e cat "$send"; then
	echo "sent $(wc -c <"$send")"
else
	echo "send_error exit $?"
fi
kill $lpid
echo "connections $(wc -l <"$tmp/got")"
cat "$tmp/got"
rm -rf "$tmp"
