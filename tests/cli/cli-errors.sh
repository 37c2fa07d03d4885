#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# cli-errors.sh BRISK: bad invocations must fail with status 1 and exactly
# one stderr line that names the problem; --help and --version succeed.
# Needs no /dev/kvm: every check here fails (or ends) before brisk opens it.

set -u
brisk=${1:?usage: cli-errors.sh path/to/brisk}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# A synthetic x86-64 bzImage: just enough header for brisk's checks
# (boot protocol 2.15, LOADED_HIGH, XLF_KERNEL_64, 16 MiB init_size).
fake_bzimage() {
	local f=$1
	head -c 65536 /dev/zero >"$f"
	put() { printf "$2" | dd of="$f" bs=1 seek=$(($1)) conv=notrunc status=none; }
	put 0x1f1 '\x04'			# setup_sects
	put 0x1fe '\x55\xaa'			# boot_flag
	put 0x201 '\x66'			# jump: header ends at 0x268
	put 0x202 'HdrS'
	put 0x206 '\x0f\x02'			# version 2.15
	put 0x211 '\x01'			# loadflags: LOADED_HIGH
	put 0x22c '\xff\xff\xff\x7f'		# initrd_addr_max
	put 0x236 '\x03\x00'			# xloadflags: KERNEL_64 | CAN_BE_LOADED_ABOVE_4G
	put 0x238 '\xff\x07\x00\x00'		# cmdline_size 2047
	put 0x258 '\x00\x00\x00\x01\x00\x00\x00\x00'	# pref_address 16 MiB
	put 0x260 '\x00\x00\x00\x01'		# init_size 16 MiB
}

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
		echo "FAIL: brisk $* -> status $rc, $lines stderr lines (want 1 with '$word'):"
		sed 's/^/    /' "$tmp/err"
		fails=$((fails + 1))
	else
		echo "ok: $(echo "brisk $*" | cut -c1-120) -> $(cat "$tmp/err")"
	fi
}

# expect_ok PATTERN ARGS...: exit 0 and stdout matching PATTERN.
expect_ok() {
	local pat=$1 rc
	shift
	timeout 10 "$brisk" "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -ne 0 ] || ! grep -q "$pat" "$tmp/out" || [ -s "$tmp/err" ]; then
		echo "FAIL: brisk $* -> status $rc, want 0 and stdout matching '$pat'"
		fails=$((fails + 1))
	else
		echo "ok: brisk $*"
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
expect "not a bzImage" -kernel "$tmp"
expect "cannot open initrd" "${K[@]}" -initrd "$tmp/missing"
expect "initrd" "${K[@]}" -initrd "$tmp"
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
expect "-timeout" "${K[@]}" -timeout abc
expect "-timeout" "${K[@]}" -timeout 0
expect_ok "^brisk [0-9]" --version
expect_ok "Usage" --help
expect_ok "Usage" -h
# Without a usable /dev/kvm a valid command line fails at that step, with
# one line saying how to get one.
if ! [ -c /dev/kvm ] || ! (exec 3<>/dev/kvm) 2>/dev/null; then
	expect "kvm" "${K[@]}" -initrd "$tmp/initrd" -m 128M -smp 2
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
