#!/usr/bin/env bash
# Issue 23, hole 4: one user holding every connection of a door. Real
# hostile users (useradd, setpriv) open more connections than the door
# takes, each sending half a request and a header line every half
# second, over the unix socket and over HTTP (anonymous, from 127.0.0.1
# and from eight other 127.x addresses); meanwhile root's nprof and API
# calls, an admin's, a bystander's and a legitimate HTTP client's are
# answered; no hostile user holds more than its share (peer_connections;
# the socket's last reserved_connections are root's and the admins');
# a user past its share on the socket is told so in one line; and
# every trickling connection is cut at request_timeout, the deadline for
# receiving a whole request, not kept alive by its trickle.
. "$(dirname "$0")/../integration/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
[ -x /usr/bin/python3 ] || bail "python3 is installed (/usr/bin/python3, for the hostile users)"

U1=nprofh1$$ U2=nprofh2$$ U3=nprofb3$$ UA=nprofa4$$
for u in "$U1" "$U2" "$U3" "$UA"; do test_user "$u" || bail "useradd makes the test users"; done
as() { echo "setpriv --reuid=$1 --regid=$1 --clear-groups --inh-caps=-all --bounding-set=-all"; }
AS1=$(as "$U1") AS2=$(as "$U2") AS3=$(as "$U3") ASA=$(as "$UA")
usable_by_others || bail "nprof is usable by other users"

# A small door, so that the hostile users can try to fill it, and a short
# deadline, which the checks measure against (not against the machine).
MAXC=40 DEADLINE=2
cat >"$D/nprofd.conf" <<CONF
max_connections = $MAXC
request_timeout = ${DEADLINE}s
admin_users = $UA
CONF
start_daemon "$D/nprofd.conf" || bail "nprofd starts"
PORT=${HTTP_ADDR##*:}

# holder.py STATUS --unix PATH | --tcp PORT [--from A,B,...] COUNT: keeps
# COUNT connections open (opening a new one for each the server closes,
# at most once per tick), each with half a request, and sends each a
# header line every half second; each tick it writes to STATUS how many
# it holds (opened in an earlier tick and still open), how old the
# oldest of them is, the longest life a connection had before the server
# closed it, and the statuses of what the server wrote to the ones it
# closed. Runs until killed.
cat >"$TMP/holder.py" <<'PY'
import json, os, socket, sys, time
status, kind, where = sys.argv[1], sys.argv[2], sys.argv[3]
args = sys.argv[4:]
sources = ['']
if args[0] == '--from':
    sources = args[1].split(',')
    args = args[2:]
count = int(args[0])
TICK = 0.5
conns = [None] * count   # [socket, opened, got, tick opened]
longest = 0.0
replies = {}
tick = 0
n_opened = 0

def open_one(i):
    global n_opened
    if kind == '--unix':
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        addr = where
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        src = sources[i % len(sources)]
        if src:
            s.bind((src, 0))
        addr = ('127.0.0.1', int(where))
    s.settimeout(2)
    try:
        s.connect(addr)
        s.sendall(b'GET /api/v1/whoami HTTP/1.1\r\nHost: 127.0.0.1\r\n')
    except OSError:
        s.close()
        return None
    s.setblocking(False)
    n_opened += 1
    return [s, time.monotonic(), b'', tick]

def closed(c):
    global longest
    life = time.monotonic() - c[1]
    if c[3] < tick:
        longest = max(longest, life)
    st = c[2][9:12].decode('ascii', 'replace') if c[2].startswith(b'HTTP/1.') else 'none'
    replies[st] = replies.get(st, 0) + 1
    c[0].close()

while True:
    for i in range(count):
        c = conns[i]
        if c is None:
            conns[i] = open_one(i)
            continue
        try:
            c[0].send(b'X-Hold: %d\r\n' % tick)
            while True:
                b = c[0].recv(4096)
                if not b:
                    raise ConnectionError
                c[2] += b
        except BlockingIOError:
            pass
        except OSError:
            closed(c)
            conns[i] = None
    held = [c for c in conns if c is not None and c[3] < tick]
    now = time.monotonic()
    tmp = status + '.tmp'
    with open(tmp, 'w') as f:
        json.dump({'tick': tick, 'held': len(held), 'opened': n_opened,
                   'oldest': max([now - c[1] for c in held], default=0.0),
                   'longest': longest, 'replies': replies}, f)
    os.rename(tmp, status)
    tick += 1
    time.sleep(TICK)
PY
chmod 644 "$TMP/holder.py"

# hold NAME AS ARGS...: a holder as user AS (a setpriv command line, or
# "" for root), its status in $TMP/NAME.json (written by the holder: in a
# directory it may write); waits until it has ticked 4 times (2 s).
hold() {
	local name=$1 as=$2 i
	shift 2
	mkdir -p "$TMP/h-$name"
	chmod 777 "$TMP/h-$name"
	$as /usr/bin/python3 "$TMP/holder.py" "$TMP/h-$name/status.json" "$@" >"$TMP/h-$name/out" 2>&1 &
	bg_pids+=("$!")
	eval "HOLDER_$name=$!"
	for ((i = 0; i < 100; i++)); do
		[ "$(held "$name" tick)" -ge 4 ] 2>/dev/null && return 0
		sleep 0.1
	done
	diag "holder $name did not tick:"; diag_file "$TMP/h-$name/out"
	return 1
}
# held NAME KEY: a value of holder NAME's last status.
held() { json "$TMP/h-$1/status.json" "j['$2']"; }
# watch NAME TICKS: the holder's status over TICKS more ticks; the most it
# held and the oldest connection it saw in them, in MOST and OLDEST.
watch() {
	local t0 i t
	MOST=0 OLDEST=0
	t0=$(held "$1" tick)
	for ((i = 0; i < $2 * 10 + 50; i++)); do
		t=$(held "$1" tick)
		MOST=$(awk -v a="$MOST" -v b="$(held "$1" held)" 'BEGIN { print (b > a ? b : a) }')
		OLDEST=$(awk -v a="$OLDEST" -v b="$(held "$1" oldest)" 'BEGIN { printf "%.1f", (b > a ? b : a) }')
		[ "$t" -ge $((t0 + $2)) ] && return 0
		sleep 0.1
	done
}
stop_holder() { eval "kill \$HOLDER_$1"; eval "wait \$HOLDER_$1" 2>/dev/null; }

api POST /api/v1/tokens '{"name": "doors"}'
TOKEN=$(json "$TMP/api.out" 'j["token"]')
api -u "$AS3" POST /api/v1/tokens '{"name": "bystander"}'
TOKEN3=$(json "$TMP/api.out" 'j["token"]')
[ -n "$TOKEN" ] && [ -n "$TOKEN3" ] || bail "root and $U3 make API tokens"

# --- the unix socket ----------------------------------------------------------
hold s1 "$AS1" --unix "$SOCK" $((MAXC + 12)) || bail "$U1 starts holding the socket"
watch s1 2
diag "$U1 holds $MOST of the socket's $MAXC connections (it asked for $((MAXC + 12)))"
NPROF_SOCKET=$SOCK run_nprof 20 workers
check "while $U1 holds what it can of the socket: root's nprof workers answers" [ "$NP_RC" = 0 ]
[ "$NP_RC" = 0 ] || np_diag
api GET /api/v1/whoami
check "root's GET /api/v1/whoami over the socket: 200" [ "$CODE" = 200 ]
api -u "$AS3" GET /api/v1/whoami
check "a bystander ($U3) over the socket: 200" [ "$CODE" = 200 ]
check "$U1 holds at most half the socket's connections ($MOST of $MAXC)" [ "$MOST" -le $((MAXC / 2)) ]
api -u "$AS1" GET /api/v1/whoami
# refused_naming STATUS KEY: the last reply was STATUS with one line of
# error naming KEY.
refused_naming() {
	[ "$CODE" = "$1" ] && [ "$(json "$TMP/api.out" 'j["error"]' | wc -l)" = 1 ] &&
		json "$TMP/api.out" 'j["error"]' | grep -q "$2"
}
# The holder reopens what the deadline cuts at most once per tick: a
# request of U1's that falls in such a gap holds a freed slot and is
# answered. So U1 asks a few times, 0.2 s apart: the first that meets
# U1's share whole is refused.
tries=0
until refused_naming 429 peer_connections || [ $tries -ge 10 ]; do
	sleep 0.2
	api -u "$AS1" GET /api/v1/whoami
	tries=$((tries + 1))
done
check "$U1's own next request: 429, one line naming peer_connections (after $tries answered in a gap of its holder)" \
	refused_naming 429 peer_connections
for ((tries = 0; tries < 10; tries++)); do
	RUN_AS=$AS1 NPROF_SOCKET=$SOCK run_nprof 20 workers
	one_error_line && err_says peer_connections && break
	sleep 0.2
done
if one_error_line && err_says peer_connections; then
	ok "and $U1's nprof workers says so in one line (nprof: ... peer_connections; $tries answered in a gap)"
else
	not_ok "and $U1's nprof workers says so in one line (nprof: ... peer_connections)"
	np_diag
fi

hold s2 "$AS2" --unix "$SOCK" $((MAXC + 12)) || bail "$U2 starts holding the socket"
watch s2 2
diag "with $U2 holding too: $U1 holds $(held s1 held), $U2 $(held s2 held)"
api GET /api/v1/whoami
check "with two users holding all they may: root still answered" [ "$CODE" = 200 ]
api -u "$ASA" GET /api/v1/whoami
check "an admin ($UA, admin_users) still answered" \
	[ "$CODE,$(json "$TMP/api.out" 'j["admin"]')" = 200,True ]
api -u "$AS3" GET /api/v1/whoami
check "and the bystander $U3 (a trickling connection is closed to make room)" [ "$CODE" = 200 ]
watch s1 $((DEADLINE * 2 * 3))
check "no connection of $U1 that trickles a header line every 0.5 s lives past request_timeout = ${DEADLINE}s (+${DEADLINE}s): oldest ${OLDEST}s, longest $(held s1 longest)s" \
	less_than "$OLDEST" $((DEADLINE * 2))
stop_holder s1
stop_holder s2

# --- HTTP ----------------------------------------------------------------------
hold t1 "$AS1" --tcp "$PORT" $((MAXC + 12)) || bail "$U1 starts holding the HTTP port from 127.0.0.1"
watch t1 2
diag "over HTTP, anonymous: $U1 holds $MOST from 127.0.0.1"
http "$TOKEN" GET /api/v1/whoami
check "meanwhile root's GET /api/v1/whoami over HTTP from 127.0.0.1: 200" [ "$CODE" = 200 ]
http "$TOKEN3" GET /api/v1/whoami
check "$U3's, with its token: 200" [ "$CODE" = 200 ]
CODE=$($AS3 curl -s -o "$TMP/api.out" -w '%{http_code}' --max-time 60 "http://$HTTP_ADDR/")
check "the web UI's page, for $U3 from 127.0.0.1: 200" [ "$CODE" = 200 ]
watch t1 $((DEADLINE * 2 * 3))
check "$U1 holds at most half the HTTP door ($MOST of $MAXC)" [ "$MOST" -le $((MAXC / 2)) ]
check "no connection of $U1's lives past request_timeout = ${DEADLINE}s (+${DEADLINE}s): oldest ${OLDEST}s" \
	less_than "$OLDEST" $((DEADLINE * 2))
stop_holder t1

hold t2 "$AS2" --tcp "$PORT" --from 127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6,127.0.0.7,127.0.0.8,127.0.0.9 \
	$((MAXC + 12)) || bail "$U2 starts holding the HTTP port from eight addresses"
watch t2 2
diag "$U2 holds $MOST from 127.0.0.2-9"
http "$TOKEN3" GET /api/v1/whoami
check "while $U2 holds from eight addresses: $U3's request answered" [ "$CODE" = 200 ]
check "$U2, from eight addresses, holds at most half the HTTP door ($MOST)" [ "$MOST" -le $((MAXC / 2)) ]
stop_holder t2

# The hostile client with the legitimate one's own identity (root, from
# 127.0.0.1): the legitimate request gets in all the same.
hold t0 "" --tcp "$PORT" $((MAXC + 12)) || bail "root starts holding the HTTP port"
watch t0 2
http "$TOKEN" GET /api/v1/whoami
check "root's own request while root's other client holds all it may ($MOST): 200" [ "$CODE" = 200 ]
stop_holder t0

api GET /api/v1/whoami
check "the daemon still answers at the end" [ "$CODE" = 200 ]
lines=$(wc -l <"$D/log")
check "nprofd's log sums up what the doors refused and cut, not a line per connection ($lines lines)" \
	bash -c "[ $lines -lt 40 ] && grep -q 'connections refused (the last: uid:' '$D/log'"
[ "$lines" -lt 40 ] || diag "$(cut -c26- "$D/log" | sort | uniq -c | sort -rn | head -5)"
finish
