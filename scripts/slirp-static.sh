#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# slirp-static.sh [ARCH [DIR]]
#
# Builds a static libslirp for a static brisk (-Dstatic=true), which
# Debian's libslirp-dev cannot give: it ships libslirp.so only.  The
# source is Debian's own package of the same release (apt-get source,
# through an apt configuration of its own under DIR, so the system's
# sources need no deb-src line), built with meson as a static library.
# ARCH is this host's (x86_64 or arm64, the default) or arm64 on an
# x86-64 host: then cross-built with scripts/cross/aarch64-linux-gnu.ini.
# Prints DIR/ARCH, the folder to pass as -Dslirp_dir:
# include/slirp/libslirp.h, lib/libslirp.a, and beside it links to the
# static glib and pcre2 it needs (the host's libglib2.0-dev, or for the
# cross build the arm64 packages of scripts/arm64-debs.sh).  DIR defaults
# to ${XDG_CACHE_HOME:-~/.cache}/brisk/slirp.  Cheap to rerun: a library
# already built is kept until the host's libslirp-dev changes version (a
# security update), which fetches the source again and rebuilds.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
native=$(uname -m)
[ "$native" = aarch64 ] && native=arm64
arch=${1:-$native}
dir=${2:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/brisk/slirp}
out=$dir/$arch
sysroot='' cross=''
case $arch in
x86_64) triplet=x86_64-linux-gnu ;;
arm64) triplet=aarch64-linux-gnu ;;
*) echo "slirp-static: no architecture $arch (x86_64, arm64)" >&2; exit 2 ;;
esac
if [ "$arch" != "$native" ]; then
	if [ "$native" != x86_64 ]; then
		echo "slirp-static: no cross build for $arch on $native" >&2
		exit 2
	fi
	cross=1
	sysroot=$("$top/scripts/arm64-debs.sh")/root
fi
libdir=$sysroot/usr/lib/$triplet
ver=$(dpkg-query -W -f '${Version}' libslirp-dev 2>/dev/null || echo none)
[ -e "$out/.built" ] && [ "$(cat "$out/.built")" = "$ver" ] && { echo "$out"; exit 0; }
mkdir -p "$dir"

# The source, once for both architectures and each libslirp-dev version.
if [ ! -e "$dir/.source" ] || [ "$(cat "$dir/.source")" != "$ver" ]; then
	# shellcheck disable=SC1091 # the system's own
	. /etc/os-release
	suite=${VERSION_CODENAME:-bookworm}
	mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/src"
	key=/usr/share/keyrings/debian-archive-keyring.gpg
	{
		echo "deb-src [signed-by=$key] http://deb.debian.org/debian $suite main"
		echo "deb-src [signed-by=$key] http://deb.debian.org/debian $suite-updates main"
		echo "deb-src [signed-by=$key] http://deb.debian.org/debian-security $suite-security main"
	} >"$dir/apt/sources.list"
	set -- -q -o "Dir::Etc::SourceList=$dir/apt/sources.list" \
		-o Dir::Etc::SourceParts=/nonexistent -o "Dir::State::Lists=$dir/apt/lists" \
		-o "Dir::Cache=$dir/apt/cache" -o APT::Sandbox::User=
	apt-get "$@" update >&2 ||
		{ echo "slirp-static: apt-get update of $dir/apt/sources.list failed" >&2; exit 1; }
	rm -rf "$dir/src" && mkdir -p "$dir/src"
	(cd "$dir/src" && apt-get "$@" source libslirp >&2) ||
		{ echo "slirp-static: cannot fetch libslirp's source (dpkg-dev for dpkg-source?)" >&2; exit 1; }
	# The source index (20 MB) has served its one purpose.
	rm -rf "$dir/apt"
	echo "$ver" >"$dir/.source"
fi
src=$(find "$dir/src" -mindepth 1 -maxdepth 1 -type d -name 'libslirp-*' | head -n 1)
[ -n "$src" ] || { echo "slirp-static: no libslirp source under $dir/src" >&2; exit 1; }

for l in glib-2.0 pcre2-8; do
	[ -f "$libdir/lib$l.a" ] || { echo "slirp-static: no $libdir/lib$l.a; run scripts/setup-debian.sh" >&2; exit 1; }
done
build=$dir/build-$arch
rm -rf "$build" "$out"
set -- --default-library=static --buildtype=release -Db_staticpic=false
if [ -n "$cross" ]; then
	# glib's pkg-config file from the unpacked arm64 package, its paths
	# under that root.
	cat >"$dir/arm64-glib.ini" <<EOF
[properties]
pkg_config_libdir = ['$libdir/pkgconfig']
sys_root = '$sysroot'
EOF
	set -- "$@" --cross-file "$top/scripts/cross/aarch64-linux-gnu.ini" \
		--cross-file "$dir/arm64-glib.ini"
fi
meson setup "$build" "$src" "$@" >&2
# The library alone: the project's test program would link glib's
# shared library, which an unpacked arm64 -dev package lacks.
ninja -C "$build" libslirp.a >&2
mkdir -p "$out/lib" "$out/include/slirp"
cp "$build/libslirp.a" "$out/lib/"
cp "$src/src/libslirp.h" "$build/libslirp-version.h" "$out/include/slirp/"
for l in glib-2.0 pcre2-8; do ln -sf "$libdir/lib$l.a" "$out/lib/lib$l.a"; done
rm -rf "$build"
echo "$ver" >"$out/.built"
echo "$out"
