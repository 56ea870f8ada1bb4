#!/usr/bin/env bash
# A service profile from the web UI in Debian's Chromium
# (tests/e2e/daemon_group.js): a private daemon, a test user with a
# password who owns three spinners of one service; the page signs in as
# that user, ticks the service's workers and starts one profile of them
# all, follows it to its files, finds it as one row among the instances
# and its members on its page, and a root per process in its flame
# graph. Then the API agrees: one group of three members, each process's
# samples under its root.
# test-timeout: 300
. "$(dirname "$0")/lib.sh"
need_build
need_daemon
if ! need_browser; then
	skip "a service profile from the web UI" "$BROWSER_WHY"
	finish
fi
cat >"$D/nprofd.conf" <<CONF
[instances]
grace = 5s
CONF
start_daemon "$D/nprofd.conf" || bail "nprofd starts and listens"
U=nprofgu$$
PW="gu-$$-$RANDOM-pass"
test_user "$U" "$PW" || bail "useradd and chpasswd make the test user"
AS="setpriv --reuid=$U --regid=$U --init-groups"
# A service of this test's own: the service of a process is its
# executable's name.
SVC=guspin$$
cp "$PROGS/spin" "$TMP/$SVC"
chmod 755 "$TMP" "$TMP/$SVC"
PIDS=
for i in 1 2 3; do
	start_prog "s$i" $AS "$TMP/$SVC" --forever || bail "spin $i starts as $U"
	PIDS="$PIDS $PID"
done
mkdir -p "$NPROF_BUILD/e2e"
E2E_TIMEOUT=${E2E_TIMEOUT:-200} \
NPROF_E2E_DIR=$NPROF_BUILD/e2e NPROF_E2E_URL="http://$HTTP_ADDR/" NPROF_E2E_USER=$U NPROF_E2E_PASSWORD=$PW \
	NPROF_E2E_SERVICE=$SVC NPROF_E2E_PIDS="$PIDS" run_js daemon_group.js
# what the page started, as the API sees it
api GET "/api/v1/instances?parent=none&limit=10"
G=$(json "$TMP/api.out" '[i["id"] for i in j["instances"] if i.get("selector")][0]')
api GET "/api/v1/instances/$G"
check "the page's profile is one group of $U's three workers, FINISHED" \
	[ "$(json "$TMP/api.out" 'j["selector"]["workers"].__len__(), j["members"], j["user"], j["status"]')" = "(3, 3, '$U', 'FINISHED')" ]
api GET "/api/v1/artifacts/$(json "$TMP/api.out" 'j["artifacts"][0]["id"]')?format=collapsed"
for p in $PIDS; do
	check "pid $p's samples under its root in the group's profile" grep -q "^\[$SVC pid=$p\];" "$TMP/api.out"
done
grep -q 'ERROR\|AddressSanitizer' "$D/log" && { diag "nprofd's log:"; diag_file "$D/log" 20; }
finish
