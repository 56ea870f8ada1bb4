#!/usr/bin/env bash
# Issue 23, hole 6: no Host check. What a DNS-rebinding page sends —
# Host: evil.example:PORT with a matching Origin, the name resolving to
# nprofd's own address — is refused with one line naming host_names, for
# a sign-in (no cookie set), a token's request and the web UI's page;
# what nprofd's own names send is served: the listen address, localhost
# on a loopback listener, this host's name, a name set in host_names
# (and its Origin); the unix socket has no Host to check.
. "$(dirname "$0")/../integration/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
command -v chpasswd >/dev/null || bail "chpasswd is installed (passwd)"

U=nprofhc$$ PW="pw-$$-Secret"
test_user "$U" "$PW" || bail "useradd and chpasswd make a test user"
cat >"$D/nprofd.conf" <<CONF
CONF
start_daemon "$D/nprofd.conf" || bail "nprofd starts"
PORT=${HTTP_ADDR##*:}
api POST /api/v1/tokens '{"name": "host"}'
TOKEN=$(json "$TMP/api.out" 'j["token"]')

# as_name NAME METHOD PATH [BODY [CURL ARGS...]]: a request to nprofd by
# the name NAME (curl --resolve: what a browser sends after DNS said
# NAME is 127.0.0.1), Origin http://NAME:PORT; headers in $TMP/headers.
as_name() {
	local name=$1 method=$2 path=$3 body=${4:-}
	shift 4 2>/dev/null || shift $#
	CODE=$(curl -s -o "$TMP/api.out" -D "$TMP/headers" -w '%{http_code}' --max-time 30 \
		--resolve "$name:$PORT:127.0.0.1" -X "$method" -H "Origin: http://$name:$PORT" \
		${body:+-H 'Content-Type: application/json' --data-binary "$body"} "$@" \
		"http://$name:$PORT$path")
}
names_fix() {
	[ "$(json "$TMP/api.out" 'j["error"]' | wc -l)" = 1 ] &&
		json "$TMP/api.out" 'j["error"]' | grep -q host_names
}
SIGNIN="{\"user\": \"$U\", \"password\": \"$PW\"}"

as_name evil.example POST /api/v1/session "$SIGNIN"
check "a rebinding page's sign-in (Host and Origin evil.example:$PORT): refused (421 or 400, got $CODE)" \
	[ "$CODE" = 421 -o "$CODE" = 400 ]
check "no session cookie is set" bash -c "! grep -qi '^set-cookie' '$TMP/headers'"
check "the error is one line naming host_names" names_fix
as_name evil.example GET /api/v1/whoami '' -H "Authorization: Bearer $TOKEN"
check "a token's request by that name: refused too ($CODE)" [ "$CODE" = 421 -o "$CODE" = 400 ]
as_name evil.example GET /
check "and the web UI's page ($CODE)" [ "$CODE" = 421 -o "$CODE" = 400 ]
CODE=$(curl -s -o "$TMP/api.out" -w '%{http_code}' --max-time 30 -H "Host: evil.example" \
	-H "Authorization: Bearer $TOKEN" "http://$HTTP_ADDR/api/v1/whoami")
check "Host: evil.example without a port, without Origin: refused ($CODE)" [ "$CODE" = 421 -o "$CODE" = 400 ]

as_name 127.0.0.1 POST /api/v1/session "$SIGNIN"
check "the listen address (127.0.0.1:$PORT) and its Origin: signed in (200)" [ "$CODE" = 200 ]
as_name localhost POST /api/v1/session "$SIGNIN"
check "localhost on a loopback listener: 200" [ "$CODE" = 200 ]
H=$(hostname)
as_name "$H" GET /api/v1/whoami '' -H "Authorization: Bearer $TOKEN"
check "this host's name ($H): 200" [ "$CODE" = 200 ]
CODE=$(curl -s -o "$TMP/api.out" -w '%{http_code}' --max-time 30 --unix-socket "$SOCK" \
	-H "Host: evil.example" "http://evil.example/api/v1/whoami")
check "over the unix socket, whatever the Host: 200" [ "$CODE" = 200 ]

kill "$DAEMON"; wait "$DAEMON" 2>/dev/null
cat >"$D/nprofd.conf" <<CONF
host_names = nprof.example, Profiler.Example.ORG
CONF
start_daemon "$D/nprofd.conf" || bail "nprofd starts with host_names"
PORT=${HTTP_ADDR##*:}
as_name nprof.example POST /api/v1/session "$SIGNIN"
check "with host_names = nprof.example, ...: a sign-in by that name, 200" [ "$CODE" = 200 ]
as_name profiler.example.org GET /api/v1/whoami '' -H "Authorization: Bearer $TOKEN"
check "names are compared without case (profiler.example.org): 200" [ "$CODE" = 200 ]
as_name evil.example POST /api/v1/session "$SIGNIN"
check "evil.example still refused ($CODE)" [ "$CODE" = 421 -o "$CODE" = 400 ]
as_name 127.0.0.1 GET /api/v1/whoami '' -H "Authorization: Bearer $TOKEN"
check "and the listen address still served: 200" [ "$CODE" = 200 ]
finish
