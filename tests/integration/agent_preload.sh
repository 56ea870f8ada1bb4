#!/usr/bin/env bash
# libnprof.so preloaded into tests/progs/split (60/30/10 CPU split it
# measures itself) with NPROF_START: cpu and itimer shares within 5 points
# of the truth, >= 95% of samples reaching main or the thread's start
# routine (the DWARF walker in the signal handler), the file written at
# exit, at SIGTERM and at the end of a duration, and cpu falling back to
# itimer where perf_event_open is denied (a seccomp filter: tests/progs/
# deny_perf; and the test_deny_perf option).
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
TOL=5
FNS="burn_sixty burn_thirty burn_ten"

# run_agent START COMMAND...: runs COMMAND with the agent preloaded and
# NPROF_START=START, under a timeout; stderr in $TMP/agent.err.
run_agent() {
	local start=$1
	shift
	timeout -k 5 30 env LD_PRELOAD="$AGENT" NPROF_START="$start" "$@" \
		>"$TMP/agent.out" 2>"$TMP/agent.err" </dev/null
}

check_split() {
	local label=$1 f=$2 truth=$3 fn got want reach
	if ! is_collapsed "$f" || ! [ -s "$truth" ]; then
		not_ok "$label: profile and truth written"
		diag_file "$TMP/agent.err"
		return
	fi
	diag "$label: $(total "$f") samples"
	for fn in $FNS; do
		got=$(share "$f" "$fn")
		want=$(truth_share "$truth" "$fn")
		if within "$got" "$want" "$TOL"; then
			ok "$label: $fn has ${got}% of samples, measured ${want}% (±$TOL)"
		else
			not_ok "$label: $fn has ${got}% of samples, measured ${want}% (±$TOL)"
		fi
	done
	reach=$(share_match "$f" '^(main|worker_main)$')
	check "$label: ${reach}% of samples reach main or worker_main (>= 95)" \
		less_than 94.999 "$reach"
	check "$label: main -> run_main_thread -> burn_quantum -> burn_sixty" \
		has_chain "$f" "main;run_main_thread;burn_quantum;burn_sixty"
	check "$label: worker_main -> worker_loop -> burn_quantum -> burn_thirty" \
		has_chain "$f" "worker_main;worker_loop;burn_quantum;burn_thirty"
	check "$label: no frame is a bare address" no_bare_addresses "$f"
}

# --- cpu, written at exit ---------------------------------------------------------
run_agent "event=cpu,interval=5ms,file=$TMP/cpu.collapsed" \
	"$PROGS/split" --seconds 4 --truth "$TMP/cpu.truth"
check "cpu: the program exits normally with the agent (status $?)" [ $? -eq 0 ]
check_split "cpu" "$TMP/cpu.collapsed" "$TMP/cpu.truth"

# --- itimer -------------------------------------------------------------------------
run_agent "event=itimer,interval=5ms,file=$TMP/itimer.collapsed" \
	"$PROGS/split" --seconds 4 --truth "$TMP/itimer.truth"
check_split "itimer" "$TMP/itimer.collapsed" "$TMP/itimer.truth"

# --- a program without frame pointers: only DWARF gets to main ----------------------
run_agent "event=cpu,file=$TMP/nofp.collapsed" \
	"$PROGS/nofp/split" --seconds 3 --truth "$TMP/nofp.truth"
reach=$(share_match "$TMP/nofp.collapsed" '^(main|worker_main)$')
check "nofp: ${reach}% of samples of -fomit-frame-pointer code reach main or worker_main (>= 95)" \
	less_than 94.999 "$reach"

# --- cpu where perf_events are denied: itimer, and the output says why ---------------
timeout -k 5 30 "$PROGS/deny_perf" env LD_PRELOAD="$AGENT" \
	NPROF_START="event=cpu,file=$TMP/denied.collapsed" \
	"$PROGS/split" --seconds 3 --truth "$TMP/denied.truth" >/dev/null 2>"$TMP/agent.err"
if grep -q 'cpu: perf_events denied.*falling back to itimer' "$TMP/agent.err"; then
	ok "denied: the agent says cpu fell back to itimer, and why"
else
	not_ok "denied: the agent says cpu fell back to itimer, and why"
	diag_file "$TMP/agent.err"
fi
check_split "denied->itimer" "$TMP/denied.collapsed" "$TMP/denied.truth"
run_agent "event=cpu,test_deny_perf,file=$TMP/denied.txt,output=summary" \
	"$PROGS/split" --seconds 1
if grep -q 'event: *itimer\|itimer' "$TMP/denied.txt" &&
	grep -q 'cpu: perf_events denied' "$TMP/denied.txt"; then
	ok "denied (test_deny_perf): the summary names itimer and carries the reason"
else
	not_ok "denied (test_deny_perf): the summary names itimer and carries the reason"
	diag_file "$TMP/denied.txt" 30
fi

# --- SIGTERM: written before the process ends, which still ends by SIGTERM ----------
: >"$TMP/term.out"
env LD_PRELOAD="$AGENT" NPROF_START="event=cpu,file=$TMP/term-%p.collapsed" \
	"$PROGS/spin" --forever >"$TMP/term.out" 2>"$TMP/term.err" </dev/null &
pid=$!
bg_pids+=("$pid")
sleep 1.5
kill -TERM "$pid"
wait "$pid"
rc=$?
check "SIGTERM: the process still ends by SIGTERM (status $rc = 143)" [ "$rc" -eq 143 ]
if is_collapsed "$TMP/term-$pid.collapsed"; then
	ok "SIGTERM: the profile was written first (%p expanded to $pid)"
else
	not_ok "SIGTERM: the profile was written first (%p expanded to $pid)"
	ls "$TMP" | diag_file /dev/stdin
	diag_file "$TMP/term.err"
fi

# --- duration: written while the program still runs ----------------------------------
if start_prog dur env LD_PRELOAD="$AGENT" \
	NPROF_START="event=itimer,duration=1,file=$TMP/dur.collapsed" \
	"$PROGS/split" --seconds 6; then
	for ((i = 0; i < 60; i++)); do [ -s "$TMP/dur.collapsed" ] && break; sleep 0.1; done
	if is_collapsed "$TMP/dur.collapsed" && kill -0 "$PID" 2>/dev/null; then
		ok "duration=1: the file is written while the program runs on"
	else
		not_ok "duration=1: the file is written while the program runs on"
	fi
	kill -TERM "$PID"
	wait_pid "$PID" 5
else
	not_ok "split starts with the agent"
fi

# --- a bad NPROF_START: one line, the program runs unharmed ---------------------------
run_agent "event=bogus" "$PROGS/split" --seconds 0.2
rc=$?
if [ "$rc" -eq 0 ] && grep -q 'NPROF_START=event=bogus: event=bogus: unknown event' "$TMP/agent.err"; then
	ok "a bad NPROF_START is reported in one line and the program runs"
else
	not_ok "a bad NPROF_START is reported in one line and the program runs (rc $rc)"
	diag_file "$TMP/agent.err"
fi

# --- exports: nprof_* and the interposed libc functions only --------------------------
# pthread_create (threads.c), the malloc family and the pthread lock
# acquisitions (hot/alloc.c, hot/lock.c: issue 6).
interposed='^(pthread_create|malloc|calloc|realloc|reallocarray|free|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|malloc_usable_size|pthread_mutex_(timed|clock)?lock|pthread_rwlock_(timed|clock)?(rd|wr)lock)$'
others=$(nm -D --defined-only "$AGENT" | awk '{ print $3 }' | grep -v '^nprof_' | grep -vE "$interposed")
if [ -z "$others" ]; then
	ok "libnprof.so exports only nprof_* and the functions it interposes"
else
	not_ok "libnprof.so exports only nprof_* and the functions it interposes"
	diag "also exported: $others"
fi

finish
