#!/usr/bin/env bash
# etcd over TLS (docs/cluster.md): a real etcd on loopback serving HTTPS
# only, requiring a client certificate (--client-cert-auth) signed by the
# test's CA; two nprofd daemons with [cluster] etcd_ca, etcd_cert and
# etcd_key register and list each other. A daemon that trusts another CA
# does not register, says why in one line in GET /api/v1/hosts (its
# cluster status, and the list's error), and still serves its own host;
# so does one without a client certificate, which etcd refuses. etcd's
# client certificates are authentication: no daemon warns of an open etcd.
# Certificates are made here by openssl (scripts/install-deps).
# test-timeout: 120
. "$(dirname "$0")/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
need_etcd "nprofd and etcd over TLS"
command -v openssl >/dev/null || bail "openssl is installed (scripts/install-deps)"

EPORT=$(free_port) PPORT=$(free_port)
ETCD_URL=https://127.0.0.1:$EPORT

# cert NAME CA EXT: NAME.key and NAME.pem, signed by CA (CA.pem, CA.key)
# with the extensions EXT.
cert() {
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
		-keyout "$D/$1.key" -out "$D/$1.csr" >/dev/null 2>&1 &&
		openssl x509 -req -in "$D/$1.csr" -CA "$D/$2.pem" -CAkey "$D/$2.key" \
			-CAcreateserial -days 1 -out "$D/$1.pem" -extfile <(printf '%b' "$3") >/dev/null 2>&1
}
for ca in ca other-ca; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=$ca" \
		-keyout "$D/$ca.key" -out "$D/$ca.pem" >/dev/null 2>&1 || bail "openssl makes $ca"
done
cert etcd ca 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' &&
	cert nprofd ca 'extendedKeyUsage=clientAuth\n' || bail "openssl makes etcd's and nprofd's certificates"
ok "a CA, etcd's certificate for 127.0.0.1 and a client certificate for nprofd, by openssl"

etcd --name nprof-tls --data-dir "$TMP/etcd" \
	--listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
	--listen-peer-urls "http://127.0.0.1:$PPORT" \
	--initial-advertise-peer-urls "http://127.0.0.1:$PPORT" \
	--initial-cluster "nprof-tls=http://127.0.0.1:$PPORT" \
	--cert-file "$D/etcd.pem" --key-file "$D/etcd.key" \
	--client-cert-auth --trusted-ca-file "$D/ca.pem" >"$TMP/etcd.log" 2>&1 &
bg_pids+=("$!")
ETCD_CURL=(curl -s --max-time 2 --cacert "$D/ca.pem" --cert "$D/nprofd.pem" --key "$D/nprofd.key")
for ((i = 0; i < 300; i++)); do
	"${ETCD_CURL[@]}" -X POST "$ETCD_URL/v3/kv/range" -d '{"key": "AA=="}' 2>/dev/null |
		grep -q header && break
	sleep 0.1
done
[ "$i" -lt 300 ] || { diag_file "$TMP/etcd.log"; bail "etcd answers on $ETCD_URL"; }
ok "etcd answers on $ETCD_URL to a client with a certificate of the CA"
check "and refuses one without a client certificate" \
	bash -c "! curl -s --max-time 10 --cacert '$D/ca.pem' -X POST '$ETCD_URL/v3/kv/range' -d '{\"key\": \"AA==\"}' | grep -q header"

head -c 32 /dev/urandom | base64 >"$D/cluster.key"
chmod 600 "$D/cluster.key"

# start_host NAME IP CA [CLIENT]: nprofd on IP with [cluster] etcd_ca =
# CA.pem and, unless CLIENT is "none", nprofd's client certificate.
start_host() {
	local name=$1 client="etcd_cert = $D/nprofd.pem
etcd_key = $D/nprofd.key"
	[ "${4:-}" = none ] && client=
	cat >"$D/$name.conf" <<CONF
[cluster]
etcd = $ETCD_URL
name = $name
key_file = $D/cluster.key
etcd_ca = $D/$3.pem
$client
hosts_cache = 0
CONF
	start_daemon "$D/$name.conf" "$name" "$2"
}
on() {
	local s=$1
	shift
	SOCK=$D/$s.sock api "$@"
}
hosts_of() {
	on "$1" GET /api/v1/hosts
	json "$TMP/api.out" '" ".join(h["name"] for h in j["hosts"])'
}
# wait_state HOST STATE: polls HOST's registration until STATE (30 s).
wait_state() {
	local i
	for ((i = 0; i < 300; i++)); do
		on "$1" GET /api/v1/hosts
		[ "$(json "$TMP/api.out" 'j["cluster"]["state"]')" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

start_host a 127.0.0.2 ca || bail "daemon a starts on 127.0.0.2"
start_host b 127.0.0.3 ca || bail "daemon b starts on 127.0.0.3"
start_host w 127.0.0.4 other-ca || bail "daemon w (trusting another CA) starts on 127.0.0.4"
start_host n 127.0.0.5 ca none || bail "daemon n (no client certificate) starts on 127.0.0.5"
ok "four daemons: a and b with the CA and a client certificate, w with another CA, n without a certificate"

for h in a b; do
	for ((i = 0; i < 300; i++)); do
		[ "$(hosts_of "$h")" = "a b" ] && break
		sleep 0.1
	done
	check "GET /api/v1/hosts through $h, over etcd's TLS: a b (registered, not partial)" \
		[ "$(json "$TMP/api.out" '" ".join(h["name"] for h in j["hosts"]), j["cluster"]["state"], j["partial"]')" = \
		  "('a b', 'registered', False)" ]
done
check "etcd takes client certificates only: a (registered) did not warn that it answers without authentication" \
	bash -c "! grep -q 'without authentication' '$D/a.log'"
on a GET "/api/v1/workers?host=*"
check "workers?host=* through a: answered by a and b" \
	[ "$(json "$TMP/api.out" 'sorted(j["answered"]), j["partial"]')" = "(['a', 'b'], False)" ]

# one_line_naming FILE WORDS: the JSON's cluster error is one line and
# names each of WORDS (a regular expression each, any case)
one_line_naming() {
	local e
	e=$(json "$TMP/api.out" 'j["cluster"]["error"]')
	shift
	[ -n "$e" ] && [ "$(printf '%s\n' "$e" | wc -l)" = 1 ] || return 1
	for w in "$@"; do
		printf '%s' "$e" | grep -qiE -- "$w" || return 1
	done
}
for h in w n; do
	if wait_state "$h" retrying; then
		ok "$h: not registered, retrying"
	else
		not_ok "$h: not registered, retrying (state: $(json "$TMP/api.out" 'j["cluster"]["state"]'))"
	fi
	diag "$h's error: $(json "$TMP/api.out" 'j["cluster"]["error"]')"
	check "$h's hosts: itself alone, partial, with the list's error" \
		[ "$(json "$TMP/api.out" '[x["name"] for x in j["hosts"]], j["partial"], bool(j["error"])')" = \
		  "(['$h'], True, True)" ]
	on "$h" GET "/api/v1/workers"
	check "$h still serves its own host: its workers, 200" \
		[ "$CODE,$(json "$TMP/api.out" 'len(j["workers"]) > 0')" = "200,True" ]
done
on w GET /api/v1/hosts
check "w's cluster error is one line naming etcd's certificate and etcd_ca" \
	one_line_naming "$TMP/api.out" certificate etcd_ca
on n GET /api/v1/hosts
check "n's cluster error is one line naming the TLS handshake and etcd_cert" \
	one_line_naming "$TMP/api.out" 'TLS|handshake' etcd_cert
check "neither w nor n is in a's list" [ "$(hosts_of a)" = "a b" ]
finish
