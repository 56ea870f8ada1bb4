#!/usr/bin/env bash
# nprofd's web UI in Debian's Chromium (tests/e2e/daemon_ui.js): a private
# daemon, a test user made with useradd and a password (chpasswd) who owns
# split and eight_threads; the page signs in as that user, finds split by
# the filter, starts a 3 s cpu instance and watches it go RUNNING ->
# FINISHED without a reload, opens its flame graph in the page and finds
# burn_sixty by its search, picks a time range on its strip, takes a thread dump of eight_threads and sees
# its eight named threads, switches heap profiling on for a worker with
# the agent and takes a heap snapshot, attaches the agent to split and
# detaches it, restarts a runit service and sees
# its new pid, runs an operator's command, stops an instance, deletes a
# file, is refused a change without the CSRF token, and signs out; a
# second user who signs in then sees none of it, not even by URL; no
# console error, no request leaving nprofd's origin, a non-blank
# screenshot per step (BUILD/e2e/ui-*).
# test-timeout: 400
. "$(dirname "$0")/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
if ! need_browser; then
	skip "the web UI in a browser" "$BROWSER_WHY"
	finish
fi
command -v runsv >/dev/null && command -v sv >/dev/null ||
	bail "runit's runsv and sv are installed (scripts/install-deps)"
U=nprofui$$
PW="ui-$$-$RANDOM-pass"
SV=$TMP/sv/splitsvc
journey_conf "$SV" >"$D/nprofd.conf"
start_daemon "$D/nprofd.conf" || bail "nprofd starts and listens"
ok "nprofd starts on $HTTP_ADDR"

# The page and its assets, served without a session, under a CSP that
# allows no inline script or style.
curl -s -D "$TMP/h.txt" -o "$TMP/index.html" "http://$HTTP_ADDR/"
check "GET /, signed out: 200, the page, text/html, under a CSP without inline script or style, not to be framed" \
	bash -c "grep -q '^HTTP/[0-9.]* 200' '$TMP/h.txt' && grep -qi '^content-type: text/html' '$TMP/h.txt' &&
		grep -i '^content-security-policy:' '$TMP/h.txt' | grep -q \"script-src 'self'\" &&
		grep -i '^content-security-policy:' '$TMP/h.txt' | grep -q \"frame-ancestors 'none'\" &&
		! grep -i '^content-security-policy:' '$TMP/h.txt' | grep -q unsafe-inline &&
		grep -qi '^x-frame-options: DENY' '$TMP/h.txt' &&
		grep -q '<script type=\"module\" src=\"/ui/main.js\">' '$TMP/index.html'"
# Every file of the page: each ES module as text/javascript (a browser
# runs a module of no other type), byte for byte as in the repository.
for p in "$NPROF_SRC"/src/daemon/ui/*; do
	f=${p##*/}
	case $f in
	*.js) want=text/javascript ;; *.css) want=text/css ;; *) want=text/html ;;
	esac
	code=$(curl -s -o "$TMP/asset" -w '%{http_code} %{content_type}' "http://$HTTP_ADDR/ui/$f")
	check "GET /ui/$f: $code" bash -c "[[ '$code' == '200 $want'* ]] && cmp -s '$TMP/asset' '$p'"
done
code=$(curl -s -o /dev/null -w '%{http_code}' --path-as-is "http://$HTTP_ADDR/ui/../ui/main.js")
check "GET /ui/../ui/main.js: not served ($code)" [ "$code" != 200 ]

U2=nprofui2$$
PW2="ui2-$$-$RANDOM-pass"
test_user "$U" "$PW" && test_user "$U2" "$PW2" || bail "useradd and chpasswd make the test users"
trap '[ -d "$SV" ] && sv -w 5 exit "$SV" >/dev/null 2>&1; cleanup' EXIT
AS="setpriv --reuid=$U --regid=$U --init-groups"
$AS test -x "$PROGS/split" || bail "the test programs are usable by $U"

start_prog split $AS "$PROGS/split" --seconds 600 || bail "split starts as $U"
SPLIT=$PID
start_prog split2 $AS "$PROGS/split" --ratio 1:3:6 --seconds 600 || bail "a split of another ratio starts as $U"
SPLIT2=$PID
start_prog eight $AS "$PROGS/eight_threads" || bail "eight_threads starts as $U"
EIGHT=$PID
start_prog heap $AS env LD_PRELOAD="$NPROF_BUILD/libnprof.so" "$PROGS/alloc_primes" --wait ||
	bail "alloc_primes starts as $U with the agent"
HEAP=$PID
# A runit service of $U's: runsv and split, restarted through sv.
mkdir -p "$SV"
cp "$PROGS/split" "$TMP/sv/split_sv"
printf '#!/bin/sh\nexec %s --seconds 300\n' "$TMP/sv/split_sv" >"$SV/run"
chmod +x "$SV/run"
chown -R "$U" "$TMP/sv"
$AS runsv "$SV" >/dev/null 2>&1 &
bg_pids+=("$!")
for ((i = 0; i < 100; i++)); do
	SVC=$(pgrep -f "^$TMP/sv/split_sv" | head -1)
	[ -n "$SVC" ] && break
	sleep 0.1
done
[ -n "$SVC" ] || bail "runsv starts the service as $U"

http "" POST /api/v1/session "{\"user\": \"$U\", \"password\": \"wrong-$PW\"}"
check "a wrong password: 401" [ "$CODE" = 401 ]

mkdir -p "$NPROF_BUILD/e2e"
rm -f "$NPROF_BUILD/e2e/ui-instance.pb.gz"
# The journey's time limit is a safety net, not a bar (the page's own
# costs are held by CPU time in the journey): 300 s, within the
# script's 400, for a slow CI host (the script took 142 s on one, 107 s
# here).
E2E_TIMEOUT=${E2E_TIMEOUT:-300} \
NPROF_E2E_DIR=$NPROF_BUILD/e2e NPROF_E2E_URL="http://$HTTP_ADDR/" NPROF_E2E_USER=$U NPROF_E2E_PASSWORD=$PW \
	NPROF_E2E_USER2=$U2 NPROF_E2E_PASSWORD2=$PW2 \
	NPROF_E2E_SPLIT=$SPLIT NPROF_E2E_EIGHT=$EIGHT \
	NPROF_E2E_HEAP=$HEAP NPROF_E2E_SPLIT2=$SPLIT2 NPROF_E2E_SVC=$SVC NPROF_E2E_KERNEL=$(uname -r) \
	run_js daemon_ui.js
if command -v go >/dev/null; then
	check "go tool pprof -raw reads the pprof the page downloaded: burn_sixty in it" \
		bash -c "go tool pprof -raw '$NPROF_BUILD/e2e/ui-instance.pb.gz' 2>/dev/null | grep -q burn_sixty"
else
	skip "go tool pprof reads the download" "go is not installed (scripts/install-deps)"
fi
check "split and eight_threads run on" kill -0 "$SPLIT" "$EIGHT"
grep -q 'ERROR\|AddressSanitizer' "$D/log" && { diag "nprofd's log:"; diag_file "$D/log" 20; }
finish
