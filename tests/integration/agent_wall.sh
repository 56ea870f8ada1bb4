#!/usr/bin/env bash
# The agent's wall engine on tests/progs/agent_wall: six threads that live
# the whole run (burning, sleeping in nanosleep, waiting on a condition
# variable, blocked in read, joining, a timer) each get about a sixth of the wall
# time, whatever they do, and their stacks end in the state they were in.
# wall_threads=1 caps signals per tick: still every thread, each sample
# weighing more. And 200 threads (tests/progs/wall_crowd) under the
# default cap of 16 per tick: every one in the profile with its equal
# share, its state, nothing dropped unreported, the process unharmed.
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

# --- 200 threads ------------------------------------------------------------------------
# The sampler visits threads round-robin, at most 4 x 16 a tick, so each of
# the 201 threads is visited every ~3 ticks and every visit is one sample
# (a signal, or a repeat of a blocked thread's last stack): equal counts,
# give or take one at the window's edges. A thread whose signal waits for a
# CPU (the busy ones on a loaded machine) still gets each visit, credited
# once its handler has run. +-15% of the mean catches a thread starved by
# the cap or one losing signals, with room for the odd dropped sample.
crowd_share() {
	awk '{ match($0, /^\[[^]]*\]/); c[substr($0, RSTART, RLENGTH)] += $NF; t += $NF }
		END { for (k in c) print k, c[k], t }' "$1"
}
if start_prog crowd env LD_PRELOAD="$AGENT" "$PROGS/wall_crowd" --seconds 60; then
	run_nprof 60 record -e wall -i 10ms -d 3 -t -o pprof -f "$TMP/crowd.pb.gz" "$PID"
	if [ "$NP_RC" -eq 0 ] && less_than "$NP_SECS" 8; then
		ok "200 threads: record -e wall -d 3 -t PID returns in ${NP_SECS}s (< 3 + 5)"
	else
		not_ok "200 threads: record -e wall -d 3 -t PID returns in ${NP_SECS}s (< 3 + 5)"
		np_diag
	fi
	"$NPROF" convert -o collapsed "$TMP/crowd.pb.gz" "$TMP/crowd.collapsed" 2>/dev/null
	"$NPROF" convert -o summary "$TMP/crowd.pb.gz" "$TMP/crowd.txt" 2>/dev/null
	crowd_share "$TMP/crowd.collapsed" >"$TMP/crowd.threads"
	n=$(grep -c '^\[crowd-[0-9]* tid=' "$TMP/crowd.threads")
	check "200 threads: every one is in the profile ($n)" [ "$n" -eq 200 ]
	# The mean over every thread in the profile: the 200 and the main one.
	read -r lo hi mean <<<"$(awk '{ n++; t = $NF } /^\[crowd-/ { v = $(NF - 1)
		if (!lo || v < lo) lo = v; if (v > hi) hi = v } END { printf "%d %d %.1f", lo, hi, t / n }' \
		"$TMP/crowd.threads")"
	diag "200 threads: $(total "$TMP/crowd.collapsed") samples; per thread $lo..$hi, mean $mean"
	check "200 threads: each has an equal share of the samples within 15% ($lo..$hi, mean $mean)" \
		awk -v lo="$lo" -v hi="$hi" -v m="$mean" 'BEGIN { exit !(lo >= 0.85 * m && hi <= 1.15 * m) }'
	st=$(state_of "$TMP/crowd.collapsed" crowd-000 crowd_burn)
	check "200 threads: crowd-000 in crowd_burn is [running] ($st)" [ "$st" = "[running]" ]
	st=$(state_of "$TMP/crowd.collapsed" crowd-050 crowd_nap)
	check "200 threads: crowd-050 in crowd_nap is [sleeping] ($st)" [ "$st" = "[sleeping]" ]
	st=$(state_of "$TMP/crowd.collapsed" crowd-150 crowd_wait)
	check "200 threads: crowd-150 in crowd_wait is [sleeping] ($st)" [ "$st" = "[sleeping]" ]
	lost=$(sed -n 's/^degraded *\([0-9]*\) lost samples.*/\1/p' "$TMP/crowd.txt")
	if [ -n "$lost" ] && { [ "$lost" -eq 0 ] || grep -q "samples dropped" "$TMP/crowd.txt"; }; then
		ok "200 threads: ${lost} samples lost, and any loss is explained in a note"
	else
		not_ok "200 threads: ${lost:-?} samples lost, and any loss is explained in a note"
		diag_file "$TMP/crowd.txt" 20
	fi
	alive=$(grep -l '^crowd-' /proc/"$PID"/task/*/comm 2>/dev/null | wc -l)
	check "200 threads: the process runs on with all of them ($alive)" [ "$alive" -eq 200 ]
	kill -TERM "$PID"
	check "200 threads: the process ends at SIGTERM" wait_pid "$PID" 10
else
	not_ok "wall_crowd starts with the agent preloaded"
fi
finish
