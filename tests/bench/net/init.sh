# SPDX-License-Identifier: GPL-2.0-or-later
# Init of net-vs-qemu.sh's guest (run by mkinitrd's /init, busybox sh).
#
# Takes a DHCP lease on eth0 and serves four TCP ports for the host's
# forwards: 5601 swallows what arrives (host -> guest), 5602 sends
# netb.mib MiB of zeros and closes (guest -> host), 5603 echoes (round
# trips), 5604 prints the guest's counts (frames eth0 sent and received,
# the NIC's transmit and receive interrupts).  Prints "NETB-READY" once
# all four listen, then waits to be killed.  Lines start with "NETB" so
# the host can pick them out.
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
# Linux names the vectors of queue pair 0 virtioN-input.0 and virtioN-output.0.
cat >/counts.sh <<'COUNTS'
#!/bin/sh
irqs() {
	awk -v k="$1" '$NF ~ k { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i }
		END { print s + 0 }' /proc/interrupts
}
echo "tx_frames $(cat /sys/class/net/eth0/statistics/tx_packets)"
echo "rx_frames $(cat /sys/class/net/eth0/statistics/rx_packets)"
echo "tx_irqs $(irqs '^virtio[0-9]+-output')"
echo "rx_irqs $(irqs '^virtio[0-9]+-input')"
COUNTS
chmod 755 /counts.sh
nc -ll -p 5604 -e /counts.sh &
# All four listen (state 0A; busybox's nc listens on IPv6's any address,
# so in /proc/net/tcp6) before the host is told to connect.
while [ "$(cat /proc/net/tcp /proc/net/tcp6 | grep -cE ':15E[1234] [0:]+ 0A')" != 4 ]; do
	sleep 0.1
done
echo "NETB-READY"
while :; do sleep 3600; done
