#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# test-route.sh: where with-kvm runs guests (tests/kvm/lib/route.sh).
# Natively only when brisk --check-kvm says /dev/kvm runs ordinary guests,
# forced routes obeyed and said to be forced.  A stand-in brisk answers
# the check, so every verdict is tried on any host; no guest is booted.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
. "$here/lib/arch.sh"
. "$here/lib/route.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A brisk whose --check-kvm prints VERDICT and exits with STATUS, and
# notes that it was asked.
fake_brisk() {
	local path=$1 status=$2 verdict=$3
	cat >"$path" <<EOS
#!/bin/sh
echo asked >>"$path.calls"
[ "\$1" = --check-kvm ] || exit 99
echo "kvm-module: fake"
echo "verdict: $verdict"
exit $status
EOS
	chmod +x "$path"
}
good=$tmp/good bad=$tmp/bad dev=$tmp/kvm
fake_brisk "$good" 0 "/dev/kvm is kvm_amd (AMD-V): it runs ordinary guests"
fake_brisk "$bad" 1 "/dev/kvm is kvm_pvm (software virtualization): it runs only PVM-enabled guest kernels"
: >"$dev"
has() { case $1 in *"$2"*) return 0 ;; esac; return 1; }
asked() { [ -s "$1.calls" ]; }

kvm_route auto BRISK_WITH_KVM= "$good" "$dev"
tap_check "auto, check passes: native" [ "$ROUTE" = native ]
tap_check "auto, check passes: says the verdict" has "$ROUTE_WHY" "runs ordinary guests"

kvm_route auto BRISK_WITH_KVM= "$bad" "$dev"
tap_check "auto, check fails: nested" [ "$ROUTE" = nested ]
tap_check "auto, check fails: says why" has "$ROUTE_WHY" "kvm_pvm (software virtualization)"
tap_check "auto, check fails: says where it goes" has "$ROUTE_WHY" "using the nested host"

kvm_route "" BRISK_WITH_KVM= "$good" "$tmp/none"
tap_check "auto, no /dev/kvm: nested" [ "$ROUTE" = nested ]
tap_check "auto, no /dev/kvm: says so" has "$ROUTE_WHY" "no $tmp/none here"

kvm_route auto BRISK_WITH_KVM= "$tmp/no-brisk" "$dev"
tap_check "auto, no brisk to check with: nested" [ "$ROUTE" = nested ]
tap_check "auto, no brisk to check with: says so" has "$ROUTE_WHY" "no brisk at"

# A brisk for the other architecture: only its ELF header matters.
other=$tmp/other
if [ "$(host_arch)" = arm64 ]; then em='\076\000' oarch=x86_64; else em='\267\000' oarch=arm64; fi
{ printf '\177ELF\002\001\001'; head -c 11 /dev/zero; printf "$em"; head -c 44 /dev/zero; } >"$other"
tap_check "the stand-in reads as an $oarch binary" [ "$(elf_arch "$other")" = "$oarch" ]
kvm_route auto BRISK_WITH_KVM= "$other" "$dev"
tap_check "auto, $oarch brisk: nested" [ "$ROUTE" = nested ]
tap_check "auto, $oarch brisk: says why" has "$ROUTE_WHY" "an $oarch binary"
kvm_route native --native "$other" "$dev"
tap_check "forced native, $oarch brisk: refused" [ $? -ne 0 ]
tap_check "forced native, $oarch brisk: says why" has "$ROUTE_WHY" "is an $oarch binary"

rm -f "$good.calls"
kvm_route nested BRISK_WITH_KVM=nested "$good" "$dev"
tap_check "forced nested: nested though the check would pass" [ "$ROUTE" = nested ]
tap_check "forced nested: names who forced it" has "$ROUTE_WHY" "forced by BRISK_WITH_KVM=nested"
tap_check "forced nested: the check is not run" eval '! asked "$good"'

kvm_route native --native "$bad" "$dev"
tap_check "forced native: native though the check fails" [ "$ROUTE" = native ]
tap_check "forced native: names who forced it" has "$ROUTE_WHY" "forced by --native"
tap_check "forced native: still says what the check found" has "$ROUTE_WHY" "only PVM-enabled"

tap_check "forced native without /dev/kvm: refused" eval '! kvm_route native --native "$good" "$tmp/none"'
tap_check "forced native without /dev/kvm: says so" has "$ROUTE_WHY" "no $tmp/none here"
tap_check "unknown route: refused" eval '! kvm_route fast BRISK_WITH_KVM=fast "$good" "$dev"'
tap_check "unknown route: names it" has "$ROUTE_WHY" "unknown route 'fast'"

# with-kvm itself takes the decision: where the native route needs no
# nested host to prove it, run it end to end.
if [ -e /dev/kvm ]; then
	out=$(BRISK_WITH_KVM= "$here/with-kvm" --brisk "$good" -- sh -c 'echo "$BRISK_WITH_KVM_ROUTE"' 2>"$tmp/err")
	tap_check "with-kvm: a passing check runs COMMAND natively" [ "$out" = native ]
	tap_check "with-kvm: says why on stderr" grep -q "^with-kvm: native: .*runs ordinary guests" "$tmp/err"
	out=$(BRISK_WITH_KVM=nested "$here/with-kvm" --native --brisk "$bad" -- sh -c 'echo "$BRISK_WITH_KVM_ROUTE"' 2>"$tmp/err")
	tap_check "with-kvm: --native wins over BRISK_WITH_KVM" [ "$out" = native ]
	tap_check "with-kvm: says --native forced it" grep -q "forced by --native" "$tmp/err"
	BRISK_WITH_KVM=sideways "$here/with-kvm" --brisk "$good" -- true 2>"$tmp/err"
	tap_check "with-kvm: a bad BRISK_WITH_KVM fails" [ $? -eq 1 ]
	tap_check "with-kvm: ... with one line" [ "$(wc -l <"$tmp/err")" -eq 1 ]
else
	tap_skip "with-kvm end to end" "no /dev/kvm here: the native route cannot be taken"
fi
tap_done
