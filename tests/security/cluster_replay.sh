#!/usr/bin/env bash
# Issue 23, hole 2: a local user who can write to etcd (etcd open to
# local users, no auth) against three nprofd daemons a, b and c on
# 127.0.0.2, .3 and .4, registered in a real etcd on loopback
# (docs/cluster.md, "Threat model"). The user (a test user, no
# privilege) runs a listener of theirs (tests' python http.server) and
# rewrites etcd with curl to its JSON gateway:
#
# 1. b's registration pointed at their listener: a does not believe it
#    (b is hidden, not impersonated; a says which entry it ignored and
#    why), so the admin's signed GET /api/v1/workers and GET
#    /api/v1/audit never reach the listener and its fake lists never
#    reach the admin. a warned at start that etcd has no auth.
# 2. An older registration of b (signed: b wrote it before moving to
#    another port) put back, their listener on b's old address: the
#    admins' signed requests reach it (what an etcd writer can still
#    see), but its fake replies are refused (not signed with the key),
#    and each request it captured is refused wherever it is replayed: at
#    b (signed for b's old address), at c (signed for b), at a (signed by
#    a itself); and at b once b is back on that very address (signed
#    before b started).
# 3. A copy of a's registration under another name, and one whose
#    signature does not hold: ignored.
# 4. The cluster still works: every host lists and answers, and a thread
#    dump of a worker of c is made and downloaded through a.
#
# Every wait polls a condition within a bound; no speed is assumed.
# test-timeout: 300
. "$(dirname "$0")/../integration/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
need_etcd "a cluster of nprofd against an etcd writer"

EPORT=$(free_port) PPORT=$(free_port)
ETCD_URL=http://127.0.0.1:$EPORT
start_etcd || bail "etcd starts on $ETCD_URL"
ok "etcd answers on $ETCD_URL, without auth (open to every local user)"

head -c 32 /dev/urandom | base64 >"$D/cluster.key"
chmod 600 "$D/cluster.key"
X=nprofx$$
test_user "$X" || bail "useradd makes the hostile test user"
AS_X="setpriv --reuid=$X --regid=$X --init-groups"

declare -A PIDOF ADDR
# start_host NAME IP [PORT]: NAME's nprofd on IP (PORT, or one the kernel
# picks), hosts_cache 0 (these checks are about the registry as it is).
start_host() {
	cat >"$D/$1.conf" <<CONF
admin_users = root
[cluster]
etcd = $ETCD_URL
name = $1
key_file = $D/cluster.key
hosts_cache = 0
host_timeout = 20s
forward_timeout = 20s
CONF
	start_daemon "$D/$1.conf" "$1" "$2" "${3:-}" || return 1
	PIDOF[$1]=$DAEMON
	ADDR[$1]=$HTTP_ADDR
}
stop_host() {
	kill -TERM "${PIDOF[$1]}"
	wait_pid "${PIDOF[$1]}" 30
}
on() {
	local s=$1
	shift
	SOCK=$D/$s.sock api "$@"
}
# url_of HOST NAME: NAME's URL in HOST's list of hosts ("" when absent).
url_of() {
	on "$1" GET /api/v1/hosts
	json "$TMP/api.out" "([h['url'] for h in j['hosts'] if h['name'] == '$2'] + [''])[0]"
}
hosts_of() {
	on "$1" GET /api/v1/hosts
	json "$TMP/api.out" '" ".join(h["name"] for h in j["hosts"])'
}
# wait_url NAME URL: polls until a lists NAME at URL (30 s).
wait_url() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ "$(url_of a "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# --- the attacker's tools: etcd by curl, a listener -------------------------------
b64() { printf '%s' "$1" | base64 -w0; }
# etcd_put KEY VALUE, etcd_get KEY, etcd_del KEY: as the hostile user
etcd_put() {
	$AS_X curl -s --max-time 10 -X POST "$ETCD_URL/v3/kv/put" \
		-d "{\"key\": \"$(b64 "$1")\", \"value\": \"$(b64 "$2")\"}" >/dev/null
}
etcd_get() {
	$AS_X curl -s --max-time 10 -X POST "$ETCD_URL/v3/kv/range" -d "{\"key\": \"$(b64 "$1")\"}" |
		python3 -c 'import base64, json, sys; print(base64.b64decode(json.load(sys.stdin)["kvs"][0]["value"]).decode())'
}
etcd_del() {
	$AS_X curl -s --max-time 10 -X POST "$ETCD_URL/v3/kv/deleterange" -d "{\"key\": \"$(b64 "$1")\"}" >/dev/null
}
mkdir -p "$TMP/x"
chown "$X" "$TMP/x"
# The listener (Debian's python3: the user cannot reach a private one) logs every request (method, path, body and the
# X-Nprof-Cluster header) as a JSON line, and answers each with a list
# named after the path's last word holding one IMPOSTOR item: what a fake
# host would show the admin.
cat >"$TMP/listener.py" <<'PY'
import http.server, json, sys
ip, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
class Fake(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("latin-1") if n else ""
        with open(log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "body": body,
                                "signed": self.headers.get("X-Nprof-Cluster")}) + "\n")
        what = self.path.split("?")[0].rstrip("/").split("/")[-1]
        fake = {"id": "666-1", "pid": 666, "uid": 0, "user": "IMPOSTOR", "name": "IMPOSTOR",
                "cmdline": "IMPOSTOR", "method": "GET", "path": "IMPOSTOR", "status": 200}
        out = json.dumps({what: [fake], "error": None}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    do_GET = do_POST = do_DELETE = answer
    def log_message(self, *args):
        pass
srv = http.server.ThreadingHTTPServer((ip, port), Fake)
print("ready", flush=True)
srv.serve_forever()
PY
# listen NAME IP PORT: the hostile user's listener, its log $TMP/x/NAME.log
listen() {
	start_prog "$1" $AS_X /usr/bin/python3 "$TMP/listener.py" "$2" "$3" "$TMP/x/$1.log" || return 1
	LISTENER=$PID
}
# captured LOG SIGNER PATH: how many requests signed by SIGNER for PATH
# the listener got.
captured() {
	python3 - "$@" <<'PY'
import json, sys
log, signer, path = sys.argv[1:4]
n = 0
try:
    for line in open(log):
        r = json.loads(line)
        if r["signed"] and ";host=%s;" % signer in r["signed"] and r["path"].split("?")[0] == path:
            n += 1
except FileNotFoundError:
    pass
print(n)
PY
}
# replay LOG SIGNER PATH ADDR: the first request signed by SIGNER for
# PATH that the listener got, sent as it came (method, path and query,
# header, body) to ADDR; its status in CODE, its body in $TMP/api.out.
replay() {
	CODE=$(python3 - "$@" "$TMP/api.out" <<'PY'
import http.client, json, sys
log, signer, path, addr, out = sys.argv[1:6]
for line in open(log):
    r = json.loads(line)
    if r["signed"] and ";host=%s;" % signer in r["signed"] and r["path"].split("?")[0] == path:
        break
else:
    print("none")
    sys.exit()
host, port = addr.rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port), timeout=30)
c.request(r["method"], r["path"], body=r["body"].encode("latin-1") or None,
          headers={"X-Nprof-Cluster": r["signed"]})
resp = c.getresponse()
open(out, "wb").write(resp.read())
print(resp.status)
PY
)
}
# refused WHAT: the replay was refused (401) and its reply holds no list
refused() {
	[ "$CODE" = 401 ] && ! grep -q '"workers"\|"audit"' "$TMP/api.out"
}

PB1=$(free_port) PB2=$(free_port)
start_host a 127.0.0.2 || bail "daemon a starts on 127.0.0.2"
start_host b 127.0.0.3 "$PB1" || bail "daemon b starts on 127.0.0.3:$PB1"
start_host c 127.0.0.4 || bail "daemon c starts on 127.0.0.4"
for ((i = 0; i < 300; i++)); do
	[ "$(hosts_of a),$(hosts_of c)" = "a b c,a b c" ] && break
	sleep 0.1
done
check "a and c list a b c" [ "$(hosts_of a),$(hosts_of c)" = "a b c,a b c" ]
# (a says registered once it has asked etcd whether it takes anyone)
for ((i = 0; i < 300; i++)); do
	on a GET /api/v1/hosts
	[ "$(json "$TMP/api.out" 'j["cluster"]["state"]')" = registered ] && break
	sleep 0.1
done
check "a warned once, at start, that etcd answers without authentication, naming etcd_user" \
	[ "$(grep -c 'without authentication.*etcd_user' "$D/a.log")" = 1 ]

# --- 1. b's registration rewritten to the listener ------------------------------------
HP=$(free_port)
listen fake1 127.0.0.1 "$HP" || bail "the hostile user's listener starts on 127.0.0.1:$HP"
etcd_put /nprof/v1/hosts/b "{\"name\": \"b\", \"url\": \"http://127.0.0.1:$HP/\", \"version\": \"0.1.0\"}"
[ "$(etcd_get /nprof/v1/hosts/b | grep -c "127.0.0.1:$HP")" = 1 ] ||
	bail "the hostile user rewrote b's registration in etcd"
check "a does not list b at the listener's URL (b hidden, not impersonated): $(url_of a b)" \
	[ "$(url_of a b)" != "http://127.0.0.1:$HP/" ]
on a GET /api/v1/hosts
check "a's GET /api/v1/hosts names the entry it ignored, /nprof/v1/hosts/b, as not signed" \
	[ "$(json "$TMP/api.out" '[(x["key"], "signed" in x["why"]) for x in j["cluster"]["ignored"]]')" = \
	  "[('/nprof/v1/hosts/b', True)]" ]
check "a's log says so in one line naming the key" \
	[ "$(grep -c 'ignor.*/nprof/v1/hosts/b' "$D/a.log")" = 1 ]
on a GET "/api/v1/workers?host=*"
check "the admin's workers?host=* through a: no IMPOSTOR worker ($CODE)" \
	bash -c "[ '$CODE' = 200 ] && ! grep -q IMPOSTOR '$TMP/api.out'"
on a GET "/api/v1/audit?host=b"
check "the admin's audit?host=b through a: not the listener's fake log ($CODE)" \
	bash -c "[ '$CODE' != 200 ] && ! grep -q IMPOSTOR '$TMP/api.out'"
n=$(($(captured "$TMP/x/fake1.log" a /api/v1/workers) + $(captured "$TMP/x/fake1.log" a /api/v1/audit)))
check "the listener got none of the admin's signed requests ($n)" [ "$n" = 0 ]
# What the listener got before the fix: each replayed at each daemon
for p in /api/v1/workers /api/v1/audit; do
	[ "$(captured "$TMP/x/fake1.log" a "$p")" -gt 0 ] || continue
	for h in a b c; do
		replay "$TMP/x/fake1.log" a "$p" "${ADDR[$h]}"
		check "a's signed GET $p, captured by the listener, replayed at $h: refused ($CODE)" refused
	done
done
kill "$LISTENER"

# --- 2. b's older registration put back, the listener at b's old address -----------
# b moves from port PB1 to PB2, as it would after a restart; the
# attacker had read its registration while it was on PB1.
stop_host b
start_host b 127.0.0.3 "$PB1" || bail "daemon b starts again on 127.0.0.3:$PB1"
wait_url b "http://127.0.0.3:$PB1/" || bail "a lists b at :$PB1"
OLD=$(etcd_get /nprof/v1/hosts/b)
stop_host b
start_host b 127.0.0.3 "$PB2" || bail "daemon b starts on 127.0.0.3:$PB2"
wait_url b "http://127.0.0.3:$PB2/" || bail "a lists b at :$PB2"
listen fake2 127.0.0.3 "$PB1" || bail "the hostile user's listener starts on b's old address 127.0.0.3:$PB1"
etcd_put /nprof/v1/hosts/b "$OLD"
wait_url b "http://127.0.0.3:$PB1/" || bail "a lists b at its old address (b's own older registration)"
ok "b's older registration put back by the hostile user: a lists b at its old address, the listener's"

on a GET "/api/v1/workers?host=*"
check "the admin's workers?host=* through a: no IMPOSTOR worker from the listener" \
	bash -c "[ '$CODE' = 200 ] && ! grep -q IMPOSTOR '$TMP/api.out'"
check "b named unanswered, its reply not signed with the cluster key" \
	[ "$(json "$TMP/api.out" '[(u["host"], "signed" in u["error"]) for u in j["unanswered"]]')" = "[('b', True)]" ]
on a GET "/api/v1/audit?host=b"
check "the admin's audit?host=b through a: 502, the reply not signed, no IMPOSTOR" \
	bash -c "[ '$CODE' = 502 ] && grep -q signed '$TMP/api.out' && ! grep -q IMPOSTOR '$TMP/api.out'"
on c GET "/api/v1/workers?host=b"
check "c's admin's workers?host=b: no IMPOSTOR worker" \
	bash -c "[ '$CODE' = 200 ] && ! grep -q IMPOSTOR '$TMP/api.out'"
check "what an etcd writer can still see: the listener got the signed requests (a's two, c's one)" \
	[ "$(captured "$TMP/x/fake2.log" a /api/v1/workers),$(captured "$TMP/x/fake2.log" a /api/v1/audit),$(captured "$TMP/x/fake2.log" c /api/v1/workers)" = 1,1,1 ]
replay "$TMP/x/fake2.log" a /api/v1/workers "${ADDR[b]}"
check "a's workers request replayed at b (on :$PB2; signed for b at :$PB1): refused ($CODE)" refused
diag "b said: $(json "$TMP/api.out" 'j["error"]')"
replay "$TMP/x/fake2.log" a /api/v1/workers "${ADDR[c]}"
check "replayed at c (signed for b): refused ($CODE)" refused
diag "c said: $(json "$TMP/api.out" 'j["error"]')"
replay "$TMP/x/fake2.log" a /api/v1/workers "${ADDR[a]}"
check "replayed at a, its signer: refused ($CODE)" refused
diag "a said: $(json "$TMP/api.out" 'j["error"]')"
replay "$TMP/x/fake2.log" c /api/v1/workers "${ADDR[a]}"
check "c's request (for b) replayed at a: refused ($CODE)" refused
replay "$TMP/x/fake2.log" a /api/v1/audit "${ADDR[b]}"
check "a's audit request replayed at b: refused, no audit log ($CODE)" refused

# b back on its old address, the one the captured requests were signed for
kill "$LISTENER"
wait_pid "$LISTENER" 10
stop_host b
start_host b 127.0.0.3 "$PB1" || bail "daemon b starts again on 127.0.0.3:$PB1"
replay "$TMP/x/fake2.log" a /api/v1/audit "${ADDR[b]}"
check "a's audit request replayed at b, back on 127.0.0.3:$PB1 (signed before b started): refused ($CODE)" refused
diag "b said: $(json "$TMP/api.out" 'j["error"]')"

# --- 3. forged registrations -------------------------------------------------------------
wait_url b "http://127.0.0.3:$PB1/" || bail "a lists b again"
A_REC=$(etcd_get /nprof/v1/hosts/a)
etcd_put /nprof/v1/hosts/zz "$A_REC"
BAD=$(python3 -c 'import json, sys; r = json.loads(sys.argv[1]); r["name"] = "zy"; r["url"] = "http://127.0.0.1:9/"; print(json.dumps(r))' "$(etcd_get /nprof/v1/hosts/c)")
etcd_put /nprof/v1/hosts/zy "$BAD"
check "a's own signed registration copied under zz, and c's changed into zy: neither listed" \
	[ "$(hosts_of a)" = "a b c" ]
on a GET /api/v1/hosts
check "both named as ignored" \
	[ "$(json "$TMP/api.out" 'sorted(x["key"] for x in j["cluster"]["ignored"])')" = \
	  "['/nprof/v1/hosts/zy', '/nprof/v1/hosts/zz']" ]
etcd_del /nprof/v1/hosts/zz
etcd_del /nprof/v1/hosts/zy

# --- 4. the cluster still works ------------------------------------------------------------
for h in a c; do
	on "$h" GET "/api/v1/workers?host=*"
	check "workers?host=* through $h: answered by a, b, c, not partial" \
		[ "$(json "$TMP/api.out" 'sorted(j["answered"]), j["partial"]')" = "(['a', 'b', 'c'], False)" ]
done
on a GET "/api/v1/host?host=b"
check "GET /api/v1/host?host=b through a: 200" [ "$CODE" = 200 ]
start_prog sleeper sh -c 'echo ready; exec sleep 300' || bail "a worker to dump starts"
on a GET "/api/v1/workers?host=c&pid=$PID"
W=$(json "$TMP/api.out" 'j["workers"][0]["id"]')
on a POST "/api/v1/workers/$W/stacks?host=c"
T=$(json "$TMP/api.out" 'j["id"]')
check "a thread dump of c's worker $W, asked through a: 201" [ "$CODE" = 201 ]
SOCK=$D/a.sock wait_instance "$T?host=c" 60
check "it finished on c" [ "$STATUS" = FINISHED ]
TA=$(artifact_of)
curl -s --unix-socket "$D/a.sock" -o "$TMP/dump.txt" "http://nprofd/api/v1/artifacts/$TA?host=c&format=text"
check "its text downloads through a (streamed from c): names the sleep" grep -q sleep "$TMP/dump.txt"
finish
