#!/usr/bin/env bash
# nprofd off loopback: in a network namespace of the test's own (its
# only interface is lo, so nothing leaves the machine), nprofd listens on
# 0.0.0.0 — which it refuses without TLS, naming the keys to set, and
# serves with a certificate: HTTPS with a token works, plain HTTP gets no
# answer, a wrong certificate authority is refused by the client. The
# trusted proxy header is taken from the configured address only.
. "$(dirname "$0")/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
command -v openssl >/dev/null || bail "openssl is installed (scripts/install-deps)"
unshare -n true 2>/dev/null || { skip "nprofd with TLS in a network namespace" "unshare -n is not allowed here"; finish; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	-subj /CN=nprofd -addext subjectAltName=IP:127.0.0.1 \
	-keyout "$D/key.pem" -out "$D/cert.pem" >/dev/null 2>&1 || bail "openssl makes a certificate"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	-subj /CN=other -keyout "$D/other.key" -out "$D/other.pem" >/dev/null 2>&1

# in_ns COMMAND...: runs COMMAND in the daemon's network namespace.
in_ns() { nsenter -t "$DAEMON" -n "$@"; }

cat >"$D/plain.conf" <<CONF
listen = 0.0.0.0:9700
CONF
"$NPROFD" --config "$D/plain.conf" --socket "$D/x.sock" --state-dir "$D/x" 2>"$D/plain.err"
rc=$?
check "listen = 0.0.0.0 without TLS in the config: refused (status $rc) naming tls_cert and tls_key" \
	bash -c "[ $rc -ne 0 ] && grep -q tls_cert '$D/plain.err' && grep -q tls_key '$D/plain.err'"

cat >"$D/tls.conf" <<CONF
listen = 0.0.0.0:9443
tls_cert = $D/cert.pem
tls_key = $D/key.pem
trusted_proxies = 127.0.0.1
CONF
: >"$D/log"
unshare -n bash -c "ip link set lo up && exec '$NPROFD' --config '$D/tls.conf' --socket '$SOCK' --state-dir '$D/state'" \
	2>"$D/log" &
DAEMON=$!
bg_pids+=("$DAEMON")
for ((i = 0; i < 200; i++)); do
	grep -q "listening on https://0.0.0.0:9443/" "$D/log" && break
	kill -0 "$DAEMON" 2>/dev/null || break
	sleep 0.05
done
check "with a certificate it listens on https://0.0.0.0:9443/" grep -q "listening on https://0.0.0.0:9443/" "$D/log"
api POST /api/v1/tokens '{"name": "tls"}'
TOKEN=$(json "$TMP/api.out" 'j["token"]')
CODE=$(in_ns curl -s -o "$TMP/api.out" -w '%{http_code}' --max-time 10 --cacert "$D/cert.pem" \
	-H "Authorization: Bearer $TOKEN" https://127.0.0.1:9443/api/v1/whoami)
check "HTTPS with the token: 200, root by token" \
	bash -c "[ $CODE = 200 ] && grep -q '\"via\":\"token\"' '$TMP/api.out'"
CODE=$(in_ns curl -s -o "$TMP/api.out" -w '%{http_code}' --max-time 10 \
	-H "Authorization: Bearer $TOKEN" http://127.0.0.1:9443/api/v1/whoami)
check "plain HTTP to the TLS port: no HTTP answer (got $CODE)" [ "$CODE" = 000 ]
in_ns curl -s -o /dev/null --max-time 10 --cacert "$D/other.pem" https://127.0.0.1:9443/api/v1/whoami
rc=$?
check "a client that trusts another authority refuses the certificate (curl status $rc)" [ "$rc" = 60 ]
CODE=$(in_ns curl -s -o "$TMP/api.out" -w '%{http_code}' --max-time 10 --cacert "$D/cert.pem" \
	-H "Authorization: Bearer nprof_wrong" https://127.0.0.1:9443/api/v1/whoami)
check "a wrong token: 401" [ "$CODE" = 401 ]
CODE=$(in_ns curl -s -o "$TMP/api.out" -w '%{http_code}' --max-time 10 --cacert "$D/cert.pem" \
	-H "X-Forwarded-User: nobody" https://127.0.0.1:9443/api/v1/whoami)
check "X-Forwarded-User from a trusted proxy address: that user, via proxy" \
	bash -c "[ $CODE = 200 ] && grep -q '\"user\":\"nobody\",\"uid\":65534,\"admin\":false,\"via\":\"proxy\"' '$TMP/api.out'"
kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null
sed -i 's/^trusted_proxies.*//' "$D/tls.conf"
# Emptied here, not only by the redirect below: that runs in the child,
# maybe after the wait's first look found the last daemon's line.
: >"$D/log"
unshare -n bash -c "ip link set lo up && exec '$NPROFD' --config '$D/tls.conf' --socket '$SOCK' --state-dir '$D/state'" \
	2>"$D/log" &
DAEMON=$!
bg_pids+=("$DAEMON")
for ((i = 0; i < 200; i++)); do
	grep -q "listening on" "$D/log" && break
	kill -0 "$DAEMON" 2>/dev/null || break
	sleep 0.05
done
grep -q "listening on" "$D/log" || diag_file "$D/log"
CODE=$(in_ns curl -s -o "$TMP/api.out" -w '%{http_code}' --max-time 10 --cacert "$D/cert.pem" \
	-H "X-Forwarded-User: root" https://127.0.0.1:9443/api/v1/whoami)
check "the same header from an address not configured: 401" [ "$CODE" = 401 ]

# A browser's sign-in over TLS: the session cookie is Secure too.
U=nproftls$$ PW="tls-$$-$RANDOM-pass"
if test_user "$U" "$PW"; then
	CODE=$(in_ns curl -s -o "$TMP/api.out" -D "$TMP/headers" -w '%{http_code}' --max-time 30 \
		--cacert "$D/cert.pem" -X POST -H 'Content-Type: application/json' \
		--data-binary "{\"user\": \"$U\", \"password\": \"$PW\"}" https://127.0.0.1:9443/api/v1/session)
	cookie=$(grep -i '^set-cookie:' "$TMP/headers" | tr -d '\r')
	check "signing in over HTTPS: 200, a cookie that is Secure, HttpOnly and SameSite=Strict ($cookie)" \
		bash -c "[ $CODE = 200 ] && grep -q '; Secure' <<<'$cookie' && grep -q HttpOnly <<<'$cookie' &&
			 grep -q 'SameSite=Strict' <<<'$cookie'"
	CODE=$(in_ns curl -s -o "$TMP/api.out" -w '%{http_code}' --max-time 10 --cacert "$D/cert.pem" \
		-X POST -H 'Origin: http://127.0.0.1:9443' -H 'Content-Type: application/json' \
		--data-binary "{\"user\": \"$U\", \"password\": \"$PW\"}" https://127.0.0.1:9443/api/v1/session)
	check "a sign-in from the same host but http:// (another origin): 403" [ "$CODE" = 403 ]
else
	not_ok "useradd and chpasswd make a test user"
fi
finish
