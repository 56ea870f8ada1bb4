#!/usr/bin/env bash
# The agent's control socket: `nprof list` finds a process with the agent,
# `nprof record PID` records through it (itimer too, which only the agent
# has), another user is refused (SO_PEERCRED), `record -e itimer --
# COMMAND` preloads the agent (and gets the split right), and -e itimer
# on a process without the agent fails in one line. The split through
# `record PID` is agent_split.sh's.
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"

# --- an idle agent: listed, then recorded through -------------------------------
if start_prog agent env LD_PRELOAD="$AGENT" "$PROGS/split" --seconds 60; then
	run_nprof 10 list
	if [ "$NP_RC" -eq 0 ] && grep -qE "^ *$PID +root +cpu itimer wall alloc heap lock +idle +split" "$TMP/np.out"; then
		ok "list: PID $PID with its events, idle"
	else
		not_ok "list: PID $PID with its events, idle"
		np_diag
	fi
	run_nprof 10 list -q
	check "list -q: the PID alone" grep -qx "$PID" "$TMP/np.out"

	run_nprof 20 record -d 2 -o collapsed -f "$TMP/pid.collapsed" "$PID"
	if [ "$NP_RC" -eq 0 ] && is_collapsed "$TMP/pid.collapsed"; then
		ok "record PID (cpu) through the agent (${NP_SECS}s)"
	else
		not_ok "record PID (cpu) through the agent"
		np_diag
	fi
	run_nprof 20 record -e itimer -d 2 -t -o collapsed -f "$TMP/pid-itimer.collapsed" "$PID"
	if [ "$NP_RC" -eq 0 ] && is_collapsed "$TMP/pid-itimer.collapsed" &&
		grep -q '^\[burner tid=' "$TMP/pid-itimer.collapsed"; then
		ok "record -e itimer -t PID through the agent: per-thread stacks"
	else
		not_ok "record -e itimer -t PID through the agent: per-thread stacks"
		np_diag
	fi
	run_nprof 20 record -e itimer -d 1 -o summary "$PID"
	check "record -o summary PID: the summary names the itimer event" grep -q itimer "$TMP/np.out"

	# Another user: the agent refuses, and says so.
	if usable_by_others; then
		RUN_AS=$AS_NOBODY run_nprof 10 list
		if grep -qE "^ *$PID .*refused" "$TMP/np.out"; then
			ok "list as nobody: root's agent refuses"
		else
			not_ok "list as nobody: root's agent refuses"
			np_diag
		fi
		RUN_AS=$AS_NOBODY run_nprof 10 record -e itimer -d 1 -o collapsed "$PID"
		if one_error_line && err_says "permission denied"; then
			ok "record as nobody: refused in one line ($(cat "$TMP/np.err"))"
		else
			not_ok "record as nobody: refused in one line"
			np_diag
		fi
	else
		skip "another user is refused" "nprof or the programs are not usable by nobody"
	fi
	kill -TERM "$PID"
	wait_pid "$PID" 10
else
	not_ok "split starts with the agent preloaded"
fi

# --- record -e itimer -- COMMAND: preloads the agent ----------------------------------
# itimer samples at scheduler ticks, at most CONFIG_HZ (often 250) times per
# CPU-second: -i 1 ms gets that many, and 5 s of a program getting one core
# is ~1250 samples, where the 5-point bar is 3.6 sds of the 60% share (3 s
# at the default 10 ms, ~300 samples, made it 1.7 sds: a loaded machine
# failed it now and then). Fewer than split_check needs: again, longer.
# The run's truth is the window's: the agent starts sampling as split
# starts, and split's truth ends at the SIGTERM.
run_nprof 30 record -e itimer -i 1ms -d 5 -o collapsed -f "$TMP/cmd.collapsed" -- \
	"$PROGS/split" --seconds 60 --truth "$TMP/cmd.truth"
if [ "$NP_RC" -eq 0 ] && is_collapsed "$TMP/cmd.collapsed"; then
	ok "record -e itimer -d 5 -- COMMAND (${NP_SECS}s)"
else
	not_ok "record -e itimer -d 5 -- COMMAND"
	np_diag
fi
check "record -e itimer -d 5 -- COMMAND returns within 5 s + 3 s" less_than "$NP_SECS" 8
more=$(split_longer "$TMP/cmd.collapsed" 5)
if [ -n "$more" ]; then
	diag "COMMAND: $(total "$TMP/cmd.collapsed") samples in 5 s, too few to judge: again for $more s"
	run_nprof 60 record -e itimer -i 1ms -d "$more" -o collapsed -f "$TMP/cmd.collapsed" -- \
		"$PROGS/split" --seconds 60 --truth "$TMP/cmd.truth"
fi
if [ -s "$TMP/cmd.truth" ]; then
	split_check "COMMAND" "$TMP/cmd.collapsed" "$TMP/cmd.truth"
else
	not_ok "COMMAND: split wrote its truth (it was ended by SIGTERM)"
fi
# Without -d: until it exits.
run_nprof 30 record -e itimer -o collapsed -f "$TMP/cmd2.collapsed" -- "$PROGS/split" --seconds 1.5
check "record -e itimer -- COMMAND without -d: until the command exits" is_collapsed "$TMP/cmd2.collapsed"

# --- itimer on a process without the agent ----------------------------------------------
if start_prog plain "$PROGS/split" --seconds 5; then
	run_nprof 10 record -e itimer -d 1 "$PID"
	if one_error_line && err_says "needs nprof's agent"; then
		ok "-e itimer without the agent: one line saying how to load it"
	else
		not_ok "-e itimer without the agent: one line saying how to load it"
		np_diag
	fi
	run_nprof 10 list -q
	check "list: a process without the agent is not listed" bash -c "! grep -qx '$PID' '$TMP/np.out'"
	kill "$PID"
fi

# --- NPROF_CONTROL=0: no socket --------------------------------------------------------
if start_prog nocontrol env LD_PRELOAD="$AGENT" NPROF_CONTROL=0 "$PROGS/split" --seconds 5; then
	run_nprof 10 list -q
	check "NPROF_CONTROL=0: no control socket" bash -c "! grep -qx '$PID' '$TMP/np.out'"
	kill "$PID"
fi
finish
