#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# arm64-debs.sh [DIR]
#
# Fetches the arm64 packages that an x86-64 host needs for brisk's arm64
# build and tests but cannot install beside its own (apt-get download,
# never installed), and unpacks each into DIR/root (default
# ${XDG_CACHE_HOME:-~/.cache}/brisk/arm64):
#   libfdt-dev      libfdt.a for the static arm64 brisk
#   libglib2.0-dev, libpcre2-dev
#                   libglib-2.0.a and libpcre2-8.a under its libslirp
#                   (scripts/slirp-static.sh)
#   linux-image     the guest kernel and the nested arm64 host's kernel
#   busybox-static  the userland of both
# Prints DIR.  Cheap to rerun: a package already unpacked is kept.
set -eu
# depmod lives in /sbin, which Debian leaves off a plain user's PATH.
PATH=$PATH:/usr/sbin:/sbin

dir=${1:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/brisk/arm64}
mkdir -p "$dir/debs" "$dir/root"
# linux-image-arm64 is a metapackage: take the image it depends on.
kpkg=$(apt-cache depends linux-image-arm64:arm64 2>/dev/null |
	sed -n 's/^ *Depends: \(linux-image-[0-9][^:]*\).*/\1/p' | head -n 1)
[ -n "$kpkg" ] || { echo "arm64-debs: no linux-image-arm64 for arm64 in apt's lists (dpkg --add-architecture arm64; apt-get update)" >&2; exit 1; }
for p in libfdt-dev libglib2.0-dev libpcre2-dev busybox-static "$kpkg"; do
	[ -e "$dir/root/.$p" ] && continue
	(cd "$dir/debs" && rm -f "${p}_"*.deb &&
		apt-get download -q "$p:arm64" >/dev/null 2>&1 ||
		apt-get download "$p:arm64" >&2) ||
		{ echo "arm64-debs: cannot download $p:arm64" >&2; exit 1; }
	dpkg-deb -x "$dir/debs/${p}_"*_arm64.deb "$dir/root"
	# The package's postinst would have listed module dependencies.
	case $p in linux-image-*) depmod -b "$dir/root" "${p#linux-image-}" ;; esac
	: >"$dir/root/.$p"
done
echo "$dir"
