#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The storage daemon's soak: one `brisk -export` serving four disks to
# eight front-ends that connect, run verified I/O, die by SIGKILL, reset
# their devices and truncate their memory, for SECONDS (default 600).
# Prints TAP and the figures docs/reliability.md records; exit 0 when the
# daemon stayed up, every request and block verified, its fds came back
# and its memory did not grow.  CI runs the same program for 20 s (the
# unit suite's vhost-user-soak).  A release build, as a daemon is run.
#
#   scripts/soak.sh [--seconds SECONDS] [--seed N]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

seconds=600 seed=1
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) seconds=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	*) echo "usage: scripts/soak.sh [--seconds SECONDS] [--seed N]" >&2; exit 2 ;;
	esac
done

scripts/setup-debian.sh
b=build-release
if [ ! -f $b/build.ninja ]; then meson setup $b -Dbuildtype=release >/dev/null; fi
meson compile -C $b brisk tests/vhost-user/vhost-user-soak >/dev/null
echo "# $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) CPUs, $b/brisk"
# A bound on a hang, well past the run itself: the harness ends its work
# within two minutes of the time asked.
exec timeout $((seconds + 300)) $b/tests/vhost-user/vhost-user-soak \
	--brisk $b/brisk --seconds "$seconds" --seed "$seed"
