# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by with-kvm and mkinitrd: find the newest installed kernel and turn
# module names into an ordered list of .ko files (dependencies first), so an
# initramfs init can load them with a plain busybox insmod.  KMOD_ROOT
# (default empty: this system) is where /boot and /lib/modules are looked
# up, e.g. an unpacked foreign-architecture kernel package.

# Newest kernel that has both an image in /boot and its modules installed.
kmod_newest_kver() {
	local img v best=
	for img in "${KMOD_ROOT:-}"/boot/vmlinuz-*; do
		[ -e "$img" ] || continue
		v=${img#"${KMOD_ROOT:-}"/boot/vmlinuz-}
		[ -f "${KMOD_ROOT:-}/lib/modules/$v/modules.dep" ] || continue
		best=$(printf '%s\n%s\n' "$best" "$v" | sed '/^$/d' | sort -V | tail -n 1)
	done
	[ -n "$best" ] || return 1
	printf '%s\n' "$best"
}

# kmod_resolve KVER NAME... : prints module paths relative to
# /lib/modules/KVER, each after everything it depends on, each once.
# Built-in modules are skipped; an unknown name is an error.
kmod_resolve() {
	local kver=$1; shift
	local dir=${KMOD_ROOT:-}/lib/modules/$kver
	awk -v want="$*" -v builtin="$dir/modules.builtin" '
	function norm(p,  b) {
		b = p; sub(/.*\//, "", b); sub(/\.ko(\.[a-z]+)?$/, "", b)
		gsub(/-/, "_", b); return b
	}
	function visit(n,  i, k, d) {
		if (n in done) return
		if (n in busy) { print "kmod: dependency loop at " n > "/dev/stderr"; err = 1; return }
		busy[n] = 1
		k = split(deps[n], d, " ")
		for (i = 1; i <= k; i++) visit(norm(d[i]))
		done[n] = 1; print path[n]
	}
	BEGIN { while ((getline l < builtin) > 0) inbuilt[norm(l)] = 1 }
	{
		p = $1; sub(/:$/, "", p); n = norm(p); path[n] = p
		$1 = ""; deps[n] = $0
	}
	END {
		k = split(want, w, " ")
		for (i = 1; i <= k; i++) {
			n = w[i]; gsub(/-/, "_", n)
			if (n in path) visit(n)
			else if (!(n in inbuilt)) { print "kmod: no module " w[i] " for kernel '"$kver"'" > "/dev/stderr"; err = 1 }
		}
		exit err
	}' "$dir/modules.dep"
}

# kmod_copy KVER RELPATH DESTDIR : copies one module into DESTDIR as
# NAME.ko, decompressing it since busybox insmod wants a plain ELF.
kmod_copy() {
	local src=${KMOD_ROOT:-}/lib/modules/$1/$2 dst
	dst=$3/$(basename "$2"); dst=${dst%.xz}; dst=${dst%.zst}; dst=${dst%.gz}
	case $2 in
	*.xz) xz -dc "$src" >"$dst" ;;
	*.zst) zstd -qdc "$src" >"$dst" ;;
	*.gz) gzip -dc "$src" >"$dst" ;;
	*) cp "$src" "$dst" ;;
	esac
}
