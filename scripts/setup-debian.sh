#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs every Debian package brisk's build, tests and benchmarks use,
# for this host's architecture (amd64 or arm64).  Rerunning is cheap: apt
# is skipped when everything is already installed.
# On an amd64 host it also sets up the arm64 cross build and the nested
# arm64 host: dpkg's foreign architecture arm64 (so that apt can fetch
# arm64 packages), the cross compiler and liburing-dev:arm64, qemu-user
# for qemu-aarch64 (without qemu-user-binfmt: no binfmt handlers are
# registered), and (scripts/arm64-debs.sh) the arm64 packages that cannot
# be installed beside their amd64 twins, unpacked into a cache directory.
# qemu-system-common brings qemu-storage-daemon (a vhost-user back-end for
# the KVM suite and the benchmark; QEMU pulls it in too, but the tests
# name it); qemu-utils brings qemu-img, which makes the images of other
# formats that brisk must refuse to serve raw.  passt is -netdev stream's
# peer in tests/net/passt.sh, which makes its network namespace with
# iproute2's ip.  libglib2.0-dev (with libpcre2-dev) is also the static
# glib of the static builds' libslirp, whose source dpkg-dev's dpkg-source
# unpacks (scripts/slirp-static.sh).
set -eu

native=$(dpkg --print-architecture)
pkgs="build-essential gcc meson ninja-build pkg-config liburing-dev libfdt-dev
linux-libc-dev busybox-static cpio kmod fio gnuplot-nox clang libclang-rt-14-dev
llvm valgrind device-tree-compiler e2fsprogs util-linux bsdutils python3
qemu-system-common qemu-utils dmsetup libslirp-dev libglib2.0-dev dpkg-dev passt iproute2"
cross=
case $native in
amd64)
	# iasl compiles the PC's DSDT; QEMU runs the nested host and the
	# benchmarks' comparisons; the Debian kernel is the guest's.
	pkgs="$pkgs acpica-tools qemu-system-x86 linux-image-amd64"
	cross=1
	pkgs="$pkgs gcc-aarch64-linux-gnu libc6-dev-arm64-cross liburing-dev:arm64
qemu-system-arm qemu-user" ;;
arm64)
	# The guest's kernel, and QEMU for the nested host where this
	# host's /dev/kvm cannot run guests.
	pkgs="$pkgs linux-image-arm64 qemu-system-arm" ;;
*)
	echo "setup-debian: brisk builds on amd64 and arm64 hosts, not $native" >&2
	exit 1 ;;
esac
sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
arm64_debs() {
	[ -n "$cross" ] || return 0
	"$(dirname "$0")/arm64-debs.sh" >/dev/null
}

missing=
for p in $pkgs; do
	# With arm64 beside amd64 one name may answer for both: a plain
	# name means this machine's own architecture (or an arch-all one).
	case $p in *:*) want="installed ${p#*:}" q=${p%:*} ;; *) want="installed $native" q=$p ;; esac
	dpkg-query -W -f '${db:Status-Status} ${Architecture}\n' "$q" 2>/dev/null |
		grep -qx "$want\|installed all" || missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "setup-debian: all packages present"
	arm64_debs
	exit 0
fi
echo "setup-debian: installing:$missing"
if [ -n "$cross" ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
	echo "setup-debian: adding arm64 as a foreign architecture for dpkg and apt"
	$sudo dpkg --add-architecture arm64
fi
$sudo apt-get update
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends $missing
arm64_debs
