# SPDX-License-Identifier: GPL-2.0-or-later
# The host's side of net-tests.sh's guest, inside the host that runs brisk:
#   net-peer.py PORTFILE LOG SRC RECV SEND GUARD_S
# Listens on 127.0.0.1 (its port into PORTFILE, with two more free ports
# for the forwards), then waits for the guest's NET-LISTEN line in LOG:
# reads the guest's first disk through the first forward into RECV, and
# writes SEND through the second.  Prints what happened as "key value"
# lines; judges nothing (net-tests.sh does).  GUARD_S only bounds a hang.
import socket, sys, threading, time

portfile, log, src, recv_path, send_path, guard = sys.argv[1:7]
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

def wait_listen():
    while time.monotonic() < deadline:
        try:
            with open(log, "rb") as f:
                if b"NET-LISTEN" in f.read():
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False

if not wait_listen():
    print("listen never")
    sys.exit(0)
s = socket.create_connection(("127.0.0.1", fwd[0]))
s.settimeout(max(1, deadline - time.monotonic()))
n = 0
with open(recv_path, "wb") as out:
    try:
        while True:
            b = s.recv(1 << 16)
            if not b:
                break
            out.write(b)
            n += len(b)
    except OSError as e:
        print("recv_error", e)
s.close()
print("received", n)
s = socket.create_connection(("127.0.0.1", fwd[1]))
s.settimeout(max(1, deadline - time.monotonic()))
with open(send_path, "rb") as f:
    s.sendall(f.read())
s.shutdown(socket.SHUT_WR)
try:
    while s.recv(4096):
        pass
except OSError as e:
    print("send_error", e)
s.close()
print("sent", os.path.getsize(send_path))
lsock.close()
print("connections", len(got))
for d in got:
    print("listener_got", d.decode(errors="replace").strip() or "(nothing)")
