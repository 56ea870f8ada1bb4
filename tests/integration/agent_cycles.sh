#!/usr/bin/env bash
# 1,000 start/stop cycles per engine (cpu, itimer, wall; 1 ms interval)
# through the C API, in tests/progs/agent_cycles: 16 threads burning,
# sleeping and making short-lived threads all the while. No crash, no
# deadlock (the program's watchdog ends it with one line naming the call
# that hung), every start and stop succeeded, and the process has the
# fds, threads and POSIX timers it had before the first session. Samples are held to
# the CPU the main thread burned in its sessions (cpu: one per interval;
# itimer: one per tick of the kernel's CPU-timer granularity, which the
# program measures) and, for wall, to the ticks the sessions lasted: at
# least half of that, and some in the last hundred sessions (profiling
# still works after all the cycles before).
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
[ -x "$PROGS/agent_cycles" ] || bail "tests/progs/agent_cycles is built"
CYCLES=${CYCLES:-1000}

# field LINE KEY: the value of KEY=VALUE in LINE.
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }

t0=$(date +%s)
timeout -k 5 170 env LD_PRELOAD="$AGENT" NPROF_QUIET=1 "$PROGS/agent_cycles" \
	--cycles "$CYCLES" --interval 1ms --stall 30 >"$TMP/cycles.out" 2>"$TMP/cycles.err" </dev/null
rc=$?
secs=$(($(date +%s) - t0))
diag "agent_cycles ran ${secs}s:" && diag_file "$TMP/cycles.out" 10
case $rc in
0 | 1) ok "no crash, no deadlock (status $rc)" ;;
3) not_ok "no deadlock: $(grep -m1 '^stall' "$TMP/cycles.out")"; diag_file "$TMP/cycles.err" 40 ;;
124 | 137) not_ok "no deadlock: still running after 170 s (status $rc)" ;;
*) not_ok "no crash (status $rc)"; diag_file "$TMP/cycles.err" 20 ;;
esac

before=$(grep -m1 '^before ' "$TMP/cycles.out")
after=$(grep -m1 '^after ' "$TMP/cycles.out")
fds0=$(field "$before" fds) timers0=$(field "$before" timers)
for ev in cpu itimer wall; do
	line=$(grep -m1 "^event $ev " "$TMP/cycles.out")
	if [ -z "$line" ]; then
		not_ok "$ev: $CYCLES cycles ran"
		continue
	fi
	n=$(field "$line" cycles) errors=$(field "$line" errors) fds=$(field "$line" fds)
	samples=$(field "$line" samples) expect=$(field "$line" expect)
	last=$(field "$line" last_with)
	if [ "$n" = "$CYCLES" ] && [ "$errors" = 0 ]; then
		ok "$ev: $n start/stop cycles, every one succeeded ($(field "$line" secs)s)"
	else
		not_ok "$ev: $CYCLES start/stop cycles, every one succeeded ($n, $errors errors)"
		diag_file "$TMP/cycles.err" 10
	fi
	check "$ev: $fds fds open after the cycles, as before them ($fds0)" [ "$fds" = "$fds0" ]
	timers=$(field "$line" timers)
	check "$ev: $timers POSIX timers after the cycles, as before them ($timers0)" [ "$timers" = "$timers0" ]
	check "$ev: $samples samples, at least half of the $expect the sessions stand for" \
		[ "$((2 * samples))" -ge "${expect:-1}" ]
	check "$ev: $last of the last $((CYCLES / 10)) sessions got samples (> 0)" [ "${last:-0}" -gt 0 ]
done
if [ -n "$before" ] && [ -n "$after" ]; then
	now="fds=$(field "$after" fds) threads=$(field "$after" threads) timers=$(field "$after" timers)"
	then_="fds=$fds0 threads=$(field "$before" threads) timers=$timers0"
	check "the workers joined, the process has what it had at the start: $now ($then_)" \
		[ "$now" = "$then_" ]
else
	not_ok "fds and threads counted before and after"
fi
finish
