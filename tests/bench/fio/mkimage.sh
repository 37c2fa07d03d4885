#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build the fio guest initramfs from the host's Debian packages: busybox
# (static), fio with every shared library it links and the dynamic loader,
# and the virtio PCI + block modules of the newest installed kernel.
#
#   mkimage.sh OUT.cpio [INIT]   writes the image, prints the kernel image path
#
# INIT (default: this folder's init, the benchmark's job) becomes /init.
#
# The image is an uncompressed cpio: the inner guest may run at emulation
# speed in a nested host, where decompressing ~80 MiB costs more than
# copying it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: mkimage.sh OUT.cpio [INIT]}
init=${2:-$here/init}

. "$here/../../lib/die.sh"

need_pkgs=()
[ -x /usr/bin/fio ] || need_pkgs+=(fio)
[ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q static ||
	need_pkgs+=(busybox-static)
command -v cpio >/dev/null || need_pkgs+=(cpio)
command -v modprobe >/dev/null || need_pkgs+=(kmod)
ls /boot/vmlinuz-* >/dev/null 2>&1 || need_pkgs+=(linux-image-amd64)
if [ ${#need_pkgs[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "mkimage: installing ${need_pkgs[*]}" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y "${need_pkgs[@]}" >&2 ||
			die "apt-get install ${need_pkgs[*]} failed"
	else
		die "missing packages; run: apt-get install ${need_pkgs[*]}"
	fi
fi

. "$here/kver.sh"
kver=$(newest_kver) || die "no kernel with modules in /boot and /lib/modules"

root=$(mktemp -d "${out}.root.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,dev,etc,proc,sys,tmp,lib64}

cp /bin/busybox "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
cp /usr/bin/fio "$root/bin/fio"
install -m 0755 "$init" "$root/init"

# ldd's left-hand paths are the ones the loader searches; keep them.
copy_lib() {
	mkdir -p "$root$(dirname "$1")"
	cp -L "$1" "$root$1"
}
libs=$(ldd /usr/bin/fio | awk '$2 == "=>" && $3 ~ /^\// { print $3 }
                              $1 ~ /^\// { print $1 }')
[ -n "$libs" ] || die "ldd found no libraries for fio"
for l in $libs; do copy_lib "$l"; done

# Dependencies first, as modprobe would load them; built-ins are skipped.
: > "$root/etc/fio-modules"
for m in virtio_pci virtio_blk; do
	modprobe --show-depends -S "$kver" "$m" ||
		die "no module $m for kernel $kver"
done | awk '$1 == "insmod" { print $2 }' | awk '!seen[$0]++' |
while read -r ko; do
	mkdir -p "$root$(dirname "$ko")"
	cp "$ko" "$root$ko"
	echo "$ko" >> "$root/etc/fio-modules"
done
[ -s "$root/etc/fio-modules" ] || echo "mkimage: virtio drivers are built in" >&2

(cd "$root" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --quiet) > "$out.tmp"
mv "$out.tmp" "$out"
echo "/boot/vmlinuz-$kver"
