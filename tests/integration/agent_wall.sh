#!/usr/bin/env bash
# The agent's wall engine on tests/progs/agent_wall: six threads that live
# the whole run (burning, sleeping in nanosleep, waiting on a condition
# variable, blocked in read, joining, a timer) each get about a sixth of the wall
# time, whatever they do, and their stacks end in the state they were in.
# wall_threads=1 caps signals per tick: still every thread, each sample
# weighing more.
. "$(dirname "$0")/lib.sh"
need_build
[ -x "$PROGS/agent_wall" ] || bail "tests/progs/agent_wall is built"
AGENT=$NPROF_BUILD/libnprof.so

# thread_share FILE NAME: % of the wall time in stacks rooted in [NAME tid=..].
thread_share() {
	awk -v n="[$2 tid=" '{ v = $NF; t += v; if (index($0, n) == 1) m += v }
		END { printf "%.1f", t ? 100 * m / t : 0 }' "$1"
}
# state_of FILE NAME FN: the state frame ending most of NAME's stacks through FN.
state_of() {
	awk -v n="[$2 tid=" -v fn=";$3;" '
		index($0, n) == 1 && index($0, fn) {
			s = $0; sub(/ [0-9]+$/, "", s); k = split(s, fr, ";"); w[fr[k]] += $NF
		}
		END { for (x in w) if (w[x] > best) { best = w[x]; b = x }; print b }' "$1"
}

check_wall() {
	local label=$1 f=$2 name got st
	if ! is_collapsed "$f"; then
		not_ok "$label: a wall profile"
		np_diag
		return
	fi
	diag "$label: $(wc -l <"$f") stacks"
	for name in burner sleeper waiter reader; do
		got=$(thread_share "$f" "$name")
		if within "$got" 16.7 4; then
			ok "$label: $name has ${got}% of the wall time (16.7 ±4: 1 of 6 threads)"
		else
			not_ok "$label: $name has ${got}% of the wall time (16.7 ±4: 1 of 6 threads)"
		fi
	done
	st=$(state_of "$f" burner burn_cpu)
	check "$label: burner in burn_cpu is [running] ($st)" [ "$st" = "[running]" ]
	st=$(state_of "$f" sleeper nap_forever)
	check "$label: sleeper in nap_forever is [sleeping] ($st)" [ "$st" = "[sleeping]" ]
	st=$(state_of "$f" waiter wait_cond)
	check "$label: waiter in wait_cond is [sleeping] ($st)" [ "$st" = "[sleeping]" ]
	st=$(state_of "$f" reader read_pipe)
	check "$label: reader in read_pipe is [sleeping] ($st)" [ "$st" = "[sleeping]" ]
	check "$label: the main thread's wait is in join_all" has_frame_match "$f" '^join_all$'
}

run_nprof 30 record -e wall -i 20ms -d 3 -t -o collapsed -f "$TMP/wall.collapsed" -- \
	"$PROGS/agent_wall" --seconds 20
check "record -e wall -d 3 -- COMMAND returns within 6 s" less_than "$NP_SECS" 6
check_wall "wall" "$TMP/wall.collapsed"
# 3 s at 20 ms is 150 ticks: every thread's time is there.
w=$(awk '$0 ~ /^\[sleeper tid=/ { t += $NF } END { print t + 0 }' "$TMP/wall.collapsed")
check "wall: the sleeper has $w samples for 3 s at 20 ms (>= 120 of 150)" [ "$w" -ge 120 ]

# At most one thread signalled per tick: every thread still covered.
timeout -k 5 30 env LD_PRELOAD="$AGENT" \
	NPROF_START="event=wall,interval=10ms,wall_threads=1,thread,file=$TMP/cap.collapsed" \
	"$PROGS/agent_wall" --seconds 4 >/dev/null 2>"$TMP/cap.err"
check_wall "wall_threads=1" "$TMP/cap.collapsed"
finish
