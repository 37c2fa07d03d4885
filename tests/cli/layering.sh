#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# layering.sh SRCDIR: the folders' contract (docs/architecture.md), read
# from the #include lines: virtio/ knows rings, not PCI; block/ knows
# files, not virtio; accel/ knows KVM and the machine, not devices; util/
# knows nothing above it; and a device knows no transport (only
# whoever makes it picks one, through hw/virtio/virtio-plug.h).  Output
# is TAP.

set -u
src=${1:?usage: layering.sh SRCDIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../include/tap.sh"
cd "$src" || exit 1

# includes DIR...: "FILE HEADER" for each project #include "..." there.
includes() {
	grep -rHo '^#include "[^"]*"' --include='*.c' --include='*.h' "$@" |
		sed 's/:#include "\(.*\)"$/ \1/'
}

# layer NAME ALLOWED-REGEX DIR...: no include outside ALLOWED.
layer() {
	local name=$1 allowed=$2 bad
	shift 2
	bad=$(includes "$@" | awk -v ok="$allowed" '$2 !~ ok')
	if [ -z "$bad" ]; then
		tap_check "$name" true
	else
		tap_fail "$name" "$bad"
	fi
}

layer "util/ includes only util/" '^util/' util include/util
layer "block/ includes only block/ and util/ (files, not virtio)" \
	'^(block|util)/|^block-int\.h$' block include/block
layer "virtio/ includes only virtio/ and util/ (rings, not PCI)" \
	'^(virtio|util)/|^virtqueue-internal\.h$' virtio include/virtio
layer "accel/ includes the machine but no device, bus or board" \
	'^(accel|util)/|^hw/machine\.h$|^(\.\./)?kvm-internal\.h$|^(x86|arm64)\.h$' \
	accel include/accel

# Every file that names a transport's own header; the transports, and
# the tests that drive one directly, may.
transport_users=$(grep -rlE '^#include "hw/virtio/(virtio-pci|vhost-user-backend)\.h"' \
	--include='*.c' --include='*.h' hw accel virtio block util include | sort)
expected=$(printf '%s\n' hw/virtio/vhost-user-backend.c hw/virtio/virtio-pci.c | sort)
if [ "$transport_users" = "$expected" ]; then
	tap_check "only the transports include virtio-pci.h and vhost-user-backend.h" true
else
	tap_fail "only the transports include virtio-pci.h and vhost-user-backend.h" \
		"$(diff <(echo "$expected") <(echo "$transport_users"))"
fi

# A device may name the plug's type, never the constructors that pick a
# transport: those are for whoever makes devices.
makers=$(grep -rlE '\b(virtio_pci_plug|vu_backend_plug)\(' --include='*.c' hw | sort)
expected=$(printf '%s\n' hw/block/virtio-blk-cmdline.c hw/devices.c \
	hw/virtio/vhost-user-backend.c hw/virtio/virtio-pci.c | sort)
if [ "$makers" = "$expected" ]; then
	tap_check "transports are picked in hw/devices.c and hw/block's glue only" true
else
	tap_fail "transports are picked in hw/devices.c and hw/block's glue only" \
		"$(diff <(echo "$expected") <(echo "$makers"))"
fi
tap_done
