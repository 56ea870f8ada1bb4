#!/usr/bin/env bash
# The agent's HTTP endpoint (NPROF_HTTP), driven with curl like Hadoop's
# /prof servlet: a profile of a busy program in the body (collapsed,
# flamegraph), 409 for a second profile while one runs, 400 naming a bad
# parameter, /stacks listing thread names and their stacks (text, JSON),
# /heap (status, enable with interval=, 400 for a bad value), and a
# non-loopback address refused unless NPROF_HTTP_ALLOW_REMOTE=1.
# Who may use it: a token in a file only the owner can read, by header or
# ?token=; another user (nobody) gets 403 on /prof, /stacks and /heap and
# cannot read the file; NPROF_HTTP_AUTH=none serves it open and says so;
# a bad NPROF_HTTP_AUTH is refused; the token file goes at exit; an
# unprivileged owner gets in with its token, and so does root; a second
# process on the same port names the first.
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
command -v curl >/dev/null || bail "curl is installed (scripts/install-deps)"

# http NAME URL [CURL ARGS]: GET URL with the token ($TOKEN, from
# wait_http); body in $TMP/NAME, status in CODE, type in TYPE.
http() {
	local name=$1 url=$2 out
	shift 2
	out=$(curl -s -m 30 -o "$TMP/$name" -w '%{http_code} %{content_type}' \
		-H "Authorization: Bearer $TOKEN" "$@" "$url")
	CODE=${out%% *}
	TYPE=${out#* }
}

# bare NAME URL [CURL ARGS]: GET URL as given, without the token; body in
# $TMP/NAME, status in CODE.
bare() {
	local name=$1 url=$2
	shift 2
	CODE=$(curl -s -m 30 -o "$TMP/$name" -w '%{http_code}' "$@" "$url")
}

# one_line FILE: FILE holds exactly one line.
one_line() { [ "$(wc -l <"$1")" -eq 1 ]; }

# cpu_ticks PID: user + system time of PID so far, in clock ticks.
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

if ! start_prog split env LD_PRELOAD="$AGENT" NPROF_HTTP=127.0.0.1:0 \
	"$PROGS/split" --seconds 120 || ! wait_http "$TMP/split.err"; then
	diag_file "$TMP/split.err"
	bail "split starts with NPROF_HTTP=127.0.0.1:0 and logs its address"
fi
ok "NPROF_HTTP=127.0.0.1:0: serving on $ADDR"
BASE=http://$ADDR
SPLIT_PID=$PID
if [ -n "$TOKEN_FILE" ] && [ "$(stat -c '%a %u' "$TOKEN_FILE")" = "600 0" ] &&
	[[ $TOKEN =~ ^[0-9a-f]{64}$ ]] && [[ $TOKEN_FILE == */nprof/http-$PID.token ]]; then
	ok "the start-up line names the token file: $TOKEN_FILE, mode 600, root's, 64 hex digits"
else
	not_ok "the start-up line names the token file, mode 600, root's, 64 hex digits ('$TOKEN_FILE')"
	diag_file "$TMP/split.err"
	[ -n "$TOKEN_FILE" ] && diag "$(ls -la "$TOKEN_FILE" 2>&1)"
fi
# nprof list names the endpoint and where its token is, never the token.
"$NPROF" list >"$TMP/list" 2>&1
check "nprof list: the endpoint's address and its token file" \
	grep -qF "http://$ADDR/ (token in $TOKEN_FILE)" "$TMP/list"
check "nprof list does not show the token itself" bash -c "! grep -qF '$TOKEN' '$TMP/list'"

# --- a profile in the body ----------------------------------------------------------
t0=$(cpu_ticks "$PID")
http cpu.collapsed "$BASE/prof?event=cpu&duration=2&output=collapsed"
t1=$(cpu_ticks "$PID")
if [ "$CODE" = 200 ] && is_collapsed "$TMP/cpu.collapsed"; then
	ok "/prof?event=cpu&duration=2&output=collapsed: 200, collapsed stacks ($TYPE)"
else
	not_ok "/prof?event=cpu&duration=2&output=collapsed: 200, collapsed stacks (got $CODE)"
	diag_file "$TMP/cpu.collapsed"
fi
check "collapsed: Content-Type text/plain" grep -q '^text/plain' <<<"$TYPE"
check "collapsed: main -> run_main_thread -> burn_quantum -> burn_sixty" \
	has_chain "$TMP/cpu.collapsed" "main;run_main_thread;burn_quantum;burn_sixty"
check "collapsed: worker_main -> worker_loop -> burn_quantum -> burn_thirty" \
	has_chain "$TMP/cpu.collapsed" "worker_main;worker_loop;burn_quantum;burn_thirty"
# Samples x 10 ms against the CPU time the program used meanwhile (the
# machine may be busy: CPU time, not wall time). The window measured holds
# curl's start and end too, so the profile may see somewhat less.
hz=$(getconf CLK_TCK)
used_ms=$(( (t1 - t0) * 1000 / hz ))
got_ms=$(( $(total "$TMP/cpu.collapsed") * 10 ))
if [ "$used_ms" -gt 0 ] && awk -v g="$got_ms" -v u="$used_ms" 'BEGIN { exit !(g >= 0.6 * u && g <= 1.25 * u) }'; then
	ok "cpu: samples account for ${got_ms} ms of the ${used_ms} ms of CPU used (60%..125%)"
else
	not_ok "cpu: samples account for ${got_ms} ms of the ${used_ms} ms of CPU used (60%..125%)"
fi

http itimer.collapsed "$BASE/prof?event=itimer&duration=1&output=collapsed&thread"
if [ "$CODE" = 200 ] && is_collapsed "$TMP/itimer.collapsed" &&
	grep -q '^\[burner tid=' "$TMP/itimer.collapsed"; then
	ok "/prof?event=itimer&thread: per-thread stacks"
else
	not_ok "/prof?event=itimer&thread: per-thread stacks (got $CODE)"
	diag_file "$TMP/itimer.collapsed"
fi

http fg.html "$BASE/prof?duration=1"
if [ "$CODE" = 200 ] && grep -q '^text/html' <<<"$TYPE" && grep -qi '<html' "$TMP/fg.html" &&
	grep -q burn_sixty "$TMP/fg.html"; then
	ok "/prof (default output): a flame graph, text/html"
else
	not_ok "/prof (default output): a flame graph, text/html (got $CODE $TYPE)"
fi
http out.html "$BASE/prof?duration=1&output=html"
check "/prof?output=html (async-profiler 2's name): text/html" grep -q '^text/html' <<<"$TYPE"

# The timeline: -o jfr from the agent carries each sample's own time, so
# the two burning threads' samples interleave in time. Evenly spread
# times, the fallback without a timeline, would come stack by stack: at
# most one switch per distinct stack (a dozen or so here). Samples every
# 1 ms of CPU: hundreds even on a loaded machine, where a thread's run of
# samples lasts one time slice (a few ms), far fewer than the 20 allowed.
http cpu.jfr "$BASE/prof?event=cpu&interval=1ms&duration=2&output=jfr"
if ! command -v jfr >/dev/null; then
	skip "jfr: samples carry their own times" "no jfr tool (openjdk)"
elif [ "$CODE" = 200 ] && jfr print --events jdk.ExecutionSample "$TMP/cpu.jfr" >"$TMP/jfr.txt" &&
	samples=$(grep -c sampledThread "$TMP/jfr.txt") &&
	switches=$(awk '/sampledThread/ { if (last != "" && $0 != last) n++; last = $0 } END { print n + 0 }' "$TMP/jfr.txt") &&
	[ "$samples" -ge 100 ] && [ $((switches * 20)) -ge "$samples" ]; then
	ok "jfr: samples carry their own times ($switches thread switches in $samples samples)"
else
	not_ok "jfr: samples carry their own times (got $CODE, ${switches:-?} thread switches in ${samples:-?} samples)"
fi

# --- one at a time --------------------------------------------------------------------
curl -s -m 30 -o "$TMP/first.collapsed" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
	"$BASE/prof?duration=3&output=collapsed" >"$TMP/first.code" &
first=$!
running=no
for ((i = 0; i < 40; i++)); do
	"$NPROF" list 2>/dev/null | grep -qE "^ *$PID .*running" && { running=yes; break; }
	sleep 0.05
done
http second "$BASE/prof?duration=1&output=collapsed"
if [ $running = yes ] && [ "$CODE" = 409 ] && grep -q 'already running' "$TMP/second"; then
	ok "a second /prof while one runs: 409 ($(cat "$TMP/second"))"
else
	not_ok "a second /prof while one runs: 409 (got $CODE, first running: $running)"
	diag_file "$TMP/second"
fi
wait "$first"
check "the first /prof still completes: 200" grep -qx 200 "$TMP/first.code"

# --- bad parameters --------------------------------------------------------------------
http bad "$BASE/prof?event=bogus"
if [ "$CODE" = 400 ] && grep -q 'event' "$TMP/bad" && grep -q 'cpu' "$TMP/bad" &&
	grep -q 'itimer' "$TMP/bad" && grep -q 'wall' "$TMP/bad"; then
	ok "event=bogus: 400 naming event and its values ($(cat "$TMP/bad"))"
else
	not_ok "event=bogus: 400 naming event and its values (got $CODE)"
	diag_file "$TMP/bad"
fi
http bad "$BASE/prof?duration=abc"
check "duration=abc: 400 naming duration ($(cat "$TMP/bad"))" \
	eval '[ "$CODE" = 400 ] && grep -q "^duration=abc" "$TMP/bad"'
http bad "$BASE/prof?output=gif"
check "output=gif: 400 listing the formats" \
	eval '[ "$CODE" = 400 ] && grep -q "output=gif" "$TMP/bad" && grep -q flamegraph "$TMP/bad"'
http bad "$BASE/prof?pid=1"
check "pid=1 (not this process): 400" eval '[ "$CODE" = 400 ] && grep -q "^pid=1" "$TMP/bad"'
http bad "$BASE/prof?durration=5"
check "an unknown parameter: 400 listing the parameters" \
	eval '[ "$CODE" = 400 ] && grep -q "durration" "$TMP/bad" && grep -q jstackdepth "$TMP/bad"'
http host "$BASE/stacks" -H 'Host: rebound.example:80'
check "a non-loopback Host header is refused, token or not: 403 (DNS rebinding)" \
	eval '[ "$CODE" = 403 ] && grep -q "Host header" "$TMP/host"'

# --- /stacks and /heap ------------------------------------------------------------------
http stacks.txt "$BASE/stacks"
if [ "$CODE" = 200 ] && grep -q '^"burner" tid=' "$TMP/stacks.txt" &&
	grep -q '^"timer" tid=' "$TMP/stacks.txt" && grep -q "^\"split\" tid=$PID " "$TMP/stacks.txt"; then
	ok "/stacks: every thread by name (split, burner, timer)"
else
	not_ok "/stacks: every thread by name (split, burner, timer) (got $CODE)"
	diag_file "$TMP/stacks.txt" 30
fi
check "/stacks: the burner's stack reaches worker_main" \
	grep -q 'at worker_main (split)' "$TMP/stacks.txt"
check "/stacks: the timer sleeps in timer_main" grep -q 'at timer_main (split)' "$TMP/stacks.txt"
http stacks.json "$BASE/stacks?output=json"
if [ "$CODE" = 200 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
names = {t["name"] for t in d["threads"] if t["status"] == "taken"}
assert {"burner", "timer"} <= names, names
assert any(f["function"] == "worker_main" for t in d["threads"] for f in t["frames"])
' "$TMP/stacks.json"; then
	ok "/stacks?output=json: JSON with the threads and their frames"
else
	not_ok "/stacks?output=json: JSON with the threads and their frames (got $CODE)"
	diag_file "$TMP/stacks.json"
fi
http heap "$BASE/heap?action=status"
check "/heap: the heap engine answers status (got $CODE)" eval '[ "$CODE" = 200 ]'
http heap "$BASE/heap?action=enable&interval=32k"
http heap "$BASE/heap?action=status"
check "/heap?action=enable&interval=32k: on, at 32768 bytes (got $CODE)" \
	grep -q "on since.*interval 32768 bytes" "$TMP/heap"
http heap "$BASE/heap?action=disable"
http heap "$BASE/heap?action=enable&interval=bogus"
check "/heap?interval=bogus: 400 naming it (got $CODE)" \
	eval '[ "$CODE" = 400 ] && grep -q "interval=bogus" "$TMP/heap"'
http heap "$BASE/heap?action=enable&interval=1m,event=cpu"
check "/heap: a value cannot carry another option (got $CODE)" eval '[ "$CODE" = 400 ]'

# --- who may use it -----------------------------------------------------------------------
# Without the token: 403 and one line naming the cause, the file and the fix.
bare none "$BASE/stacks"
if [ "$CODE" = 403 ] && one_line "$TMP/none" &&
	grep -qF "no token: this endpoint needs the token in $TOKEN_FILE: send Authorization: Bearer <token> or ?token=<token>" "$TMP/none"; then
	ok "no token: 403, one line ($(cat "$TMP/none"))"
else
	not_ok "no token: 403 and one line naming the token file and the fix (got $CODE)"
	diag_file "$TMP/none"
fi
wrong=$(printf '%064d' 0)
bare wrong "$BASE/stacks" -H "Authorization: Bearer $wrong"
check "a wrong token in the header: 403 'wrong token' (got $CODE)" \
	eval '[ "$CODE" = 403 ] && one_line "$TMP/wrong" && grep -q "^wrong token: .*$TOKEN_FILE" "$TMP/wrong"'
bare wrong "$BASE/prof?duration=1&token=$wrong"
check "a wrong ?token=: 403 (got $CODE)" eval '[ "$CODE" = 403 ] && grep -q "^wrong token" "$TMP/wrong"'
bare wrong "$BASE/stacks" -H "Authorization: Bearer ${TOKEN:0:63}"
check "the token less its last digit: 403 (got $CODE)" [ "$CODE" = 403 ]
bare wrong "$BASE/stacks" -H "Authorization: Basic $TOKEN"
check "the token under another scheme (Basic): 403 (got $CODE)" [ "$CODE" = 403 ]
bare q.collapsed "$BASE/prof?duration=1&output=collapsed&token=$TOKEN"
check "?token= on /prof: 200, the parameter parser takes it (got $CODE)" \
	eval '[ "$CODE" = 200 ] && is_collapsed "$TMP/q.collapsed"'
bare q.stacks "$BASE/stacks?token=$TOKEN"
check "?token= on /stacks: 200 (got $CODE)" eval '[ "$CODE" = 200 ] && grep -q "^\"burner\" tid=" "$TMP/q.stacks"'
bare q.heap "$BASE/heap?action=status&token=$TOKEN"
check "?token= on /heap: 200 (got $CODE)" [ "$CODE" = 200 ]
bare q.bad "$BASE/prof?token=$TOKEN&durration=5"
check "a 400 does not echo the token" \
	eval '[ "$CODE" = 400 ] && ! grep -q "$TOKEN" "$TMP/q.bad"'
check "the agent never logs the token" eval '! grep -q "$TOKEN" "$TMP/split.err"'

# Another user: refused on every path, and cannot read the token.
ND=$(nobody_dir) # where user nobody writes
for path in "/prof?duration=1" /stacks "/heap?action=status"; do
	code=$($AS_NOBODY curl -s -m 30 -o "$ND/other" -w '%{http_code}' "$BASE$path")
	check "user nobody, no token: $path refused, 403 (got $code)" \
		eval '[ "$code" = 403 ] && grep -q "^no token" "$ND/other"'
done
if ! $AS_NOBODY cat "$TOKEN_FILE" >/dev/null 2>&1 && ! $AS_DAEMON cat "$TOKEN_FILE" >/dev/null 2>&1; then
	ok "users nobody and daemon cannot read the token file"
else
	not_ok "users nobody and daemon cannot read the token file"
fi

# A second endpoint on the same port: one line naming the first.
timeout -k 5 10 env LD_PRELOAD="$AGENT" NPROF_HTTP="$ADDR" "$PROGS/split" --seconds 0.3 \
	>/dev/null 2>"$TMP/second.err"
rc=$?
want="NPROF_HTTP=$ADDR: address in use by PID $SPLIT_PID (split); choose another port or 127.0.0.1:0"
if [ $rc -eq 0 ] && sed 's/^nprof-agent\[[0-9]*\]: //' "$TMP/second.err" | grep -qxF "$want" &&
	[ "$(grep -c 'address in use' "$TMP/second.err")" -eq 1 ]; then
	ok "a second NPROF_HTTP=$ADDR: one line naming PID $SPLIT_PID (split); the program runs on"
else
	not_ok "a second NPROF_HTTP=$ADDR: one line naming PID $SPLIT_PID (split) (status $rc)"
	diag "want: $want"
	diag_file "$TMP/second.err"
fi
if usable_by_others && $AS_NOBODY test -r "$AGENT"; then
	timeout -k 5 10 $AS_NOBODY env LD_PRELOAD="$AGENT" NPROF_HTTP="$ADDR" "$PROGS/split" --seconds 0.3 \
		>/dev/null 2>"$TMP/second.err"
	check "the same as user nobody: held by another process (not visible to this user)" \
		grep -qF "NPROF_HTTP=$ADDR: address in use, held by another process (not visible to this user); choose another port or 127.0.0.1:0" "$TMP/second.err"
else
	skip "a second NPROF_HTTP as user nobody" "the build is not reachable by nobody"
fi

kill -TERM "$PID"
if wait_pid "$PID" 10; then
	ok "split ends at SIGTERM with the endpoint serving"
else
	not_ok "split ends at SIGTERM with the endpoint serving"
fi
check "the token file is gone after the process exits" [ ! -e "$TOKEN_FILE" ]

# --- NPROF_HTTP_AUTH ------------------------------------------------------------------------
if start_prog open env LD_PRELOAD="$AGENT" NPROF_HTTP=127.0.0.1:0 NPROF_HTTP_AUTH=none \
	"$PROGS/split" --seconds 60 && wait_http "$TMP/open.err"; then
	if grep -q 'HTTP endpoint on http://.*no token (NPROF_HTTP_AUTH=none): open to every local user$' "$TMP/open.err" &&
		[ -z "$TOKEN_FILE" ]; then
		ok "NPROF_HTTP_AUTH=none: the start-up line says it is open to every local user"
	else
		not_ok "NPROF_HTTP_AUTH=none: the start-up line says it is open to every local user"
		diag_file "$TMP/open.err"
	fi
	code=$($AS_NOBODY curl -s -m 30 -o "$ND/open.stacks" -w '%{http_code}' "http://$ADDR/stacks")
	check "NPROF_HTTP_AUTH=none: user nobody gets /stacks without a token (got $code)" \
		eval '[ "$code" = 200 ] && grep -q "^\"burner\" tid=" "$ND/open.stacks"'
	kill -TERM "$PID"
	wait_pid "$PID" 10
else
	not_ok "split starts with NPROF_HTTP_AUTH=none"
	diag_file "$TMP/open.err"
fi
timeout -k 5 10 env LD_PRELOAD="$AGENT" NPROF_HTTP=127.0.0.1:0 NPROF_HTTP_AUTH=bogus \
	"$PROGS/split" --seconds 0.3 >/dev/null 2>"$TMP/bogus.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c NPROF_HTTP_AUTH "$TMP/bogus.err")" -eq 1 ] &&
	grep -q 'NPROF_HTTP_AUTH=bogus: use token .* or none' "$TMP/bogus.err" &&
	! grep -q 'HTTP endpoint on' "$TMP/bogus.err"; then
	ok "NPROF_HTTP_AUTH=bogus refused in one line; the program runs on"
else
	not_ok "NPROF_HTTP_AUTH=bogus refused in one line; the program runs on (status $rc)"
	diag_file "$TMP/bogus.err"
fi

# --- where the token goes ------------------------------------------------------------------
# An unprivileged owner: its token in its own XDG_RUNTIME_DIR; it gets in
# with it, root too (root reads any file), others not.
if usable_by_others && $AS_NOBODY test -r "$AGENT"; then
	run=$ND/run
	mkdir -p "$run" && chown 65534:65534 "$run" && chmod 700 "$run"
	if start_prog owner $AS_NOBODY env LD_PRELOAD="$AGENT" NPROF_HTTP=127.0.0.1:0 \
		XDG_RUNTIME_DIR="$run" "$PROGS/split" --seconds 60 && wait_http "$TMP/owner.err"; then
		if [ "$TOKEN_FILE" = "$run/nprof/http-$PID.token" ] &&
			[ "$(stat -c '%a %u' "$TOKEN_FILE")" = "600 65534" ] &&
			[ "$(stat -c '%a %u' "$run/nprof")" = "700 65534" ]; then
			ok "owner nobody: token in \$XDG_RUNTIME_DIR/nprof/http-PID.token, 600, dir 700, nobody's"
		else
			not_ok "owner nobody: token in \$XDG_RUNTIME_DIR/nprof/http-PID.token, 600, dir 700, nobody's ('$TOKEN_FILE')"
			diag_file "$TMP/owner.err"
		fi
		code=$($AS_NOBODY curl -s -m 30 -o "$ND/owner.stacks" -w '%{http_code}' \
			-H "Authorization: Bearer $($AS_NOBODY cat "$TOKEN_FILE")" "http://$ADDR/stacks")
		check "owner nobody with its token: /stacks 200 (got $code)" \
			eval '[ "$code" = 200 ] && grep -q "^\"burner\" tid=" "$ND/owner.stacks"'
		http root.collapsed "http://$ADDR/prof?duration=1&output=collapsed"
		check "root, reading nobody's token file: /prof 200 (got $CODE)" \
			eval '[ "$CODE" = 200 ] && is_collapsed "$TMP/root.collapsed"'
		bare rootless "http://$ADDR/stacks"
		check "root without the token: 403 (got $CODE)" [ "$CODE" = 403 ]
		code=$($AS_DAEMON curl -s -m 30 -o /dev/null -w '%{http_code}' "http://$ADDR/stacks")
		check "user daemon: 403 (got $code)" [ "$code" = 403 ]
		check "user daemon cannot read nobody's token file" eval '! $AS_DAEMON cat "$TOKEN_FILE" >/dev/null 2>&1'
		owner_file=$TOKEN_FILE
		kill -TERM "$PID"
		wait_pid "$PID" 10
		check "owner nobody's token file is gone after it exits" [ ! -e "$owner_file" ]
	else
		not_ok "split starts as user nobody with NPROF_HTTP"
		diag_file "$TMP/owner.err"
	fi
else
	skip "an unprivileged owner" "the build is not reachable by nobody"
fi

# An XDG_RUNTIME_DIR of another user's is not used; a symlink where the
# nprof directory should be is refused, and nothing is written through it.
timeout -k 5 10 env LD_PRELOAD="$AGENT" NPROF_HTTP=127.0.0.1:0 XDG_RUNTIME_DIR="$(nobody_dir)" \
	"$PROGS/split" --seconds 0.3 >/dev/null 2>"$TMP/xdg.err"
http_token "$TMP/xdg.err"
check "root ignores an XDG_RUNTIME_DIR owned by nobody (token in ${TOKEN_FILE:-nowhere})" \
	eval '[ -n "$TOKEN_FILE" ] && [[ $TOKEN_FILE != $TMP/* ]]'
mkdir -p "$TMP/xdg" "$TMP/victim"
ln -sfn "$TMP/victim" "$TMP/xdg/nprof"
timeout -k 5 10 env LD_PRELOAD="$AGENT" NPROF_HTTP=127.0.0.1:0 XDG_RUNTIME_DIR="$TMP/xdg" \
	"$PROGS/split" --seconds 0.3 >/dev/null 2>"$TMP/link.err"
rc=$?
if [ $rc -eq 0 ] && grep -q "NPROF_HTTP=127.0.0.1:0: $TMP/xdg/nprof is a symlink or not a directory" "$TMP/link.err" &&
	! grep -q 'HTTP endpoint on' "$TMP/link.err" && [ -z "$(ls -A "$TMP/victim")" ]; then
	ok "\$XDG_RUNTIME_DIR/nprof a symlink: refused in one line, nothing written through it"
else
	not_ok "\$XDG_RUNTIME_DIR/nprof a symlink: refused in one line, nothing written through it (status $rc)"
	diag_file "$TMP/link.err"
fi

# --- secure by default ------------------------------------------------------------------
timeout -k 5 10 env LD_PRELOAD="$AGENT" NPROF_HTTP=0.0.0.0:0 "$PROGS/split" --seconds 0.5 \
	>/dev/null 2>"$TMP/remote.err"
rc=$?
if [ $rc -eq 0 ] && grep -q 'not loopback.*NPROF_HTTP_ALLOW_REMOTE=1' "$TMP/remote.err" &&
	! grep -q 'HTTP endpoint on' "$TMP/remote.err"; then
	ok "NPROF_HTTP=0.0.0.0:0 refused in one line; the program runs on"
else
	not_ok "NPROF_HTTP=0.0.0.0:0 refused in one line; the program runs on (status $rc)"
	diag_file "$TMP/remote.err"
fi
timeout -k 5 10 env LD_PRELOAD="$AGENT" NPROF_HTTP=0.0.0.0:0 NPROF_HTTP_ALLOW_REMOTE=1 \
	"$PROGS/split" --seconds 0.5 >/dev/null 2>"$TMP/remote.err"
check "NPROF_HTTP_ALLOW_REMOTE=1: 0.0.0.0 is served" grep -q 'HTTP endpoint on http://0.0.0.0:' "$TMP/remote.err"
finish
