#!/usr/bin/env bash
# A profiled program that forks, execs and uses SIGPROF itself keeps
# working, under each engine (cpu, itimer, wall): tests/progs/agent_forker.
#   - fork: 16 children forked from a running session see no session,
#     start and stop one of their own with samples, and exit normally;
#     the parent keeps getting samples, and only its own profile file is
#     written (the children write none);
#   - exec: a child execs the program again, which finds the agent loaded
#     (LD_PRELOAD passed on) and profiles itself; /bin/sh -c 'exit 7' runs
#     as it would; processes that exec while their own session samples
#     them at 100 us run the new program to its end (no SIGPROF reaches
#     it at its default action); a failed exec leaves the session
#     sampling;
#   - the program's own SIGPROF handler (sigaction, signal), installed
#     before a session and during one, gets the SIGPROFs the program sends
#     itself (ITIMER_PROF, a timer_create CPU-time timer, raise: see
#     check_round), never one of the agent's, and sigaction/signal hand
#     back its own previous handler; the agent keeps sampling (at least
#     half the samples the main thread's CPU or wall time stands for),
#     also while the program raises SIGPROF at itself all the time (a
#     SIGPROF sent to a thread with one pending is dropped: the agent must
#     not lose the thread for having lost a signal).
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
[ -x "$PROGS/agent_forker" ] || bail "tests/progs/agent_forker is built"
CHILDREN=16

# field LINE KEY: the value of KEY=VALUE in LINE.
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }
# at_least_half SAMPLES EXPECT
at_least_half() { [ "$((2 * ${1:-0}))" -ge "${2:-1}" ]; }

# check_round LABEL LINE PREFIX: the program's own SIGPROFs (agent_forker's
# app_round) reached its handler, and nothing else did.
#   ITIMER_PROF: every tick the kernel sent (the program counts them
#   from getitimer), one in flight at the end excepted.
#   Its timer_create timer on the process CPU clock counts expirations
#   exactly: within 10% and 2 of the CPU time over the period.
#   raise(SIGPROF): 48 of 50 at least; SIGPROF is a standard signal, so
#   one of the program's that comes while one of the agent's is pending
#   on the same thread merges with it, as two of its own would.
check_round() {
	local label=$1 line=$2 p=$3 got want
	got=$(field "$line" ${p}itimer) want=$(field "$line" ${p}itimer_sent)
	check "$label: it got $got ticks of its ITIMER_PROF, the kernel sent $want (±1)" \
		within "${got:-0}" "${want:--9}" 1
	got=$(field "$line" ${p}timer) want=$(field "$line" ${p}timer_expect)
	check "$label: its CPU-time timer gave it $got expirations, $want expected (±10%, ±2)" \
		within "${got:-0}" "${want:-1}" "$(awk -v w="${want:-1}" 'BEGIN { print 0.1 * w + 2 }')"
	got=$(field "$line" ${p}raised)
	check "$label: it got $got of the 50 SIGPROFs it raised (>= 48)" [ "${got:-0}" -ge 48 ]
	got=$(field "$line" ${p}strays)
	check "$label: none of the agent's signals reached it ($got)" [ "$got" = 0 ]
}

child_failure() {
	case $1 in
	0) echo none ;;
	11) echo "the child inherited the parent's session" ;;
	12) echo "nprof_stop in the child did not say no profile runs" ;;
	13) echo "the child could not start its own session" ;;
	14) echo "the child's own session got no sample" ;;
	15) echo "the child could not stop its own session" ;;
	127) echo "a child's exec failed" ;;
	1014) echo "a child hung (its 20 s watchdog, SIGALRM)" ;;
	1027) echo "a child was killed by SIGPROF" ;;
	10[0-9][0-9]) echo "a child was killed by signal $(($1 - 1000))" ;;
	*) echo "status $1" ;;
	esac
}

for ev in cpu itimer wall; do
	out=$TMP/$ev.out
	mkdir -p "$TMP/$ev"
	timeout -k 5 150 env LD_PRELOAD="$AGENT" NPROF_QUIET=1 "$PROGS/agent_forker" --event "$ev" \
		--interval 1ms --children $CHILDREN --file "$TMP/$ev/profile-%p.collapsed" \
		>"$out" 2>"$TMP/$ev.err" </dev/null &
	wait $!
	rc=$?
	pid=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' "$out")
	diag "$ev:" && diag_file "$out" 8
	if [ $rc -eq 0 ] && grep -qx done "$out"; then
		ok "$ev: the program ran to its end (no crash, no hang)"
	else
		not_ok "$ev: the program ran to its end (status $rc; 142: its watchdog, 124: timeout)"
		diag_file "$TMP/$ev.err" 20
	fi

	line=$(grep -m1 '^fork ' "$out")
	check "$ev: fork: $(field "$line" ok) of $CHILDREN children exited normally, idle after the fork, with a session of their own (first failure: $(child_failure "$(field "$line" first_failure)"))" \
		[ "$(field "$line" ok)" = $CHILDREN ]
	check "$ev: fork: the parent kept sampling, $(field "$line" parent_samples) samples after the forks (>= half of $(field "$line" parent_expect))" \
		at_least_half "$(field "$line" parent_samples)" "$(field "$line" parent_expect)"
	files=$(cd "$TMP/$ev" && ls)
	check "$ev: fork: only the parent's profile was written ($(echo $files))" \
		[ "$files" = "profile-$pid.collapsed" ]

	line=$(grep -m1 '^exec ' "$out")
	self=$(field "$line" self_line)
	check "$ev: exec: the program exec'd in a child finds the agent and profiles itself ($self, status $(field "$line" self_status))" \
		[ "$(field "$line" self_status):${self%%_samples=*}" = "0:exec-child_agent=1" ]
	check "$ev: exec: /bin/sh -c 'exit 7' exits 7 ($(field "$line" sh_status))" [ "$(field "$line" sh_status)" = 7 ]
	check "$ev: exec: the parent kept sampling, $(field "$line" parent_samples) samples (>= half of $(field "$line" parent_expect))" \
		at_least_half "$(field "$line" parent_samples)" "$(field "$line" parent_expect)"

	line=$(grep -m1 '^selfexec ' "$out")
	check "$ev: exec during a session (no fork): $(field "$line" ok) of $(field "$line" children) children that exec'd while sampled at 100 us ran the new program to its end (first failure: $(child_failure "$(field "$line" first_failure)"))" \
		[ "$(field "$line" ok)" = "$(field "$line" children)" ]
	check "$ev: a failed exec during the session fails as it would (errno $(field "$line" failed_exec_errno), ENOENT is 2)" \
		[ "$(field "$line" failed_exec_errno)" = 2 ]
	check "$ev: after the failed exec the parent kept sampling, $(field "$line" after_samples) samples (>= half of $(field "$line" after_expect))" \
		at_least_half "$(field "$line" after_samples)" "$(field "$line" after_expect)"

	for when in before during; do
		line=$(grep -m1 "^sigprof when=$when " "$out")
		check_round "$ev: own SIGPROF handler set $when the session" "$line" ""
		check "$ev: own SIGPROF handler set $when the session: sigaction and signal hand back its own handlers" \
			[ "$(field "$line" consistent)" = 1 ]
		check "$ev: own SIGPROF handler set $when the session: the agent kept sampling, $(field "$line" samples) samples (>= half of $(field "$line" expect))" \
			at_least_half "$(field "$line" samples)" "$(field "$line" expect)"
	done
	line=$(grep -m1 '^sigprof when=during ' "$out")
	check "$ev: own SIGPROF handler set with signal(): it got $(field "$line" plain) of the 50 SIGPROFs it raised (>= 48)" \
		[ "$(field "$line" plain)" -ge 48 ]
	check_round "$ev: own SIGPROF handler set before, after the session" \
		"$(grep -m1 '^sigprof when=before ' "$out")" after_
	line=$(grep -m1 '^sigprof when=storm ' "$out")
	check "$ev: the program raising SIGPROF 5 times per 100 us: the agent kept sampling, $(field "$line" samples) samples (>= half of $(field "$line" expect))" \
		at_least_half "$(field "$line" samples)" "$(field "$line" expect)"
done
finish
