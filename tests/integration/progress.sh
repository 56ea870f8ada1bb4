#!/usr/bin/env bash
# Issue 24, item 8: long work shows its progress on a terminal, and
# nothing anywhere else. Run under script(1), whose pseudo-terminal is
# stderr: nprof record and nprof attach -d keep one line current (time,
# samples, threads), Ctrl-C ends the recording early and still writes it,
# saying so; nprof convert names its step; nprof start --wait counts the
# instance's seconds. With stderr a file, none of those lines appear.
. "$(dirname "$0")/lib.sh"
need_build
command -v script >/dev/null || bail "script is installed (util-linux)"

# on_tty NAME COMMAND...: runs COMMAND with a terminal for its stdin,
# stdout and stderr; what the terminal showed in $TMP/NAME.tty (escape
# sequences kept), the status in TTY_RC. The shell writes its pid to
# $TMP/NAME.pid before it becomes COMMAND. The terminal is 250 columns
# wide: the line is cut to its width.
on_tty() {
	local name=$1 cmd
	shift
	printf -v cmd '%q ' "$@"
	timeout -k 5 60 script -qefc "stty cols 250; echo \$\$ >'$TMP/$name.pid'; exec $cmd" "$TMP/$name.tty" \
		</dev/null >/dev/null
	TTY_RC=$?
}
# shows NAME REGEX: the terminal of NAME showed a progress line matching REGEX.
shows() { grep -a $'\r\033\\[K''nprof: ' "$TMP/$1.tty" | tr '\r' '\n' | grep -aqE "^.\\[Knprof: $2"; }
# cleared NAME: the last progress line was cleared: what follows the
# last "\r ESC[K" is not a progress line.
cleared() {
	tr '\r' '\n' <"$TMP/$1.tty" | grep -a $'^\033\\[K' | tail -1 |
		grep -avqE 'nprof: (recording|converting|instance)'
}

start_prog spin "$PROGS/spin" --forever || bail "spin starts"
spin=$PID

# --- nprof record -------------------------------------------------------------
on_tty record "$NPROF" record -d 1 -o collapsed -f "$TMP/rec.txt" "$spin"
check "record -d 1 on a terminal: the line counts the seconds, samples and threads" \
	shows record "recording PID $spin: [0-9.]+ s of 1 s, [0-9]+ samples, 1 thread; Ctrl-C stops early"
check "the line is cleared before the result is named (status $TTY_RC)" \
	bash -c "[ $TTY_RC = 0 ] && grep -aq 'nprof: wrote $TMP/rec.txt' '$TMP/record.tty'"
check "and the profile is written" grep -q spin_leaf "$TMP/rec.txt"
check "no progress line left after the last clear" cleared record

run_nprof 30 record -d 1 -o collapsed -f "$TMP/rec2.txt" "$spin"
check "stderr not a terminal: no progress line, only the result" \
	bash -c "[ $NP_RC = 0 ] && ! grep -aq 'recording PID' '$TMP/np.err' && ! grep -aq $'\r' '$TMP/np.err'"

# --- Ctrl-C -------------------------------------------------------------------
on_tty sigint "$NPROF" record -d 60 -o collapsed -f "$TMP/int.txt" "$spin" &
tty_job=$!
for ((i = 0; i < 200; i++)); do
	grep -aq 'samples' "$TMP/sigint.tty" 2>/dev/null && break
	sleep 0.05
done
t0=$(date +%s)
kill -INT "$(cat "$TMP/sigint.pid")"
wait "$tty_job"
rc=$?
secs=$(($(date +%s) - t0))
check "Ctrl-C in a 60 s recording: ends at once ($secs s), status $rc" \
	bash -c "[ $rc = 0 ] && [ $secs -lt 30 ]"
check "and says it stopped early and writes what was recorded" \
	bash -c "grep -aq 'stopped early' '$TMP/sigint.tty' && grep -q spin_leaf '$TMP/int.txt'"

# --- nprof convert ------------------------------------------------------------
on_tty convert "$NPROF" convert "$TMP/rec.txt" "$TMP/flame.html"
check "convert on a terminal: its steps named, then cleared (status $TTY_RC)" \
	bash -c "[ $TTY_RC = 0 ] && grep -aq 'converting $TMP/rec.txt: reading' '$TMP/convert.tty' &&
		grep -aq 'converting $TMP/rec.txt: writing $TMP/flame.html ([0-9]* stacks' '$TMP/convert.tty' &&
		grep -q spin_leaf '$TMP/flame.html'"
check "every progress line was cleared" cleared convert

# --- nprof attach -d (the agent records) ----------------------------------------
if [ "$(id -u)" = 0 ]; then
	start_prog spin2 "$PROGS/spin" --forever || bail "a second spin starts"
	on_tty attach "$NPROF" attach -d 1 -o collapsed -f "$TMP/att.txt" "$PID"
	check "attach -d 1 on a terminal: the agent's recording counts too (status $TTY_RC)" \
		bash -c "[ $TTY_RC = 0 ] && grep -q spin_leaf '$TMP/att.txt'" &&
		check "its line" shows attach "recording PID $PID: [0-9.]+ s of 1 s"
else
	skip "attach -d on a terminal" "attaching to a process needs root here"
fi

# --- nprof start --wait through nprofd ------------------------------------------
need_daemon
cat >"$D/nprofd.conf" <<CONF
CONF
start_daemon "$D/nprofd.conf" || bail "nprofd starts"
on_tty start env NPROF_SOCKET="$SOCK" "$NPROF" start "$spin" -e cpu -d 2 --wait
check "start --wait on a terminal: the instance's seconds counted (status $TTY_RC)" \
	bash -c "[ $TTY_RC = 0 ] && grep -aqE 'nprof: instance [0-9]+ \\(cpu on [^)]*\\) [A-Z]+: [0-9.]+ s' '$TMP/start.tty'"
check "every progress line was cleared" cleared start
finish
