# SPDX-License-Identifier: GPL-2.0-or-later
# with-kvm's nested arm64 host (sourced by with-kvm; source arch.sh and
# kmod.sh first).  Debian's arm64 kernel boots under
# qemu-system-aarch64 -M virt,virtualization=on,gic-version=3 -cpu max,
# whose emulated EL2 gives it a real /dev/kvm with a vGICv3.  Unlike the
# x86 nested host it cannot run this host's programs, so COMMAND runs
# here, and only what it starts through BRISK_WITH_KVM_RUN (remote-run:
# the static arm64 brisk, above all) runs inside, in an initramfs of the
# arm64 busybox.  Inside, these folders of this host are seen at the same
# paths: the checkout and the arm64 packages (read-only), the current
# directory (read-only) and --work (writable).

# nested_arm64 COMMAND...: never returns; exits with COMMAND's status.
nested_arm64() {
	local need="scripts/setup-debian.sh (qemu-system-arm, qemu-user, and the arm64 packages of scripts/arm64-debs.sh)"
	local root kver initrd rc
	command -v qemu-system-aarch64 >/dev/null ||
		die "no qemu-system-aarch64 to boot the nested arm64 host with; run $need"
	root=$(arch_root arm64) || die "cannot fetch the arm64 packages; run $need"
	kver=$(KMOD_ROOT=$root kmod_newest_kver) ||
		die "no arm64 kernel with modules under $root; run $need"
	[ -x "$root/bin/busybox" ] || die "no arm64 busybox under $root; run $need"
	work=$(cd "$work" 2>/dev/null && pwd -P) || die "--work: no such directory"

	initrd=$(nested_arm64_initrd "$kver" "$root/bin/busybox") ||
		die "could not build the nested arm64 host's initramfs"

	ctl=$(mktemp -d "${TMPDIR:-/tmp}/with-kvm.XXXXXX") || die "mktemp failed"
	mkdir "$ctl/jobs"
	qpid=
	trap 'nested_arm64_stop; rm -rf "$ctl"' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	printf 'WORK=%q\n' "$work" >"$ctl/config"
	printf '%s\n' "$top" "$root" "$(pwd -P)" >"$ctl/binds"

	# As in with-kvm: only a start that failed, before COMMAND runs, is
	# tried once more, and said.
	local retries=0
	until nested_arm64_boot "$root/boot/vmlinuz-$kver" "$initrd"; do
		[ $retries -ge 1 ] && die "nested arm64 host failed to start twice"
		retries=$((retries + 1))
		echo "$prog: retry $retries: starting the nested arm64 host once more (the command had not run)" >&2
	done
	BRISK_WITH_KVM_ROUTE=nested BRISK_WITH_KVM_RETRIES=$retries BRISK_WITH_KVM_CTL=$ctl \
	BRISK_WITH_KVM_RUN=$here/lib/remote-run BRISK_WITH_KVM_SIGKILL=USR1 \
		timeout -k 10 "$timeout" "$@"
	rc=$?
	[ $rc -eq 124 ] && echo "$prog: timed out after ${timeout}s" >&2
	exit $rc
}

# nested_arm64_initrd KVER BUSYBOX: the path of the nested arm64 host's
# initramfs, made by mkinitrd (as every test guest's is) and cached under a
# key of everything that goes into it, so that any change makes a new one.
nested_arm64_initrd() {
	local kver=$1 busybox=$2 init=$here/lib/nested-arm64-init.sh cache key out
	local mods=(virtio_pci 9pnet_virtio 9p) args=() m
	key=$(printf '%s\n' arm64 "$kver" "${mods[*]}" |
		cat - "$init" "$here/mkinitrd" "$busybox" | sha256sum | cut -c1-16)
	cache=$(nested_cache) || return 1
	out=$cache/with-kvm-arm64-$kver-$key.cpio.gz
	if [ ! -s "$out" ]; then
		for m in "${mods[@]}"; do args+=(-m "$m"); done
		"$here/mkinitrd" -o "$out" -i "$init" -a arm64 -k "$kver" -n "${args[@]}" >&2 ||
			return 1
	fi
	printf '%s\n' "$out"
}

# Boots the host and waits for it to come up; 1 when it did not.
nested_arm64_boot() {
	local kernel=$1 initrd=$2
	rm -f "$ctl/up" "$ctl/beat" "$ctl/stop"
	qemu-system-aarch64 -M virt,virtualization=on,gic-version=3 -cpu max \
		-accel tcg,thread=multi -smp "${cpus:-2}" -m "$mem" \
		-display none -monitor none -serial "file:$ctl/console" -no-reboot \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyAMA0 quiet loglevel=0 panic=-1 rdinit=/init" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$work,mount_tag=work,security_model=none,multidevs=remap" \
		-virtfs "local,path=$ctl,mount_tag=ctl,security_model=none" \
		</dev/null >"$ctl/qemu.log" 2>&1 &
	qpid=$!
	nested_wait_up "nested arm64 host" || return 1
	[ -s "$ctl/err" ] && cat "$ctl/err" >&2
	return 0
}

nested_arm64_stop() {
	[ -n "$qpid" ] || return 0
	: >"$ctl/stop"
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		kill -0 "$qpid" 2>/dev/null || break
		sleep 1
	done
	kill "$qpid" 2>/dev/null
	wait "$qpid" 2>/dev/null
	qpid=
}
