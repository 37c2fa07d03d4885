#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# term-signals.sh BRISK: brisk on a real terminal (a pseudo-terminal made
# by script(1)), its console on stdio, killed by SIGTERM, SIGINT or SIGHUP
# while its guest runs, exits 128 + N and leaves the terminal as it found
# it, having put it in raw mode meanwhile.  The guest is a stand-in kernel
# that halts for ever (-accel kvm,check=off: any /dev/kvm that makes a VM
# will do, so this runs on kvm_pvm as well).  Output is TAP.

set -u
brisk=${1:?usage: term-signals.sh path/to/brisk}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/fake-bzimage.sh"
. "$here/../lib/pty.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! command -v script >/dev/null; then
	tap_skip "signals on a terminal" "no script(1) to make a terminal with (apt-get install bsdutils)"
	tap_done
fi
if ! have_kvm_dev; then
	tap_skip "signals on a terminal" "no /dev/kvm here to make a VM with"
	tap_done
fi
same_settings() { [ -s "$1.after" ] && [ "$(cat "$1.after")" = "$(cat "$1.before")" ]; }
kernel=$tmp/halt
fake_bzimage "$kernel" halt

for sig in TERM INT HUP; do
	st=$tmp/$sig
	n=$(kill -l "$sig")
	mkfifo "$tmp/in.$sig"
	pty_start "$st" "$tmp/in.$sig" "$tmp/out.$sig" \
		"$brisk" -accel kvm,check=off -kernel "$kernel" -m 64M -smp 2 -timeout 60
	exec 7>"$tmp/in.$sig"
	# Raw mode is brisk's last step before the guest runs.
	raw=no
	for _ in $(seq 100); do
		pty_changed "$st" && { raw=yes; break; }
		sleep 0.1
	done
	tap_check "SIG$sig: brisk put the terminal in raw mode" [ $raw = yes ]
	kill -s "$sig" "$(cat "$st.pid" 2>/dev/null)" 2>/dev/null
	pty_wait_file "$st.after" 20
	rc=$(cat "$st.rc" 2>/dev/null)
	tap_check "SIG$sig: exit status 128 + $n" [ "${rc:-none}" = $((128 + n)) ]
	tap_check "SIG$sig: the terminal's settings are as before" same_settings "$st"
	[ "${rc:-none}" = $((128 + n)) ] || tap_diag "status ${rc:-none}, stderr: $(cat "$st.err" 2>/dev/null)"
	exec 7>&-
	kill "$PTY_PID" 2>/dev/null
	wait "$PTY_PID" 2>/dev/null
done
tap_done
