#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# qemu-lines.sh BRISK TABLE: the QEMU command lines of public projects' CI
# (TABLE, one per line, with where each comes from) given to brisk with
# the binary renamed.  A "run" line must get past every check brisk
# makes: where a VM can be made, a stand-in kernel boots and exits with
# the status it writes; where none can, brisk stops at /dev/kvm with one
# line.  A "refuse:WORD" line asks for something brisk lacks: exit 1 and
# one stderr line holding WORD ('_' stands for a space).  Placeholders: KERNEL, INITRD, DISK,
# CMDLINE (one argument), HOSTPORT (a free port of 127.0.0.1).  Output is TAP.

set -u
brisk=${1:?usage: qemu-lines.sh path/to/brisk TABLE}
table=${2:?usage: qemu-lines.sh path/to/brisk TABLE}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/fake-bzimage.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fake_bzimage "$tmp/bzImage"
# A TCP port of 127.0.0.1 that nothing listens on now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
: >"$tmp/initrd"
truncate -s 64M "$tmp/disk.raw"

# A line's taps and port forwards go in a network namespace of the
# test's own where it can make one, never among the host's interfaces.
netns=()
if unshare -n true 2>/dev/null && command -v ip >/dev/null; then
	netns=(unshare -n sh -c 'ip link set lo up && exec "$@"' sh)
fi
source=
while IFS= read -r line; do
	case $line in
	'# source: '*) source=${line#'# source: '}; continue ;;
	''|'#'*) continue ;;
	esac
	read -r -a words <<<"$line"
	expect=${words[0]}
	args=()
	# words[1] is QEMU's binary: brisk takes its place.
	for w in "${words[@]:2}"; do
		w=${w//KERNEL/$tmp/bzImage}
		w=${w//INITRD/$tmp/initrd}
		w=${w//DISK/$tmp/disk.raw}
		w=${w//CMDLINE/console=ttyS0 panic=-1}
		w=${w//HOSTPORT/$(free_port)}
		args+=("$w")
	done
	desc="${words[*]:1} [$source]"
	case $expect in
	run)
		timeout 30 "${netns[@]}" "$brisk" "${args[@]}" -accel kvm,check=off \
			-device isa-debug-exit,iobase=0xf4,iosize=4 -timeout 20 \
			</dev/null >"$tmp/out" 2>"$tmp/err"
		rc=$?
		if have_kvm_dev; then
			ok=$([ $rc -eq "$FAKE_BZIMAGE_EXIT" ] && [ ! -s "$tmp/err" ]; echo $?)
			what="boots (status $FAKE_BZIMAGE_EXIT)"
		else
			ok=$([ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
			     grep -q '/dev/kvm' "$tmp/err"; echo $?)
			what="gets as far as /dev/kvm"
		fi
		if [ "$ok" -eq 0 ]; then
			tap_check "runs: $desc: $what" true
		else
			tap_fail "runs: $desc: $what" "status $rc, stderr: $(cat "$tmp/err")"
		fi
		;;
	refuse:*)
		word=${expect#refuse:}
		word=${word//_/ }
		timeout 30 "$brisk" "${args[@]}" </dev/null >"$tmp/out" 2>"$tmp/err"
		rc=$?
		if [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
		   grep -qF -- "$word" "$tmp/err"; then
			tap_check "refused: $desc -> $(cat "$tmp/err")" true
		else
			tap_fail "refused with one line naming '$word': $desc" \
				"status $rc, stderr: $(cat "$tmp/err")"
		fi
		;;
	*)
		tap_fail "table line: unknown expectation '$expect'" "$line" ;;
	esac
done <"$table"
tap_done
