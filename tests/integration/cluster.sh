#!/usr/bin/env bash
# Several hosts, one view (docs/cluster.md): a real etcd on loopback and
# three nprofd daemons, a, b and c, each in its own PID namespace
# (unshare --pid --mount-proc: it sees only its own processes) with its
# own workers, each on its own loopback address (127.0.0.2, .3, .4),
# sharing a cluster key. Every host and every worker appears through
# any one daemon, each worker with its host; a host registered but not
# answering is named in unanswered and the list is partial; a user whose
# only worker is on b sees it through a and nothing of a or c; c refuses
# that user its worker, a request signed with the wrong key, a tampered
# one and a replayed one (401, audited), and serves an admin; c killed
# leaves the list within the lease's TTL (3 s) and the others still
# answer (etcd with its auth on: the daemons sign in to it, and again
# after it restarts); an instance started through a on c's worker runs on c and its
# flame graph downloads through a; a POST (Stop) and a DELETE (an
# artifact) with ?host=c are passed to c too, and a's audit log has them;
# a wall profile of b's and one of c's compare through a (before_host,
# after_host) as nprof diff compares the two downloaded; a service
# scheduled on b and on c is merged through a over every host
# (profiles?host=*), each host's part under its root "[host NAME]" and
# equal to that host's own merge, and its series summed (series?host=*);
# a schedule made on every host (schedules?host=*) is listed and
# deleted through a;
# etcd stopped leaves each daemon
# serving its own host (partial, "retrying"), and one started meanwhile
# serves its own; etcd started again restores the view; b stopped leaves
# it at once (its lease revoked). a, b and c read etcd on every request
# (hosts_cache = 0: these checks are about the registry as it is); d
# keeps a read for a minute: twenty lists through it cost etcd one. The
# page's whole journey (tests/e2e/daemon_ui.js, as daemon_ui.sh runs it
# on one host) runs once more at a's page on host c's workers, through
# the host filter (which offers this host, every host, b and c; every
# host shows a's, b's and c's workers): a user's split, split2,
# eight_threads, alloc_primes with the agent and a runit service, all in
# c's namespace, with c's [actions], [service] and [command] as
# daemon_ui.sh has them. Timeouts are a minute: the checks wait for
# conditions, never for a speed. The limits are safety nets, not bars:
# the page's journey takes 117 s here idle and 131 s beside two CPU
# hogs, and ran past 300 s on a CI host where daemon_api.sh ran beside
# it; the script took 428 s there.
# test-timeout: 900
. "$(dirname "$0")/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
need_etcd "a cluster of nprofd through etcd"
command -v unshare >/dev/null || bail "unshare is installed (util-linux)"
TTL=3

EPORT=$(free_port) PPORT=$(free_port)
ETCD_URL=http://127.0.0.1:$EPORT

start_etcd || bail "etcd starts on $ETCD_URL"
ok "etcd answers on $ETCD_URL"

# etcd with its auth on: the daemons sign in as root (etcd_user); this
# script's own calls to etcd carry a token too (etcd_call PATH BODY).
ETCD_PW="etcd-$$-pw"
printf '%s\n' "$ETCD_PW" >"$D/etcd.password"
chmod 600 "$D/etcd.password"
curl -s -X POST "$ETCD_URL/v3/auth/user/add" -d "{\"name\": \"root\", \"password\": \"$ETCD_PW\"}" >/dev/null
curl -s -X POST "$ETCD_URL/v3/auth/user/grant" -d '{"user": "root", "role": "root"}' >/dev/null
curl -s -X POST "$ETCD_URL/v3/auth/enable" -d '{}' >/dev/null
etcd_call() {
	local token
	token=$(curl -s -X POST "$ETCD_URL/v3/auth/authenticate" \
		-d "{\"name\": \"root\", \"password\": \"$ETCD_PW\"}" | json /dev/stdin 'j["token"]')
	curl -s -X POST -H "Authorization: $token" "$ETCD_URL$1" -d "$2"
}
check "etcd's auth is on: a call without a token is refused" \
	bash -c "! curl -s -X POST '$ETCD_URL/v3/kv/range' -d '{\"key\": \"AA==\"}' | grep -q header"

head -c 32 /dev/urandom | base64 >"$D/cluster.key"
chmod 600 "$D/cluster.key"
CU=nprofc$$ UI=nprofu$$ UIPW="pw-$$-Cluster" UI2=nprofv$$ UIPW2="pw2-$$-Cluster"
test_user "$CU" || bail "useradd makes a test user"
test_user "$UI" "$UIPW" && test_user "$UI2" "$UIPW2" || bail "useradd and chpasswd make the UI's users"
SV=$TMP/sv/splitsvc
# c has what the page's journey does (daemon_ui.sh's sections)
declare -A MORE_CONF=([c]="$(journey_conf "$SV")")
AS_CU="setpriv --reuid=$CU --regid=$CU --init-groups"

# start_host NAME IP WORKER_ARG [USER_WORKER_ARG [BUSY]]: nprofd as PID 1
# of a namespace of its own, after a `sleep WORKER_ARG` of root's (and
# one of the test user's, and the program BUSY) in it, with [cluster]
# hosts_cache = $HOSTS_CACHE (0 unless set) and max_hosts = $MAX_HOSTS
# (1000); sets NPROFD_PID[NAME] (its pid in this namespace).
declare -A NPROFD_PID
start_host() {
	local name=$1 ip=$2 i u child tls=""
	# b serves HTTPS with a self-signed certificate: the others pin its key
	[ "$name" = b ] && tls="tls_cert = $D/b.cert.pem
tls_key = $D/b.key.pem"
	cat >"$D/$name.conf" <<CONF
admin_users = root
$tls
[cluster]
etcd = $ETCD_URL
name = $name
key_file = $D/cluster.key
lease_ttl = ${TTL}s
etcd_user = root
etcd_password_file = $D/etcd.password
host_timeout = 60s
etcd_timeout = 900ms
max_reply = 16k
hosts_cache = ${HOSTS_CACHE:-0}
max_hosts = ${MAX_HOSTS:-1000}
${MORE_CONF[$name]:-}
CONF
	mkdir -p "$D/$name"
	: >"$D/$name.log"	# a restart must not find the last run's line
	unshare --pid --fork --mount-proc --kill-child sh -c '
		sleep "$1" & [ -n "$2" ] && setpriv --reuid="$3" --regid="$3" --init-groups sleep "$2" &
		[ -n "$4" ] && "$4" --seconds 600 >/dev/null &
		shift 4; exec "$@"' sh "$3" "${4:-}" "$CU" "${5:-}" \
		"$NPROFD" --config "$D/$name.conf" --socket "$D/$name.sock" --state-dir "$D/$name/state" \
		--listen "$ip:0" 2>"$D/$name.log" &
	u=$!
	bg_pids+=("$u")
	for ((i = 0; i < 200; i++)); do
		child=$(cat /proc/"$u"/task/*/children 2>/dev/null | awk '{ print $1 }')
		if [ -n "$child" ] && grep -q 'listening on' "$D/$name.log" 2>/dev/null; then
			NPROFD_PID[$name]=$child
			bg_pids+=("$child")
			return 0
		fi
		kill -0 "$u" 2>/dev/null || break
		sleep 0.05
	done
	diag_file "$D/$name.log"
	return 1
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=b \
	-keyout "$D/b.key.pem" -out "$D/b.cert.pem" >/dev/null 2>&1 || bail "openssl makes b's certificate"
B_PIN="sha256//$(openssl x509 -in "$D/b.cert.pem" -pubkey -noout | openssl pkey -pubin -outform der |
	openssl dgst -sha256 -binary | base64 -w0)"
start_host a 127.0.0.2 6001 || bail "daemon a starts in a PID namespace of its own on 127.0.0.2"
start_host b 127.0.0.3 6002 6102 || bail "daemon b starts on 127.0.0.3"
start_host c 127.0.0.4 6003 "" "$PROGS/split" || bail "daemon c starts on 127.0.0.4"
ok "three daemons, each PID 1 of its own namespace, on 127.0.0.2, .3 and .4"
URL_C=$(sed -n 's|.*listening on \(http://[^/]*\)/.*|\1|p' "$D/c.log" | head -1)

# on HOST METHOD PATH: api over HOST's socket (as root, or as $AS).
on() {
	local s=$1
	shift
	SOCK=$D/$s.sock api ${AS:+-u "$AS"} "$@"
}
# hosts_of HOST: the names HOST lists, space-separated.
hosts_of() {
	on "$1" GET /api/v1/hosts
	json "$TMP/api.out" '" ".join(h["name"] for h in j["hosts"])'
}
# wait_hosts HOST WANT [SECONDS]: polls until HOST lists exactly WANT.
wait_hosts() {
	local i
	for ((i = 0; i < ${3:-30} * 10; i++)); do
		[ "$(hosts_of "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# --- every host through any one daemon --------------------------------------
for h in a b c; do
	if wait_hosts "$h" "a b c" 30; then
		ok "GET /api/v1/hosts through $h: a b c"
	else
		not_ok "GET /api/v1/hosts through $h: a b c (got: $(hosts_of "$h"))"
	fi
done
on a GET /api/v1/hosts
check "each host has its URL on its own address, health registered; a is self" \
	[ "$(json "$TMP/api.out" '[(h["url"].split(":")[1], h["health"], h["self"]) for h in j["hosts"]]')" = \
	  "[('//127.0.0.2', 'registered', True), ('//127.0.0.3', 'registered', False), ('//127.0.0.4', 'registered', False)]" ]
check "b, on TLS, registered https and its key's pin (as openssl computes it); the others none" \
	[ "$(json "$TMP/api.out" '[(h["url"].split(":")[0], h.get("tls_pin")) for h in j["hosts"]]')" = \
	  "[('http', None), ('https', '$B_PIN'), ('http', None)]" ]
check "the registration's status: registered, lease ${TTL} s" \
	[ "$(json "$TMP/api.out" 'j["cluster"]["state"], j["cluster"]["lease_ttl"], j["partial"]')" = \
	  "('registered', $TTL, False)" ]
check "etcd's auth is on: a (registered, so it has asked) did not warn that etcd answers without authentication" \
	bash -c "! grep -q 'without authentication' '$D/a.log'"

# where WORKER_ARG: the host of the worker "sleep ARG" in the last list
where() { json "$TMP/api.out" "' '.join(sorted(w['host'] for w in j['workers'] if w['cmdline'] == 'sleep $1'))"; }
for h in a c; do
	on "$h" GET "/api/v1/workers?host=*"
	check "workers?host=* through $h: sleep 6001 on a, 6002 on b, 6003 on c, 6102 on b" \
		[ "$(where 6001),$(where 6002),$(where 6003),$(where 6102)" = "a,b,c,b" ]
	check "through $h: answered by a, b, c; nothing unanswered, not partial" \
		[ "$(json "$TMP/api.out" 'sorted(j["answered"]), j["unanswered"], j["partial"]')" = \
		  "(['a', 'b', 'c'], [], False)" ]
done
check "each namespace sees its own processes only: no worker of a is pid > 10" \
	[ "$(json "$TMP/api.out" 'max(w["pid"] for w in j["workers"] if w["host"] == "a")')" -lt 10 ]
on a GET "/api/v1/workers?host=b"
check "workers?host=b through a: b's alone" \
	[ "$(json "$TMP/api.out" 'sorted(set(w["host"] for w in j["workers"])), j["answered"]')" = "(['b'], ['b'])" ]
on a GET "/api/v1/workers?host=*&batch=2"
check "host=*&batch=2 through a: a and b, next=b" \
	[ "$(json "$TMP/api.out" 'sorted(j["answered"]), j.get("next"), sorted(set(w["host"] for w in j["workers"]))')" = \
	  "(['a', 'b'], 'b', ['a', 'b'])" ]
on a GET "/api/v1/workers?host=*&batch=2&after=b"
check "then after=b: c alone, no next" \
	[ "$(json "$TMP/api.out" 'j["answered"], j.get("next"), sorted(set(w["host"] for w in j["workers"]))')" = \
	  "(['c'], None, ['c'])" ]
on a GET "/api/v1/workers?host=*&batch=0"
check "batch=0: 400 naming batch" error_names 400 batch
on a GET "/api/v1/workers?host=zz"
check "workers?host=zz: 404 naming host" error_names 404 host

# --- a host registered that does not answer ------------------------------
# register NAME RECORD: RECORD (a JSON object's compact text) put at
# NAME's key in etcd, signed with the cluster key as a daemon signs its
# own registration (docs/cluster.md): what a host of the cluster could
# write, not a stranger to the key.
register() {
	local key=/nprof/v1/hosts/$1 value
	value=$(python3 - "$key" "$2" "$D/cluster.key" <<'PY'
import hashlib, hmac, sys
key, rec, keyfile = sys.argv[1:4]
k = open(keyfile, "rb").read()
if k.endswith(b"\n"):
    k = k[:-1]
zeroed = rec[:-1] + ',"sig":"' + "0" * 64 + '"}'
sig = hmac.new(k, ("nprof-cluster-host-v1\n%s\n%s" % (key, zeroed)).encode(), hashlib.sha256).hexdigest()
print(zeroed[:-66] + sig + '"}')
PY
)
	etcd_call /v3/kv/put "{\"key\": \"$(printf %s "$key" | base64 -w0)\", \"value\": \"$(printf %s "$value" | base64 -w0)\"}" >/dev/null
}
register zz "$(printf '{"name":"zz","url":"http://127.0.0.5:%s/"}' "$(free_port)")"
on a GET "/api/v1/workers?host=*"
check "a registered host that does not answer: named in unanswered, the list partial, the others there" \
	[ "$(json "$TMP/api.out" '[u["host"] for u in j["unanswered"]], j["partial"], sorted(j["answered"])')" = \
	  "(['zz'], True, ['a', 'b', 'c'])" ]
etcd_call /v3/kv/deleterange "{\"key\": \"$(printf /nprof/v1/hosts/zz | base64 -w0)\"}" >/dev/null

B_URL=$(sed -n 's|.*listening on \(https://[^/]*/\).*|\1|p' "$D/b.log" | head -1)
register zy "$(printf '{"name":"zy","url":"%s","tls_pin":"sha256//%s"}' "$B_URL" "$(head -c 32 /dev/zero | base64 -w0)")"
on a GET "/api/v1/workers?host=zy"
check "a host registered at b's https URL with another key's pin: unanswered, the error naming the pin" \
	[ "$(json "$TMP/api.out" 'j["answered"], [u["host"] for u in j["unanswered"]], "pin" in j["unanswered"][0]["error"].lower()')" = \
	  "([], ['zy'], True)" ]
etcd_call /v3/kv/deleterange "{\"key\": \"$(printf /nprof/v1/hosts/zy | base64 -w0)\"}" >/dev/null

# --- a user is who they are on each host -----------------------------------
AS=$AS_CU on a GET "/api/v1/workers?host=*"
check "$CU through a: their sleep 6102 on b and nothing else, a b c answering" \
	[ "$(json "$TMP/api.out" '[(w["host"], w["cmdline"]) for w in j["workers"]], sorted(j["answered"])')" = \
	  "([('b', 'sleep 6102')], ['a', 'b', 'c'])" ]

# sign METHOD PATH USER [KEYFILE]: the X-Nprof-Cluster header a daemon
# named a would send c at its URL (docs/cluster.md), in SIG.
sign() {
	SIG=$(python3 - "$1" "$2" "$3" "${4:-$D/cluster.key}" "${URL_C#http://}" <<'PY'
import hashlib, hmac, os, sys, time
method, path, user, keyfile, at = sys.argv[1:6]
key = open(keyfile, "rb").read()
if key.endswith(b"\n"):
    key = key[:-1]
ts, nonce = str(int(time.time() * 1000)), os.urandom(16).hex()
text = "\n".join(["nprof-cluster-v2", method, path, "", "a", "c", at, user, "0", ts, nonce,
                  hashlib.sha256(b"").hexdigest()])
sig = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
print(f"v=2;host=a;to=c;at={at};user={user};uid=0;ts={ts};nonce={nonce};sig={sig}")
PY
)
}
signed() { CODE=$(curl -s -o "$TMP/api.out" -w '%{http_code}' --max-time 30 -H "X-Nprof-Cluster: $1" "$URL_C$2"); }
on c GET "/api/v1/workers?q=6003"
WC=$(json "$TMP/api.out" 'j["workers"][0]["id"]')
sign GET "/api/v1/workers/$WC" "$CU"
signed "$SIG" "/api/v1/workers/$WC"
check "c: $CU, who owns nothing there, asking for c's worker $WC: 404" error_names 404 worker
sign GET "/api/v1/workers/$WC" root
signed "$SIG" "/api/v1/workers/$WC"
check "c: root (an admin on c) asking for it: 200" [ "$CODE" = 200 ]
signed "$SIG" "/api/v1/workers/$WC"
check "c: the same signed request again (a replay): 401" [ "$CODE" = 401 ]
head -c 32 /dev/urandom | base64 >"$TMP/other.key"
sign GET "/api/v1/workers/$WC" root "$TMP/other.key"
signed "$SIG" "/api/v1/workers/$WC"
check "c: signed with another key: 401 naming the key file" \
	bash -c "[ $CODE = 401 ] && grep -q key_file '$TMP/api.out'"
sign GET "/api/v1/workers" root
signed "$SIG" "/api/v1/workers/$WC"
check "c: a signature for another path: 401" [ "$CODE" = 401 ]
CODE=$(curl -s -o "$TMP/api.out" -w '%{http_code}' --max-time 30 -H "X-Nprof-Cluster: v=1;host=a;user=root" "$URL_C/api/v1/workers")
check "c: a client claiming to be a daemon without a signature: 401" [ "$CODE" = 401 ]
on c GET "/api/v1/audit?limit=20"
check "c's audit log has the refused signed requests (via cluster, 401)" \
	[ "$(json "$TMP/api.out" 'len([a for a in j["audit"] if a["via"] == "cluster" and a["status"] == 401]) >= 4')" = True ]

# --- an instance on c's worker, started and downloaded through a ---------------
on a GET "/api/v1/workers?host=c&q=split"
WS=$(json "$TMP/api.out" 'j["workers"][0]["id"]')
SPLIT_PID=$(json "$TMP/api.out" 'j["workers"][0]["pid"]')
on a POST "/api/v1/instances?host=c" "{\"worker\": \"$WS\", \"mode\": \"cpu\", \"duration\": \"2s\", \"interval\": \"5ms\"}"
RI=$(json "$TMP/api.out" 'j["id"]')
check "POST /api/v1/instances?host=c through a, on c's split ($WS): 201 RUNNING" \
	[ "$CODE,$(json "$TMP/api.out" 'j["status"]')" = "201,RUNNING" ]
SOCK=$D/a.sock wait_instance "$RI?host=c" 60
cp "$TMP/inst.json" "$TMP/remote_inst.json"
check "its status through a: FINISHED" [ "$STATUS" = FINISHED ]
on c GET "/api/v1/instances/$RI"
check "it ran on c: c's own socket has instance $RI, of split's pid there ($SPLIT_PID)" \
	[ "$CODE,$(json "$TMP/api.out" 'j["pid"]')" = "200,$SPLIT_PID" ]
on a GET "/api/v1/instances/$RI"
check "and not on a: a's own instance $RI is 404" [ "$CODE" = 404 ]
RA=$(json "$TMP/remote_inst.json" 'j["artifacts"][0]["id"]')
curl -s --unix-socket "$D/a.sock" -o "$TMP/remote.html" -D "$TMP/remote.h" \
	"http://nprofd/api/v1/artifacts/$RA?host=c&format=flamegraph"
check "its flame graph downloads through a: text/html, an attachment, naming burn_sixty" \
	bash -c "grep -qi '^content-type: text/html' '$TMP/remote.h' &&
		grep -qi '^content-disposition: attachment; filename=\"cpu-' '$TMP/remote.h' &&
		grep -q burn_sixty '$TMP/remote.html'"
size=$(stat -c %s "$TMP/remote.html")
check "streamed through a: $size bytes, above [cluster] max_reply (16k), which bounds what is held" \
	[ "$size" -gt 16384 ]
curl -s --unix-socket "$D/a.sock" -o "$TMP/via_a.pb.gz" "http://nprofd/api/v1/artifacts/$RA?host=c"
curl -s --unix-socket "$D/c.sock" -o "$TMP/on_c.pb.gz" "http://nprofd/api/v1/artifacts/$RA"
check "the profile as stored, through a, is c's byte for byte ($(stat -c %s "$TMP/on_c.pb.gz") bytes)" \
	cmp -s "$TMP/via_a.pb.gz" "$TMP/on_c.pb.gz"
on a GET "/api/v1/instances?host=*&limit=5"
check "instances?host=* through a: c's instance $RI there, with its host; answered by a, b, c" \
	[ "$(json "$TMP/api.out" '[(i["host"], i["id"]) for i in j["instances"] if i["host"] == "c"], sorted(j["answered"])')" = \
	  "([('c', $RI)], ['a', 'b', 'c'])" ]
on a GET "/api/v1/artifacts?host=c"
check "artifacts?host=c through a: its artifact $RA" \
	[ "$(json "$TMP/api.out" '[(x["host"], x["id"]) for x in j["artifacts"]]')" = "[('c', $RA)]" ]
on a GET "/api/v1/artifacts/999999?host=c"
check "an artifact c does not have, through a: c's 404, as c said it" error_names 404 id
# a schedule on c, made, paused and deleted through a (the PATCH's body
# goes along)
on a POST "/api/v1/schedules?host=c" "{\"selector\": {\"workers\": [\"$WS\"]}, \"modes\": [\"page-faults\"], \"duration\": \"1s\", \"every\": \"1h\"}"
RS=$(json "$TMP/api.out" 'j["id"]')
check "POST /api/v1/schedules?host=c through a: 201 on c, matching c's split" \
	[ "$CODE,$(json "$TMP/api.out" 'j["matches"]')" = "201,1" ]
on a PATCH "/api/v1/schedules/$RS?host=c" '{"status": "PAUSED"}'
on c GET "/api/v1/schedules/$RS"
check "PATCH ?host=c through a: paused on c" [ "$(json "$TMP/api.out" 'j["status"]')" = PAUSED ]
on a DELETE "/api/v1/schedules/$RS?host=c"
on c GET "/api/v1/schedules/$RS"
check "DELETE ?host=c through a: gone from c" [ "$CODE" = 404 ]
AS=$AS_CU on a POST "/api/v1/instances?host=c" "{\"worker\": \"$WS\", \"mode\": \"cpu\", \"duration\": \"2s\"}"
check "$CU (workers only on b) starting one on c's worker through a: refused by c, 404" \
	error_names 404 worker
# POST and DELETE are passed on as GET is (what the page's Stop and Delete send)
on a POST "/api/v1/instances?host=c" "{\"worker\": \"$WS\", \"mode\": \"cpu\", \"duration\": \"60s\"}"
RL=$(json "$TMP/api.out" 'j["id"]')
on a POST "/api/v1/instances/$RL/stop?host=c"
check "POST /api/v1/instances/$RL/stop?host=c through a: $CODE" [ "${CODE:0:1}" = 2 ]
SOCK=$D/c.sock wait_instance "$RL" 60
check "c's instance $RL, stopped through a: STOPPED on c" [ "$STATUS" = STOPPED ]
on a DELETE "/api/v1/artifacts/$RA?host=c"
check "DELETE /api/v1/artifacts/$RA?host=c through a: $CODE" [ "${CODE:0:1}" = 2 ]
on c GET "/api/v1/artifacts/$RA?info=1"
check "and c no longer has it: 404" [ "$CODE" = 404 ]

# --- two hosts' profiles compared through a ---------------------------------------
# A wall profile of b's sleep and one of c's split, each made on its host;
# a fetches both (signed for root) and compares them: what nprof diff
# gives on the two profiles downloaded, byte for byte.
on a GET "/api/v1/workers?host=b"
WB=$(json "$TMP/api.out" '[w["id"] for w in j["workers"] if w["name"] == "sleep"][0]')
on a POST "/api/v1/instances?host=b" "{\"worker\": \"$WB\", \"mode\": \"wall\", \"duration\": \"2s\"}"
IB=$(json "$TMP/api.out" 'j["id"]')
on a POST "/api/v1/instances?host=c" "{\"worker\": \"$WS\", \"mode\": \"wall\", \"duration\": \"2s\"}"
IC=$(json "$TMP/api.out" 'j["id"]')
SOCK=$D/a.sock wait_instance "$IB?host=b" 60
AB=$(artifact_of)
SOCK=$D/a.sock wait_instance "$IC?host=c" 60
AC=$(artifact_of)
curl -s --unix-socket "$D/a.sock" -o "$TMP/b_wall.pb.gz" "http://nprofd/api/v1/artifacts/$AB?host=b"
curl -s --unix-socket "$D/a.sock" -o "$TMP/c_wall.pb.gz" "http://nprofd/api/v1/artifacts/$AC?host=c"
# The table (its top 20 rows: b's sleep frames and ties at c's thread
# shares come first, so which functions make it varies) and every stack
# (collapsed, naming c's burn_sixty).
for f in "flat:[running]" collapsed:burn_sixty; do
	fmt=${f%%:*} want=${f#*:}
	on a GET "/api/v1/diff?before=$AB&before_host=b&after=$AC&after_host=c&format=$fmt"
	cp "$TMP/api.out" "$TMP/two_hosts.$fmt"
	"$NPROF" diff "$TMP/b_wall.pb.gz" "$TMP/c_wall.pb.gz" -o "$fmt" >"$TMP/local.$fmt" 2>"$TMP/local.err"
	what="b's wall profile ($AB) against c's ($AC), compared through a: nprof diff's own $fmt of the two, with $want"
	if [ "$CODE" = 200 ] && cmp -s "$TMP/two_hosts.$fmt" "$TMP/local.$fmt" &&
		grep -qF -- "$want" "$TMP/local.$fmt"; then
		ok "$what"
	else
		not_ok "$what"
		diag "through a ($CODE), then nprof diff on the two downloaded:"
		diff "$TMP/two_hosts.$fmt" "$TMP/local.$fmt" | diag_file /dev/stdin 20
		diag_file "$TMP/local.$fmt" 20
		diag_file "$TMP/local.err" 3
	fi
done
on a GET "/api/v1/diff?before=$AB&before_host=zz&after=$AC&after_host=c"
check "a host not in the cluster, for before: 404 naming before" error_names 404 before
on b GET "/api/v1/diff?before=$AB&after=$AC&after_host=c"
check "the same from b's own socket to c: compared too (b asks c itself)" [ "$CODE" = 200 ]
on b GET "/api/v1/diff?before=$AC&before_host=c&after=$AB&format=flat"
check "and the other way, b's own (a root-only file) after c's: compared by nprof as nobody, given both open" \
	[ "$CODE" = 200 ]
on a GET "/api/v1/host?host=c"
check "GET /api/v1/host?host=c through a: c's facts ($CODE)" \
	[ "$CODE,$(json "$TMP/api.out" 'j["kernel"]')" = "200,$(uname -r)" ]

# --- a service over time on every host, through a --------------------------------
# split (root's) on b too; a schedule of service split on b and on c,
# each recording its host's; then a merges each host's profile of the
# service (GET /api/v1/profiles?host=*), each under its host's root. a
# has no split: nothing of it, and not an error.
nsenter -t "${NPROFD_PID[b]}" -p -m -- "$PROGS/split" --seconds 600 >/dev/null 2>&1 &
disown
for ((i = 0; i < 600; i++)); do
	on b GET "/api/v1/workers?q=split"
	[ "$(json "$TMP/api.out" 'len(j["workers"])')" = 1 ] 2>/dev/null && break
	sleep 0.1
done
for h in b c; do
	on "$h" POST /api/v1/schedules '{"selector": {"service": "split"}, "modes": ["cpu"], "duration": "1s", "every": "2s", "budget": "50%"}'
	eval "SCH_$h=\$(json \"\$TMP/api.out\" 'j[\"id\"]')"
	check "a schedule of service split on $h: 201, matching one worker there" \
		[ "$CODE,$(json "$TMP/api.out" 'j["matches"]')" = "201,1" ]
done
for h in b c; do
	eval "sch=\$SCH_$h"
	for ((i = 0; i < 600; i++)); do
		on "$h" GET "/api/v1/instances?schedule=$sch&status=FINISHED"
		[ "$(json "$TMP/api.out" 'len(j["instances"])')" -ge 1 ] 2>/dev/null && break
		sleep 0.1
	done
	on "$h" DELETE "/api/v1/schedules/$sch"
done
# (a recording running at the DELETE ends within its second: the ranges
# below are read after)
sleep 3
NOW=$(($(date +%s) + 60))
for h in b c; do
	on "$h" GET "/api/v1/profiles?service=split&mode=cpu&until=$NOW&format=collapsed"
	cp "$TMP/api.out" "$TMP/split_$h.collapsed"
done
on a GET "/api/v1/profiles?service=split&mode=cpu&until=$NOW&host=*&format=collapsed"
cp "$TMP/api.out" "$TMP/split_all.collapsed"
check "profiles?host=* through a: 200, every stack under [host b] or [host c]" \
	bash -c "[ $CODE = 200 ] && [ \$(grep -vc '^\[host [bc]\];' '$TMP/split_all.collapsed') = 0 ]"
for h in b c; do
	n=$(grep "^\[host $h\];" "$TMP/split_all.collapsed" | sed "s/^\[host $h\];//" | total /dev/stdin)
	check "host $h's part holds $h's own merge of the service: $n = $(total "$TMP/split_$h.collapsed") samples, burn_sixty among them" \
		bash -c "[ $n -gt 0 ] && [ $n = $(total "$TMP/split_$h.collapsed") ] && grep -q '^\[host $h\];.*burn_sixty' '$TMP/split_all.collapsed'"
done
on a GET "/api/v1/profiles?service=no-such-service&mode=cpu&host=*"
check "a service no host has, host=*: 404 naming service" error_names 404 service
sum=$(( $(total "$TMP/split_b.collapsed") + $(total "$TMP/split_c.collapsed") ))
on a GET "/api/v1/profiles/series?service=split&mode=cpu&until=$NOW&host=*"
cp "$TMP/api.out" "$TMP/series_all.json"
check "profiles/series?host=* through a: from b and c, its points and what fell outside add up to their two merges ($(json "$TMP/series_all.json" 'j.get("hosts"), sum(p["value"] for p in j.get("points", [])), j.get("outside")') = $sum)" \
	[ "$CODE $(json "$TMP/series_all.json" 'sorted(j["hosts"]), round(sum(p["value"] for p in j["points"]) + j["outside"])')" = "200 (['b', 'c'], $sum)" ]
on c GET "/api/v1/profiles/series?service=split&mode=cpu&until=$NOW&step=$(json "$TMP/series_all.json" 'j["step"]')"
check "and c's own series, of the same steps, is part of it: each point at most the sum's" \
	[ "$(python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2])); s = {p["t"]: p["value"] for p in a["points"]}; print(len(c["points"]) > 0 and all(p["t"] in s and p["value"] <= s[p["t"]] for p in c["points"]))' "$TMP/series_all.json" "$TMP/api.out")" = True ]

on a GET "/api/v1/audit?limit=50"
check "a's own audit log has the Stop, the Delete and the schedule's requests as passed to c" \
	[ "$(json "$TMP/api.out" 'sorted((x["method"], x["path"]) for x in j["audit"] if x["result"] == "on host c" and x["method"] != "GET" and x["path"] != "/api/v1/instances")')" = \
	  "[('DELETE', '/api/v1/artifacts/$RA'), ('DELETE', '/api/v1/schedules/$RS'), ('PATCH', '/api/v1/schedules/$RS'), ('POST', '/api/v1/instances/$RL/stop'), ('POST', '/api/v1/schedules')]" ]

# --- a schedule on every host, through a -------------------------------------------
count_schedules() { on "$1" GET /api/v1/schedules; json "$TMP/api.out" 'len(j["schedules"])'; }
nb=$(count_schedules b) nc=$(count_schedules c)
on a POST "/api/v1/schedules?host=*" '{"selector": {"service": "split"}, "modes": ["page-faults"], "duration": "5s", "every": "2s"}'
check "host=* with a period shorter than its recordings: a's 400 naming every, for all" error_names 400 every
check "and nothing made on b ($nb, then $(count_schedules b))" [ "$(count_schedules b)" = "$nb" ]
on a POST "/api/v1/schedules?host=*" '{"selector": {"service": "split"}, "modes": ["page-faults"], "duration": "1s", "every": "1h"}'
cp "$TMP/api.out" "$TMP/sched_all.json"
check "POST /api/v1/schedules?host=*: 201, made on a, b and c, each with its host and matches (split on b and c)" \
	[ "$CODE $(json "$TMP/sched_all.json" 'sorted((x["host"], x["matches"], x["status"]) for x in j["schedules"]), j["partial"]')" = \
	  "201 ([('a', 0, 'ACTIVE'), ('b', 1, 'ACTIVE'), ('c', 1, 'ACTIVE')], False)" ]
on a GET "/api/v1/schedules?host=*"
check "GET /api/v1/schedules?host=*: each host's, with its host" \
	[ "$(json "$TMP/api.out" 'sorted((x["host"], x["id"]) for x in j["schedules"] if x["modes"] == ["page-faults"] and x["every"] == 3600)')" = \
	  "$(json "$TMP/sched_all.json" 'sorted((x["host"], x["id"]) for x in j["schedules"])')" ]
on a POST /api/v1/schedules '{"host": "c", "selector": {"service": "split"}, "modes": ["page-faults"], "duration": "1s", "every": "2h"}'
SC2=$(json "$TMP/api.out" 'j["id"]')
on c GET "/api/v1/schedules/$SC2"
check "\"host\": \"c\" in the body, through a: made on c ($CODE)" \
	[ "$CODE $(json "$TMP/api.out" 'j["every"]')" = "200 7200.0" ]
on a POST "/api/v1/schedules?host=b" '{"host": "*", "selector": {"service": "split"}, "modes": ["page-faults"], "every": "1h"}'
check "?host=b with \"host\": \"*\" in the body: b, asked by a, refuses to ask every host: 400 naming host" \
	error_names 400 host
check "and makes nothing (b has host=*'s one: $((nb + 1)), then $(count_schedules b))" \
	[ "$(count_schedules b)" = "$((nb + 1))" ]
on a POST "/api/v1/schedules?host=*" '{"host": "c", "selector": {"service": "split"}, "modes": ["page-faults"], "every": "1h"}'
check "?host=* with \"host\": \"c\" in the body: 400 naming host" error_names 400 host
deleted=
for x in $(json "$TMP/sched_all.json" '" ".join("%s:%s" % (x["host"], x["id"]) for x in j["schedules"])') c:$SC2; do
	on a DELETE "/api/v1/schedules/${x#*:}?host=${x%%:*}"
	deleted+=" $x:$CODE"
done
left="$(count_schedules b) $(count_schedules c)"
check "each deleted through a with ?host=NAME ($deleted): b and c have as many as before ($nb $nc, now $left)" \
	[ "$left" = "$nb $nc" ]

# --- from a shell: NPROF_HOST ---------------------------------------------------------
NPROF_SOCKET=$D/a.sock NPROF_HOST='*' "$NPROF" workers >"$TMP/workers_all.txt" 2>&1
check "NPROF_HOST='*' nprof workers through a: a HOST column, a's, b's and c's workers ($(awk 'NR > 1 { print $1 }' "$TMP/workers_all.txt" | sort -u | tr '\n' ' '))" \
	bash -c "head -1 '$TMP/workers_all.txt' | grep -q '^HOST  *ID ' &&
		[ \"\$(awk 'NR > 1 { print \$1 }' '$TMP/workers_all.txt' | sort -u | tr '\n' ' ')\" = 'a b c ' ]"
nc=$(count_schedules c)
NPROF_SOCKET=$D/a.sock NPROF_HOST=c "$NPROF" schedule create --service split -e page-faults -d 1s --every 1h \
	>"$TMP/sched_c.out" 2>&1
check "NPROF_HOST=c nprof schedule create through a: made on c ($nc, then $(count_schedules c))" \
	[ "$(count_schedules c)" = "$((nc + 1))" ]
on c GET /api/v1/schedules
on c DELETE "/api/v1/schedules/$(json "$TMP/api.out" 'j["schedules"][0]["id"]')"
rc=0
NPROF_SOCKET=$D/a.sock NPROF_HOST=zz "$NPROF" workers >"$TMP/workers_zz.txt" 2>&1 || rc=$?
check "NPROF_HOST=zz (no such host): exit $rc, one line naming it: $(head -c 200 "$TMP/workers_zz.txt")" \
	bash -c "[ $rc = 1 ] && [ \$(wc -l <'$TMP/workers_zz.txt') = 1 ] && grep -q 'no host zz' '$TMP/workers_zz.txt'"

# --- the page's whole journey, at a, on c's workers -----------------------------
# in_ns HOST COMMAND...: COMMAND as $UI in HOST's PID namespace (and its
# /proc), in the background; it ends with the namespace (its nprofd, PID 1
# there, killed), and nsenter with it.
in_ns() {
	local h=$1
	shift
	nsenter -t "${NPROFD_PID[$h]}" -p -m -- setpriv --reuid="$UI" --regid="$UI" --init-groups "$@" \
		>/dev/null 2>&1 &
	disown
}
# pid_of PGREP_ARGS...: the pid of $UI's process that pgrep finds (waiting
# up to a minute for it), as this script sees it, in OUTER; as its
# namespace sees it, in INNER.
pid_of() {
	local i
	OUTER= INNER=
	for ((i = 0; i < 600; i++)); do
		OUTER=$(pgrep -u "$UI" "$@" | head -1)
		[ -n "$OUTER" ] && INNER=$(awk '/^NSpid:/ { print $NF }' "/proc/$OUTER/status" 2>/dev/null)
		[ -n "$INNER" ] && return 0
		sleep 0.1
	done
	return 1
}
if need_browser; then
	setpriv --reuid="$UI" --regid="$UI" --init-groups test -x "$PROGS/split" ||
		bail "the test programs are usable by $UI"
	# $UI's own workers: one on a and b each (for "every host"), the rest on c
	in_ns a sleep 9001
	in_ns a "$PROGS/wall_split" --seconds 600
	in_ns b sleep 9002
	in_ns c "$PROGS/split" --seconds 600
	in_ns c "$PROGS/split" --ratio 1:3:6 --seconds 600
	in_ns c "$PROGS/eight_threads"
	in_ns c env LD_PRELOAD="$NPROF_BUILD/libnprof.so" "$PROGS/alloc_primes" --wait
	mkdir -p "$SV"
	cp "$PROGS/split" "$TMP/sv/split_sv"
	printf '#!/bin/sh\nexec %s --seconds 300\n' "$TMP/sv/split_sv" >"$SV/run"
	chmod +x "$SV/run"
	chown -R "$UI" "$TMP/sv"
	in_ns c runsv "$SV"
	pid_of -fx "$PROGS/split --seconds 600" && C_SPLIT=$INNER &&
	pid_of -fx "$PROGS/split --ratio 1:3:6 --seconds 600" && C_SPLIT2=$INNER &&
	pid_of -x eight_threads && C_EIGHT=$INNER &&
	pid_of -x alloc_primes && C_HEAP=$INNER && C_HEAP_OUTER=$OUTER &&
	pid_of -f "^$TMP/sv/split_sv" && C_SVC=$INNER &&
	pid_of -fx "$PROGS/wall_split --seconds 600" && A_WALL=$INNER &&
	pid_of -fx "sleep 9001" && pid_of -fx "sleep 9002" ||
		bail "$UI's workers start in the namespaces of a, b and c"
	URL_A=$(sed -n 's|.*listening on \(http://[^/]*/\).*|\1|p' "$D/a.log" | head -1)
	mkdir -p "$NPROF_BUILD/e2e/cluster"
	rm -f "$NPROF_BUILD/e2e/cluster/ui-instance.pb.gz"
	# (its first instance lasts 10 s: each step asks c through a, and
	# RUNNING must still be there to be seen on a loaded machine)
	E2E_TIMEOUT=600 NPROF_E2E_DIR=$NPROF_BUILD/e2e/cluster NPROF_E2E_URL=$URL_A \
		NPROF_E2E_HOST=c NPROF_E2E_HOSTS="a b c" NPROF_E2E_SECONDS=10 \
		NPROF_E2E_OTHER_HOST=a NPROF_E2E_OTHER_PID=$A_WALL \
		NPROF_E2E_USER=$UI NPROF_E2E_PASSWORD=$UIPW NPROF_E2E_USER2=$UI2 NPROF_E2E_PASSWORD2=$UIPW2 \
		NPROF_E2E_SPLIT=$C_SPLIT NPROF_E2E_SPLIT2=$C_SPLIT2 NPROF_E2E_EIGHT=$C_EIGHT \
		NPROF_E2E_HEAP=$C_HEAP NPROF_E2E_HEAP_SIGNAL=$C_HEAP_OUTER NPROF_E2E_SVC=$C_SVC \
		NPROF_E2E_KERNEL=$(uname -r) run_js daemon_ui.js
	if command -v go >/dev/null; then
		check "go tool pprof -raw reads the pprof the page downloaded from c through a: burn_sixty in it" \
			bash -c "go tool pprof -raw '$NPROF_BUILD/e2e/cluster/ui-instance.pb.gz' 2>/dev/null | grep -q burn_sixty"
	else
		skip "go tool pprof reads the download" "go is not installed (scripts/install-deps)"
	fi
else
	skip "the page with several hosts" "$BROWSER_WHY"
fi

# --- c dies ----------------------------------------------------------------------
t0=$(date +%s.%N)
kill -KILL "${NPROFD_PID[c]}"
if wait_hosts a "a b" 30; then
	t1=$(date +%s.%N)
	took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	# The lease ends at most TTL after c's last keepalive; etcd then
	# revokes it at its next expiry check (every 0.5 s). The bound leaves
	# a loaded machine as much again.
	check "c killed: gone from a's list in ${took} s (the lease: ${TTL} s; bound $((2 * TTL + 2)) s)" \
		less_than "$took" $((2 * TTL + 2))
else
	not_ok "c killed: gone from a's list within 30 s (got: $(hosts_of a))"
fi
on a GET "/api/v1/workers?host=*"
check "a still answers for a and b, not partial" \
	[ "$(json "$TMP/api.out" 'sorted(j["answered"]), j["partial"], sorted(set(w["host"] for w in j["workers"]))')" = \
	  "(['a', 'b'], False, ['a', 'b'])" ]

# --- etcd stops: each daemon serves its own host ---------------------------------
before=$(wc -l <"$D/a.log")
kill -TERM "$ETCD"
wait_pid "$ETCD" 30 || kill -KILL "$ETCD"
for h in a b; do
	on "$h" GET "/api/v1/workers"
	n=$(json "$TMP/api.out" "len([w for w in j['workers'] if w['cmdline'].startswith('sleep 600')])")
	check "etcd stopped: $h still lists its own workers (its sleep: $n)" [ "$CODE,$n" = "200,1" ]
	on "$h" GET "/api/v1/hosts"
	check "etcd stopped: $h's hosts is itself alone, partial, naming etcd" \
		[ "$(json "$TMP/api.out" '[x["name"] for x in j["hosts"]], j["partial"], "etcd" in j["error"]')" = \
		  "(['$h'], True, True)" ]
	on "$h" GET "/api/v1/workers?host=*"
	check "etcd stopped: $h's workers?host=* is its own, partial" \
		[ "$(json "$TMP/api.out" 'j["answered"], j["partial"]')" = "(['$h'], True)" ]
done
state=
for ((i = 0; i < 300; i++)); do
	on a GET /api/v1/hosts
	state=$(json "$TMP/api.out" 'j["cluster"]["state"]')
	[ "$state" = retrying ] && break
	sleep 0.1
done
check "a's registration says retrying, with the error" \
	[ "$state,$(json "$TMP/api.out" 'bool(j["cluster"]["error"])')" = "retrying,True" ]
# (a loaded machine may have made an earlier call time out: its own line)
if [ "$(tail -n +$((before + 1)) "$D/a.log" | grep -c 'cluster: etcd did not answer')" = 1 ]; then
	ok "a logged the loss once, in one line, for all its retries"
else
	not_ok "a logged the loss once, in one line, for all its retries"
	diag "$(grep 'cluster:' "$D/a.log")"
fi

HOSTS_CACHE=60s MAX_HOSTS=3 start_host d 127.0.0.5 6004 || bail "daemon d starts while etcd is away"
on d GET "/api/v1/workers"
check "d, started while etcd is away, serves its own host" \
	[ "$CODE,$(json "$TMP/api.out" "len([w for w in j['workers'] if w['cmdline'] == 'sleep 6004'])")" = "200,1" ]

# --- etcd back: the view comes back -----------------------------------------------
start_etcd || bail "etcd starts again on $ETCD_URL"
if wait_hosts a "a b d" 60; then
	ok "etcd back: a lists a, b and d (which registers now)"
else
	not_ok "etcd back: a lists a, b and d (got: $(hosts_of a))"
fi
wait_hosts b "a b d" 60
on b GET "/api/v1/workers?host=*"
check "etcd back: workers?host=* through b: a's, b's and d's, not partial" \
	[ "$(where 6001),$(where 6002),$(where 6004),$(json "$TMP/api.out" 'j["partial"]')" = "a,b,d,False" ]

# --- d keeps a read of the registry for a minute ---------------------------------
# ranges_read: the kv/range calls etcd has served since it started
ranges_read() {
	curl -s --max-time 30 "$ETCD_URL/metrics" |
		awk '/^grpc_server_started_total\{.*grpc_method="Range"/ { n += $NF } END { print n + 0 }'
}
r0=$(ranges_read)
lists=
for ((i = 0; i < 20; i++)); do
	lists+="$(hosts_of d);"
done
r1=$(ranges_read)
check "20 lists of the hosts through d (hosts_cache = 60s) cost etcd $((r1 - r0)) read(s), at most 2" \
	[ "$((r1 - r0))" -le 2 ]
check "and are the same list, the one etcd has: a b d" \
	[ "$lists" = "$(printf 'a b d;%.0s' {1..20})" ]
check "d (max_hosts = 3), given 3 hosts by etcd, says once in its log that more would be left out" \
	[ "$(grep -c 'etcd lists 3 hosts, \[cluster\] max_hosts' "$D/d.log")" = 1 ]
for ((i = 0; i < 20; i++)); do
	hosts_of a >/dev/null
done
r2=$(ranges_read)
check "the same 20 through a (hosts_cache = 0) cost etcd $((r2 - r1)) reads, 20 or more" \
	[ "$((r2 - r1))" -ge 20 ]

# --- b stops: it leaves at once -----------------------------------------------------
# Its lease is revoked before it exits: a's next look no longer has it.
kill -TERM "${NPROFD_PID[b]}"
wait_pid "${NPROFD_PID[b]}" 30
check "b stopped (SIGTERM): gone from a's list as soon as it has exited (lease revoked)" \
	[ "$(hosts_of a)" = "a d" ]
finish
