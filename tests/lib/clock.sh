# SPDX-License-Identifier: GPL-2.0-or-later
# mono_s: whole seconds on the monotonic clock (since boot).  Bounds on
# waits are read from it, so a step of the wall clock is no hang.
mono_s() {
	local u
	read -r u _ </proc/uptime
	echo "${u%.*}"
}
