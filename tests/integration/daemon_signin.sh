#!/usr/bin/env bash
# Signing in to nprofd with a host user's password (PAM): a session
# cookie (HttpOnly, SameSite=Strict) and a CSRF token; the user then sees
# and acts on their own workers only; a change without the CSRF token,
# or asked by a page of another origin, is refused; failures are
# answered alike for a wrong password and an unknown user, limited per
# name and address and per address (429 past the limit; never per name
# alone: failures from elsewhere keep no one out), and audited; sessions
# end at sign-out, at expiry, and past the per-user maximum.
. "$(dirname "$0")/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
command -v chpasswd >/dev/null || bail "chpasswd is installed (passwd)"
command -v sqlite3 >/dev/null || bail "sqlite3 is installed (scripts/install-deps)"

U1=nprofw1$$ U2=nprofw2$$ PW1="pw1-$$-Secret" PW2="pw2-$$-Secret"
test_user "$U1" "$PW1" && test_user "$U2" "$PW2" || bail "useradd and chpasswd make two test users"
AS1="setpriv --reuid=$U1 --regid=$U1 --init-groups"
usable_by_others || bail "the test programs are usable by other users"

cat >"$D/nprofd.conf" <<CONF
[signin]
max_sessions = 2
max_failures = 3
max_address_failures = 3
failure_window = 10m
CONF
start_daemon "$D/nprofd.conf" || bail "nprofd starts"

# signin FROM USER PASSWORD JAR: POST /api/v1/session from address FROM,
# cookies into JAR, headers into $TMP/headers.
signin() {
	CODE=$(curl -s -o "$TMP/api.out" -D "$TMP/headers" -w '%{http_code}' --max-time 30 \
		--interface "$1" -c "$4" -X POST -H 'Content-Type: application/json' \
		--data-binary "{\"user\": \"$2\", \"password\": \"$3\"}" "http://$HTTP_ADDR/api/v1/session")
}
# web JAR METHOD PATH [BODY [HEADER...]]: a request with JAR's cookies.
web() {
	local jar=$1 method=$2 path=$3 body=${4:-}
	shift 4 2>/dev/null || shift $#
	CODE=$(curl -s -o "$TMP/api.out" -D "$TMP/headers" -w '%{http_code}' --max-time 60 \
		-b "$jar" -X "$method" ${body:+-H 'Content-Type: application/json' --data-binary "$body"} \
		"$@" "http://$HTTP_ADDR$path")
}

signin 127.0.0.1 "$U1" "wrong-$PW1" "$D/jar0"
check "a wrong password: 401, 'wrong user name or password'" \
	bash -c "[ $CODE = 401 ] && grep -q 'wrong user name or password' '$TMP/api.out'"
check "no cookie is set" bash -c "! grep -qi '^set-cookie' '$TMP/headers'"
signin 127.0.0.1 "nosuchuser$$" "$PW1" "$D/jar0"
check "an unknown user: the same answer (401, the same words)" \
	bash -c "[ $CODE = 401 ] && grep -q 'wrong user name or password' '$TMP/api.out'"
CODE=$(curl -s -o "$TMP/api.out" -w '%{http_code}' -X POST --data-binary 'user=x&password=y' \
	"http://$HTTP_ADDR/api/v1/session")
check "a form body instead of JSON: 400 naming the JSON it wants" \
	bash -c "[ $CODE = 400 ] && grep -q 'password' '$TMP/api.out'"

signin 127.0.0.1 "$U1" "$PW1" "$D/jar1"
check "$U1 with the right password: 200" [ "$CODE" = 200 ]
CSRF1=$(json "$TMP/api.out" 'j["csrf"]')
check "the reply names the user and holds a CSRF token" \
	[ "$(json "$TMP/api.out" 'j["user"]')" = "$U1" -a ${#CSRF1} -ge 40 ]
cookie=$(grep -i '^set-cookie:' "$TMP/headers" | tr -d '\r')
check "the cookie: nprof_session, HttpOnly, SameSite=Strict, Path=/, Max-Age; not Secure over plain HTTP ($cookie)" \
	bash -c "grep -q 'nprof_session=nprof_' <<<'$cookie' && grep -q 'HttpOnly' <<<'$cookie' &&
		 grep -q 'SameSite=Strict' <<<'$cookie' && grep -q 'Path=/' <<<'$cookie' &&
		 grep -q 'Max-Age=28800' <<<'$cookie' && ! grep -q Secure <<<'$cookie'"
web "$D/jar1" GET /api/v1/session
check "GET /api/v1/session gives the page its user and CSRF token back" \
	bash -c "[ $CODE = 200 ] && [ \"\$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"csrf\"])' '$TMP/api.out')\" = '$CSRF1' ]"
web "$D/jar1" GET /api/v1/whoami
check "whoami: $U1, by session, not an admin" \
	[ "$(json "$TMP/api.out" 'j["user"], j["via"], j["admin"]')" = "('$U1', 'session', False)" ]
web "$D/jar1" GET /api/v1/host
check "the host page's facts: kernel $(uname -r), $(nproc) CPUs, and in words what perf and ptrace allow $U1" \
	[ "$(json "$TMP/api.out" 'j["kernel"], j["cpus"], len(j["perf"]["means"]) > 20, len(j["ptrace"]["means"]) > 20, j["perf"]["paranoid"]')" = \
	  "('$(uname -r)', $(nproc), True, True, $(cat /proc/sys/kernel/perf_event_paranoid))" ]
SESSION=$(awk '$6 == "nprof_session" {print $7}' "$D/jar1")
http "$SESSION" GET /api/v1/whoami
check "the session's token is no API token: as a bearer token, 401" [ "$CODE" = 401 ]

$AS1 "$PROGS/split" --seconds 600 >/dev/null 2>&1 &
P1=$!; bg_pids+=("$P1")
"$PROGS/split" --seconds 600 >/dev/null 2>&1 &
P0=$!; bg_pids+=("$P0")
sleep 0.3
W1=$(worker_of "$P1") W0=$(worker_of "$P0")
web "$D/jar1" GET "/api/v1/workers?pid=$P1"
check "$U1 sees its own worker" [ "$(json "$TMP/api.out" 'j["workers"][0]["id"]')" = "$W1" ]
web "$D/jar1" GET "/api/v1/workers"
check "and not root's" bash -c "! grep -q '\"$W0\"' '$TMP/api.out' && grep -q '\"$W1\"' '$TMP/api.out'"

web "$D/jar1" POST "/api/v1/workers/$W1/stacks" '{}'
check "a thread dump without the CSRF token: 403 naming X-CSRF-Token" \
	bash -c "[ $CODE = 403 ] && grep -q 'X-CSRF-Token' '$TMP/api.out'"
web "$D/jar1" POST "/api/v1/workers/$W1/stacks" '{}' -H "X-CSRF-Token: nprof_${CSRF1:6:20}"
check "with a wrong CSRF token: 403" [ "$CODE" = 403 ]
web "$D/jar1" POST "/api/v1/workers/$W1/stacks" '{}' -H "X-CSRF-Token: $CSRF1" \
	-H "Origin: http://evil.example"
check "with the token, but asked by a page of another origin: 403 naming it" \
	bash -c "[ $CODE = 403 ] && grep -q 'evil.example' '$TMP/api.out'"
web /dev/null POST "/api/v1/workers/$W1/stacks" 'x=1' -H 'Content-Type: application/x-www-form-urlencoded'
check "a cross-site form post (no cookie: SameSite=Strict keeps it): 401" [ "$CODE" = 401 ]
web "$D/jar1" POST "/api/v1/workers/$W1/stacks" '{}' -H "X-CSRF-Token: $CSRF1" \
	-H "Origin: http://$HTTP_ADDR"
check "with the token, from nprofd's own origin: 201" [ "$CODE" = 201 ]
INST=$(json "$TMP/api.out" 'j["id"]')
wait_instance "$INST" 30
ART=$(json "$TMP/inst.json" 'j["artifacts"][0]["id"]')
web "$D/jar1" GET "/api/v1/artifacts/$ART?format=text"
check "$U1 downloads its thread dump" [ "$CODE" = 200 ]
web "$D/jar1" POST "/api/v1/workers/$W0/stacks" '{}' -H "X-CSRF-Token: $CSRF1"
check "a thread dump of root's worker: 404" [ "$CODE" = 404 ]

signin 127.0.0.1 "$U2" "$PW2" "$D/jar2"
check "$U2 signs in" [ "$CODE" = 200 ]
web "$D/jar2" GET "/api/v1/artifacts/$ART?format=text"
check "$U2 cannot download $U1's thread dump: 404" [ "$CODE" = 404 ]
web "$D/jar2" GET "/api/v1/instances/$INST"
check "nor see the instance: 404" [ "$CODE" = 404 ]
web "$D/jar2" GET "/api/v1/instances"
check "nor find it in the list" bash -c "[ $CODE = 200 ] && ! grep -q '\"id\": *$INST,' '$TMP/api.out'"

api -u "$AS1" GET /api/v1/tokens
check "sessions are not in $U1's list of API tokens" \
	[ "$(json "$TMP/api.out" 'len(j["tokens"])')" = 0 ]

# --- limits ------------------------------------------------------------------
signin 127.0.0.1 "$U1" "$PW1" "$D/jar1b"
signin 127.0.0.1 "$U1" "$PW1" "$D/jar1c"
web "$D/jar1" GET /api/v1/session
check "a third session of $U1 (max_sessions = 2) ends the first: 401" [ "$CODE" = 401 ]
web "$D/jar1c" GET /api/v1/session
check "the newest works" [ "$CODE" = 200 ]
CSRF1C=$(json "$TMP/api.out" 'j["csrf"]')

sqlite3 "$D/state/nprofd.db" "UPDATE tokens SET expires = 1 WHERE kind = 'session' AND user = '$U2'"
web "$D/jar2" GET /api/v1/session
check "an expired session: 401" [ "$CODE" = 401 ]

for n in 1 2 3; do signin 127.0.0.3 "nosuch$n-$$" x "$D/jarx"; done
signin 127.0.0.3 "$U1" "$PW1" "$D/jarx"
check "3 failures from 127.0.0.3 (max_address_failures = 3): the right password from there gets 429 naming the wait" \
	bash -c "[ $CODE = 429 ] && grep -q 'try again in' '$TMP/api.out'"
signin 127.0.0.4 "$U2" wrong "$D/jarx"
signin 127.0.0.5 "$U2" wrong "$D/jarx"
signin 127.0.0.6 "$U2" wrong "$D/jarx"
signin 127.0.0.7 "$U2" "$PW2" "$D/jarx"
check "3 failures for $U2 from three addresses: $U2 from a fourth, where nothing failed, signs in (no lockout by name)" \
	[ "$CODE" = 200 ]
signin 127.0.0.1 "$U1" "$PW1" "$D/jar1d"
check "$U1 from 127.0.0.1 still signs in" [ "$CODE" = 200 ]

api GET "/api/v1/audit?limit=100"
check "the audit log has the failed sign-ins, by name, with the reason" \
	bash -c "python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))[\"audit\"]; sys.exit(not any(e[\"path\"] == \"/api/v1/session\" and e[\"status\"] == 401 and e[\"user\"] == sys.argv[2] and e[\"result\"].startswith(\"failed\") for e in a))' '$TMP/api.out' '$U1'"
check "the refused ones (429) and the successful ones (200, 'signed in')" \
	bash -c "python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))[\"audit\"]; s=[e[\"status\"] for e in a if e[\"path\"] == \"/api/v1/session\"]; sys.exit(not (429 in s and any(e[\"result\"].startswith(\"signed in\") for e in a)))' '$TMP/api.out'"

# --- signing out ----------------------------------------------------------------
web "$D/jar1c" DELETE /api/v1/session
check "signing out without the CSRF token: 403" [ "$CODE" = 403 ]
web "$D/jar1c" DELETE /api/v1/session '' -H "X-CSRF-Token: $CSRF1C"
check "with it: 200, and the cookie cleared (Max-Age=0)" \
	bash -c "[ $CODE = 200 ] && grep -qi '^set-cookie: nprof_session=;.*Max-Age=0' '$TMP/headers'"
web "$D/jar1c" GET /api/v1/workers
check "the old cookie no longer works: 401" [ "$CODE" = 401 ]
api -u "$AS1" POST /api/v1/session '{}'
check "over the unix socket there is nothing to sign in to: 400" [ "$CODE" = 400 ]
finish
