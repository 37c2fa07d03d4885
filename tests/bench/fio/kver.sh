# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Sourced: newest_kver prints the newest kernel version that has both an
# image in /boot and its modules, so the guest kernel and the modules baked
# into the image always match.
newest_kver() {
	local img v
	for img in /boot/vmlinuz-*; do
		[ -e "$img" ] || continue
		v=${img#/boot/vmlinuz-}
		[ -f "/lib/modules/$v/modules.dep" ] && echo "$v"
	done | sort -V | tail -n 1 | grep .
}
