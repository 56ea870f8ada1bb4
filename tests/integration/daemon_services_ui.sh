#!/usr/bin/env bash
# The web UI's Services view in Debian's Chromium
# (tests/e2e/daemon_services.js): a private daemon, a test user with a
# password who owns split and schedules it (cpu, 1 s every 2 s); the
# page signs in as that user, picks split's service on the Services
# view, sees its timeline draw bars from GET /api/v1/profiles/series and
# gain more without a reload (as the schedule records), drags a range
# on it and finds burn_sixty in that range's flame graph, then keeps two
# ranges as before and after and sees them compared (burn_sixty in the
# differential flame graph's table). No console error, no reload.
# test-timeout: 300
. "$(dirname "$0")/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
if ! need_browser; then
	skip "the Services view in a browser" "$BROWSER_WHY"
	finish
fi
cat >"$D/nprofd.conf" <<CONF
[instances]
grace = 5s
CONF
start_daemon "$D/nprofd.conf" || bail "nprofd starts and listens"
U=nprofsv$$
PW="sv-$$-$RANDOM-pass"
test_user "$U" "$PW" || bail "useradd and chpasswd make the test user"
AS="setpriv --reuid=$U --regid=$U --init-groups"
$AS test -x "$PROGS/split" || bail "the test programs are usable by $U"
start_prog split $AS "$PROGS/split" --seconds 600 || bail "split starts as $U"
SPLIT=$PID
W=$(worker_of "$SPLIT")
api GET "/api/v1/workers/$W"
SVC=$(json "$TMP/api.out" 'j["service"]')
# (a budget a recording of 1 s every 2 s keeps: nprof's own CPU for one
# is tens of ms)
api -u "$AS" POST /api/v1/schedules "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [\"cpu\"], \"duration\": \"1s\", \"every\": \"2s\", \"budget\": \"50%\"}"
check "$U schedules split (service $SVC): 201" [ "$CODE" = 201 ]
# Two recordings ended before the page opens: it has bars to show at
# once, and more come while it looks (bounded by the periods).
for ((i = 0; i < 150; i++)); do
	api GET "/api/v1/instances?worker=$W&status=FINISHED"
	[ "$(json "$TMP/api.out" 'len(j["instances"])')" -ge 2 ] 2>/dev/null && break
	sleep 0.2
done
check "two of its recordings ended" [ "$(json "$TMP/api.out" 'len(j["instances"])')" -ge 2 ]
mkdir -p "$NPROF_BUILD/e2e"
E2E_TIMEOUT=${E2E_TIMEOUT:-200} \
NPROF_E2E_DIR=$NPROF_BUILD/e2e NPROF_E2E_URL="http://$HTTP_ADDR/" NPROF_E2E_USER=$U NPROF_E2E_PASSWORD=$PW \
	NPROF_E2E_SERVICE=$SVC run_js daemon_services.js
# GET /api/v1/profiles/diff, which the page's Compare used: its refusals
SVC_Q=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$SVC")
NOW=$(date +%s)
api -u "$AS" GET "/api/v1/profiles/diff?service=$SVC_Q&mode=cpu&before_from=$((NOW - 600))&before_until=$NOW&after_from=$((NOW - 600))&after_until=$NOW&format=flat"
check "profiles/diff of one range with itself, flat: 200, nprof diff's table" \
	bash -c "[ $CODE = 200 ] && grep -qE '^# BEFORE [0-9]+ samples, AFTER [0-9]+ samples' '$TMP/api.out'"
api -u "$AS" GET "/api/v1/profiles/diff?service=$SVC_Q&mode=cpu&before_from=soon&after_from=$((NOW - 600))"
check "profiles/diff before_from=soon: 400 naming before_from" error_names 400 before_from
api -u "$AS" GET "/api/v1/profiles/diff?service=$SVC_Q&mode=cpu&after_from=$NOW&after_until=$((NOW - 60))"
check "profiles/diff after_from past after_until: 400 naming after_from" error_names 400 after_from
api -u "$AS" GET "/api/v1/profiles/diff?service=$SVC_Q&mode=cpu&format=svg"
check "profiles/diff format=svg: 400 naming format" error_names 400 format
api -u "$AS" GET "/api/v1/profiles/diff?service=$SVC_Q&mode=cpu&before_from=1000&before_until=2000"
check "profiles/diff with a before range of 1970: 404 naming before_from" error_names 404 before_from
check "split runs on" kill -0 "$SPLIT"
grep -q 'ERROR\|AddressSanitizer' "$D/log" && { diag "nprofd's log:"; diag_file "$D/log" 20; }
finish
