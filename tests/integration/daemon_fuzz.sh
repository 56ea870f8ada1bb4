#!/usr/bin/env bash
# nprofd's doors fuzzed live: a private daemon (its own socket, state
# directory and config, [instances] max_concurrent = 1 so that it cannot
# fork-bomb) takes DAEMON_FUZZ_SECONDS (default 20) of random requests
# over raw sockets, as root over the unix socket and without a token
# over HTTP, from a seeded generator (tests/fuzz/daemon_live.py; it prints its seed:
# DAEMON_FUZZ_SEED=N replays a run's choices, not its timing): random
# methods (the API's, PATCH, HEAD, OPTIONS, junk), paths (the API's with
# random ids and segments, percent-escapes, %00, .., very long), headers
# (huge, many, junk Content-Length, chunked with junk), query strings and
# bodies (random JSON, deep nesting, huge strings, invalid UTF-8, huge
# numbers, NULs). POSTs to /api/v1/instances use a real worker (a
# `sleep 300`) some of the time, and one request in 100 of each thread
# (its first among them) is a well-formed start of a profile or a thread
# dump on it, so that profiles really run, are stopped, downloaded and
# converted, however few requests a busy host gets through.
#
# Checks: the daemon is alive at the end and answers GET /api/v1/whoami;
# no reply had a 5xx status (but 505 to a request line whose version is
# not HTTP/1.x: the protocol's own answer); every JSON error reply says
# {"error": ...}; no request waited over 10 s for its reply (one that
# announces more body than it sends is only given 2 s and not counted);
# the daemon's RSS after the run is under twice its RSS after a warm-up
# plus 20 MiB; instances really started; no statement failed in the
# index, which passes integrity_check.
#
# make check runs it for 20 s. A long run, by hand:
#   DAEMON_FUZZ_SECONDS=600 tests/integration/daemon_fuzz.sh
# (as root, from the repository, after make; NPROF_BUILD=/abs/build-dir
# for another build directory).
# test-timeout: 300
. "$(dirname "$0")/lib.sh"
NPROFD=$NPROF_BUILD/nprofd
[ -x "$NPROFD" ] || bail "nprofd is built ($NPROFD)"
[ -x "$NPROF" ] || bail "nprof is built ($NPROF)"
command -v curl >/dev/null || bail "curl is installed (scripts/install-deps)"
command -v python3 >/dev/null || bail "python3 is installed"
command -v sqlite3 >/dev/null || bail "sqlite3 is installed (scripts/install-deps)"
[ "$(id -u)" = 0 ] || { skip "nprofd fuzzed live" "needs root (the unix socket as root)"; finish; }
SECS=${DAEMON_FUZZ_SECONDS:-20}
SEED=${DAEMON_FUZZ_SEED:-$(( $(date +%s%N) % 1000000007 ))}
D=$TMP/daemon
mkdir -p "$D"
SOCK=$D/nprofd.sock

# The daemon's children (nprof record, convert) go with it (they die
# with it, PR_SET_PDEATHSIG); then lib.sh's cleanup of the rest.
DAEMON=
stop_all() {
	local p
	if [ -n "$DAEMON" ]; then
		for p in $(cat /proc/"$DAEMON"/task/*/children 2>/dev/null); do
			kill -KILL "$p" 2>/dev/null
		done
		kill -KILL "$DAEMON" 2>/dev/null
	fi
	cleanup
}
trap stop_all EXIT

head -c 32 /dev/urandom | base64 >"$D/cluster.key"
chmod 600 "$D/cluster.key"
cat >"$D/nprofd.conf" <<CONF
# the fuzzed daemon: one instance at a time, short ones; a cluster key,
# so that signed requests (X-Nprof-Cluster) reach the signature's check
[cluster]
key_file = $D/cluster.key
[instances]
max_concurrent = 1
duration_max = 10s
duration_default = 2s
grace = 5s
CONF

"$NPROFD" --config "$D/nprofd.conf" --socket "$SOCK" --state-dir "$D/state" \
	--listen 127.0.0.1:0 2>"$D/log" &
DAEMON=$!
bg_pids+=("$DAEMON")
HTTP_ADDR=
for ((i = 0; i < 200; i++)); do
	HTTP_ADDR=$(sed -n 's|.*listening on http://\([^/]*\)/.*|\1|p' "$D/log" | head -1)
	[ -n "$HTTP_ADDR" ] && break
	kill -0 "$DAEMON" 2>/dev/null || break
	sleep 0.05
done
[ -n "$HTTP_ADDR" ] || { diag_file "$D/log"; bail "nprofd starts and listens"; }
ok "nprofd starts on $HTTP_ADDR and $SOCK"

# The real worker the generator's instances start on.
sleep 300 </dev/null >/dev/null 2>&1 &
TARGET=$!
bg_pids+=("$TARGET")
sleep 0.2
WORKER=$(curl -s --max-time 10 --unix-socket "$SOCK" "http://nprofd/api/v1/workers?pid=$TARGET" |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["workers"][0]["id"])' 2>/dev/null)
[ -n "$WORKER" ] || bail "GET /api/v1/workers?pid=$TARGET names the sleep target"
ok "the target sleep $TARGET is worker $WORKER"

GEN=$NPROF_SRC/tests/fuzz/daemon_live.py

# report FILE EXPR: a Python expression on a report (as j).
report() {
	python3 -c "import json,sys; j=json.load(open(sys.argv[1])); v=($2); print(v if isinstance(v, str) else repr(v))" "$1" 2>/dev/null
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' /proc/"$DAEMON"/status 2>/dev/null; }

# The warm-up: every path taken once or so, the caches filled.
timeout -k 5 60 python3 "$GEN" $((SEED + 1)) 3 "$SOCK" "$HTTP_ADDR" "$WORKER" \
	"$TMP/warm.json" 2>&1 | sed 's/^/# warm-up: /'
WARM_RSS=$(rss_kb)
diag "RSS after the warm-up: ${WARM_RSS:-?} kB"

timeout -k 5 $((SECS + 120)) python3 "$GEN" "$SEED" "$SECS" "$SOCK" "$HTTP_ADDR" "$WORKER" \
	"$TMP/fuzz.json" 2>&1 | sed 's/^/# /'
[ -s "$TMP/fuzz.json" ] || bail "the generator ran to its end (seed $SEED)"
N=$(report "$TMP/fuzz.json" 'j["requests"]')
REPLIES=$(report "$TMP/fuzz.json" 'j["replies"]')
check "the generator sent $N requests in ${SECS}s (seed $SEED), $REPLIES answered" \
	[ "${N:-0}" -gt $((SECS * 5)) -a "${REPLIES:-0}" -gt $((${N:-0} / 2)) ]

alive=false
if kill -0 "$DAEMON" 2>/dev/null; then
	WHO=$(curl -s --max-time 10 --unix-socket "$SOCK" http://nprofd/api/v1/whoami)
	[ "$(python3 -c 'import json, sys; j = json.loads(sys.argv[1]); print(j["user"], j["admin"])' \
		"$WHO" 2>/dev/null)" = "root True" ] && alive=true
fi
if $alive; then
	ok "nprofd is alive and answers GET /api/v1/whoami"
else
	not_ok "nprofd is alive and answers GET /api/v1/whoami (seed $SEED)"
	diag "whoami: ${WHO:-(nothing)}"
	diag "its log:"
	diag_file "$D/log" 30
fi

# none_of COUNT EXAMPLES WHAT: ok when the report's COUNT is 0, else a
# failure showing its EXAMPLES.
none_of() {
	local bad
	bad=$(report "$TMP/fuzz.json" "j[\"$1\"]")
	if [ "$bad" = 0 ]; then
		ok "$3"
	else
		not_ok "$3: $bad requests broke it (seed $SEED)"
		diag "$(report "$TMP/fuzz.json" "\"\\n\".join(j[\"$2\"])")"
	fi
}
none_of five_xx five_xx_examples "no reply had a 5xx status"
none_of no_error_json no_error_examples "every JSON error reply says {\"error\": ...}"
none_of hangs hang_examples "no request waited over 10 s (longest $(report "$TMP/fuzz.json" '"%.1f s" % j["max_secs"]'))"

END_RSS=$(rss_kb)
if [ -n "$WARM_RSS" ] && [ -n "$END_RSS" ] && [ "$END_RSS" -lt $((2 * WARM_RSS + 20480)) ]; then
	ok "RSS ${END_RSS} kB after the run, under 2 x ${WARM_RSS} kB + 20 MiB"
else
	not_ok "RSS ${END_RSS:-?} kB after the run, under 2 x ${WARM_RSS:-?} kB + 20 MiB (seed $SEED)"
fi

# (asked until it answers, for up to a minute: the run's last connections
# may still hold the daemon's slots)
for ((i = 0; i < 60; i++)); do
	curl -s --max-time 10 --unix-socket "$SOCK" "http://nprofd/api/v1/instances?limit=10000" >"$TMP/inst.json"
	STARTED=$(report "$TMP/inst.json" 'len(j["instances"])')
	[ -n "$STARTED" ] && break
	sleep 1
done
[ -n "$STARTED" ] || diag "GET /api/v1/instances answered: $(head -c 300 "$TMP/inst.json")"
check "instances and actions really ran: ${STARTED:-none} ($(report "$TMP/inst.json" \
	'", ".join("%s %d" % (k, v) for k, v in sorted(__import__("collections").Counter(
	"%s %s" % (i["kind"], i["status"]) for i in j["instances"]).items()))'))" [ "${STARTED:-0}" -gt 0 ]
# A statement the index refused is a request the API let through malformed.
if grep -aq 'nprofd error: database:' "$D/log"; then
	not_ok "no statement failed in the index (seed $SEED)"
	grep -a 'nprofd error: database:' "$D/log" | sort | uniq -c | sort -rn | head -5 | cut -c1-300 | sed 's/^/# /'
else
	ok "no statement failed in the index"
fi
check "the index passes PRAGMA integrity_check" \
	[ "$(sqlite3 "$D/state/nprofd.db" 'PRAGMA integrity_check' 2>&1)" = ok ]
finish
