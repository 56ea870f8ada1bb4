#!/usr/bin/env bash
# 200 attach / session / detach cycles on tests/progs/agent_cycles --serve:
# 16 threads burning, sleeping (nanosleep, a condition variable, poll) and
# making short-lived threads all the while, started without the agent. Each
# cycle: `nprof attach -e EVENT -d 20ms PID` (the agent loaded the first
# time, woken after) then `nprof detach PID`, the events in turn wall, alloc,
# lock and itimer (GOT entries redirected and put back, timers armed and
# deleted). No crash, every attach, session and detach succeeds, and after
# the last cycle the process has the fds, POSIX timers and file mappings it
# had after the first, no thread of the agent, and not many more anonymous
# mappings (thread stacks of the churning threads come and go).
# test-timeout: 240
. "$(dirname "$0")/lib.sh"
need_build
CYCLES=${CYCLES:-200}
[ -x "$PROGS/agent_cycles" ] || bail "tests/progs/agent_cycles is built"

start_prog ac "$PROGS/agent_cycles" --serve 600 || bail "agent_cycles --serve starts"
AC=$PID
fds() { ls "/proc/$AC/fd" | wc -l; }
timers() { grep -c '^ID:' "/proc/$AC/timers" 2>/dev/null || true; }
file_maps() { awk 'NF >= 6' "/proc/$AC/maps" | wc -l; }
anon_maps() { awk 'NF < 6' "/proc/$AC/maps" | wc -l; }
agent_threads() { cat /proc/"$AC"/task/*/comm 2>/dev/null | grep -c '^nprof' || true; }

events=(wall alloc lock itimer)
intervals=(1ms 64k 1ms 1ms)
failed=0 t0=$(date +%s.%N)
for ((i = 1; i <= CYCLES; i++)); do
	ev=${events[$(( (i - 1) % 4 ))]} iv=${intervals[$(( (i - 1) % 4 ))]}
	if ! timeout -k 5 30 "$NPROF" attach -e "$ev" -i "$iv" -d 20ms -o collapsed -f "$TMP/c.collapsed" \
		"$AC" 2>"$TMP/c.err" || ! timeout -k 5 30 "$NPROF" detach "$AC" 2>>"$TMP/c.err"; then
		failed=$((failed + 1))
		[ "$failed" -le 3 ] && diag "cycle $i ($ev) failed:" && diag_file "$TMP/c.err" 4
		kill -0 "$AC" 2>/dev/null || break
	fi
	if [ "$i" -eq 1 ]; then
		sleep 0.2
		fds1=$(fds) timers1=$(timers) files1=$(file_maps) anon1=$(anon_maps)
	fi
done
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
check "agent_cycles is alive after $((i - 1)) cycles (${secs}s)" kill -0 "$AC"
check "every attach, session and detach succeeded ($failed failed)" [ "$failed" -eq 0 ]
sleep 0.2
fds2=$(fds) timers2=$(timers) files2=$(file_maps) anon2=$(anon_maps)
check "no fd leak: $fds1 after the first cycle, $fds2 after the last" [ "$fds2" -eq "$fds1" ]
check "no POSIX timer left: $timers1 after the first cycle, $timers2 after the last" \
	[ "$timers2" -eq "$timers1" ] && [ "$timers2" -eq 0 ]
check "no thread of the agent after detach ($(agent_threads))" [ "$(agent_threads)" -eq 0 ]
check "no file mapping leak: $files1 after the first cycle, $files2 after the last" [ "$files2" -eq "$files1" ]
check "anonymous mappings: $anon1 after the first cycle, $anon2 after the last (churning stacks: +32 at most)" \
	[ "$anon2" -le $((anon1 + 32)) ]
kill -TERM "$AC"
wait_pid "$AC" 20
wait "$AC"
check "agent_cycles exits normally at SIGTERM (status $?)" [ $? -eq 0 ]
finish
