# SPDX-License-Identifier: GPL-2.0-or-later
# Init of net-vs-qemu.sh's guest (run by mkinitrd's /init, busybox sh).
#
# Takes a DHCP lease on eth0 and serves three TCP ports for the host's
# forwards: 5601 swallows what arrives (host -> guest), 5602 sends
# netb.mib MiB of zeros and closes (guest -> host), 5603 echoes (round
# trips).  Prints "NETB-READY" once all three listen, then waits to be
# killed.  Lines start with "NETB" so the host can pick them out.
mib=16
for w in $(cat /proc/cmdline); do
	case $w in netb.mib=*) mib=${w#netb.mib=} ;; esac
done

cat >/udhcpc.sh <<'HOOK'
#!/bin/sh
case $1 in
bound|renew) ip addr add "$ip/$mask" dev "$interface" ;;
esac
HOOK
chmod 755 /udhcpc.sh
ip link set lo up
ip link set eth0 up
udhcpc -i eth0 -f -q -n -t 5 -T 3 -s /udhcpc.sh >/dev/null 2>&1
echo "NETB lease rc=$? mtu=$(cat /sys/class/net/eth0/mtu) $(ip -4 -o addr show eth0 | awk '{ print $4 }')"

(while :; do nc -l -p 5601 </dev/null >/dev/null; done) &
(while :; do head -c $((mib << 20)) /dev/zero | nc -l -p 5602; done) &
nc -ll -p 5603 -e cat &
# All three listen (state 0A; busybox's nc listens on IPv6's any address,
# so in /proc/net/tcp6) before the host is told to connect.
while [ "$(cat /proc/net/tcp /proc/net/tcp6 | grep -cE ':15E[123] [0:]+ 0A')" != 3 ]; do
	sleep 0.1
done
echo "NETB-READY"
while :; do sleep 3600; done
