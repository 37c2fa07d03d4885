# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by with-kvm and the benchmarks (source lib/arch.sh first): where
# do guests run?  Natively
# only where brisk's own check (brisk --check-kvm) finds that /dev/kvm runs
# an ordinary guest; otherwise in the nested host.  A /dev/kvm that merely
# opens proves nothing: kvm_pvm, for one, answers every query and then
# emulates an ordinary kernel ~1000x slower than hardware.

# kvm_route FORCED SOURCE BRISK [KVMDEV]
#   FORCED: native, nested, or auto/empty to decide here; SOURCE names who
#   forced it (e.g. "BRISK_WITH_KVM=nested"), for the message.  BRISK is
#   the brisk binary whose --check-kvm decides.  KVMDEV defaults to
#   /dev/kvm.  Sets ROUTE (native|nested) and ROUTE_WHY (one line saying
#   why).  Returns 1 (ROUTE_WHY says why) when a route cannot be taken.
kvm_route() {
	local forced=$1 source=$2 brisk=$3 dev=${4:-/dev/kvm} out rc verdict arch
	ROUTE= ROUTE_WHY=
	# KVM runs guests of its own architecture only: a brisk built for
	# another (an arm64 one on an x86-64 host) runs in the nested host of
	# its architecture, whatever /dev/kvm here can do.
	arch=$(elf_arch "$brisk" 2>/dev/null) || arch=$(host_arch)
	if [ "$arch" != "$(host_arch)" ]; then
		case $forced in
		native)
			ROUTE_WHY="native route forced by $source, but $brisk is an $arch binary and this host is $(host_arch)"
			return 1 ;;
		nested|auto|'') ;;
		*)
			ROUTE_WHY="$source: unknown route '$forced' (native, nested or auto)"
			return 1 ;;
		esac
		ROUTE=nested
		ROUTE_WHY="$brisk is an $arch binary on this $(host_arch) host: using the nested $arch host"
		return 0
	fi
	case $forced in
	native)
		if [ ! -e "$dev" ]; then
			ROUTE_WHY="native route forced by $source, but there is no $dev here"
			return 1
		fi
		ROUTE=native
		ROUTE_WHY="native $dev (forced by $source)"
		# Say what the check would have said, so a forced route on a
		# /dev/kvm that cannot run guests does not read as a fine one.
		if [ -x "$brisk" ]; then
			out=$(timeout 20 "$brisk" --check-kvm 2>&1)
			verdict=$(printf '%s\n' "$out" | sed -n 's/^verdict: //p')
			[ -n "$verdict" ] || verdict=$(printf '%s\n' "$out" | tail -n 1)
			ROUTE_WHY="$ROUTE_WHY; brisk --check-kvm: $verdict"
		fi
		return 0 ;;
	nested)
		ROUTE=nested
		ROUTE_WHY="nested host (forced by $source)"
		return 0 ;;
	auto|'') ;;
	*)
		ROUTE_WHY="$source: unknown route '$forced' (native, nested or auto)"
		return 1 ;;
	esac
	ROUTE=nested
	if [ ! -e "$dev" ]; then
		ROUTE_WHY="no $dev here: using the nested host"
		return 0
	fi
	if [ ! -x "$brisk" ]; then
		ROUTE_WHY="no brisk at $brisk to check $dev with (build it first): using the nested host"
		return 0
	fi
	out=$(timeout 20 "$brisk" --check-kvm 2>&1)
	rc=$?
	verdict=$(printf '%s\n' "$out" | sed -n 's/^verdict: //p')
	[ -n "$verdict" ] || verdict=$(printf '%s\n' "$out" | sed 's/^brisk: //' | tail -n 1)
	[ $rc -eq 124 ] && verdict="brisk --check-kvm did not answer in 20 s"
	if [ $rc -eq 0 ]; then
		ROUTE=native
		ROUTE_WHY="native: $verdict"
	else
		ROUTE_WHY="${verdict:-brisk --check-kvm failed (status $rc)}: using the nested host"
	fi
	return 0
}
