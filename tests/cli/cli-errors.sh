#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# cli-errors.sh BRISK: bad invocations must fail with status 1 and exactly
# one stderr line that names the problem; --help and --version succeed;
# a valid command line boots a stand-in kernel, or, with no /dev/kvm to
# make a VM with, stops there with one line.  Output is TAP.

set -u
brisk=${1:?usage: cli-errors.sh path/to/brisk}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/fake-bzimage.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

kernel=$tmp/bzImage
fake_bzimage "$kernel"
head -c 100000 /dev/urandom >"$tmp/random"
truncate -s 100M "$tmp/big-initrd"
: >"$tmp/initrd"
long=$(head -c 3000 /dev/zero | tr '\0' x)

# expect WORD ARGS...: exit 1, one stderr line containing WORD, no stdout.
expect() {
	local word=$1 rc lines
	shift
	timeout 10 "$brisk" "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
	rc=$?
	lines=$(wc -l <"$tmp/err")
	if [ "$rc" -ne 1 ] || [ "$lines" -ne 1 ] ||
	   ! grep -q "^brisk: .*$word" "$tmp/err" || [ -s "$tmp/out" ]; then
		tap_fail "$(echo "brisk $*" | cut -c1-120): one line with '$word'" \
			"status $rc, $lines stderr lines:
$(cat "$tmp/err")"
	else
		tap_check "$(echo "brisk $*" | cut -c1-120) -> $(cat "$tmp/err")" true
	fi
}

# expect_ok PATTERN ARGS...: exit 0 and stdout matching PATTERN.
expect_ok() {
	local pat=$1 rc
	shift
	timeout 10 "$brisk" "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -ne 0 ] || ! grep -q "$pat" "$tmp/out" || [ -s "$tmp/err" ]; then
		tap_fail "brisk $*: exit 0, stdout matching '$pat'" "status $rc"
	else
		tap_check "brisk $*" true
	fi
}

K=(-kernel "$kernel")
expect "unknown option" -bogus
expect "unknown option" "${K[@]}" --frobnicate
expect "unexpected argument" "${K[@]}" stray
expect "needs an argument" "${K[@]}" -m
expect "needs an argument" -kernel
expect "no kernel" -m 512M
expect "cannot open kernel" -kernel "$tmp/missing"
expect "not a bzImage" -kernel "$tmp/random"
expect "kernel '$tmp' is not a regular file or block device" -kernel "$tmp"
expect "cannot open initrd" "${K[@]}" -initrd "$tmp/missing"
expect "initrd '$tmp' is not a regular file or block device" "${K[@]}" -initrd "$tmp"
# A FIFO is refused at once, not waited on for a writer (timeout would say 124).
mkfifo "$tmp/fifo"
expect "kernel '$tmp/fifo' is not a regular file or block device" -kernel "$tmp/fifo"
expect "initrd '$tmp/fifo' is not a regular file or block device" "${K[@]}" -initrd "$tmp/fifo"
expect "initrd .* too large" "${K[@]}" -initrd "$tmp/big-initrd" -m 64M
expect "command line too long" "${K[@]}" -append "$long"
expect "-m" "${K[@]}" -m garbage
expect "-m" "${K[@]}" -m 12X
expect "-m" "${K[@]}" -m 1
expect "-m" "${K[@]}" -m 63M
expect "-m" "${K[@]}" -m 2T
expect "-smp" "${K[@]}" -smp 0
expect "-smp" "${K[@]}" -smp 100000
expect "-smp" "${K[@]}" -smp two
expect "unknown device" "${K[@]}" -device nosuchdev
expect "isa-debug-exit" "${K[@]}" -device isa-debug-exit,iosize=3
expect "isa-debug-exit" "${K[@]}" -device isa-debug-exit,iobase=0x10000
expect "isa-debug-exit" "${K[@]}" -device isa-debug-exit,colour=red
expect "-serial" "${K[@]}" -serial tcp:1234
expect "-serial none: -serial given twice (brisk's board has one serial port)" \
	"${K[@]}" -serial stdio -serial none
# Given twice, the last one counts, as in QEMU: it is the one checked.
expect "cannot open kernel '$tmp/second'" -kernel "$tmp/first" -kernel "$tmp/second"
expect "-m: size=63M" "${K[@]}" -m 128M -m 63M
# A control character in a name is written as \xNN, never sent to the terminal.
expect "cannot open kernel '$tmp/a\\\\x1b\[2Jb'" -kernel "$tmp/a$(printf '\033')[2Jb"
tap_check "... with no ESC byte in it" eval '! grep -q "$(printf "\033")" "$tmp/err"'
# An item too long for the parser is named by its key, with the limit.
expect "-drive: file=: option too long (its key and value take at most 4198 bytes)$" \
	"${K[@]}" -drive "file=$(head -c 5000 /dev/zero | tr '\0' f)"
expect "-timeout" "${K[@]}" -timeout abc
expect "-timeout" "${K[@]}" -timeout 0
# A value brisk cannot honour: the line names every one it accepts.
expect "(only -cpu host, max or host,migratable=off)$" "${K[@]}" -cpu kvm64
expect "(only -display none)$" "${K[@]}" -display gtk
# Every error of the option parser names the option, the key and what it
# takes (util/opts.c); a sample across the options that use it.
expect "-drive: cache=unsafe: expected writeback or none$" "${K[@]}" -drive file=x,cache=unsafe
expect "-drive: format=qcow2: brisk reads raw images only (format=raw)$" "${K[@]}" -drive file=x,format=qcow2
expect "-m: size=63M: need 64M to 1T$" "${K[@]}" -m 63M
expect "-rtc: base=gmt: expected utc or localtime$" "${K[@]}" -rtc base=gmt
expect "-device virtio-rng-pci: period=0: need 1 to 4294967295$" "${K[@]}" -device virtio-rng-pci,period=0
expect "-device virtio-rng-pci: unknown option 'rate' (known: max-bytes, period, rng)$" "${K[@]}" -device virtio-rng-pci,rate=1
expect "-device virtio-rng-pci: max-bytes= given twice$" "${K[@]}" -device virtio-rng-pci,max-bytes=1,max-bytes=2
expect "-device isa-debug-exit: iosize=5: need 1 to 4$" "${K[@]}" -device isa-debug-exit,iosize=5
expect "-device: unknown device 'virtio-nic' (brisk -device help lists them)$" "${K[@]}" -device virtio-nic
# Networking (hw/nic-cmdline.c): QEMU's other NICs name brisk's one.
expect "-device e1000: brisk's network device is virtio-net-pci (-device virtio-net-pci,netdev=ID)$" \
	"${K[@]}" -device e1000,netdev=net0 -netdev user,id=net0
expect "-net nic: model=e1000: brisk's network device is virtio-net-pci (model=virtio-net-pci, or leave model= out)$" \
	"${K[@]}" -net nic,model=e1000 -net user
expect "-nic: model=rtl8139: brisk's network device is virtio-net-pci" "${K[@]}" -nic user,model=rtl8139
expect "-net bridge: brisk takes -net none, -net nic or -net TYPE with a -netdev type (brisk -netdev help lists them)$" \
	"${K[@]}" -net nic -net bridge,br=br0
expect "-netdev: unknown type 'bridge' (brisk -netdev help lists them)$" "${K[@]}" -netdev bridge,id=t0
expect "-nic bridge: no such network back end (brisk -netdev help lists them)$" "${K[@]}" -nic bridge
expect "-netdev tap,id=t0: vhost=on: brisk has no vhost-net; it serves the queues itself (vhost=off)$" \
	"${K[@]}" -netdev tap,id=t0,vhost=on,script=no,downscript=no
expect "-netdev tap,id=nic.0: script=/nonexistent/ifup: No such file or directory (script=no runs none)$" \
	"${K[@]}" -nic tap,script=/nonexistent/ifup
expect "-netdev tap,id=t9: script=/nonexistent/ifup: No such file or directory (script=no runs none)$" \
	"${K[@]}" -nic tap,id=t9,script=/nonexistent/ifup
expect "-netdev stream,id=s0: addr.host=localhost: not a numeric IPv4 or IPv6 address (brisk looks no names up)$" \
	"${K[@]}" -netdev stream,id=s0,addr.type=inet,addr.host=localhost,addr.port=5555
expect "-netdev stream,id=s0: addr.port=65536: not a port number (1 to 65535)$" \
	"${K[@]}" -netdev stream,id=s0,addr.type=inet,addr.host=::1,addr.port=65536
expect "-netdev: duplicate id 'n0'$" "${K[@]}" -netdev user,id=n0 -nic user,id=n0
expect "-net nic: a second one (brisk joins one -net nic to one -net back end; use -nic or -netdev for more)$" \
	"${K[@]}" -net nic -net nic -net user
expect "-net nic: foo=1: brisk's -net nic takes model= and macaddr=$" "${K[@]}" -net nic,foo=1 -net user
expect "-netdev: duplicate id 'n0'$" "${K[@]}" -netdev user,id=n0 -netdev user,id=n0
expect "-object: duplicate id 'n0'$" "${K[@]}" -netdev user,id=n0 -object iothread,id=n0
expect "-device virtio-net: -netdev n0 already has a NIC (a -netdev serves one)$" \
	"${K[@]}" -netdev user,id=n0 -device virtio-net-pci,netdev=n0 -device virtio-net,netdev=n0
expect "-device virtio-net-pci: netdev=n1: no -netdev with that id (of type user, stream or tap)$" \
	"${K[@]}" -netdev user,id=n0 -device virtio-net-pci,netdev=n1
expect "-netdev user: dnssearch= holds a non-printable byte$" \
	"${K[@]}" -netdev "user,id=n0,dnssearch=a$(printf '\001')b.example"
expect "-netdev user: hostname=x*: longer than 255 bytes$" "${K[@]}" -net nic \
	-net "user,hostname=${long:0:300},restrict=on"
expect "-netdev needs a guest; with -export brisk runs none" -netdev user,id=n0 \
	-drive file="$tmp/random",if=none,id=d0,format=raw -export vhost-user-blk,id=e0,drive=d0,addr.path="$tmp/s"
expect "-machine: accel=kvm:: brisk has only kvm" "${K[@]}" -machine q35,accel=kvm:
expect "-device pvpanic: unknown option 'x' (it has none)$" "${K[@]}" -device pvpanic,x=1
# -object: the types devices name by id (hw/object.c), each type's
# properties, ids that must name the right type.
expect "-object: unknown type 'memory-backend-memfd' (brisk -object help lists them)$" \
	"${K[@]}" -object memory-backend-memfd,id=mem,size=512M
expect "-object rng-random: id= is missing$" "${K[@]}" -object rng-random,filename=/dev/urandom
expect "-object rng-random r0: $tmp/missing: No such file or directory$" \
	"${K[@]}" -object "rng-random,id=r0,filename=$tmp/missing"
expect "-object rng-random r0: $tmp/fifo: not a character device or regular file$" \
	"${K[@]}" -object "rng-random,id=r0,filename=$tmp/fifo"
expect "-object: duplicate id 'r0'$" "${K[@]}" -object rng-builtin,id=r0 -object iothread,id=r0
expect "-device virtio-rng-pci: rng=r1: no -object with that id (of type rng-random or rng-builtin)$" \
	"${K[@]}" -object rng-builtin,id=r0 -device virtio-rng-pci,rng=r1
expect "-device virtio-rng-pci: rng=t0: -object t0 is iothread, not rng-random or rng-builtin$" \
	"${K[@]}" -object iothread,id=t0 -device virtio-rng-pci,rng=t0
expect "-device virtio-blk-pci: iothread=t0: no -object with that id (of type iothread)$" \
	"${K[@]}" -drive "file=$tmp/initrd,if=none,id=d0" -device virtio-blk-pci,drive=d0,iothread=t0
expect "-object iothread: unknown option 'poll-max-ns' (known: id)$" \
	"${K[@]}" -object iothread,id=t0,poll-max-ns=0
# "help" lists what an option takes, from the same table, and exits 0.
expect_ok "^  virtio-rng-pci  *entropy" -device help
for d in virtio-blk-pci vhost-user-blk-pci virtio-rng-pci isa-debug-exit pvpanic; do
	expect_ok "^-device $d options:\$" -device "$d,help"
done
expect_ok "^  queue-size=<uint>  *- ring entries per queue (default: 256)\$" -device virtio-blk-pci,help
expect_ok "^  period=<uint>  *- .*(default: 65536)\$" -device driver=virtio-rng-pci,help
expect_ok "^  aio=<io_uring|threads>" -drive help
expect_ok "^  addr.path=<str>  *- .*(required)\$" -export vhost-user-blk,help
expect_ok "^  vhost-user-blk  *a drive served" -export help
expect_ok "^  rng-random  *virtio-rng's bytes read from a file" -object help
expect_ok "^  filename=<str>  *- .*(default: /dev/urandom)\$" -object rng-random,help
expect_ok "^  user  *QEMU's user networking" -netdev help
expect_ok "^  user  *QEMU's user networking" -nic help
expect_ok "^  hostfwd=<str, repeatable>" -netdev user,help
expect_ok "^  hostfwd=<str, repeatable>" -nic user,help
expect_ok "^  hostfwd=<str, repeatable>" -net nic -net user,help
expect_ok "^  path=<str>" -chardev socket,help
# --help gives every property of every device and export that NAME,help
# lists (aliases aside), after "-device NAME" or "-export TYPE".
"$brisk" --help >"$tmp/help"
for opt in -device -export; do
	for d in $("$brisk" "$opt" help | sed -n 's/^  \([^ ]*\) .*/\1/p'); do
		# The entry: its first line up to the next option's.
		awk -v h="  $opt $d" 'index($0, h) == 1 && substr($0, length(h) + 1, 1) ~ /^(,|\[|)$/ \
			{ on = 1; print; next } on && /^  -/ { exit } on' "$tmp/help" >"$tmp/entry"
		missing=
		for p in $("$brisk" "$opt" "$d,help" | grep -v ' - the same as ' |
			   sed -n 's/^  \([^=]*\)=.*/\1/p'); do
			tr -d ' \n' <"$tmp/entry" | grep -qF ",$p=" || missing="$missing $p"
		done
		[ -s "$tmp/entry" ] && [ -z "$missing" ] && ok=true || ok=false
		tap_check "--help lists $opt $d with every property${missing:+ (missing:$missing)}" $ok
	done
done
expect_ok "^  base=<utc|localtime>" -rtc help
expect_ok "^  size=<size>" -m help
expect_ok "^  host,migratable=off\$" -cpu help
expect_ok "^  none\$" -display help
expect_ok "^kvm\$" -accel help
expect_ok "^-machine options:\$" -M help
expect_ok "^brisk [0-9]" --version
expect_ok "Usage" --help
expect_ok "Usage" -h

# A valid command line gets past every check above.  Where a VM can be
# made at all, the stand-in kernel runs (-accel kvm,check=off, so the
# answer is the same on a /dev/kvm that runs only PVM guests) and brisk
# exits with the status it writes; where none can, brisk stops at
# /dev/kvm with one line saying so.  Whether brisk refuses a /dev/kvm
# that cannot run ordinary guests is check-kvm.sh's business.
V=("${K[@]}" -initrd "$tmp/initrd" -m 128M -smp 2 -append "console=ttyS0"
   -device isa-debug-exit,iobase=0xf4,iosize=0x04 -timeout 20)
if have_kvm_dev; then
	timeout 30 "$brisk" -accel kvm,check=off "${V[@]}" </dev/null >"$tmp/out" 2>"$tmp/err"
	rc=$?
	tap_check "a valid command line boots (status $FAKE_BZIMAGE_EXIT from the guest)" \
		[ $rc -eq "$FAKE_BZIMAGE_EXIT" ]
	tap_check "... with nothing on stderr" [ ! -s "$tmp/err" ]
	[ $rc -eq "$FAKE_BZIMAGE_EXIT" ] && [ ! -s "$tmp/err" ] ||
		tap_diag "status $rc, stderr: $(cat "$tmp/err")"
else
	expect "/dev/kvm" -accel kvm,check=off "${V[@]}"
fi
tap_done
