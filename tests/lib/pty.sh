# SPDX-License-Identifier: GPL-2.0-or-later
# A real terminal for the tests of brisk's console: script(1) (util-linux)
# makes a pseudo-terminal and runs in-pty there, which runs the command in
# its foreground and keeps the terminal's settings from before and after.

pty_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# pty_start STATE IN OUT COMMAND...: starts COMMAND in a new terminal, in
# the background (its pid in PTY_PID is script's): bytes written to the
# fifo IN are typed on the terminal, what the terminal shows goes to OUT.
# IN must already be a fifo; the caller opens it for writing after this.
pty_start() {
	local st=$1 in=$2 out=$3
	shift 3
	rm -f "$st".*
	SHELL=/bin/bash script -q -e -c "$(printf '%q ' "$pty_here/in-pty" "$st" "$@")" \
		/dev/null <"$in" >"$out" 2>&1 &
	PTY_PID=$!
}

# pty_wait_file FILE SECONDS: waits for FILE to exist and not be empty.
pty_wait_file() {
	local i=0
	while [ ! -s "$1" ] && [ $i -lt $(($2 * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -s "$1" ]
}

# pty_changed STATE: the terminal's settings differ from those before
# COMMAND, i.e. COMMAND changed them (brisk puts it in raw mode).
pty_changed() {
	local now
	[ -s "$1.tty" ] && [ -s "$1.before" ] || return 1
	now=$(stty -g -F "$(cat "$1.tty")" 2>/dev/null) || return 1
	[ -n "$now" ] && [ "$now" != "$(cat "$1.before")" ]
}
