#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# export.sh BRISK: brisk as a storage daemon (-export vhost-user-blk).
# Bad -export command lines end with status 1 and one stderr line naming
# the problem; a good one serves its socket without /dev/kvm, replaces a
# stale socket but not one another process serves or locks, and on SIGTERM
# exits 0 and removes its socket, unless another daemon has taken the
# path over meanwhile.  The protocol itself is tested by
# tests/vhost-user/test-vhost-user-blk.

set -u
brisk=${1:?usage: export.sh path/to/brisk}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
disk=$tmp/disk.img
truncate -s 1M "$disk"
D="file=$disk,if=none,id=d0"
sock=$tmp/d0.sock

# refused WORD ARGS...: exit 1 with one "brisk: " line holding WORD.
refused() {
	local word=$1 rc
	shift
	timeout 10 "$brisk" "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
	   grep -q '^brisk: ' "$tmp/err" && grep -qF -- "$word" "$tmp/err"; then
		tap_check "refused: $word" true
	else
		tap_fail "refused: $word" "status $rc: $(cat "$tmp/err")"
	fi
}

E="vhost-user-blk,id=e0,drive=d0,addr.path=$sock"
refused "-export: unknown type 'nbd' (brisk -export help lists them)" -drive "$D" -export nbd,id=e0,drive=d0
refused "id= is missing" -drive "$D" -export "vhost-user-blk,drive=d0,addr.path=$sock"
refused "addr.path= is missing" -drive "$D" -export vhost-user-blk,id=e0,drive=d0
refused "drive= is missing" -drive "$D" -export "vhost-user-blk,id=e0,addr.path=$sock"
refused "no -drive with id=d9" -drive "$D" -export "vhost-user-blk,id=e0,drive=d9,addr.path=$sock"
refused "Unix sockets only" -drive "$D" -export "$E,addr.type=inet"
refused "num-queues=0" -drive "$D" -export "$E,num-queues=0"
refused "queue-size=100" -drive "$D" -export "$E,queue-size=100"
refused "writable=maybe" -drive "$D" -export "$E,writable=maybe"
refused "iothreads=2 exceeds num-queues=1" -drive "$D" -export "$E,iothreads=2"
refused "unknown option 'packed'" -drive "$D" -export "$E,packed=on"
refused "already in use" -drive "$D" -export "$E" -export "vhost-user-blk,id=e1,drive=d0,addr.path=$tmp/x"
refused "duplicate id" -drive "$D" -drive "file=$disk,if=none,id=d1" \
	-export "$E" -export "vhost-user-blk,id=e0,drive=d1,addr.path=$tmp/x"
refused "-kernel needs a guest" -kernel /nonexistent -drive "$D" -export "$E"
refused "virtio-blk-pci needs a guest" -drive "$D" -drive "file=$disk,if=none,id=d1" \
	-export "$E" -device virtio-blk-pci,drive=d1
refused "-drive if=virtio needs a guest" -drive "$D" -drive "file=$disk,if=virtio,file.locking=off" \
	-export "$E"
refused "not a socket" -drive "$D" -export "vhost-user-blk,id=e0,drive=d0,addr.path=$disk"
refused "socket path longer" -drive "$D" \
	-export "vhost-user-blk,id=e0,drive=d0,addr.path=$tmp/$(head -c 120 /dev/zero | tr '\0' s)"

# wait_for FILE: until the daemon's socket is there (bounded).
wait_for() {
	for _ in $(seq 100); do [ -S "$1" ] && return 0; sleep 0.05; done
	return 1
}

# A stale socket (nobody listening) is replaced.
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$sock"
tap_check "a stale socket file is there" [ -S "$sock" ]
"$brisk" -drive "$D" -export "$E,num-queues=2,writable=on" </dev/null 2>"$tmp/err1" &
pid=$!
pids+=("$pid")
tap_check "the daemon listens without /dev/kvm" wait_for "$sock"
sleep 0.2
tap_check "the daemon is still running" kill -0 "$pid"
# Another daemon on the same socket would take it from the first: refused
# (serving another disk: on this one the first daemon's lock would speak first).
truncate -s 1M "$tmp/disk2.img"
refused "another process serves this socket" -drive "file=$tmp/disk2.img,if=none,id=d0" \
	-export "$E"
kill -TERM "$pid"
wait "$pid"
rc=$?
tap_check "SIGTERM ends the daemon with status 0" [ $rc -eq 0 ]
tap_check "and its socket is gone" [ ! -e "$sock" ]
tap_check "and its lock file" [ ! -e "$sock.lock" ]
tap_check "it said nothing" [ ! -s "$tmp/err1" ]

# Whoever holds the path's lock serves it, socket or not yet.
exec {lockfd}>"$sock.lock"
flock -x "$lockfd"
refused "another process serves this socket" -drive "$D" -export "$E"
tap_check "leaving no socket behind" [ ! -e "$sock" ]
exec {lockfd}>&-
rm -f "$sock.lock"

# Two daemons started at once on one path: exactly one serves it, the
# other ends with 1 and one line.
"$brisk" -drive "$D" -export "$E" </dev/null 2>"$tmp/errA" &
pa=$!
"$brisk" -drive "$D" -export "$E" </dev/null 2>"$tmp/errB" &
pb=$!
pids+=("$pa" "$pb")
loser=""
for _ in $(seq 200); do
	if ! kill -0 "$pa" 2>/dev/null; then loser=$pa; winner=$pb; lerr=$tmp/errA; break; fi
	if ! kill -0 "$pb" 2>/dev/null; then loser=$pb; winner=$pa; lerr=$tmp/errB; break; fi
	sleep 0.05
done
if [ -n "$loser" ]; then
	wait "$loser"
	rc=$?
	tap_check "of two daemons on one path, one ends with 1" [ $rc -eq 1 ]
	tap_check "with one line" [ "$(wc -l <"$lerr")" -eq 1 ]
	tap_check "saying another process serves the socket" \
		grep -q "another process serves this socket" "$lerr"
	tap_check "the other serves it" wait_for "$sock"
	tap_check "and still runs" kill -0 "$winner"
else
	tap_fail "of two daemons on one path, one ends with 1" "both still run after 10 s"
	winner=$pa
fi

# The path is taken from under the serving daemon (its socket and lock
# removed) and a second daemon serves there: the first, ending, must not
# remove the second's socket.
rm -f "$sock" "$sock.lock"
"$brisk" -drive "$D" -export "$E" </dev/null 2>"$tmp/errC" &
pc=$!
pids+=("$pc")
tap_check "a daemon serves the path taken over" wait_for "$sock"
kill -TERM "$winner"
wait "$winner"
tap_check "the first daemon ends with 0" [ $? -eq 0 ]
tap_check "leaving the second's socket in place" [ -S "$sock" ]
tap_check "and its lock file" [ -e "$sock.lock" ]
kill -TERM "$pc"
wait "$pc"
tap_check "the second ends with 0" [ $? -eq 0 ]
tap_check "removing its own socket" [ ! -e "$sock" ]

# -timeout bounds a daemon as it bounds a guest.
timeout 10 "$brisk" -drive "$D" -export "$E" -timeout 1 </dev/null 2>"$tmp/err2"
rc=$?
tap_check "-timeout ends the daemon with 124" [ $rc -eq 124 ]
tap_check "with one line" [ "$(wc -l <"$tmp/err2")" -eq 1 ]
tap_done
