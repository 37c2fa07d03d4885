#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# mutants.sh [--list FILE] [--full] [NUMBER...]
#
# Mutation testing: each line of tests/mutants.txt (or FILE) is a one-line
# bug a developer could make, and the tests it names must fail with it.
# A mutant that survives is a hole in the tests; one whose text no longer
# matches the source is a stale entry; one that does not build is a wrong
# entry.  Any of them fails the run, so this must pass before a release
# (it is not in CI: a whole run takes about twelve minutes on 2 CPUs).
#
# The work is done in a scratch copy of the tree (tracked and untracked,
# not ignored files), built once; each mutant then costs an incremental
# rebuild and its tests.  NUMBERs pick mutants (1-based, comments not
# counted); --full runs the unit and cli suites instead of the named
# tests, to tell whether a survivor is caught anywhere.  The kvm suite is
# never run: it boots guests, for minutes per mutant.
#
# Output is TAP.  MUTANT_TIMEOUT (seconds, default 300; 900 with --full)
# bounds each mutant's test run: a hang counts as killed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

list=$top/tests/mutants.txt
full=0
while [ $# -gt 0 ]; do
	case $1 in
	--list) list=$(realpath "${2:?--list needs a file}"); shift 2 ;;
	--full) full=1; shift ;;
	-h|--help) sed -n '4,21s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) break ;;
	esac
done
for i in "$@"; do
	case $i in ''|*[!0-9]*|0) echo "mutants: not a mutant number: $i (see --help)" >&2; exit 2 ;; esac
done
limit=${MUTANT_TIMEOUT:-$((full ? 900 : 300))}

# FILE | ORIGINAL | REPLACEMENT | TEST | WHY, split on " | " only: C code
# has plenty of single pipes.
mutants=()
while IFS= read -r line || [ -n "$line" ]; do
	case $line in ''|'#'*) continue ;; esac
	mutants+=("$line")
done <"$list"
# shellcheck disable=SC2046
[ $# -gt 0 ] || set -- $(seq 1 ${#mutants[@]})

# Sets file orig repl tests why from mutant $1; false if it is malformed.
parse() {
	local rest=${mutants[$1 - 1]:-}

	file=${rest%% | *} rest=${rest#* | }
	orig=${rest%% | *} rest=${rest#* | }
	repl=${rest%% | *} rest=${rest#* | }
	tests=${rest%% | *} why=${rest#* | }
	[ -n "$file" ] && [ "$why" != "$rest" ] && [ -f "$src/$file" ]
}

# Literal replacement; fails (printing the count) unless ORIGINAL is there once.
apply() {
	python3 - "$@" <<'EOF'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
if text.count(old) != 1:
    print(text.count(old))
    sys.exit(1)
open(path, "w").write(text.replace(old, new))
EOF
}

# The tests of the last run that did not pass, from meson's own log.
failed_tests() {
	python3 - "$build/meson-logs/testlog.json" <<'EOF' 2>/dev/null || true
import json, sys
bad = [t["name"].split(" / ")[-1] for t in map(json.loads, open(sys.argv[1]))
       if t["result"] not in ("OK", "SKIP", "EXPECTEDFAIL")]
print(",".join(bad))
EOF
}

run_tests() {
	rm -f "$build/meson-logs/testlog.json"
	# timeout signals its whole process group: the tests go too.
	timeout -k 10 "$limit" meson test -C "$build" --no-rebuild \
		--print-errorlogs "$@" >"$tmp/test.log" 2>&1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=$tmp/src build=$tmp/build
mkdir "$src"
# A tracked file deleted in the work tree is still listed: skip it.
(cd "$top" && git ls-files -co --exclude-standard -z |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	xargs -0 cp -P --parents -t "$src")
echo "# building a scratch copy in $tmp"
if ! (cd "$src" && timeout 900 meson setup "$build" &&
      timeout 1800 meson compile -C "$build") >"$tmp/build.log" 2>&1; then
	sed 's/^/# /' "$tmp/build.log" | tail -n 30
	echo "Bail out! the tree does not build"
	exit 1
fi

# A test that fails without a mutant would "kill" every mutant it is named for.
declare -A named=()
for i in "$@"; do
	parse "$i" || continue
	IFS=, read -ra sel <<<"$tests"
	for t in "${sel[@]}"; do named[$t]=1; done
done
base=(--suite unit --suite cli)
[ $full = 1 ] || base=("${!named[@]}")
echo "# the unmutated tree: ${base[*]}"
if [ ${#base[@]} -gt 0 ] && ! run_tests "${base[@]}"; then
	tail -n 30 "$tmp/test.log" | sed 's/^/# /'
	echo "Bail out! $(failed_tests) fail(s) without a mutant"
	exit 1
fi

n=0 killed=0 survived=0 broken=0
for i in "$@"; do
	n=$((n + 1))
	SECONDS=0
	if ! parse "$i"; then
		echo "not ok $n - mutant $i: no such mutant, a malformed line or no such file"
		broken=$((broken + 1))
		continue
	fi
	cp "$src/$file" "$tmp/orig"
	if ! count=$(apply "$src/$file" "$orig" "$repl"); then
		echo "not ok $n - $file: $why: STALE (original text found ${count:-?} times, not once)"
		broken=$((broken + 1))
		continue
	fi
	sel=(--suite unit --suite cli)
	[ $full = 1 ] || IFS=, read -ra sel <<<"$tests"
	if ! timeout 900 ninja -C "$build" >"$tmp/ninja.log" 2>&1; then
		echo "not ok $n - $file: $why: DOES NOT BUILD"
		grep -E 'error:' "$tmp/ninja.log" | head -n 5 | sed 's/^/# /'
		broken=$((broken + 1))
	elif run_tests "${sel[@]}"; then
		echo "not ok $n - $file: $why: SURVIVED ($orig -> $repl; ran ${sel[*]})"
		survived=$((survived + 1))
	else
		by=$(failed_tests)
		echo "ok $n - $file: $why (killed by ${by:-a timeout after ${limit} s})"
		killed=$((killed + 1))
	fi
	echo "# $SECONDS s"
	# A fresh mtime, so that the next ninja rebuilds the original.
	cp "$tmp/orig" "$src/$file"
done
echo "1..$n"
if [ $broken = 0 ]; then
	echo "$killed killed, $survived survived"
else
	echo "$killed killed, $survived survived, $broken stale or not building"
fi
[ $survived = 0 ] && [ $broken = 0 ]
