#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# images.sh BRISK: a disk is never served two ways at once, nor served
# raw when it is another format.  brisk locks its images as QEMU does, so
# QEMU (a guest's drive, qemu-system -S: its drives opened, nothing run)
# and qemu-storage-daemon (an export) refuse an image brisk writes, brisk
# refuses one they write, in either order, and readers share; two -drive
# of one brisk meet the same way, and file.locking=off goes without.
# A file that qemu-img made in another format is refused without
# format=, and served as its bytes with format=raw.  Output is TAP.

set -u
brisk=${1:?usage: images.sh path/to/brisk}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
tmp=$(mktemp -d)
qemu_pids=()
brisk_pid=
cleanup() {
	[ -z "$brisk_pid" ] || kill "$brisk_pid" 2>/dev/null
	for p in "${qemu_pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
disk=$tmp/disk.img
truncate -s 1M "$disk"
sock=$tmp/e.sock

drive() { # drive ID FILE [OPTS]: an if=none -drive argument
	echo "file=$2,if=none,id=$1${3:+,$3}"
}
export_of() { # export_of ID [OPTS]: an -export of drive ID on its own socket
	echo "vhost-user-blk,id=e$1,drive=$1,addr.path=$tmp/$1.sock${2:+,$2}"
}

# refused DESC WORD ARGS...: exit 1, one "brisk: " line holding WORD.
refused() {
	local desc=$1 word=$2 rc
	shift 2
	timeout 20 "$brisk" "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
	   grep -q '^brisk: ' "$tmp/err" && grep -qF -- "$word" "$tmp/err"; then
		tap_check "$desc: refused ($(cat "$tmp/err"))" true
	else
		tap_fail "$desc: refused with '$word'" "status $rc: $(cat "$tmp/err")"
	fi
}

# served DESC ARGS...: brisk -export serves them until -timeout ends it (124,
# its one line): every drive passed its checks and locks.
served() {
	local desc=$1 rc
	shift
	timeout 20 "$brisk" "$@" -timeout 1 </dev/null >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 124 ] && grep -q "timeout: still serving" "$tmp/err" &&
	   [ "$(wc -l <"$tmp/err")" -eq 1 ]; then
		tap_check "$desc: served" true
	else
		tap_fail "$desc: served" "status $rc: $(cat "$tmp/err")"
	fi
}

W=writable=on
# ---- two drives of one brisk on one image ----
refused "two writable drives" 'Failed to get "write" lock' \
	-drive "$(drive a "$disk")" -drive "$(drive b "$disk")" \
	-export "$(export_of a $W)" -export "$(export_of b $W)"
refused "a reader after a writer" 'Failed to get shared "write" lock' \
	-drive "$(drive a "$disk")" -drive "$(drive b "$disk" readonly=on)" \
	-export "$(export_of a $W)" -export "$(export_of b)"
refused "a writer after a reader" 'Failed to get "write" lock' \
	-drive "$(drive a "$disk" readonly=on)" -drive "$(drive b "$disk")" \
	-export "$(export_of a)" -export "$(export_of b $W)"
served "two readers" -drive "$(drive a "$disk" readonly=on)" \
	-drive "$(drive b "$disk" readonly=on)" -export "$(export_of a)" -export "$(export_of b)"
# An export the front ends cannot write opens its drive read-only: a reader.
served "two exports without writable=on" -drive "$(drive a "$disk")" \
	-drive "$(drive b "$disk")" -export "$(export_of a)" -export "$(export_of b)"
served "file.locking=off: two writers" -drive "$(drive a "$disk" file.locking=off)" \
	-drive "$(drive b "$disk" file.locking=off)" \
	-export "$(export_of a $W)" -export "$(export_of b $W)"
served "file.locking=on: a writer" -drive "$(drive a "$disk" file.locking=on)" \
	-export "$(export_of a $W)"
refused "file.locking=maybe" "file.locking=maybe" \
	-drive "$(drive a "$disk" file.locking=maybe)" -export "$(export_of a $W)"
refused "-snapshot's drive reads, and locks as a reader" 'Failed to get shared "write" lock' \
	-drive "$(drive a "$disk")" -drive "$(drive b "$disk" snapshot=on)" \
	-export "$(export_of a $W)" -export "$(export_of b $W)"
refused "a read-only drive exported writable" "cannot export read-only drive a as writable" \
	-drive "$(drive a "$disk" readonly=on)" -export "$(export_of a $W)"

# ---- brisk beside QEMU and qemu-storage-daemon ----
# A brisk daemon writing the disk, until stop_brisk.
start_brisk() { # start_brisk [readonly]: a writer, or a reader
	local ro=,readonly=on w=
	[ -n "${1:-}" ] || { ro= w=,$W; }
	rm -f "$sock"
	"$brisk" -drive "file=$disk,if=none,id=d0$ro" \
		-export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock$w" \
		</dev/null 2>"$tmp/brisk.err" &
	brisk_pid=$!
	# Its socket is made after its drive is open and locked.
	for _ in $(seq 400); do [ -S "$sock" ] && return 0; sleep 0.05; done
	return 1
}
stop_brisk() {
	kill "$brisk_pid"
	wait "$brisk_pid"
	local rc=$?
	brisk_pid=
	return $rc
}

case $(uname -m) in
x86_64) qemu=qemu-system-x86_64 machine=pc ;;
aarch64) qemu=qemu-system-aarch64 machine=virt ;;
*) qemu= ;;
esac
# peer_run NAME ARGS...: QEMU or qemu-storage-daemon, daemonized: its exit
# comes once its drives are open and locked (or refused).  Its status.
peer_run() {
	local pidf=$tmp/peer.pid
	rm -f "$pidf"
	"$@" --daemonize --pidfile "$pidf" </dev/null >"$tmp/peer.out" 2>"$tmp/peer.err"
	local rc=$?
	[ ! -s "$pidf" ] || qemu_pids+=("$(cat "$pidf")")
	return $rc
}
peer_stop() {
	local p
	for p in "${qemu_pids[@]}"; do
		kill "$p" 2>/dev/null
		# A daemonized peer is no child of ours: wait for its locks to go.
		for _ in $(seq 400); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
	done
	qemu_pids=()
}
qemu_guest() { # qemu_guest [readonly=on]: a QEMU guest's virtio-blk drive, -S
	peer_run "$qemu" -S -display none -monitor none -serial none -nodefaults \
		-accel tcg -M "$machine" \
		-drive "file=$disk,format=raw,if=none,id=d0${1:+,$1}" \
		-device virtio-blk-pci,drive=d0
}
qsd_export() { # qsd_export [writable=on]
	peer_run qemu-storage-daemon \
		--blockdev "driver=file,node-name=n0,filename=$disk" \
		--export "type=vhost-user-blk,id=e0,node-name=n0,addr.type=unix,addr.path=$tmp/q.sock${1:+,$1}"
}
peer_refused() { # peer_refused DESC STATUS: the peer ended with 1, naming the lock
	if [ "$2" -eq 1 ] && grep -q 'Failed to get .*lock' "$tmp/peer.err"; then
		tap_check "$1: refused ($(head -n 1 "$tmp/peer.err"))" true
	else
		tap_fail "$1: refused" "status $2: $(cat "$tmp/peer.err")"
	fi
}

B="-drive file=$disk,if=none,id=d0"
if [ -z "$qemu" ] || ! command -v "$qemu" >/dev/null; then
	tap_skip "brisk beside a QEMU guest" "no ${qemu:-QEMU for $(uname -m)} here"
else
	qemu_guest
	tap_status $? "a QEMU guest's writable drive runs" "$(cat "$tmp/peer.err")"
	refused "QEMU writes the image: a brisk writer" 'Failed to get "write" lock' \
		$B -export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock,$W"
	refused "QEMU writes the image: a brisk reader" 'Failed to get shared "write" lock' \
		$B,readonly=on -export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock"
	peer_stop
	qemu_guest readonly=on
	tap_status $? "a QEMU guest's read-only drive runs" "$(cat "$tmp/peer.err")"
	served "QEMU reads the image: a brisk reader" $B,readonly=on \
		-export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock"
	peer_stop
	if start_brisk; then
		qemu_guest
		peer_refused "brisk writes the image: a QEMU guest's writable drive" $?
		qemu_guest readonly=on
		peer_refused "brisk writes the image: a QEMU guest's read-only drive" $?
		peer_stop
		stop_brisk
		tap_status $? "the brisk daemon ends with 0" "$(cat "$tmp/brisk.err")"
	else
		tap_fail "a brisk daemon writes the image" "$(cat "$tmp/brisk.err")"
	fi
	if start_brisk readonly; then
		qemu_guest readonly=on
		tap_status $? "brisk reads the image: a QEMU guest's read-only drive runs" \
			"$(cat "$tmp/peer.err")"
		peer_stop
		stop_brisk
	else
		tap_fail "a brisk daemon reads the image" "$(cat "$tmp/brisk.err")"
	fi
fi

if ! command -v qemu-storage-daemon >/dev/null; then
	tap_skip "brisk beside qemu-storage-daemon" "no qemu-storage-daemon here"
else
	qsd_export writable=on
	tap_status $? "a writable qemu-storage-daemon export runs" "$(cat "$tmp/peer.err")"
	refused "qemu-storage-daemon writes the image: a brisk writer" \
		'Failed to get shared "write" lock' \
		$B -export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock,$W"
	peer_stop
	qsd_export
	tap_status $? "a read-only qemu-storage-daemon export runs" "$(cat "$tmp/peer.err")"
	served "qemu-storage-daemon reads the image: a brisk writer" $B \
		-export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock,$W"
	peer_stop
	if start_brisk; then
		qsd_export writable=on
		peer_refused "brisk writes the image: a writable qemu-storage-daemon export" $?
		peer_stop
		stop_brisk
	else
		tap_fail "a brisk daemon writes the image" "$(cat "$tmp/brisk.err")"
	fi
fi

# ---- formats ----
if ! command -v qemu-img >/dev/null; then
	tap_skip "format probing" "no qemu-img here to make images with"
else
	for fmt in qcow2 qcow qed vmdk vmdk-flat vdi vhdx vpc luks; do
		img=$tmp/i.$fmt
		opts=()
		[ $fmt != luks ] || opts=(--object secret,id=s0,data=x -o key-secret=s0)
		# a descriptor file, text, beside its flat extent
		[ $fmt != vmdk-flat ] || { fmt=vmdk; opts=(-o subformat=monolithicFlat); }
		# Making a luks image times a key derivation, and qemu-img gives
		# up ("Unable to get accurate CPU usage") when its thread's CPU
		# clock reads no time for it, as on a loaded host: making the
		# image is tried again; what brisk says of it is not.
		for try in 1 2 3; do
			qemu-img create -q -f $fmt "${opts[@]}" "$img" 1M 2>"$tmp/qi.err" && break
			[ $fmt = luks ] || break
		done
		if [ -s "$tmp/qi.err" ] || [ ! -f "$img" ]; then
			tap_fail "qemu-img makes a $fmt image" "$(cat "$tmp/qi.err")"
			continue
		fi
		# Whole sectors, as any raw image brisk serves.
		truncate -s %512 "$img"
		refused "a $fmt image without format=" "looks like a $fmt image" \
			-drive "file=$img,if=none,id=d0" \
			-export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock"
		[ $fmt = qcow2 ] || continue
		served "a $fmt image with format=raw" -drive "file=$img,if=none,id=d0,format=raw" \
			-export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock"
		refused "format=$fmt" "brisk reads raw images only" \
			-drive "file=$img,if=none,id=d0,format=$fmt" \
			-export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock"
	done
fi
# A VMDK text descriptor that starts with its version line, by hand: what
# qemu-img says of it decides what brisk must say.
desc=$tmp/desc.vmdk
printf 'version=1\nCID=fffffffe\nparentCID=ffffffff\ncreateType="monolithicFlat"\nRW 2048 FLAT "%s" 0\n' \
	"$disk" >"$desc"
truncate -s 512 "$desc"
if ! command -v qemu-img >/dev/null; then
	tap_skip "a VMDK descriptor without its comment line" "no qemu-img here to say what it is"
elif ! qemu-img info "$desc" 2>/dev/null | grep -q "^file format: vmdk"; then
	tap_fail "qemu-img takes the hand-written descriptor for vmdk" "$(qemu-img info "$desc" 2>&1)"
else
	refused "a VMDK descriptor without its comment line" "looks like a vmdk image" \
		-drive "file=$desc,if=none,id=d0" -export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock"
fi
served "a raw image without format=" -drive "file=$disk,if=none,id=d0" \
	-export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock"

# ---- a file brisk may read but not write ----
ro=$tmp/ro.raw
truncate -s 1M "$ro"
chmod 0444 "$ro"
asuser=()
if [ "$(id -u)" -eq 0 ]; then
	# root may write it anyway: try as nobody, who may not
	chmod 0755 "$tmp"
	asuser=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
if [ ${#asuser[@]} -gt 0 ] && ! "${asuser[@]}" test -x "$brisk"; then
	tap_skip "a read-only file's message" "user nobody cannot run $brisk here"
else
	"${asuser[@]}" "$brisk" -drive "file=$ro,if=none,id=d0" \
		-export "vhost-user-blk,id=e0,drive=d0,addr.path=$sock,$W" \
		</dev/null >/dev/null 2>"$tmp/err"
	rc=$?
	tap_check "a read-only file: exit 1, one line" \
		eval '[ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ]'
	tap_check "naming -drive and its file, and readonly=on" grep -qF \
		"brisk: -drive file=$ro: Permission denied (readonly=on opens it read-only)" "$tmp/err"
	[ -s "$tmp/err" ] && tap_diag "$(cat "$tmp/err")"
fi
tap_done
