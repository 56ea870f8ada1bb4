#!/usr/bin/env bash
# Issue 23, hole 7: ids handed out again after their rows were removed
# (four instances in a row showed artifact 1), so that a bookmarked view
# or an audit line could later name another user's file. Artifacts
# deleted by their owner, removed by nprofd itself (a command that printed
# nothing leaves no file), instances trimmed by history_per_worker,
# tokens revoked: every new id is above every id handed out before, also
# after nprofd restarts; a state directory of the schema before
# (version 3) upgrades keeping its rows, and goes on above every id its
# tables and its audit log name, not above ids only refusals named.
. "$(dirname "$0")/../integration/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
command -v sqlite3 >/dev/null || bail "sqlite3 is installed (scripts/install-deps)"
cat >"$D/nprofd.conf" <<CONF
[instances]
history_per_worker = 1
[actions]
commands = on
[command quiet]
description = prints nothing: nprofd removes its empty artifact
run = sh -c "until [ -e '$D/go' ]; do sleep 0.02; done"
output = stdout
CONF
start_daemon "$D/nprofd.conf" || bail "nprofd starts"
sleep 600 &
SLEEPER=$!
bg_pids+=("$SLEEPER")
W=$(worker_of "$SLEEPER")

SEEN_I=0 SEEN_A=0	# the largest instance and artifact ids handed out so far
# act ACTION: POSTs the action on W and waits for its instance; its id
# in I, its artifact's in ART ("" when none is left). The quiet command
# waits for $D/go, made once the reply is read: ended at once, nprofd
# could remove its empty artifact before the POST's reply named it.
act() {
	rm -f "$D/go"
	api POST "/api/v1/workers/$W/$1"
	I=$(json "$TMP/api.out" 'j["id"]')
	ART=$(json "$TMP/api.out" 'j["artifacts"][0]["id"] if j["artifacts"] else ""')
	touch "$D/go"
	wait_instance "$I" 30
}
# fresh WHAT ID SEEN: ID is a number above SEEN.
fresh() { [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -gt "$3" ]; }

# --- deleted by their owner, four times in a row ------------------------------------
arts=
for k in 1 2 3 4; do
	act stacks
	check "thread dump $k: instance $I, artifact $ART, both above every id before ($SEEN_I, $SEEN_A)" \
		bash -c "[ '$STATUS' = FINISHED ] && [[ '$I' =~ ^[0-9]+\$ && '$ART' =~ ^[0-9]+\$ ]] &&
			[ '$I' -gt $SEEN_I ] && [ '$ART' -gt $SEEN_A ]"
	SEEN_I=$I SEEN_A=${ART:-$SEEN_A}
	arts+=" $ART"
	api DELETE "/api/v1/artifacts/$ART"
	[ "$CODE" = 200 ] || diag "DELETE /api/v1/artifacts/$ART: $CODE"
done
api GET "/api/v1/artifacts/${arts%% *}"
check "the first, deleted, answers 404, not another's file" [ "$CODE" = 404 ]

# --- removed by nprofd: an empty output, an instance trimmed ------------------------
act commands/quiet
check "a command that printed nothing: its instance $I is above $SEEN_I; its artifact $ART ($SEEN_A before) removed" \
	bash -c "[ '$STATUS' = FINISHED ] && [ '$I' -gt $SEEN_I ] && [ -n '$ART' ] && [ '$ART' -gt $SEEN_A ] &&
		[ '$(json "$TMP/inst.json" 'len(j["artifacts"])')' = 0 ]"
SEEN_I=$I SEEN_A=$ART
act stacks
check "the next thread dump's artifact $ART is above the removed one's ($SEEN_A)" fresh artifact "$ART" "$SEEN_A"
check "and its instance $I above $SEEN_I" fresh instance "$I" "$SEEN_I"
SEEN_I=$I SEEN_A=$ART
api GET "/api/v1/instances?worker=$W"
check "history_per_worker = 1 trimmed the worker's older instances" \
	[ "$(json "$TMP/api.out" '[i["id"] for i in j["instances"]]')" = "[$I]" ]

# --- tokens -------------------------------------------------------------------------
api POST /api/v1/tokens '{"name": "one"}'
T1=$(json "$TMP/api.out" 'j["id"]')
api DELETE "/api/v1/tokens/$T1"
api POST /api/v1/tokens '{"name": "two"}'
T2=$(json "$TMP/api.out" 'j["id"]')
check "a token made after one was revoked has a new id ($T1, then $T2)" fresh token "$T2" "$T1"

# --- after nprofd restarts, the newest artifact deleted first ------------------------
api DELETE "/api/v1/artifacts/$ART"
kill -TERM "$DAEMON"
wait "$DAEMON" 2>/dev/null
start_daemon "$D/nprofd.conf" || bail "nprofd starts again"
act stacks
check "after a restart, a new artifact $ART is above every one before ($SEEN_A)" fresh artifact "$ART" "$SEEN_A"
check "and its instance $I above $SEEN_I" fresh instance "$I" "$SEEN_I"
api POST /api/v1/tokens '{"name": "three"}'
check "and a token $(json "$TMP/api.out" 'j["id"]') above $T2" fresh token "$(json "$TMP/api.out" 'j["id"]')" "$T2"

# --- a state directory of schema version 3 ------------------------------------------
kill -TERM "$DAEMON"
wait "$DAEMON" 2>/dev/null
rm -rf "$D/state"
mkdir -p "$D/state/artifacts"
chmod 700 "$D/state"
echo '{}' >"$D/state/artifacts/2.json"
echo '{}' >"$D/state/artifacts/3.json"
# The schema as nprofd wrote it at version 3 (db.c's migrations 0 to 2);
# artifact 7 and instance 9 were handed out and removed since, named
# only by the audit log; 999999 only by a refusal.
NOW=$(($(date +%s) * 1000))	# recent: retention at start-up keeps them
sqlite3 "$D/state/nprofd.db" >/dev/null <<SQL || bail "sqlite3 makes a database of version 3"
PRAGMA journal_mode=WAL;
CREATE TABLE workers(id TEXT PRIMARY KEY, pid INTEGER NOT NULL, name TEXT, uid INTEGER,
  user TEXT, service TEXT, first_seen INTEGER, last_seen INTEGER);
CREATE TABLE instances(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, worker TEXT NOT NULL,
  pid INTEGER NOT NULL, worker_uid INTEGER NOT NULL, service TEXT,
  user TEXT NOT NULL, uid INTEGER NOT NULL, mode TEXT,
  duration_ns INTEGER, interval TEXT, format TEXT,
  status TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',
  created INTEGER NOT NULL, finished INTEGER, child_pid INTEGER);
CREATE INDEX instances_worker ON instances(worker, id);
CREATE INDEX instances_status ON instances(status);
CREATE TABLE artifacts(id INTEGER PRIMARY KEY, instance INTEGER NOT NULL, worker TEXT NOT NULL,
  worker_uid INTEGER NOT NULL, name TEXT NOT NULL, format TEXT NOT NULL,
  file TEXT NOT NULL, size INTEGER NOT NULL DEFAULT 0,
  created INTEGER NOT NULL, complete INTEGER NOT NULL DEFAULT 0);
CREATE INDEX artifacts_instance ON artifacts(instance);
CREATE TABLE tokens(id INTEGER PRIMARY KEY, uid INTEGER NOT NULL, user TEXT NOT NULL,
  name TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, created INTEGER NOT NULL,
  expires INTEGER NOT NULL, revoked INTEGER);
CREATE TABLE audit(id INTEGER PRIMARY KEY, time INTEGER NOT NULL, user TEXT NOT NULL,
  uid INTEGER NOT NULL, via TEXT NOT NULL, method TEXT NOT NULL,
  path TEXT NOT NULL, worker TEXT, status INTEGER NOT NULL, result TEXT);
ALTER TABLE instances ADD COLUMN target TEXT;
ALTER TABLE instances ADD COLUMN new_worker TEXT;
ALTER TABLE tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'api';
ALTER TABLE tokens ADD COLUMN csrf TEXT;
CREATE INDEX tokens_uid ON tokens(uid, kind);
INSERT INTO instances(id, kind, worker, pid, worker_uid, user, uid, status, created, finished)
  VALUES (2, 'stacks', '1-1', 1, 0, 'root', 0, 'FINISHED', 1000, 2000),
         (3, 'stacks', '1-1', 1, 0, 'root', 0, 'FINISHED', 3000, 4000),
         (5, 'restart', '1-1', 1, 0, 'root', 0, 'FINISHED', 5000, 6000);
INSERT INTO artifacts(id, instance, worker, worker_uid, name, format, file, size, created, complete)
  VALUES (2, 2, '1-1', 0, 'stacks-1-a.json', 'threads', '2.json', 3, $NOW, 1),
         (3, 3, '1-1', 0, 'stacks-1-b.json', 'threads', '3.json', 3, $NOW, 1);
INSERT INTO tokens(id, uid, user, name, hash, created, expires) VALUES (4, 0, 'root', 'old', 'x', 1, 2);
INSERT INTO audit(id, time, user, uid, via, method, path, worker, status, result)
  VALUES (10, 1, 'root', 0, 'socket', 'GET', '/api/v1/artifacts/7', '1-1', 200, 'download'),
         (11, 2, 'root', 0, 'socket', 'POST', '/api/v1/workers/1-1/stacks', '1-1', 201, 'instance 9'),
         (12, 3, 'eve', 1000, 'socket', 'GET', '/api/v1/artifacts/999999', NULL, 404, 'no artifact'),
         (13, 4, 'eve', 1000, 'socket', 'POST', '/api/v1/instances/888888/stop', NULL, 404, 'instance 888888 x');
PRAGMA user_version = 3;
SQL
# (the defaults: retention at start-up keeps what history_per_worker = 1 would trim)
: >"$D/plain.conf"
start_daemon "$D/plain.conf" || bail "nprofd starts on the database of version 3"
want=$(sed -n 's/^#define DB_SCHEMA_VERSION \([0-9]*\)$/\1/p' "$NPROF_SRC/src/daemon/store/db.h")
check "it is migrated to this build's schema version ($want)" \
	[ "$(sqlite3 "$D/state/nprofd.db" 'PRAGMA user_version')" = "$want" ]
api GET /api/v1/instances
check "its instances are kept: 5, 3, 2" \
	[ "$(json "$TMP/api.out" '[i["id"] for i in j["instances"]]')" = "[5, 3, 2]" ]
api GET /api/v1/artifacts
check "its artifacts are kept: 3, 2" \
	[ "$(json "$TMP/api.out" '[a["id"] for a in j["artifacts"]]')" = "[3, 2]" ]
api GET /api/v1/artifacts/2
check "and served: artifact 2" bash -c "[ '$CODE' = 200 ] && [ \"\$(cat '$TMP/api.out')\" = '{}' ]"
W=$(worker_of "$SLEEPER")
act stacks
check "a new artifact $ART is above 7, which only the audit log still named" \
	bash -c "[[ '$ART' =~ ^[0-9]+\$ ]] && [ '$ART' -gt 7 ] && [ '$ART' -lt 999999 ]"
check "a new instance $I is above 9, which only the audit log still named" \
	bash -c "[[ '$I' =~ ^[0-9]+\$ ]] && [ '$I' -gt 9 ] && [ '$I' -lt 888888 ]"
api POST /api/v1/tokens '{"name": "after"}'
check "a new token $(json "$TMP/api.out" 'j["id"]') is above 4" fresh token "$(json "$TMP/api.out" 'j["id"]')" 4
api GET "/api/v1/audit?limit=1"
check "a new audit line is above 13" fresh audit "$(json "$TMP/api.out" 'j["audit"][0]["id"]')" 13
finish
