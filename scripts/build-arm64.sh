#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# build-arm64.sh [BUILDDIR] [MESON-OPTIONS...]
#
# Cross-builds a static arm64 brisk from an x86-64 Debian host into
# BUILDDIR (default build-arm64): the binary the nested arm64 host runs,
# and one that runs on any arm64 Linux.  On an arm64 host use plain
# `meson setup build`.
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build-arm64}
[ $# -gt 0 ] && shift
deps=$(scripts/arm64-debs.sh)
# -netdev user: libslirp, built static for arm64 (scripts/slirp-static.sh).
slirp=$(scripts/slirp-static.sh arm64)
set -- -Dstatic=true "-Dfdt_libdir=$deps/root/usr/lib/aarch64-linux-gnu" \
	"-Dslirp_dir=$slirp" "$@"
if [ -f "$dir/build.ninja" ]; then
	meson setup --reconfigure "$dir" "$@" >/dev/null
else
	meson setup "$dir" --cross-file scripts/cross/aarch64-linux-gnu.ini "$@" >/dev/null
fi
meson compile -C "$dir"
