#!/usr/bin/env bash
# nprof's client commands of nprofd, against a private daemon (its own
# socket, state directory and empty config): `workers` lists split, owned
# by root; `start -f OUT.collapsed --wait` FINISHES with each burn_* in
# the profile; `start -d 30` then `stop` ends STOPPED within seconds with
# a profile; `instances` lists both; `get` converts on download (pprof's
# gzip, a default name made safe); `take stacks` names the burner thread;
# Ctrl-C during `start -f` stops the instance and still writes what it
# recorded; `token create` gives a token curl can use over HTTP until
# `token revoke`; nprofd's refusals come through as one line, and a
# missing socket says nprofd is not running.
. "$(dirname "$0")/lib.sh"
need_build
NPROFD=$NPROF_BUILD/nprofd
[ -x "$NPROFD" ] || bail "nprofd is built ($NPROFD)"
[ "$(id -u)" = 0 ] || { skip "nprof's nprofd commands" "needs root (a daemon for several users)"; finish; }
D=$(mktemp -d "$TMP/daemon.XXXXXX")
chmod 755 "$D"
export NPROF_SOCKET=$D/nprofd.sock
: >"$D/nprofd.conf"

# The daemon first, with TERM (it stops its instances), then lib.sh's
# cleanup of every other background program.
DAEMON=
stop_daemon() {
	[ -n "$DAEMON" ] || return 0
	kill -TERM "$DAEMON" 2>/dev/null
	wait_pid "$DAEMON" 10 || kill -KILL "$DAEMON" 2>/dev/null
}
trap 'stop_daemon; cleanup' EXIT

# wait_until SECONDS COMMAND...: polls COMMAND every 50 ms until it succeeds.
wait_until() {
	local i limit=$1
	shift
	for ((i = 0; i < limit * 20; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

http_port() {
	PORT=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$D/log" | head -1)
	[ -n "$PORT" ]
}

"$NPROFD" --config "$D/nprofd.conf" --socket "$NPROF_SOCKET" --state-dir "$D/state" \
	--listen 127.0.0.1:0 2>"$D/log" </dev/null &
DAEMON=$!
bg_pids+=("$DAEMON")
if wait_until 20 http_port && [ -S "$NPROF_SOCKET" ]; then
	ok "nprofd listens on $NPROF_SOCKET and http://127.0.0.1:$PORT/"
else
	diag_file "$D/log"
	bail "nprofd listens on its socket and HTTP"
fi

start_prog split "$PROGS/split" --seconds 120 || bail "split starts"
S=$PID

# started_id: the instance id in the last run's "instance N started" line.
started_id() { sed -n 's/^instance \([0-9]*\) started: .*/\1/p' "$TMP/np.out" | head -1; }

# --- workers --------------------------------------------------------------------------
run_nprof 30 workers
if [ "$NP_RC" -eq 0 ] && head -1 "$TMP/np.out" | grep -qE '^ID +PID +USER +CPU% +RSS +THREADS +AGENT +SERVICE +COMMAND$' &&
	# (RSS is two words: "1.5 MiB")
	awk -v p="$S" '$2 == p && $3 == "root" && $8 == "no" { f = 1 } END { exit !f }' "$TMP/np.out"; then
	ok "workers: split (PID $S) listed, owned by root, no agent"
else
	not_ok "workers: split (PID $S) listed, owned by root"
	np_diag
fi
if awk 'length($0) > 80 { bad = 1 } END { exit bad }' "$TMP/np.out"; then
	ok "workers: lines cut to 80 columns when not on a terminal"
else
	not_ok "workers: lines cut to 80 columns when not on a terminal"
	np_diag
fi
run_nprof 30 workers -q "split --seconds 120" --json
if [ "$NP_RC" -eq 0 ] && grep -q "\"pid\": $S," "$TMP/np.out" && ! grep -q '"pid": 1,' "$TMP/np.out"; then
	ok "workers -q TEXT --json: the API's JSON, filtered"
else
	not_ok "workers -q TEXT --json: the API's JSON, filtered"
	np_diag
fi

# --- start --wait -f: a finished profile --------------------------------------------
run_nprof 60 start "$S" -e cpu -d 2 -f "$TMP/out.collapsed" --wait
N1=$(started_id)
if [ "$NP_RC" -eq 0 ] && grep -qx "instance $N1 started: cpu on PID $S for 2 s" "$TMP/np.out" &&
	grep -q "^instance $N1 FINISHED" "$TMP/np.out" && is_collapsed "$TMP/out.collapsed" &&
	has_frame_match "$TMP/out.collapsed" '^burn_sixty$' &&
	has_frame_match "$TMP/out.collapsed" '^burn_thirty$' &&
	has_frame_match "$TMP/out.collapsed" '^burn_ten$'; then
	ok "start -d 2 -f OUT.collapsed --wait: instance $N1 FINISHED in ${NP_SECS}s, burn_sixty, burn_thirty, burn_ten in $(total "$TMP/out.collapsed") samples"
else
	not_ok "start -d 2 -f OUT.collapsed --wait: FINISHED, each burn_* in the profile"
	np_diag
	diag_file "$TMP/out.collapsed" 5
fi
check "start -f: says where it wrote" err_says "^nprof: wrote $TMP/out.collapsed \\(.*, collapsed\\)$"

# --- start, then stop: the partial profile -----------------------------------------
run_nprof 30 start "$S" -d 30
N2=$(started_id)
if [ "$NP_RC" -eq 0 ] && [ -n "$N2" ] && less_than "$NP_SECS" 10; then
	ok "start -d 30: returns at once (${NP_SECS}s), instance $N2"
else
	not_ok "start -d 30: returns at once with the instance id"
	np_diag
fi
# what was recorded until the stop: a second of it
running() { run_nprof 10 instances --status running && grep -q "^ *$N2 RUNNING " "$TMP/np.out"; }
wait_until 20 running || diag "instance $N2 is not listed RUNNING"
sleep 1
run_nprof 30 stop "$N2"
if [ "$NP_RC" -eq 0 ] && grep -q "^instance $N2 STOPPED" "$TMP/np.out" && less_than "$NP_SECS" 10; then
	ok "stop $N2: STOPPED after ${NP_SECS}s (< 10)"
else
	not_ok "stop $N2: STOPPED within a few seconds"
	np_diag
fi
run_nprof 30 get "$N2" -f "$TMP/stopped.collapsed"
if [ "$NP_RC" -eq 0 ] && is_collapsed "$TMP/stopped.collapsed" &&
	has_frame_match "$TMP/stopped.collapsed" '^burn_sixty$'; then
	ok "get $N2 -f FILE.collapsed: the stopped instance's profile ($(total "$TMP/stopped.collapsed") samples)"
else
	not_ok "get $N2 -f FILE.collapsed: the stopped instance's profile"
	np_diag
fi
run_nprof 30 get "$N2" -f "$TMP/x.pb.gz"
if [ "$NP_RC" -eq 0 ] && [ "$(od -An -tx1 -N2 "$TMP/x.pb.gz" | tr -d ' ')" = 1f8b ]; then
	ok "get $N2 -f x.pb.gz: pprof, gzip's magic"
else
	not_ok "get $N2 -f x.pb.gz: pprof, gzip's magic"
	np_diag
fi
run_nprof 30 stop "$N2"
if one_error_line && err_says "^nprof: instance $N2 is not running \\(it is STOPPED\\)$"; then
	ok "stop of a stopped instance: nprofd's refusal, as it words it"
else
	not_ok "stop of a stopped instance: nprofd's refusal in one line"
	np_diag
fi

# --- instances -----------------------------------------------------------------------
# STOPPED's message: "stopped early; what was recorded until then is kept"
COLUMNS=200 run_nprof 30 instances
if [ "$NP_RC" -eq 0 ] && head -1 "$TMP/np.out" | grep -qE '^ +ID +STATUS +MODE +PID +USER +CREATED +DURATION +ARTIFACTS +MESSAGE$' &&
	grep -qE "^ *$N1 FINISHED +cpu +$S +root +[0-9-]+ [0-9:]+ +2 s +[0-9]+ *$" "$TMP/np.out" &&
	grep -qE "^ *$N2 STOPPED +cpu +$S +root +[0-9-]+ [0-9:]+ +30 s +[0-9]+ +stopped early" "$TMP/np.out"; then
	ok "instances (200 columns): $N1 FINISHED and $N2 STOPPED, with their artifacts and messages"
else
	not_ok "instances (200 columns): $N1 FINISHED and $N2 STOPPED, with their artifacts and messages"
	np_diag
fi
run_nprof 30 instances
if [ "$NP_RC" -eq 0 ] && head -1 "$TMP/np.out" | grep -qE '^ +ID +STATUS +MODE +PID +USER +CREATED +DURATION +ARTIFACTS$' &&
	grep -A1 -E "^ *$N2 STOPPED +cpu +$S +root .* 30 s +[0-9]+$" "$TMP/np.out" | grep -qE '^ {7}stopped early' &&
	awk 'length($0) > 80 { bad = 1 } END { exit bad }' "$TMP/np.out"; then
	ok "instances (80 columns): the message on a line of its own, no line past 80"
else
	not_ok "instances (80 columns): the message on a line of its own, no line past 80"
	np_diag
fi
run_nprof 30 instances --worker "$S" -n 1 --json
if [ "$NP_RC" -eq 0 ] && grep -q "\"id\": $N2," "$TMP/np.out" && ! grep -q "\"id\": $N1," "$TMP/np.out"; then
	ok "instances --worker PID -n 1 --json: the newest of that PID's"
else
	not_ok "instances --worker PID -n 1 --json: the newest of that PID's"
	np_diag
fi

# --- get with nprofd's file name ------------------------------------------------------
mkdir -p "$TMP/dl"
cd "$TMP/dl" || bail "cd $TMP/dl"
run_nprof 30 get "$N1"
cd - >/dev/null || bail "cd back"
got=$(ls -A "$TMP/dl")
if [ "$NP_RC" -eq 0 ] && [[ $got =~ ^cpu-$S-[0-9]{8}-[0-9]{6}\.html$ ]] &&
	grep -q '<html' "$TMP/dl/$got"; then
	ok "get $N1: a flame graph (the instance's format) under nprofd's name, $got, nothing else left"
else
	not_ok "get $N1: a flame graph under nprofd's name, nothing else left (got: $got)"
	np_diag
fi
cd "$TMP/dl" || bail "cd $TMP/dl"
run_nprof 30 get "$N1"
cd - >/dev/null || bail "cd back"
if one_error_line && err_says "already exists here: give another name with -f FILE"; then
	ok "get $N1 again: does not replace the file"
else
	not_ok "get $N1 again: does not replace the file"
	np_diag
fi

# --- take stacks ----------------------------------------------------------------------
run_nprof 60 take stacks "$S"
if [ "$NP_RC" -eq 0 ] && grep -q "^Thread dump of PID $S (split)" "$TMP/np.out" &&
	grep -q '^"burner" ' "$TMP/np.out" && grep -q 'at worker_loop (split)' "$TMP/np.out"; then
	ok "take stacks PID: the thread dump as text, the burner thread in worker_loop"
else
	not_ok "take stacks PID: the thread dump as text, naming the burner thread"
	np_diag
fi

# --- Ctrl-C while waiting: stop, and the partial result -----------------------------
"$NPROF" start "$S" -d 30 -f "$TMP/int.collapsed" >"$TMP/int.out" 2>"$TMP/int.err" </dev/null &
C=$!
bg_pids+=("$C")
if wait_until 20 grep -q '^instance [0-9]* started' "$TMP/int.out"; then
	sleep 1
	kill -INT "$C"
	if wait_pid "$C" 20; then
		wait "$C"
		rc=$?
	else
		rc=timeout
	fi
	if [ "$rc" = 0 ] && grep -q '^instance [0-9]* STOPPED' "$TMP/int.out" &&
		is_collapsed "$TMP/int.collapsed" && grep -q '^nprof: stopping instance' "$TMP/int.err"; then
		ok "Ctrl-C during start -f: the instance STOPPED, its profile written ($(total "$TMP/int.collapsed") samples)"
	else
		not_ok "Ctrl-C during start -f: the instance STOPPED, its profile written (exit $rc)"
		diag_file "$TMP/int.out"
		diag_file "$TMP/int.err"
	fi
else
	not_ok "start -d 30 -f FILE prints its instance"
	diag_file "$TMP/int.err"
fi

# --- errors ---------------------------------------------------------------------------
sh -c 'exit 0' &
DEAD=$!
wait "$DEAD"
run_nprof 30 start "$DEAD" -d 1
if one_error_line && err_says "^nprof: no worker with pid $DEAD that you may act on"; then
	ok "start of a PID that is gone: no worker with pid $DEAD"
else
	not_ok "start of a PID that is gone: no worker with pid $DEAD"
	np_diag
fi
run_nprof 30 start "$S" -e no-such-mode -d 1
if one_error_line && err_says "^nprof: mode 'no-such-mode' is not one nprof has"; then
	ok "start -e no-such-mode: nprofd's 400, as it words it"
else
	not_ok "start -e no-such-mode: nprofd's 400 in one line"
	np_diag
fi
run_nprof 10 start "$S" -f "$TMP/x.unknown"
if [ "$NP_RC" -eq 2 ] && err_says "cannot tell the format from the extension" &&
	run_nprof 10 instances --status running && ! grep -q RUNNING "$TMP/np.out"; then
	ok "start -f FILE.unknown: a usage error before anything starts"
else
	not_ok "start -f FILE.unknown: a usage error before anything starts"
	np_diag
fi

# --- tokens over HTTP -----------------------------------------------------------------
if command -v curl >/dev/null; then
	run_nprof 30 token create ci --expires 1d
	TOKEN=$(sed -n 's/.*Authorization: Bearer \(nprof_[A-Za-z0-9_-]*\)".*/\1/p' "$TMP/np.out" | head -1)
	TID=$(sed -n 's/^token \([0-9]*\) "ci" of root, expires .*/\1/p' "$TMP/np.out")
	if [ "$NP_RC" -eq 0 ] && [ -n "$TOKEN" ] && [ -n "$TID" ] && grep -qx "$TOKEN" "$TMP/np.out"; then
		ok "token create ci: token $TID printed once, with the curl line to use it"
	else
		not_ok "token create ci: the token, with the curl line to use it"
		np_diag
	fi
	code=$(curl -s -o "$TMP/http.out" -w '%{http_code}' --max-time 30 \
		-H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v1/workers")
	if [ "$code" = 200 ] && grep -q "\"pid\":$S," "$TMP/http.out"; then
		ok "curl with the token over HTTP: 200, the workers"
	else
		not_ok "curl with the token over HTTP: 200, the workers (got $code)"
		diag_file "$TMP/http.out" 3
	fi
	run_nprof 30 token list
	check "token list: ci active" grep -qE "^ *$TID +ci +root .* active$" "$TMP/np.out"
	run_nprof 30 token revoke "$TID"
	code=$(curl -s -o "$TMP/http.out" -w '%{http_code}' --max-time 30 \
		-H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v1/workers")
	if [ "$NP_RC" -eq 0 ] && [ "$code" = 401 ]; then
		ok "token revoke $TID: curl with it now gets 401"
	else
		not_ok "token revoke $TID: curl with it now gets 401 (got $code)"
		np_diag
	fi
	run_nprof 30 token list
	check "token list: ci revoked" grep -qE "^ *$TID +ci +root .* revoked$" "$TMP/np.out"
else
	skip "tokens over HTTP" "curl is not installed (scripts/install-deps)"
fi

# --- no daemon ------------------------------------------------------------------------
NPROF_SOCKET=$D/missing.sock run_nprof 30 workers
if one_error_line && err_says "^nprof: nprofd is not running here \\(no socket at $D/missing.sock\\): start it \\(nprofd, or systemctl start nprofd\\), or set NPROF_SOCKET$"; then
	ok "NPROF_SOCKET naming no socket: nprofd is not running here, in one line (exit $NP_RC)"
else
	not_ok "NPROF_SOCKET naming no socket: nprofd is not running here, in one line"
	np_diag
fi
check "no daemon: nothing on stdout" test ! -s "$TMP/np.out"

finish
