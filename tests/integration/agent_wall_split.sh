#!/usr/bin/env bash
# The wall engine held to a known split of wall time: tests/progs/
# wall_split's worker spends 50% of it computing (wall_compute), 30%
# sleeping (wall_sleep) and 20% blocked in read(2) (wall_read), and
# measures each itself. Through GET /prof?event=wall and through
# `nprof record -e wall PID`, the worker's stacks ([wall-worker tid=N]: the
# helper thread feeding its pipe is left out) are held to the truth of the
# profile's own window (snapshots at a SIGUSR1 before and after): each
# function within 5 points of its measured share, and in its state:
# wall_compute [running], wall_sleep and wall_read [sleeping].
#
# Samples: the worker is sampled every 5 ms whatever it does, so 4 s is
# ~800 samples. A sampler regular in time gives each phase its count give
# or take one: over ~150 cycles of 10-40 ms, about a point, well under the
# binomial sd (1.8 points for a 50% share), let alone the 5-point bar. The
# window the truth covers is the profile's and a little more (the request
# before, the reply after): short cycles make that little more the same
# mix as the rest.
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
[ -x "$PROGS/wall_split" ] || bail "tests/progs/wall_split is built"
command -v curl >/dev/null || bail "curl is installed (scripts/install-deps)"
SECS=4

if ! start_prog ws env LD_PRELOAD="$AGENT" NPROF_HTTP=127.0.0.1:0 \
	"$PROGS/wall_split" --seconds 60 --truth "$TMP/ws.truth" || ! wait_http "$TMP/ws.err"; then
	diag_file "$TMP/ws.err"
	bail "wall_split starts with the agent and its HTTP endpoint"
fi

# --- GET /prof?event=wall ---------------------------------------------------------
truth_mark "$PID" "$TMP/ws.truth" 1 || bail "wall_split writes its truth at SIGUSR1"
code=$(curl -s -m 60 -o "$TMP/http.collapsed" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
	"http://$ADDR/prof?event=wall&interval=5ms&duration=$SECS&thread&output=collapsed")
truth_mark "$PID" "$TMP/ws.truth" 2 || bail "wall_split writes its truth at SIGUSR1"
truth_window "$TMP/ws.truth.1" "$TMP/ws.truth.2" >"$TMP/http.truth"
check "GET /prof?event=wall&duration=$SECS&thread&output=collapsed: 200 (got $code)" [ "$code" = 200 ]
wall_split_check "/prof wall" "$TMP/http.collapsed" "$TMP/http.truth"

# --- nprof record -e wall PID ------------------------------------------------------
truth_mark "$PID" "$TMP/ws.truth" 3 || bail "wall_split writes its truth at SIGUSR1"
run_nprof 60 record -e wall -i 5ms -d "$SECS" -t -o collapsed -f "$TMP/record.collapsed" "$PID"
truth_mark "$PID" "$TMP/ws.truth" 4 || bail "wall_split writes its truth at SIGUSR1"
truth_window "$TMP/ws.truth.3" "$TMP/ws.truth.4" >"$TMP/record.truth"
if [ "$NP_RC" -eq 0 ]; then
	ok "record -e wall -d $SECS -t PID through the agent (${NP_SECS}s)"
else
	not_ok "record -e wall -d $SECS -t PID through the agent"
	np_diag
fi
wall_split_check "record wall" "$TMP/record.collapsed" "$TMP/record.truth"

kill -TERM "$PID"
wait_pid "$PID" 10
check "wall_split ends at SIGTERM and writes its truth" [ -s "$TMP/ws.truth" ]
finish
