# SPDX-License-Identifier: GPL-2.0-or-later
# The host's side of net-vs-qemu.sh, one guest at a time:
#   peer.py SINK_PORT SOURCE_PORT ECHO_PORT MIB PINGS [COUNT_PORT]
# through the forwards on 127.0.0.1: PINGS one-byte round trips on the
# echo port (TCP_NODELAY), then MIB MiB to the guest's sink (timed from
# connect until the guest closes, so every byte arrived), then all the
# guest's source sends (timed from connect until its EOF).  Prints
# "rtt_us MEDIAN", "h2g_mbyte_s X", "g2h_mbyte_s X" (MB = 10^6 bytes),
# and "g2h_bytes N"; judges nothing.  With COUNT_PORT (the guest's counts,
# init.sh) read before and after the guest -> host transfer, also what
# it cost the guest: "g2h_frames N" (frames eth0 sent), "g2h_tx_irqs N"
# and "g2h_rx_irqs N" (the NIC's transmit and receive interrupts), give
# or take the few frames of the count's own connection.
import socket, statistics, sys, time

sink, source, echo, mib, pings = (int(a) for a in sys.argv[1:6])
count = int(sys.argv[6]) if len(sys.argv) > 6 else 0
TIMEOUT = 300


def conn(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


s = conn(echo)
rtts = []
for i in range(pings + 10):
    t0 = time.perf_counter()
    s.sendall(b"x")
    if s.recv(1) != b"x":
        sys.exit("echo: connection closed")
    if i >= 10:	# the first few warm the path up
        rtts.append(time.perf_counter() - t0)
s.close()
print("rtt_us %.1f" % (statistics.median(rtts) * 1e6))

buf = bytes(1 << 20)
t0 = time.perf_counter()
s = conn(sink)
for _ in range(mib):
    s.sendall(buf)
s.shutdown(socket.SHUT_WR)
while s.recv(65536):
    pass
t = time.perf_counter() - t0
s.close()
print("h2g_mbyte_s %.2f" % (mib * (1 << 20) / t / 1e6))



def counts():
    s = conn(count)
    b = b""
    while True:
        d = s.recv(4096)
        if not d:
            break
        b += d
    s.close()
    return dict((k, int(v)) for k, v in (l.split() for l in b.decode().splitlines()))


before = counts() if count else None
t0 = time.perf_counter()
s = conn(source)
n = 0
while True:
    b = s.recv(1 << 20)
    if not b:
        break
    n += len(b)
t = time.perf_counter() - t0
s.close()
print("g2h_mbyte_s %.2f" % (n / t / 1e6))
print("g2h_bytes %d" % n)
if before:
    after = counts()
    for k in ("tx_frames", "tx_irqs", "rx_irqs"):
        print("g2h_%s %d" % (k.replace("tx_frames", "frames"), after[k] - before[k]))
