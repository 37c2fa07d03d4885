#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench-fails.sh BRISK VHOST-BLK-BENCH: the benchmark's front end fails a
# run whose back end dies or stops answering, instead of printing a figure
# from half a run: exit 1 with one line saying so.  The back end is a
# brisk -export; each case acts once the bench says its rings run, so no
# case depends on how long anything takes (the bench's own limit on an
# unanswered request, 10 s, bounds the second).  Output is TAP.

set -u
brisk=${1:?usage: bench-fails.sh BRISK VHOST-BLK-BENCH}
bench=${2:?usage: bench-fails.sh BRISK VHOST-BLK-BENCH}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
tmp=$(mktemp -d)
bpid= fpid=
cleanup() {
	for p in $bpid $fpid; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
truncate -s 64M "$tmp/disk.raw"
sock=$tmp/vu.sock

start_backend() {
	rm -f "$sock"
	"$brisk" -drive "file=$tmp/disk.raw,if=none,id=d0" \
		-export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock" </dev/null 2>"$tmp/b.err" &
	bpid=$!
	for _ in $(seq 400); do [ -S "$sock" ] && return 0; sleep 0.05; done
	return 1
}
# start_bench SECONDS [ARGS]: the bench in the background, once it runs.
start_bench() {
	local s=$1
	shift
	# The last case's "running" must not count: the shell truncates f.err
	# only once the bench's process exists, maybe after the first look.
	rm -f "$tmp/f.out" "$tmp/f.err"
	"$bench" --socket "$sock" --depth 4 --warmup 0 --seconds "$s" "$@" \
		>"$tmp/f.out" 2>"$tmp/f.err" &
	fpid=$!
	for _ in $(seq 400); do
		grep -qs "^vhost-blk-bench: running" "$tmp/f.err" && return 0
		kill -0 "$fpid" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}
# failed DESC WORD: the bench ended with 1, no figure, one line with WORD.
failed() {
	timeout 60 tail --pid="$fpid" -f /dev/null
	wait "$fpid"
	local rc=$?
	fpid=
	if [ $rc -eq 1 ] && [ ! -s "$tmp/f.out" ] && grep -q "$2" "$tmp/f.err" &&
	   [ "$(grep -vc "running" "$tmp/f.err")" -eq 1 ]; then
		tap_check "$1: failed ($(grep -v running "$tmp/f.err"))" true
	else
		tap_fail "$1: failed with '$2', no figure" "status $rc, stdout: $(cat "$tmp/f.out"), stderr: $(cat "$tmp/f.err")"
	fi
}

# A good run first: the same bench and back end give a figure.
if start_backend && start_bench 0.5 --backend-pid "$bpid"; then
	wait "$fpid"
	rc=$?
	fpid=
	tap_check "a run against a live back end prints its figures" \
		eval '[ $rc -eq 0 ] && grep -q "^iops=[0-9]" "$tmp/f.out"'
else
	tap_fail "a run against a live back end" "$(cat "$tmp/b.err" "$tmp/f.err")"
fi
kill "$bpid" 2>/dev/null; wait "$bpid" 2>/dev/null

for how in "--backend-pid" ""; do
	if start_backend && start_bench 600 ${how:+$how "$bpid"}; then
		kill -KILL "$bpid"
		wait "$bpid" 2>/dev/null
		bpid=
		failed "the back end SIGKILLed mid-run${how:+ (with $how)}" \
			"hung up\|process is gone"
	else
		tap_fail "a run against a live back end" "$(cat "$tmp/b.err" "$tmp/f.err")"
	fi
done

# A back end that stops answering: the requests in flight are never answered
# (a long run, so that the bench cannot end before the back end stops).
if start_backend && start_bench 600; then
	kill -STOP "$bpid"
	failed "the back end stops answering" "unanswered"
	kill -CONT "$bpid"
	kill "$bpid" 2>/dev/null; wait "$bpid" 2>/dev/null
	bpid=
else
	tap_fail "a run against a live back end" "$(cat "$tmp/b.err" "$tmp/f.err")"
fi
tap_done
