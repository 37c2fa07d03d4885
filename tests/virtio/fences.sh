#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fences.sh OBJDUMP LIBVIRTIO: each place where the device stores to the
# ring and then reads what the driver wrote has a full fence in the code
# the compiler made.  A missing one loses a wakeup only when the CPU
# reorders the store after the load (x86 does), which no run can be sure
# to catch; the instruction is there or it is not.  Output is TAP.
set -u
. "$(dirname "$0")/../lib/tap.sh"
objdump=$1 lib=$2
command -v "$objdump" >/dev/null ||
	{ tap_skip "full fences" "no $objdump (binutils for this architecture)"; tap_done; }

# Which instruction is a full fence depends on the architecture.
case $("$objdump" -f "$lib" | sed -n 's/.*architecture: \([^,]*\).*/\1/p' | head -n 1) in
i386:x86-64*) fence='(mfence|lock )' ;;
aarch64) fence='dmb[[:space:]]+ish$' ;;
*) tap_skip "full fences" "no fence pattern for this architecture"; tap_done ;;
esac
dis=$("$objdump" -d --no-show-raw-insn "$lib") || { tap_fail "objdump $lib"; tap_done; }

has_fence() { # has_fence FUNCTION...: in one of them (a helper not inlined, at -O0)
	local f
	for f; do
		awk -v f="<$f>:" '$2 == f { on = 1; next } on && /^$/ { exit } on' <<<"$dis" |
			grep -qE "$fence" && return 0
	done
	return 1
}

# used entries published, then the driver's used_event or flags read
tap_check "split: interrupt decision after publishing used" has_fence virtqueue_split_should_notify
tap_check "packed: interrupt decision after publishing used" has_fence virtqueue_packed_should_notify
# kicks turned on, then the avail ring looked at once more
tap_check "split: re-check after enabling kicks" has_fence virtqueue_split_set_notification
tap_check "packed: re-check after enabling kicks" has_fence virtqueue_packed_set_notification
# avail_event stored on an empty pop, then the avail index read again
tap_check "split: empty pop's second look" has_fence virtqueue_split_pop split_next_avail
tap_done
