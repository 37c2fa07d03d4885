#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run-fuzzers.sh [--seconds N] [--jobs J] [TARGET...]
#
# Builds the libFuzzer targets in build-fuzz (clang, -Dfuzz=true) if
# needed, runs each for N seconds (default 60, or $BRISK_FUZZ_SECONDS)
# over a scratch copy of its seed corpus, J targets at a time (default:
# one per CPU; each is single-threaded), and prints executions per
# target.  Exits non-zero if any target crashed, leaked, hung or
# tripped a sanitizer (the reproducer is kept under build-fuzz/fuzz-out/),
# or has no seeds, loaded none, or executed nothing.
set -u
cd "$(dirname "$0")/../.."

seconds=${BRISK_FUZZ_SECONDS:-60}
jobs=$(nproc)
targets=()
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
	--seconds=*) seconds=${1#*=}; shift ;;
	--jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
	--jobs=*) jobs=${1#*=}; shift ;;
	-h|--help) sed -n '4,11s/^# \{0,1\}//p' "$0"; exit 0 ;;
	-*) echo "run-fuzzers.sh: unknown option $1" >&2; exit 2 ;;
	*) targets+=("$1"); shift ;;
	esac
done
# BRISK_FUZZ_SECONDS, when set, wins over the caller's --seconds.
seconds=${BRISK_FUZZ_SECONDS:-$seconds}
case $seconds in ''|*[!0-9]*) echo "run-fuzzers.sh: bad seconds '$seconds'" >&2; exit 2 ;; esac
case $jobs in ''|0|*[!0-9]*) echo "run-fuzzers.sh: bad jobs '$jobs'" >&2; exit 2 ;; esac
[ ${#targets[@]} -gt 0 ] ||
	targets=(fuzz-split-pop fuzz-packed-pop fuzz-virtio-blk fuzz-virtio-pci
		 fuzz-vhost-user fuzz-bzimage fuzz-cli fuzz-virtio-net fuzz-netdev-opts
		 fuzz-arm-image fuzz-arm-dtb)

# How long past its time a target may run before it counts as hung.
hang_s=300
build=build-fuzz
if ! command -v clang >/dev/null; then
	echo "run-fuzzers.sh: clang not found; the fuzzers need it" >&2
	exit 1
fi
if [ ! -f $build/build.ninja ]; then
	# Debian 12's clang 14 lacks -ftrivial-auto-var-init; the fuzzers
	# are better off without it anyway: zeroed stack hides no bug.
	CC=clang meson setup $build -Dfuzz=true -Db_lundef=false \
		-Dauto_var_init=off >/dev/null || exit 1
fi
ninja -C $build -j2 "${targets[@]/#/tests/fuzz/}" >/dev/null || {
	echo "run-fuzzers.sh: build failed (ninja -C $build)" >&2
	exit 1
}

out=$build/fuzz-out
mkdir -p "$out"

# Runs target $1 and prints one line: "ok ..." or "FAIL ..." and why.
fuzz_one() {
	local t=$1 work seeds log rc execs cov loaded
	work=$(mktemp -d)
	seeds=$(find "tests/fuzz/corpus/$t" -type f 2>/dev/null | wc -l)
	if [ "$seeds" -eq 0 ] || ! cp -r "tests/fuzz/corpus/$t/." "$work/"; then
		echo "FAIL $t: no seed corpus in tests/fuzz/corpus/$t"
		rm -rf "$work"
		return
	fi
	mkdir -p "$out/$t"
	log=$out/$t.log
	# Sanitizer reports abort the run so libFuzzer saves the input;
	# -close_fd_mask=2 hides brisk's own error lines about the guest,
	# not libFuzzer's or the sanitizers' reports.
	#
	# libFuzzer times each input by the wall clock (system_clock), so
	# a step of the host's clock or a stalled host reads as a slow
	# input: its -timeout is off.  A hang is caught instead by a
	# monotonic limit on the whole run, far past its length; SIGABRT
	# makes libFuzzer print where it was and save the input it was on.
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
		timeout -s ABRT $((seconds + hang_s)) \
		"$build/tests/fuzz/$t" "$work" -max_total_time="$seconds" \
		-timeout=0 -rss_limit_mb=2048 -close_fd_mask=2 -print_final_stats=1 \
		-artifact_prefix="$out/$t/" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
	# A target that ran nothing, or read none of its seeds, proved nothing.
	loaded=$(sed -n 's/^INFO: seed corpus: files: \([0-9]*\).*/\1/p' "$log" | tail -1)
	if [ $rc -eq 0 ] && { [ "${execs:-0}" -eq 0 ] || [ "${loaded:-0}" -eq 0 ]; }; then
		echo "FAIL $t: ${execs:-0} executions, ${loaded:-0} of $seeds seeds loaded; log $log"
	elif [ $rc -eq 124 ]; then
		echo "FAIL $t: still running ${hang_s}s past its ${seconds}s: an input hangs; log $log"
		{ grep -m1 -B6 'in LLVMFuzzerTestOneInput' "$log"
		  grep 'Test unit written' "$log"; } | sed 's/^/    /'
	elif [ $rc -ne 0 ] || grep -qE '^(==[0-9]+==ERROR|SUMMARY: )' "$log"; then
		echo "FAIL $t: status $rc after ${execs:-?} executions; log $log"
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -5 | sed 's/^/    /'
	else
		echo "ok   $t: ${execs:-0} executions in ${seconds}s, ${cov:-cov: ?}"
	fi
	rm -rf "$work"
}

# Each target writes its lines to a file of its own, printed in the
# targets' order once all are done, so parallel runs read as serial.
for t in "${targets[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
	rm -f "$out/$t.result"
	fuzz_one "$t" >"$out/$t.result" &
done
wait
fail=0
for t in "${targets[@]}"; do
	if [ -s "$out/$t.result" ]; then
		cat "$out/$t.result"
	else
		echo "FAIL $t: its run printed no result"
	fi
	head -1 "$out/$t.result" 2>/dev/null | grep -q '^ok ' || fail=1
done
exit $fail
