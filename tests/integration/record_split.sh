#!/usr/bin/env bash
# nprof record on tests/progs/split: two threads burning CPU in burn_sixty,
# burn_thirty and burn_ten (60/30/10), which measures its own per-function
# CPU time. Each function's share of the samples must be within 5
# percentage points of the program's own measurement; the chains from main
# and from the second thread's start routine must appear; with -t every
# stack is rooted in its thread, [name tid=N].
. "$(dirname "$0")/lib.sh"
need_build

TOL=5
FNS="burn_sixty burn_thirty burn_ten"
MAIN_CHAIN="main;run_main_thread;burn_quantum"
WORKER_CHAIN="worker_main;worker_loop;burn_quantum"

# check_shares LABEL COLLAPSED TRUTH
check_shares() {
	diag "$1: $(total "$2") samples"
	shares_check "$1" "$2" "$3" "$TOL" samples $FNS
}

# check_chains LABEL COLLAPSED
check_chains() {
	local label=$1 f=$2 fn miss=
	for fn in $FNS; do
		has_chain "$f" "$MAIN_CHAIN;$fn" || miss+=" $MAIN_CHAIN;$fn"
		has_chain "$f" "$WORKER_CHAIN;$fn" || miss+=" $WORKER_CHAIN;$fn"
	done
	if [ -z "$miss" ]; then
		ok "$label: main -> run_main_thread and worker_main -> worker_loop chains down to each burn_*"
	else
		not_ok "$label: main -> run_main_thread and worker_main -> worker_loop chains down to each burn_*"
		diag "missing:$miss" "top stacks:"
		sort -t' ' -k2 -nr "$f" | diag_file /dev/stdin 8
	fi
	check "$label: no frame is a bare address" no_bare_addresses "$f"
}

# --- by PID: nprof records 5 s of a running program ---------------------------
# The truth is the program's own, for the same window: split writes a
# snapshot of its per-function CPU time at each SIGUSR1, before and after
# the recording. A profile with too few samples to judge (a loaded host
# leaves the program little CPU) is taken again over a run that ends once
# it has burnt 15 s of CPU.

# record_window LABEL SECS: records $PID for SECS seconds into
# $TMP/LABEL.collapsed and its window's truth into $TMP/LABEL.window.
mark=0
record_window() {
	local label=$1 secs=$2
	mark=$((mark + 1))
	truth_mark "$PID" "$TMP/pid.truth" "$mark" || return 1
	run_nprof $((secs + 15)) record -d "$secs" -o collapsed -f "$TMP/$label.collapsed" "$PID"
	mark=$((mark + 1))
	truth_mark "$PID" "$TMP/pid.truth" "$mark" || return 1
	truth_window "$TMP/pid.truth.$((mark - 1))" "$TMP/pid.truth.$mark" >"$TMP/$label.window"
}

if start_prog split "$PROGS/split" --seconds 120 --truth "$TMP/pid.truth"; then
	record_window pid 5
	if [ "$NP_RC" -eq 0 ] && is_collapsed "$TMP/pid.collapsed"; then
		ok "record -d 5 PID writes a collapsed file (${NP_SECS}s)"
	else
		not_ok "record -d 5 PID writes a collapsed file"
		np_diag
	fi
	check "record -d 5 PID returns within 5 s + 1.5 s" less_than "$NP_SECS" 6.5
	judged=pid
	kill "$PID" 2>/dev/null
	wait_pid "$PID" 10
	if [ "$(total "$TMP/pid.collapsed")" -lt 1000 ]; then
		# Again over a run that ends once it has burnt 15 s of CPU,
		# recorded until it exits: ~1500 samples however busy the host.
		diag "$(total "$TMP/pid.collapsed") samples in 5 s: too few to judge 5 points; again over 15 s of its CPU"
		if start_prog split2 "$PROGS/split" --cpu-seconds 15 --truth "$TMP/pid2.truth"; then
			truth_mark "$PID" "$TMP/pid2.truth" 1 &&
				run_nprof 900 record -d 0 -o collapsed -f "$TMP/pid_cpu.collapsed" "$PID" &&
				wait_pid "$PID" 30 && [ -s "$TMP/pid2.truth" ] &&
				truth_window "$TMP/pid2.truth.1" "$TMP/pid2.truth" >"$TMP/pid_cpu.window" &&
				judged=pid_cpu
		fi
	fi
	if [ -s "$TMP/$judged.window" ] && [ -s "$TMP/$judged.collapsed" ]; then
		check_shares "PID" "$TMP/$judged.collapsed" "$TMP/$judged.window"
		check_chains "PID" "$TMP/$judged.collapsed"
	else
		not_ok "PID: ground truth and profile both present"
	fi
else
	not_ok "split starts"
fi

# --- -- COMMAND: nprof starts it; at 5 s nprof ends it (SIGTERM), and split
# writes its truth on the way out ----------------------------------------------

run_nprof 25 record -d 5 -o collapsed -f "$TMP/cmd.collapsed" -- \
	"$PROGS/split" --seconds 30 --truth "$TMP/cmd.truth"
if [ "$NP_RC" -eq 0 ] && is_collapsed "$TMP/cmd.collapsed"; then
	ok "record -d 5 -- COMMAND writes a collapsed file (${NP_SECS}s)"
else
	not_ok "record -d 5 -- COMMAND writes a collapsed file"
	np_diag
fi
check "record -d 5 -- COMMAND returns within 5 s + 3 s (ending the command)" less_than "$NP_SECS" 8
cmd=cmd
if [ "$(total "$TMP/cmd.collapsed")" -lt 1000 ]; then
	diag "$(total "$TMP/cmd.collapsed") samples in 5 s: too few to judge 5 points; again over 15 s of its CPU"
	run_nprof 900 record -d 0 -o collapsed -f "$TMP/cmd2.collapsed" -- \
		"$PROGS/split" --cpu-seconds 15 --truth "$TMP/cmd2.truth"
	[ -s "$TMP/cmd2.truth" ] && cmd=cmd2
fi
if [ -s "$TMP/$cmd.truth" ] && [ -s "$TMP/$cmd.collapsed" ]; then
	check_shares "COMMAND" "$TMP/$cmd.collapsed" "$TMP/$cmd.truth"
	check_chains "COMMAND" "$TMP/$cmd.collapsed"
	# The samples cover the CPU time the program measured: every thread
	# is sampled, nothing is quietly lost (10 ms interval; 70% leaves room
	# for the start and end of the run).
	cpu_ms=$(awk '$1 == "fn" { t += $3 } END { printf "%d", t / 1e6 }' "$TMP/$cmd.truth")
	got=$(total "$TMP/$cmd.collapsed")
	want=$((cpu_ms / 10))
	if [ "$got" -ge $((want * 7 / 10)) ]; then
		ok "COMMAND: $got samples for ${cpu_ms} ms of measured CPU (at least 70% of $want)"
	else
		not_ok "COMMAND: $got samples for ${cpu_ms} ms of measured CPU (at least 70% of $want)"
	fi
else
	not_ok "COMMAND: ground truth and profile both present"
	diag_file "$TMP/$cmd.truth"
fi

# --- -t: per-thread stacks ------------------------------------------------------

if start_prog split_t "$PROGS/split" --seconds 5 --truth "$TMP/t.truth"; then
	run_nprof 15 record -d 2 -t -o collapsed -f "$TMP/t.collapsed" "$PID"
	[ "$NP_RC" -eq 0 ] || np_diag
	wait_pid "$PID" 10
	main_tid=$(awk '$1 == "tid" && $2 == "main" { print $3 }' "$TMP/t.truth")
	burner_tid=$(awk '$1 == "tid" && $2 == "burner" { print $3 }' "$TMP/t.truth")
	f=$TMP/t.collapsed
	if [ -s "$f" ] && [ -n "$burner_tid" ]; then
		check "-t: the second thread's stacks are rooted in [burner tid=$burner_tid]" \
			rooted_chain "$f" "[burner tid=$burner_tid]" "worker_main;worker_loop;burn_quantum"
		check "-t: the main thread's stacks are rooted in [split tid=$main_tid]" \
			rooted_chain "$f" "[split tid=$main_tid]" "main;run_main_thread;burn_quantum"
		# Every stack starts with a thread frame.
		if awk -F';' '$1 !~ /^\[[^]]* tid=[0-9]+\]$/ { bad = 1; print "# " $0; exit } END { exit bad }' "$f"; then
			ok "-t: every stack's root frame is [name tid=N]"
		else
			not_ok "-t: every stack's root frame is [name tid=N]"
		fi
		# The thread frame is the root only: no [..] frame deeper down.
		if awk '{ s = $0; sub(/ [0-9]+$/, "", s); n = split(s, fr, ";");
			for (i = 2; i <= n; i++) if (fr[i] ~ /tid=/) { bad = 1; exit } } END { exit bad }' "$f"; then
			ok "-t: thread frames appear only at the root"
		else
			not_ok "-t: thread frames appear only at the root"
		fi
		check "-t: the burn_* chains are still there" has_chain "$f" "$MAIN_CHAIN;burn_sixty"
	else
		not_ok "-t: recording and thread ids present"
		np_diag
	fi
	# Without -t no stack carries a thread frame.
	check "without -t, no thread root frames" \
		bash -c "! grep -q 'tid=' '$TMP/pid.collapsed' 2>/dev/null && [ -s '$TMP/pid.collapsed' ]"
else
	not_ok "split starts (for -t)"
fi

# --- the default output: summary and flat, naming the threads ---------------

if start_prog split_s "$PROGS/split" --seconds 4; then
	run_nprof 15 record -d 2 "$PID"
	if [ "$NP_RC" -eq 0 ] && grep -q burn_sixty "$TMP/np.out" && grep -q burner "$TMP/np.out"; then
		ok "record PID prints a summary naming the burner thread and burn_sixty"
	else
		not_ok "record PID prints a summary naming the burner thread and burn_sixty"
		np_diag
	fi
	wait_pid "$PID" 10
fi

finish
