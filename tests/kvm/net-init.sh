# SPDX-License-Identifier: GPL-2.0-or-later
# Init of the virtio-net test guest (run by mkinitrd's /init, busybox sh).
#
# The host side (net-tests.sh) judges what this prints; the guest judges
# nothing.  Lines start with "NET " so the host can pick them out of the
# kernel's messages.  From the kernel command line:
#   net.lport=PORT   a port the host listens on (127.0.0.1): try it through
#                    each NIC's host address (10.0.2.2 and 10.0.3.2)
#   net.tap=MAC      the NIC with this MAC is on a tap: 10.0.4.2/24, no DHCP
# Then the guest serves two TCP ports for the host's forwards: 5555 sends
# the first disk (vda) and closes, 5556 writes what arrives to the second
# disk (vdb); once both listen it prints NET-LISTEN.  With a tap NIC it
# then does the same on 5557 and 5558 (the third disk, vdc, taking what
# arrives) and prints NET-TAP-LISTEN.  It powers off when all are done.

lport= tapmac= tapif=
for w in $(cat /proc/cmdline); do
	case $w in
	net.lport=*) lport=${w#net.lport=} ;;
	net.tap=*) tapmac=${w#net.tap=} ;;
	esac
done
echo "NET init"

# udhcpc's hook: the lease into the interface, and one line for the host.
cat >/udhcpc.sh <<'HOOK'
#!/bin/sh
case $1 in
bound|renew)
	ip addr add "$ip/$mask" dev "$interface"
	echo "NET lease $interface ip=$ip mask=$mask router=$router dns=$dns"
	;;
esac
HOOK
chmod 755 /udhcpc.sh

ip link set lo up
for d in /sys/class/net/eth*; do
	n=${d##*/}
	echo "NET mac $n $(cat "$d/address") mtu=$(cat "$d/mtu")"
	ip link set "$n" up
	if [ "$(cat "$d/address")" = "$tapmac" ]; then
		tapif=$n
		ip addr add 10.0.4.2/24 dev "$n"
		# The virtio features the driver took, bit 0 first.
		echo "NET tap $n features=$(cat "$d/device/features")"
		continue
	fi
	udhcpc -i "$n" -f -q -n -t 5 -T 3 -s /udhcpc.sh >/dhcp.out 2>&1
	rc=$?
	grep '^NET ' /dhcp.out
	echo "NET dhcp $n rc=$rc"
done

# The restricted NIC's host address first: its SYN is dropped (connect
# times out), then the open one's, whose bytes the host's listener reads.
if [ -n "$lport" ]; then
	echo "from-10.0.2" | nc -w 8 10.0.2.2 "$lport" >/dev/null 2>&1
	echo "NET connect 10.0.2.2 rc=$?"
	echo "from-10.0.3" | nc -w 30 10.0.3.2 "$lport" >/dev/null 2>&1
	echo "NET connect 10.0.3.2 rc=$?"
fi

nc -l -p 5556 </dev/null >/dev/vdb &
rpid=$!
nc -l -p 5555 </dev/vda &
spid=$!
# Both listen (state 0A, ports 0x15B3 and 0x15B4; busybox's nc listens on
# IPv6's any address, so in /proc/net/tcp6) before the host is told to
# connect: a forward to a port nobody listens on is reset, and the host
# would have to guess when to try again.
listening() {
	while [ "$(cat /proc/net/tcp /proc/net/tcp6 | grep -cE ":$1 [0:]+ 0A")" != 2 ]; do
		sleep 0.1
	done
}
listening '15B[34]'
echo "NET-LISTEN"
wait $spid
echo "NET send rc=$?"
wait $rpid
echo "NET recv rc=$?"

if [ -n "$tapif" ]; then
	nc -l -p 5558 </dev/null >/dev/vdc &
	rpid=$!
	nc -l -p 5557 </dev/vda &
	spid=$!
	listening '15B[56]'
	echo "NET-TAP-LISTEN"
	wait $spid
	echo "NET tap send rc=$?"
	wait $rpid
	echo "NET tap recv rc=$?"
fi
sync
echo "NET rx_dropped $(cat /sys/class/net/eth0/statistics/rx_dropped)"
echo "NET done"
poweroff -f
