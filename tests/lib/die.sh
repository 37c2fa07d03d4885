# SPDX-License-Identifier: GPL-2.0-or-later
# die MESSAGE...: a script that cannot go on says why in one line on
# stderr, under its own name ($prog, or its file name without .sh), and
# exits 1.
die() {
	local p=${0##*/}
	echo "${prog:-${p%.sh}}: $*" >&2
	exit 1
}
