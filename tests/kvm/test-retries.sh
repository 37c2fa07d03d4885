#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# test-retries.sh: what with-kvm retries on the nested route, with a
# stand-in qemu-system-x86_64 that plays the nested host through with-kvm's
# control folder (no guest is booted).  Only a start that hangs or dies
# before the command runs is made once more, counted, said on stderr and
# handed to the command in BRISK_WITH_KVM_RETRIES; a nested host that
# stops answering or dies once the command runs fails the run at once.
# The sanitizers' settings (*SAN_OPTIONS) reach the command there too.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/tap.sh"
. "$here/lib/kmod.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# with-kvm builds the nested host's initramfs before anything else.
if ! kmod_newest_kver >/dev/null; then
	tap_skip "with-kvm's retries" "no kernel in /boot (apt-get install linux-image-amd64)"
	tap_done
fi
if ! command -v busybox >/dev/null && [ ! -x /bin/busybox ]; then
	tap_skip "with-kvm's retries" "no busybox (apt-get install busybox-static)"
	tap_done
fi

# The stand-in: finds the control folder in its -virtfs arguments, counts
# its starts in $FAKE_DIR/starts and acts as FAKE_PLAN says for each start
# (one word per start): hang (never up), die (exits before up), run (up,
# runs the command as the inner init would, heartbeat included), wedge (up,
# then silent), vanish (up, then gone without the command's status).
mkdir "$tmp/bin"
cat >"$tmp/bin/qemu-system-x86_64" <<'EOS'
#!/bin/bash
ctl=
for a in "$@"; do
	case $a in *mount_tag=ctl,*) ctl=${a#*path=}; ctl=${ctl%%,*} ;; esac
done
[ -d "$ctl" ] || exit 3
n=$(( $(cat "$FAKE_DIR/starts" 2>/dev/null || echo 0) + 1 ))
echo $n >"$FAKE_DIR/starts"
sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status >"$FAKE_DIR/cpus"
set -- $FAKE_PLAN
shift $((n - 1))
case ${1:-run} in
hang) exec sleep 1000 ;;
die) exit 1 ;;
wedge) echo up >"$ctl/up"; exec sleep 1000 ;;
vanish) echo up >"$ctl/up"; exit 0 ;;
run)
	echo up >"$ctl/up"
	# cmd.sh as the inner host runs it, but outside its chroot: from an
	# empty environment, so only what cmd.sh sets reaches the command.
	sed "s#/run/with-kvm/#$ctl/#g" "$ctl/cmd.sh" >"$ctl/cmd.here"
	env -i /bin/bash "$ctl/cmd.here" >>"$ctl/out" 2>>"$ctl/err"
	echo $? >"$ctl/rc" ;;
esac
EOS
chmod +x "$tmp/bin/qemu-system-x86_64"

# run PLAN: with-kvm on the nested route with the stand-in; sets rc,
# starts, and out/err files.
run() {
	rm -f "$tmp/starts" "$tmp/cpus"
	FAKE_PLAN=$1 FAKE_DIR=$tmp PATH="$tmp/bin:$PATH" \
	BRISK_WITH_KVM_START_TIMEOUT=2 BRISK_WITH_KVM_WEDGE_TIMEOUT=3 \
	BRISK_WITH_KVM=nested XDG_CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache} \
		timeout 120 "$here/with-kvm" --timeout 60 --work "$tmp" -- \
		sh -c 'echo "retries=$BRISK_WITH_KVM_RETRIES"; echo "ubsan=${UBSAN_OPTIONS:-}"
		       echo "asan=${ASAN_OPTIONS:-}"; exit 7' >"$tmp/out" 2>"$tmp/err"
	rc=$?
	starts=$(cat "$tmp/starts" 2>/dev/null || echo 0)
}
has() { grep -q -- "$2" "$1"; }

run "run"
tap_check "a clean start: the command's status comes back" [ $rc -eq 7 ]
tap_check "a clean start: no retry, and the command is told so" has "$tmp/out" "^retries=0$"

# A sanitizer build behaves in the nested host as here: halting at a report.
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 run "run"
tap_check "the sanitizers' settings reach the command in the nested host" \
	eval 'has "$tmp/out" "^ubsan=halt_on_error=1:print_stacktrace=1$" && has "$tmp/out" "^asan=detect_leaks=1$"'

# The emulator runs on one host CPU, the first with-kvm may use: its
# threads' unlocked updates of the pending-interrupt word then cannot
# interleave.  BRISK_WITH_KVM_PIN=off lets it run on all of them.
mine=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
case $mine in
*[,-]*)
	(unset BRISK_WITH_KVM_PIN; run "run")
	tap_check "the nested host's QEMU runs on one CPU, with-kvm's first (${mine%%[,-]*} of $mine)" \
		[ "$(cat "$tmp/cpus" 2>/dev/null)" = "${mine%%[,-]*}" ]
	BRISK_WITH_KVM_PIN=off run "run"
	tap_check "BRISK_WITH_KVM_PIN=off: on all of with-kvm's CPUs ($mine)" \
		eval '[ $rc -eq 7 ] && [ "$(cat "$tmp/cpus" 2>/dev/null)" = "$mine" ]' ;;
*)
	tap_skip "the nested host's QEMU runs on one CPU" "this test may use one CPU only ($mine): pinned or not looks the same" ;;
esac
BRISK_WITH_KVM_PIN=bogus run "run"
tap_check "BRISK_WITH_KVM_PIN=bogus: exit 1, saying so, no start" \
	eval '[ $rc -eq 1 ] && [ "$starts" -eq 0 ] && has "$tmp/err" "BRISK_WITH_KVM_PIN: on or off, not .bogus."'

run "hang run"
tap_check "a start that hangs is made once more" [ "$starts" -eq 2 ]
tap_check "... the command then runs and its status comes back" [ $rc -eq 7 ]
tap_check "... the retry is said on stderr" has "$tmp/err" "^with-kvm: retry 1: "
tap_check "... and the command is told of it" has "$tmp/out" "^retries=1$"

run "die run"
tap_check "a start that dies is made once more" eval '[ "$starts" -eq 2 ] && [ $rc -eq 7 ]'

run "hang hang"
tap_check "two failed starts: exit 1, no third" eval '[ "$starts" -eq 2 ] && [ $rc -eq 1 ]'
tap_check "... saying so" has "$tmp/err" "failed to start twice"

run "wedge run"
tap_check "a nested host that stops answering once up: never retried" [ "$starts" -eq 1 ]
tap_check "... exit 124" [ $rc -eq 124 ]
tap_check "... saying it was not retried" has "$tmp/err" "not retried"

run "vanish run"
tap_check "a nested host gone without the command's status: never retried" [ "$starts" -eq 1 ]
tap_check "... exit 1" [ $rc -eq 1 ]
tap_done
