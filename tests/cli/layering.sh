#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# layering.sh SRCDIR: the folders' contract (docs/architecture.md), read
# from the #include lines: virtio/ knows rings, not PCI; block/ knows
# files, not virtio; net/ knows frames and sockets, not virtio or the
# board; accel/ knows KVM and the machine, not devices; util/
# knows nothing above it; and a device knows no transport (only
# whoever makes it picks one, through hw/virtio/virtio-plug.h).  Output
# is TAP.

set -u -o pipefail
src=${1:?usage: layering.sh SRCDIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
cd "$src" || exit 1
for d in util block net virtio accel hw include; do
	[ -d "$d" ] || { echo "layering.sh: no $d/ in $src" >&2; exit 1; }
done

# An #include line, either spelling, any spacing.
inc='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]'

# includes DIR...: "FILE HEADER" for each #include of a project header
# there ("..." or <...>; system headers have no match among ours).
includes() {
	grep -rHE "$inc" --include='*.c' --include='*.h' "$@" |
		sed -E 's/^([^:]*):[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]*)[>"].*/\1 \2/' |
		while read -r f h; do
			# Ours: a file under include/ or beside the includer.
			if [ -e "include/$h" ] || [ -e "$(dirname "$f")/$h" ]; then
				echo "$f $h"
			fi
		done
}

# layer NAME ALLOWED-REGEX DIR...: no include outside ALLOWED.
layer() {
	local name=$1 bad
	shift
	bad=$(includes "${@:2}" | ok=$1 awk '$2 !~ ENVIRON["ok"]') || bad="(grep failed)"
	if [ -z "$bad" ]; then
		tap_check "$name" true
	else
		tap_fail "$name" "$bad"
	fi
}

layer "util/ includes only util/" '^util/' util include/util
layer "block/ includes only block/ and util/ (files, not virtio)" \
	'^(block|util)/|^block-int\.h$' block include/block
layer "net/ includes only net/ and util/ (frames and sockets, not virtio)" \
	'^(net|util)/' net include/net
layer "virtio/ includes only virtio/ and util/ (rings, not PCI)" \
	'^(virtio|util)/|^virtqueue-internal\.h$' virtio include/virtio
layer "accel/ includes the machine but no device, bus or board" \
	'^(accel|util)/|^hw/machine\.h$|^(\.\./)?kvm-internal\.h$|^(x86|arm64)\.h$' \
	accel include/accel

# Every file that names a transport's own header or calls its
# constructor; the transports, and the tests that drive one directly, may.
transport_users=$( {
	grep -rlE "$inc"'hw/virtio/(virtio-pci|vhost-user-backend)\.h[>"]' \
		--include='*.c' --include='*.h' hw accel virtio block util include
	grep -rlE '\b(virtio_pci_create|virtio_pci_free|vu_backend_new|vu_backend_free)\(' \
		--include='*.c' --include='*.h' hw accel virtio block util include
} | sort -u)
expected=$(printf '%s\n' hw/virtio/vhost-user-backend.c hw/virtio/virtio-pci.c \
	include/hw/virtio/vhost-user-backend.h include/hw/virtio/virtio-pci.h | sort)
if [ "$transport_users" = "$expected" ]; then
	tap_check "only the transports include or call virtio-pci's and vhost-user-backend's own" true
else
	tap_fail "only the transports include or call virtio-pci's and vhost-user-backend's own" \
		"$(diff <(echo "$expected") <(echo "$transport_users"))"
fi

# A device may name the plug's type, never the constructors that pick a
# transport: those are for whoever makes devices.
makers=$(grep -rlE '\b(virtio_pci_plug|vu_backend_plug)\(' --include='*.c' hw | sort)
expected=$(printf '%s\n' hw/block/virtio-blk-cmdline.c hw/device-set.c \
	hw/virtio/vhost-user-backend.c hw/virtio/virtio-pci.c | sort)
if [ "$makers" = "$expected" ]; then
	tap_check "transports are picked in hw/device-set.c and hw/block's glue only" true
else
	tap_fail "transports are picked in hw/device-set.c and hw/block's glue only" \
		"$(diff <(echo "$expected") <(echo "$makers"))"
fi
tap_done
