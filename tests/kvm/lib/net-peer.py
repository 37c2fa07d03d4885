# SPDX-License-Identifier: GPL-2.0-or-later
# The host's side of net-tests.sh's guest, inside the host that runs brisk:
#   net-peer.py PORTFILE LOG SRC RECV SEND GUARD_S [TAP_RECV]
# Listens on 127.0.0.1 (its port into PORTFILE, with two more free ports
# for the forwards), then waits for the guest's NET-LISTEN line in LOG:
# reads the guest's first disk through the first forward into RECV, and
# writes SEND through the second.  With TAP_RECV, then waits for
# NET-TAP-LISTEN and does the same straight to the guest's address on the
# tap, 10.0.4.2 (ports 5557 and 5558), reading into TAP_RECV.  Prints
# what happened as "key value" lines; judges nothing (net-tests.sh does).
# GUARD_S only bounds a hang.
import socket, sys, threading, time

portfile, log, src, recv_path, send_path, guard = sys.argv[1:7]
tap_recv = sys.argv[7] if len(sys.argv) > 7 else None
deadline = time.monotonic() + float(guard)

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p

lsock = socket.socket()
lsock.bind(("127.0.0.1", 0))
lsock.listen(8)
got = []

def serve():
    while True:
        try:
            c, _ = lsock.accept()
        except OSError:
            return
        c.settimeout(max(1, deadline - time.monotonic()))
        data = b""
        try:
            while True:
                b = c.recv(4096)
                if not b:
                    break
                data += b
        except OSError:
            pass
        got.append(data)
        c.close()

threading.Thread(target=serve, daemon=True).start()
fwd = (free_port(), free_port())
with open(portfile + ".tmp", "w") as f:
    f.write("%d %d %d\n" % (lsock.getsockname()[1], fwd[0], fwd[1]))
import os
os.rename(portfile + ".tmp", portfile)

def wait_line(line):
    while time.monotonic() < deadline:
        try:
            with open(log, "rb") as f:
                if line in f.read():
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False

def transfer(addr, recv_port, send_port, path, tag):
    """Reads what addr:recv_port sends into path, then writes SEND to addr:send_port."""
    s = socket.create_connection((addr, recv_port))
    s.settimeout(max(1, deadline - time.monotonic()))
    n = 0
    with open(path, "wb") as out:
        try:
            while True:
                b = s.recv(1 << 16)
                if not b:
                    break
                out.write(b)
                n += len(b)
        except OSError as e:
            print(tag + "recv_error", e)
    s.close()
    print(tag + "received", n)
    s = socket.create_connection((addr, send_port))
    s.settimeout(max(1, deadline - time.monotonic()))
    with open(send_path, "rb") as f:
        s.sendall(f.read())
    s.shutdown(socket.SHUT_WR)
    try:
        while s.recv(4096):
            pass
    except OSError as e:
        print(tag + "send_error", e)
    s.close()
    print(tag + "sent", os.path.getsize(send_path))

if not wait_line(b"NET-LISTEN"):
    print("listen never")
    sys.exit(0)
transfer("127.0.0.1", fwd[0], fwd[1], recv_path, "")
lsock.close()
print("connections", len(got))
for d in got:
    print("listener_got", d.decode(errors="replace").strip() or "(nothing)")
if tap_recv:
    if wait_line(b"NET-TAP-LISTEN"):
        transfer("10.0.4.2", 5557, 5558, tap_recv, "tap_")
    else:
        print("tap_listen never")
