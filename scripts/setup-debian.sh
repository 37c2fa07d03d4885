#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs every Debian package brisk's build, tests and benchmarks use.
# Rerunning is cheap: apt is skipped when everything is already installed.
set -eu

pkgs="build-essential gcc meson ninja-build pkg-config liburing-dev libfdt-dev
linux-libc-dev acpica-tools qemu-system-x86 linux-image-amd64 busybox-static
cpio kmod fio gnuplot-nox clang libclang-rt-14-dev llvm valgrind"

missing=
for p in $pkgs; do
	st=$(dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "setup-debian: all packages present"
	exit 0
fi
echo "setup-debian: installing:$missing"
sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
$sudo apt-get update
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends $missing
