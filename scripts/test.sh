#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Installs what brisk needs, builds it with warnings as errors (also as
# release, static, auto_var_init=off and pattern builds, the release one
# running the unit suite), and runs every test: the fast unit and
# command-line suites, the KVM suite (guests
# booted under real KVM: natively where /dev/kvm works, else inside the
# nested host of tests/kvm/with-kvm), then the unit suites again under
# AddressSanitizer + UndefinedBehaviorSanitizer (the KVM suite too), and
# the fuzzers briefly.  On an x86-64 host it also cross-builds the static
# arm64 brisk, checks its device tree and command line (under
# qemu-aarch64) and its virtqueue pop path (tests/bench/virtqueue-pop
# under qemu-aarch64), and boots it in the nested arm64 host: the arm64
# boot and virtio-blk tests (see README.md).
#
#   scripts/test.sh            everything
#   scripts/test.sh --quick    no sanitizer build, no fuzzing
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
[ "${1:-}" = "--quick" ] && quick=1

scripts/setup-debian.sh

fail=0
total_pass=0
total_fail=0

# meson test's own summary is "Ok: N ... Fail: N"; add them up.
count() {
	local log=$1 ok bad timeouts
	ok=$(sed -n 's/^Ok: *\([0-9]*\)/\1/p' "$log" | tail -1)
	bad=$(sed -n 's/^Fail: *\([0-9]*\)/\1/p' "$log" | tail -1)
	timeouts=$(sed -n 's/^Timeout: *\([0-9]*\)/\1/p' "$log" | tail -1)
	total_pass=$((total_pass + ${ok:-0}))
	total_fail=$((total_fail + ${bad:-0} + ${timeouts:-0}))
}

# Every skip (a test's exit 77 or a TAP "# SKIP", each with its reason)
# and every retried start of the nested host, from meson's log of the
# run, so none hides behind "passed".
notes=$(mktemp)
fails=$(mktemp)
trap 'rm -f "$notes" "$fails"' EXIT
collect() {
	python3 - "$1/meson-logs/testlog.json" "$fails" >>"$notes" <<'EOF'
import json, re, sys
fails = open(sys.argv[2], "a")
for line in open(sys.argv[1]):
    t = json.loads(line)
    out, err = t.get("stdout") or "", t.get("stderr") or ""
    tap = [m for m in (re.match(r"ok \d+ - (.*) # SKIP (.*)", l)
                       for l in out.splitlines()) if m]
    for m in tap:
        print("skip: %s: %s: %s" % (t["name"], m.group(1), m.group(2)))
    if t["result"] == "SKIP" and not tap:
        print("skip: %s: %s" % (t["name"], (out.strip().splitlines() or ["?"])[-1]))
    for l in err.splitlines():
        if l.startswith("with-kvm: retry"):
            print("retry: %s: %s" % (t["name"], l))
    if t["result"] not in ("OK", "SKIP", "EXPECTEDFAIL"):
        # A log's tail is what CI shows: name what failed, and why.
        why = [l for l in out.splitlines() if l.startswith("not ok")][:20]
        why += err.strip().splitlines()[-15:]
        print("fail: %s (%s, in %s)" % (t["name"], t["result"],
                                        sys.argv[1].split("/")[0]), file=fails)
        for l in why:
            print("    " + l, file=fails)
EOF
}

run_suite() {
	local dir=$1; shift
	local log
	log=$(mktemp)
	if ! meson test -C "$dir" --print-errorlogs "$@" 2>&1 | tee "$log"; then
		fail=1
	fi
	count "$log"
	collect "$dir"
	rm -f "$log"
}

setup() {
	local dir=$1; shift
	if [ -f "$dir/build.ninja" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
	meson compile -C "$dir"
}

echo "== build (hardened default: -ftrivial-auto-var-init=zero, -Werror)"
setup build
run_suite build --suite unit --suite cli
echo "== every other build the README names (warnings as errors)"
# A packager's -O3 build, the static binary and the other auto-var-init
# modes must build too; the release build runs the unit suite, since -O3
# is where undefined behaviour and uninitialized reads show.
setup build-release --buildtype=release
run_suite build-release --suite unit
# Static with user networking: libslirp built static (scripts/slirp-static.sh).
setup build-static -Dstatic=true "-Dslirp_dir=$(scripts/slirp-static.sh)"
run_suite build-static slirp
setup build-off -Dauto_var_init=off
setup build-pattern -Dauto_var_init=pattern

echo "== KVM suite"
run_suite build --suite kvm

if [ "$(uname -m)" = x86_64 ]; then
	echo "== arm64 (cross build; qemu-aarch64; nested arm64 host)"
	scripts/build-arm64.sh build-arm64
	run_suite build-arm64 arm-board arm-dtc dumpdtb user-dtb route fences
	run_suite build-arm64 --benchmark virtqueue-pop
	run_suite build-arm64 --suite kvm
fi

if [ $quick = 0 ]; then
	echo "== ASan + UBSan"
	setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
		--buildtype=debug
	# The build stops at a UBSan report anyway (-fno-sanitize-recover);
	# these settings also reach the nested host (with-kvm passes them).
	export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
	export ASAN_OPTIONS=detect_leaks=1
	run_suite build-asan --suite unit --suite cli
	# The same guests again, with brisk itself under the sanitizers.
	run_suite build-asan --suite kvm
	unset UBSAN_OPTIONS ASAN_OPTIONS
	if [ -x tests/fuzz/run-fuzzers.sh ]; then
		echo "== fuzzers (brief)"
		tests/fuzz/run-fuzzers.sh --seconds "${BRISK_FUZZ_SECONDS:-30}" || fail=1
	fi
fi

# grep -c says 0 and fails when nothing matches: none is the good case.
skips=$(grep -c '^skip: ' "$notes" || true)
retries=$(grep -c '^retry: ' "$notes" || true)
echo "$total_pass passed, $total_fail failed, $skips checks skipped, $retries nested-host start retries"
sed 's/^/  /' "$notes"
sed 's/^/  /' "$fails"
exit $fail
