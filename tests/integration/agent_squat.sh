#!/usr/bin/env bash
# Someone else on the agent's socket name. Abstract unix socket names
# belong to whoever binds them first, whoever they are: user nobody binds
# @nprof-agent-PID for a root-owned threads_zoo that has no agent, and
# answers every connection with a forged thread dump. root's nprof must
# see from the socket's credentials that the holder is not PID itself,
# send it nothing, say so in one line naming the holder, and fall back:
# stacks to ptrace (the real threads, nothing of the forgery), record -e
# cpu to the engine; heap and -e alloc, which only an agent can do, fail
# in that one line; list marks it refused and list -q leaves it out. A
# listener that never accepts costs a bounded wait, then ptrace. A real
# agent is still taken, by root and by its owner, also when the process
# dropped root after its agent listened.
# test-alone
# nprof list asks every agent of the host: its stalling squatters would
# hold a neighbour's list for a bounded wait (10 s), and a neighbour's
# busy agents its own (one run under two hogs: 20 s, when list still
# asked one agent after the other).
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
ZOO=$PROGS/threads_zoo
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
[ -x "$ZOO" ] || bail "threads_zoo is built"
if [ "$(id -u)" != 0 ]; then
	skip "a squatter as nobody against root's nprof" "needs root (setpriv to nobody)"
	finish
fi
usable_by_others || bail "nprof and the test programs are usable by nobody (tests/run copies them)"
PY=
for p in /usr/bin/python3 /usr/local/bin/python3 "$(command -v python3)"; do
	[ -n "$p" ] && [ -x "$p" ] && $AS_NOBODY "$p" -c '' 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || bail "a python3 that user nobody can run"
NOBODY_DIR=$(nobody_dir)

# lacks REGEX FILE...: no line of the files matches.
lacks() { ! grep -qE -- "$@"; }

# The squatter: binds the name, says "ready", and answers each connection
# (for at most 120 s: it never outlives a broken run) with an "ok LEN"
# reply holding a forged dump, logging what it was sent. With "stall" it
# listens with no backlog, fills it itself and never accepts.
cat >"$TMP/squat.py" <<'EOF'
import socket, sys, time
pid, log, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_UNIX)
s.bind("\0nprof-agent-%d" % pid)
deadline = time.time() + 120
if mode == "stall":
    s.listen(0)
    filler = socket.socket(socket.AF_UNIX)
    filler.connect("\0nprof-agent-%d" % pid)
    print("ready", flush=True)
    while time.time() < deadline:
        time.sleep(0.5)
    sys.exit(0)
s.listen(8)
s.settimeout(1)
print("ready", flush=True)
forged = (b'{"pid":%d,"threads":[{"tid":%d,"name":"IMPOSTOR-THREAD","status":"taken",'
          b'"frames":[{"addr":"0x1","function":"IMPOSTOR_FRAME"}]}]}' % (pid, pid))
while time.time() < deadline:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(2)
    got = b""
    try:
        got = c.recv(4096)
    except OSError:
        pass
    with open(log, "a") as f:
        f.write("got %d bytes %r\n" % (len(got), got))
    try:
        c.sendall(b"ok %d\n" % len(forged) + forged)
    except OSError:
        pass
    c.close()
EOF
chmod 644 "$TMP/squat.py"

start_prog zoo "$ZOO" || bail "threads_zoo starts (root, no agent)"
T=$PID
LOG=$NOBODY_DIR/squat.log
start_prog squat $AS_NOBODY "$PY" "$TMP/squat.py" "$T" "$LOG" answer ||
	bail "nobody binds @nprof-agent-$T"
SQ=$PID
if grep -q " @nprof-agent-$T\$" /proc/net/unix; then
	ok "nobody (PID $SQ) holds @nprof-agent-$T, the name of root's PID $T's agent"
else
	not_ok "nobody (PID $SQ) holds @nprof-agent-$T"
fi
HOLDER="is not PID $T's agent: the name is held by PID $SQ \\(uid 65534\\)"

# --- stacks: refused in one line, then the real dump by ptrace ---------------------
run_nprof 30 stacks "$T"
if [ "$NP_RC" -eq 0 ] && [ "$(wc -l <"$TMP/np.err")" -eq 1 ] &&
	err_says "^nprof: @nprof-agent-$T $HOLDER; not trusting it, taking the dump with ptrace instead\$"; then
	ok "stacks: the squatter refused in one line ($(cat "$TMP/np.err"))"
else
	not_ok "stacks: the squatter refused in one line naming PID $SQ, uid 65534, and ptrace"
	np_diag
fi
if grep -q '(ptrace)$' "$TMP/np.out" && grep -q '^"zoo-reader" ' "$TMP/np.out" &&
	grep -q '^"zoo-burner" ' "$TMP/np.out" && grep -q 'at block_in_read (threads_zoo)' "$TMP/np.out" &&
	grep -q 'at burn_cpu (threads_zoo)' "$TMP/np.out"; then
	ok "stacks: the real dump, taken with ptrace (zoo-reader in block_in_read, zoo-burner in burn_cpu)"
else
	not_ok "stacks: the real dump, taken with ptrace"
	np_diag
fi
check "stacks: nothing of the forged reply" lacks IMPOSTOR "$TMP/np.out" "$TMP/np.err"
run_nprof 30 stacks --json "$T"
if [ "$NP_RC" -eq 0 ] && grep -q '"method":"ptrace"' "$TMP/np.out" &&
	grep -q '"zoo-waiter"' "$TMP/np.out" && ! grep -q IMPOSTOR "$TMP/np.out"; then
	ok "stacks --json: the ptrace dump, nothing of the forgery"
else
	not_ok "stacks --json: the ptrace dump, nothing of the forgery"
	np_diag
fi

# --- record -e cpu: the engine from outside ------------------------------------------
run_nprof 30 record -e cpu -d 1 -o collapsed -f "$TMP/cpu.collapsed" "$T"
if [ "$NP_RC" -eq 0 ] && is_collapsed "$TMP/cpu.collapsed" &&
	has_frame_match "$TMP/cpu.collapsed" '^burn_cpu$' &&
	err_says "^nprof: @nprof-agent-$T $HOLDER; not trusting it, recording with perf_events from outside instead\$"; then
	ok "record -e cpu -d 1: refused in one line, recorded by the engine ($(total "$TMP/cpu.collapsed") samples, burn_cpu in them)"
else
	not_ok "record -e cpu -d 1: refused in one line, recorded by the engine"
	np_diag
	diag_file "$TMP/cpu.collapsed" 5
fi
check "record: nothing of the forged reply" lacks IMPOSTOR "$TMP/cpu.collapsed" "$TMP/np.err"

# --- heap and -e alloc: only an agent has them ----------------------------------------
run_nprof 20 heap "$T" status
if one_error_line && err_says "$HOLDER" && err_says "nothing to fall back to"; then
	ok "heap PID status: fails in one line ($(cat "$TMP/np.err"))"
else
	not_ok "heap PID status: fails in one line naming the holder"
	np_diag
fi
check "heap: nothing on stdout" lacks . "$TMP/np.out"
run_nprof 20 record -e alloc -d 1 "$T"
if one_error_line && err_says "$HOLDER" && err_says "-e alloc needs nprof's agent"; then
	ok "record -e alloc: fails in one line"
else
	not_ok "record -e alloc: fails in one line naming the holder"
	np_diag
fi

# --- list ---------------------------------------------------------------------------
run_nprof 20 list
if [ "$NP_RC" -eq 0 ] && grep -qE "^ *$T +root +\\? +refused +threads_zoo \\(@nprof-agent-$T $HOLDER\\)\$" "$TMP/np.out"; then
	ok "list: PID $T refused, the holder named"
else
	not_ok "list: PID $T refused, the holder named"
	np_diag
fi
run_nprof 20 list -q
check "list -q: PID $T left out" lacks "^$T\$" "$TMP/np.out"

# The squatter was connected to, and sent nothing: every check reads the
# credentials before the first byte.
if [ -s "$LOG" ] && ! grep -qv '^got 0 bytes' "$LOG"; then
	ok "the squatter was sent nothing ($(wc -l <"$LOG") connections, 0 bytes each)"
else
	not_ok "the squatter was sent nothing"
	diag_file "$LOG" 10
fi
kill -KILL "$SQ"
wait_pid "$SQ" 5

# --- a squatter that never accepts: a bounded wait, then ptrace ------------------------
if start_prog stall $AS_NOBODY "$PY" "$TMP/squat.py" "$T" "$LOG" stall; then
	run_nprof 40 stacks "$T"
	if [ "$NP_RC" -eq 0 ] && [ "$(wc -l <"$TMP/np.err")" -eq 1 ] &&
		err_says "timed out; taking the dump with ptrace instead" &&
		grep -q '^"zoo-reader" ' "$TMP/np.out" && less_than "$NP_SECS" 20; then
		ok "stacks past a listener that never accepts: ptrace after ${NP_SECS}s (< 20)"
	else
		not_ok "stacks past a listener that never accepts: ptrace after a bounded wait"
		np_diag
	fi
	# Three such listeners: list asks the agents at once, so it takes
	# about the one bounded wait stacks took, not three of them.
	one_wait=$NP_SECS stallers=("$PID")
	for k in 2 3; do
		start_prog "target$k" sh -c 'echo ready; exec sleep 120' || break
		start_prog "stall$k" $AS_NOBODY "$PY" "$TMP/squat.py" "$PID" "$LOG" stall || break
		stallers+=("$PID")
	done
	run_nprof 100 list
	stalled=$(grep -c "agent (@nprof-agent-[0-9]*): Connection timed out)\$" "$TMP/np.out")
	if [ "$NP_RC" -eq 0 ] && [ "$stalled" -eq 3 ] && less_than "$NP_SECS" "$(awk -v s="$one_wait" 'BEGIN { print 2 * s }')"; then
		ok "list past three listeners that never accept: ${NP_SECS}s, one wait ${one_wait}s"
	else
		not_ok "list past three listeners that never accept: under twice one wait (${one_wait}s)"
		diag "$stalled of 3 timed out, ${NP_SECS}s"
		np_diag
	fi
	kill -KILL "${stallers[@]}"
	for p in "${stallers[@]}"; do wait_pid "$p" 5; done
else
	not_ok "the stalling squatter starts"
fi

# --- a real agent: still taken ------------------------------------------------------
# agent_dump_ok: the last run is a dump taken by the agent, nothing on stderr.
agent_dump_ok() {
	[ "$NP_RC" -eq 0 ] && ! [ -s "$TMP/np.err" ] &&
		grep -q 'by the in-process agent' "$TMP/np.out" && grep -q '^"zoo-reader" ' "$TMP/np.out"
}
if start_prog real env LD_PRELOAD="$AGENT" NPROF_QUIET=1 "$ZOO"; then
	G=$PID
	run_nprof 30 stacks "$G"
	if agent_dump_ok; then ok "root's agent: stacks by the agent, as root"; else
		not_ok "root's agent: stacks by the agent, as root"; np_diag; fi
	run_nprof 20 list
	check "root's agent: listed idle with its events" \
		grep -qE "^ *$G +root +cpu itimer wall alloc heap lock +idle +threads_zoo\$" "$TMP/np.out"
	kill -KILL "$G"
	wait_pid "$G" 5
else
	not_ok "threads_zoo starts with the agent preloaded"
fi
if start_prog real_nobody $AS_NOBODY env LD_PRELOAD="$AGENT" NPROF_QUIET=1 "$ZOO"; then
	N=$PID
	run_nprof 30 stacks "$N"
	if agent_dump_ok; then ok "nobody's agent: stacks by the agent, as root"; else
		not_ok "nobody's agent: stacks by the agent, as root"; np_diag; fi
	RUN_AS=$AS_NOBODY run_nprof 30 stacks "$N"
	if agent_dump_ok; then ok "nobody's agent: stacks by the agent, as nobody, its owner"; else
		not_ok "nobody's agent: stacks by the agent, as nobody, its owner"; np_diag; fi
	RUN_AS=$AS_NOBODY run_nprof 20 list -q
	check "nobody's agent: in nobody's list -q" grep -qx "$N" "$TMP/np.out"
	kill -KILL "$N"
	wait_pid "$N" 5
else
	not_ok "threads_zoo starts as nobody with the agent preloaded"
fi
# A service that drops root after its agent listened: the socket's
# credentials say uid 0, the process now runs as nobody.
if start_prog dropper env LD_PRELOAD="$AGENT" NPROF_QUIET=1 "$PY" -c '
import os, time
os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)
print("ready", flush=True)
time.sleep(60)'; then
	run_nprof 20 list
	# (its /proc entry may now belong to root: it is no longer dumpable)
	if grep -qE "^ *$PID +[^ ]+ +cpu itimer wall alloc heap lock +idle " "$TMP/np.out"; then
		ok "an agent that listened as root before its process dropped to nobody: accepted"
	else
		not_ok "an agent that listened as root before its process dropped to nobody: accepted"
		np_diag
	fi
	kill -KILL "$PID"
	wait_pid "$PID" 5
else
	not_ok "python3 starts with the agent preloaded and drops root"
fi

finish
