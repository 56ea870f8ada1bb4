#!/usr/bin/env bash
# The agent's HTTP endpoint (NPROF_HTTP), driven with curl like Hadoop's
# /prof servlet: a profile of a busy program in the body (collapsed,
# flamegraph), 409 for a second profile while one runs, 400 naming a bad
# parameter, /stacks listing thread names and their stacks (text, JSON),
# /heap (status, enable with interval=, 400 for a bad value), and a
# non-loopback address refused unless NPROF_HTTP_ALLOW_REMOTE=1.
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
command -v curl >/dev/null || bail "curl is installed (scripts/install-deps)"

# http NAME URL: GET URL; body in $TMP/NAME, status in CODE, type in TYPE.
http() {
	local out
	out=$(curl -s -m 30 -o "$TMP/$1" -w '%{http_code} %{content_type}' "$2")
	CODE=${out%% *}
	TYPE=${out#* }
}

# cpu_ticks PID: user + system time of PID so far, in clock ticks.
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

if ! start_prog split env LD_PRELOAD="$AGENT" NPROF_HTTP=127.0.0.1:0 \
	"$PROGS/split" --seconds 120 || ! wait_http "$TMP/split.err"; then
	diag_file "$TMP/split.err"
	bail "split starts with NPROF_HTTP=127.0.0.1:0 and logs its address"
fi
ok "NPROF_HTTP=127.0.0.1:0: serving on $ADDR"
BASE=http://$ADDR

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
curl -s -m 30 -o "$TMP/first.collapsed" -w '%{http_code}' \
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
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -H 'Host: rebound.example:80' "$BASE/stacks")
check "a non-loopback Host header is refused: 403 (DNS rebinding)" [ "$code" = 403 ]

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
kill -TERM "$PID"
if wait_pid "$PID" 10; then
	ok "split ends at SIGTERM with the endpoint serving"
else
	not_ok "split ends at SIGTERM with the endpoint serving"
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
