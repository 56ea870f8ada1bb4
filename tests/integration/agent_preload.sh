#!/usr/bin/env bash
# libnprof.so preloaded into tests/progs/split (60/30/10 CPU split it
# measures itself) with NPROF_START: cpu and itimer shares within 5 points
# of the truth, >= 95% of samples reaching main or the thread's start
# routine (the DWARF walker in the signal handler), the file written at
# exit, at SIGTERM and at the end of a duration, and cpu falling back to
# itimer where perf_event_open is denied (a seccomp filter: tests/progs/
# deny_perf, in the log and in the profile).
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"

# run_agent START COMMAND...: runs COMMAND with the agent preloaded and
# NPROF_START=START, under a timeout; stderr in $TMP/agent.err.
# With WRAP set, COMMAND runs under it (deny_perf).
run_agent() {
	local start=$1
	shift
	timeout -k 5 60 ${WRAP:-} env LD_PRELOAD="$AGENT" NPROF_START="$start" "$@" \
		>"$TMP/agent.out" 2>"$TMP/agent.err" </dev/null
}

# The split checks (lib.sh's split_check) at interval 1 ms: cpu samples
# every 1 ms of CPU; itimer at every scheduler tick (CONFIG_HZ, often 250
# a CPU-second), which over 5 s of one core is ~1250 samples, the 5-point
# bar then 3.6 sds of the 60% share. A run with too few samples to judge
# (split_longer) is run again, longer.

# split_run LABEL START BINARY SECS: split (or nofp/split) for SECS s with
# NPROF_START=START,file=$TMP/LABEL.collapsed (its status in SPLIT_RC),
# again for longer when the profile is too short to judge; split_check.
split_run() {
	local label=$1 start=$2 bin=$3 secs=$4 more
	run_agent "$start,file=$TMP/$label.collapsed" "$bin" --seconds "$secs" \
		--truth "$TMP/$label.truth"
	SPLIT_RC=$?
	more=$(split_longer "$TMP/$label.collapsed" "$secs")
	if [ -n "$more" ]; then
		diag "$label: $(total "$TMP/$label.collapsed") samples in $secs s, too few to judge: again for $more s"
		run_agent "$start,file=$TMP/$label.collapsed" "$bin" --seconds "$more" \
			--truth "$TMP/$label.truth"
	fi
	split_check "$label" "$TMP/$label.collapsed" "$TMP/$label.truth"
}

# --- cpu, written at exit ---------------------------------------------------------
split_run cpu "event=cpu,interval=1ms" "$PROGS/split" 4
check "cpu: the program exits normally with the agent (status $SPLIT_RC)" [ "$SPLIT_RC" -eq 0 ]

# --- itimer -------------------------------------------------------------------------
split_run itimer "event=itimer,interval=1ms" "$PROGS/split" 5

# --- a program without frame pointers: only DWARF gets to main ----------------------
split_run nofp "event=cpu,interval=1ms" "$PROGS/nofp/split" 3

# --- cpu where perf_events are denied: itimer, and the output says why ---------------
WRAP=$PROGS/deny_perf split_run denied "event=cpu,interval=1ms" "$PROGS/split" 5
if grep -q 'cpu: perf_events denied.*falling back to itimer' "$TMP/agent.err"; then
	ok "denied: the agent says cpu fell back to itimer, and why"
else
	not_ok "denied: the agent says cpu fell back to itimer, and why"
	diag_file "$TMP/agent.err"
fi
WRAP=$PROGS/deny_perf run_agent "event=cpu,file=$TMP/denied.txt,output=summary" \
	"$PROGS/split" --seconds 1
if grep -q 'event: *itimer\|itimer' "$TMP/denied.txt" &&
	grep -q 'cpu: perf_events denied' "$TMP/denied.txt"; then
	ok "denied: the summary names itimer and carries the reason"
else
	not_ok "denied: the summary names itimer and carries the reason"
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
# acquisitions (hot/alloc.c, hot/lock.c: the alloc, heap and lock engines),
# sigaction and signal
# (hot/signals.c: SIGPROF shared with the program) and the exec family
# (exec.c: SIGPROF ignored across an exec during a session).
interposed='^(pthread_create|sigaction|signal|exec(ve|v|vp|vpe|l|lp|le|veat)|fexecve|malloc|calloc|realloc|reallocarray|free|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|malloc_usable_size|pthread_mutex_(timed|clock)?lock|pthread_rwlock_(timed|clock)?(rd|wr)lock)$'
others=$(nm -D --defined-only "$AGENT" | awk '{ print $3 }' | grep -v '^nprof_' | grep -vE "$interposed")
if [ -z "$others" ]; then
	ok "libnprof.so exports only nprof_* and the functions it interposes"
else
	not_ok "libnprof.so exports only nprof_* and the functions it interposes"
	diag "also exported: $others"
fi

finish
