#!/usr/bin/env bash
# Threads created during the recording are sampled (also a thread's thread);
# a target that exits during the recording: what was recorded is written and
# the output says it exited; the duration is honoured.
# test-alone
# it holds how soon nprof returns after -d, which a neighbour's
# CPU would delay.
. "$(dirname "$0")/lib.sh"
need_build

# --- threads created during the recording ---------------------------------------

if start_prog late "$PROGS/late_thread" --spawn-after 1 --seconds 7 --truth "$TMP/late.truth"; then
	check "late_thread has one thread when the recording starts" \
		test "$(ls "/proc/$PID/task" | wc -l)" -eq 1
	run_nprof 15 record -d 4 -t -o collapsed -f "$TMP/late.collapsed" "$PID"
	[ "$NP_RC" -eq 0 ] || np_diag
	wait_pid "$PID" 10
	f=$TMP/late.collapsed
	lt=$(awk '$2 == "latecomer" { print $3 }' "$TMP/late.truth" 2>/dev/null)
	gt=$(awk '$2 == "grandchild" { print $3 }' "$TMP/late.truth" 2>/dev/null)
	if is_collapsed "$f" && [ -n "$lt" ] && [ -n "$gt" ]; then
		diag "early_work $(share "$f" early_work)%, late_work $(share "$f" late_work)%, grandchild_work $(share "$f" grandchild_work)% of $(total "$f") samples"
		check "the thread started 1 s into the recording is sampled: [latecomer tid=$lt] ... late_work" \
			rooted_chain "$f" "[latecomer tid=$lt]" "late_thread_main;late_work"
		check "its own child, started 1.5 s in, is sampled: [grandchild tid=$gt] ... grandchild_work" \
			rooted_chain "$f" "[grandchild tid=$gt]" "grandchild_main;grandchild_work"
		# latecomer runs for ~3 of the 4 s, grandchild ~2.5: on a 2-CPU
		# machine shared with the main thread each gets well over 10%.
		check "late_work has a real share (>= 10%)" \
			awk -v s="$(share "$f" late_work)" 'BEGIN { exit !(s >= 10) }'
		check "grandchild_work has a real share (>= 10%)" \
			awk -v s="$(share "$f" grandchild_work)" 'BEGIN { exit !(s >= 10) }'
		check "the main thread is still sampled" has_chain "$f" "main;early_work"
	else
		not_ok "recording of late_thread and its thread ids present"
		diag_file "$f" 5
	fi
else
	not_ok "late_thread starts"
fi

# --- a target that exits during the recording --------------------------------

for fmt in summary collapsed; do
	if ! start_prog exit "$PROGS/exit_early" --seconds 1; then
		not_ok "exit_early starts"
		continue
	fi
	pid=$PID
	out=$TMP/exit.$fmt
	run_nprof 15 record -d 5 -o $fmt -f "$out" "$pid"
	diag "$fmt: nprof exit status $NP_RC after ${NP_SECS}s; stderr: $(head -c 300 "$TMP/np.err")"
	check "$fmt: nothing crashed or hung (exit status $NP_RC, not a signal or timeout)" test "$NP_RC" -lt 124
	check "$fmt: returned within the 5 s duration + 1.5 s" less_than "$NP_SECS" 6.5
	# The engine ends the recording when the target exits (engine.h).
	check "$fmt: returned soon after the target exited at 1 s (< 3.5 s)" less_than "$NP_SECS" 3.5
	if [ $fmt = collapsed ]; then
		check "collapsed: what was recorded is written (burn_until_exit)" \
			bash -c "[ -s '$out' ] && grep -q burn_until_exit '$out'"
		check "collapsed: the file is well-formed" is_collapsed "$out"
		check "collapsed: nprof says the target exited (stderr)" grep -qi 'exited' "$TMP/np.err"
	else
		check "summary: what was recorded is written (samples > 0)" grep -qE '^samples +[1-9]' "$out"
		check "summary: it says the target exited" grep -qiE 'exited' "$out"
		grep -i exited "$out" | diag_file /dev/stdin 3
	fi
	wait_pid "$pid" 5
done

# With the default output on stdout, same story.
if start_prog exit2 "$PROGS/exit_early" --seconds 1; then
	run_nprof 15 record -d 5 "$PID"
	if grep -q burn_until_exit "$TMP/np.out" && grep -qi exited "$TMP/np.out" "$TMP/np.err"; then
		ok "default output: the profile is printed and says the target exited"
	else
		not_ok "default output: the profile is printed and says the target exited"
		np_diag
	fi
fi

# -- COMMAND that exits by itself before the duration.
run_nprof 15 record -d 5 -o collapsed -f "$TMP/cmdexit.collapsed" -- "$PROGS/exit_early" --seconds 1
check "-- COMMAND exiting at 1 s under -d 5: profile written, back within 3.5 s (${NP_SECS}s)" \
	bash -c "grep -q burn_until_exit '$TMP/cmdexit.collapsed' && awk 'BEGIN { exit !($NP_SECS < 3.5) }'"

# --- the duration is honoured -------------------------------------------------------

if start_prog spin "$PROGS/spin" --forever; then
	for d in 1 2; do
		run_nprof 10 record -d $d -o collapsed -f "$TMP/d$d.collapsed" "$PID"
		lim=$(awk -v d=$d 'BEGIN { print d + 1.5 }')
		if [ "$NP_RC" -eq 0 ] && less_than "$NP_SECS" "$lim" && ! less_than "$NP_SECS" "$d"; then
			ok "-d $d returns after $d s and within $lim s (${NP_SECS}s)"
		else
			not_ok "-d $d returns after $d s and within $lim s (${NP_SECS}s)"
			np_diag
		fi
	done
	run_nprof 10 record -d 500ms -o collapsed -f "$TMP/dms.collapsed" "$PID"
	if [ "$NP_RC" -eq 0 ] && less_than "$NP_SECS" 2; then
		ok "-d 500ms returns within 2 s (${NP_SECS}s)"
	else
		not_ok "-d 500ms returns within 2 s (${NP_SECS}s)"
		np_diag
	fi
	# SIGINT ends a recording early and still writes it.
	timeout -k 5 15 "$NPROF" record -d 30 -o collapsed -f "$TMP/int.collapsed" "$PID" \
		>"$TMP/int.out" 2>"$TMP/int.err" </dev/null &
	np=$!
	sleep 1.5
	kill -INT $np
	t0=$(date +%s.%N)
	wait $np
	rc=$?
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	if [ $rc -eq 0 ] && grep -q spin_leaf "$TMP/int.collapsed" && less_than "$secs" 3; then
		ok "SIGINT ends a -d 30 recording early (${secs}s later) and writes it"
	else
		not_ok "SIGINT ends a -d 30 recording early (${secs}s later, status $rc) and writes it"
		diag_file "$TMP/int.err" 3
	fi
else
	not_ok "spin starts"
fi

finish
