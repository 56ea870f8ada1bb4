#!/usr/bin/env bash
# nprofd's actions beyond profiles: a restart through a real supervisor
# (runit's runsv and sv) that answers with the new worker; a restart
# refused where no supervisor is known; the operator's pluggable commands
# (eu-stack on stdout, perf stat into %o) run as the worker's owner, their
# output kept as artifacts; heap profiling switched on, asked about and
# off through the agent; the agent attached to a user's worker started
# without it (attach on), used, and detached; actions the config leaves off
# refused naming the key; the database at the current schema version.
. "$(dirname "$0")/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
AGENT=$NPROF_BUILD/libnprof.so
command -v runsv >/dev/null && command -v sv >/dev/null ||
	bail "runit's runsv and sv are installed (scripts/install-deps)"

# A runit service running a copy of split under a name of its own.
SV=$TMP/sv/splitsvc
mkdir -p "$SV"
cp "$PROGS/split" "$TMP/sv/split_sv"
printf '#!/bin/sh\nexec %s --seconds 300\n' "$TMP/sv/split_sv" >"$SV/run"
chmod +x "$SV/run"
runsv "$SV" >/dev/null 2>&1 &
RUNSV=$!
bg_pids+=("$RUNSV")
trap 'sv -w 5 exit "$SV" >/dev/null 2>&1; cleanup' EXIT

cat >"$D/nprofd.conf" <<CONF
[actions]
restart = on
commands = on
heap_profiling = on
[service splitsvc]
match = exe:$TMP/sv/split_sv
restart_command = sv restart $SV
[command pstack]
description = every thread's stack, by eu-stack
run = eu-stack -p %p
timeout = 30s
output = stdout
[command perfstat]
description = perf stat for %d seconds
run = perf stat -e task-clock -o %o -p %p -- sleep %d
timeout = 60s
output = file
CONF
start_daemon "$D/nprofd.conf" || bail "nprofd starts"

# svc_pid: the service's split, once runsv has started it (up to 10 s).
svc_pid() {
	local i p
	for ((i = 0; i < 100; i++)); do
		p=$(pgrep -f "^$TMP/sv/split_sv" | head -1)
		[ -n "$p" ] && { echo "$p"; return 0; }
		sleep 0.1
	done
	return 1
}

# --- restart through runit ---------------------------------------------------------
OLD=$(svc_pid) || bail "runsv starts the service"
W=$(worker_of "$OLD")
api GET "/api/v1/workers/$W"
check "the service's worker: service splitsvc, restart available" \
	[ "$(json "$TMP/api.out" 'j["service"], "restart" in j["actions"]')" = "('splitsvc', True)" ]
api POST "/api/v1/workers/$W/restart"
INST=$(json "$TMP/api.out" 'j["id"]')
check "POST restart: 201 with an instance" [ "$CODE" = 201 ]
wait_instance "$INST" 40
NEW_W=$(json "$TMP/inst.json" 'j["new_worker"]')
NEW_PID=${NEW_W%%-*}
check "restart FINISHED with the new worker $NEW_W, not $W" \
	bash -c "[ '$STATUS' = FINISHED ] && [ -n '$NEW_W' ] && [ '$NEW_W' != None ] && [ '$NEW_W' != '$W' ]"
check "the new pid runs the service, the old one is gone" \
	bash -c "[ '$(svc_pid)' = '$NEW_PID' ] && ! kill -0 '$OLD' 2>/dev/null"
api GET "/api/v1/workers/$W"
check "the old worker id answers 410" [ "$CODE" = 410 ]
start_prog plain "$PROGS/split" --seconds 300 || bail "split starts"
PLAIN=$PID
api POST "/api/v1/workers/$(worker_of "$PLAIN")/restart"
check "restart of a worker with no supervisor: 409 saying why" \
	bash -c "[ $CODE = 409 ] && grep -q restart_command '$TMP/api.out'"

# --- pluggable commands ------------------------------------------------------------
api GET /api/v1/commands
check "GET /api/v1/commands lists pstack and perfstat" \
	[ "$(json "$TMP/api.out" '[c["name"] for c in j["commands"]]')" = "['pstack', 'perfstat']" ]
api POST "/api/v1/workers/$(worker_of "$PLAIN")/commands/pstack"
INST=$(json "$TMP/api.out" 'j["id"]')
wait_instance "$INST" 40
api GET "/api/v1/artifacts/$(artifact_of)"
check "pstack FINISHED; its stdout (eu-stack) is an artifact naming burn_quantum" \
	bash -c "[ '$STATUS' = FINISHED ] && grep -q burn_quantum '$TMP/api.out'"
api POST "/api/v1/workers/$(worker_of "$PLAIN")/commands/perfstat" '{"duration": "1s"}'
INST=$(json "$TMP/api.out" 'j["id"]')
wait_instance "$INST" 40
api GET "/api/v1/artifacts/$(artifact_of)"
check "perfstat FINISHED; the file it wrote to %o is an artifact with task-clock" \
	bash -c "[ '$STATUS' = FINISHED ] && grep -q task-clock '$TMP/api.out'"
check "its work directory is gone" [ -z "$(ls "$D/state/work")" ]
api POST "/api/v1/workers/$(worker_of "$PLAIN")/commands/nosuch"
check "an unknown command: 404 naming it" error_names 404 command

# a command runs as the worker's owner, even when root asks
U=nprofcmd$$
test_user "$U" || bail "useradd makes a test user"
cat >"$D/id.conf" <<CONF
[actions]
commands = on
[command whoami]
run = id -un
timeout = 10s
CONF
kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null
start_daemon "$D/id.conf" || bail "nprofd starts again"
setpriv --reuid="$U" --regid="$U" --init-groups "$PROGS/split" --seconds 300 >/dev/null 2>&1 &
UP=$!; bg_pids+=("$UP")
sleep 0.3
api POST "/api/v1/workers/$(worker_of "$UP")/commands/whoami"
INST=$(json "$TMP/api.out" 'j["id"]')
wait_instance "$INST" 20
api GET "/api/v1/artifacts/$(artifact_of)"
check "a command root started on $U's worker ran as $U" [ "$(head -1 "$TMP/api.out")" = "$U" ]

# --- heap profiling on and off -------------------------------------------------------
cat >"$D/heap.conf" <<CONF
[actions]
heap_profiling = on
CONF
kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null
start_daemon "$D/heap.conf" || bail "nprofd starts again"
start_prog heap env LD_PRELOAD="$AGENT" "$PROGS/alloc_primes" --wait || bail "alloc_primes starts"
HW=$(worker_of "$PID")
api POST "/api/v1/workers/$HW/heap" '{"action": "enable", "interval": "16k"}'
check "heap enable: 200" [ "$CODE" = 200 ]
api POST "/api/v1/workers/$HW/heap" '{"action": "enable"}'
check "enable again: 409 saying it is already on" \
	bash -c "[ $CODE = 409 ] && grep -q 'already on' '$TMP/api.out'"
kill -USR1 "$PID"
wait_for_line "$TMP/heap.out" allocated 20
api POST "/api/v1/workers/$HW/heap" '{"action": "status"}'
check "heap status: on, the interval 16k" \
	bash -c "[ $CODE = 200 ] && grep -q 'on' '$TMP/api.out'"
api POST "/api/v1/workers/$HW/heapdump"
INST=$(json "$TMP/api.out" 'j["id"]')
wait_instance "$INST" 30
api GET "/api/v1/artifacts/$(artifact_of)?format=collapsed"
check "a heap snapshot after enable holds make_a's blocks" grep -qE 'make_a.* [0-9]+$' "$TMP/api.out"
api POST "/api/v1/workers/$HW/heap" '{"action": "disable"}'
check "heap disable: 200" [ "$CODE" = 200 ]
api POST "/api/v1/workers/$HW/heap" '{"action": "toggle"}'
check "heap action toggle: 400 naming action" error_names 400 action
api POST "/api/v1/workers/$(worker_of "$PLAIN")/restart"
check "restart switched off (the default): 403 naming [actions] restart" \
	bash -c "[ $CODE = 403 ] && grep -q 'actions] restart' '$TMP/api.out'"
api POST "/api/v1/workers/$(worker_of "$PLAIN")/coredump"
check "core_file switched off (the default): 403 naming it" \
	bash -c "[ $CODE = 403 ] && grep -q core_file '$TMP/api.out'"

# --- the agent attached to a worker started without it ----------------------------------
api POST "/api/v1/workers/$(worker_of "$UP")/attach"
check "attach switched off (the default): 403 naming [actions] attach" \
	bash -c "[ $CODE = 403 ] && grep -q 'actions] attach' '$TMP/api.out'"
api -u "setpriv --reuid=$U --regid=$U --init-groups" GET "/api/v1/workers/$(worker_of "$UP")"
why=$(json "$TMP/api.out" 'j["unavailable"]["modes"]["wall"]')
[[ $why == *LD_PRELOAD* && $why == *admin* && $why != *"Attach agent"* ]]
check "$U's worker without the agent: wall unavailable, naming an admin, the agent and LD_PRELOAD only (attach off): $why" [ $? -eq 0 ]
cat >"$D/attach.conf" <<CONF
[actions]
attach = on
heap_profiling = on
CONF
kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null
start_daemon "$D/attach.conf" || bail "nprofd starts again"
AS="setpriv --reuid=$U --regid=$U --init-groups"
UW=$(worker_of "$UP")
api -u "$AS" GET "/api/v1/workers/$UW"
check "with attach on, $U sees attach offered, wall unavailable until then (naming Attach agent)" \
	bash -c "grep -q '\"attach\"' '$TMP/api.out' && grep -q 'Attach agent' '$TMP/api.out'"
api -u "$AS" POST "/api/v1/workers/$UW/attach"
check "$U attaches the agent to their own worker: 200, the attach line" \
	bash -c "[ $CODE = 200 ] && grep -q 'agent loaded' '$TMP/api.out'"
api -u "$AS" GET "/api/v1/workers/$UW"
check "the worker now has the agent, and wall and heap are available" \
	[ "$(json "$TMP/api.out" 'j["agent"] and "wall" in j["modes"] and "heap" in j["actions"]')" = True ]
api -u "$AS" POST /api/v1/instances "{\"worker\": \"$UW\", \"mode\": \"wall\", \"duration\": \"1s\"}"
INST=$(json "$TMP/api.out" 'j["id"]')
wait_instance "$INST" 20
api -u "$AS" GET "/api/v1/instances/$INST"
check "a wall instance on the attached worker finishes" \
	[ "$(json "$TMP/api.out" 'j["status"]')" = FINISHED ]
api -u "$AS" POST "/api/v1/workers/$UW/attach"
check "attach again: 200, the agent already there used as it is" \
	bash -c "[ $CODE = 200 ] && grep -q 'already runs' '$TMP/api.out'"
api -u "$AS" POST "/api/v1/workers/$UW/detach"
check "$U detaches it: 200, the agent idle" \
	bash -c "[ $CODE = 200 ] && grep -q 'idle' '$TMP/api.out'"
api -u "$AS" GET "/api/v1/workers/$UW"
check "after detach the worker shows no agent" [ "$(json "$TMP/api.out" 'j["agent"]')" = False ]
api -u "$AS" POST "/api/v1/workers/$(worker_of "$PLAIN")/attach"
check "$U cannot attach to a worker that is not theirs: 404, as a missing one" error_names 404 worker

# --- which processes are workers ---------------------------------------------------
cat >"$D/select.conf" <<CONF
[workers]
select = exe:$TMP/sv/split_sv
CONF
kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null
start_daemon "$D/select.conf" || bail "nprofd starts again"
api GET /api/v1/workers
check "[workers] select = exe:...split_sv: only the service's process is a worker" \
	[ "$(json "$TMP/api.out" '[w["pid"] for w in j["workers"]]')" = "[$(svc_pid)]" ]
api GET "/api/v1/workers/$(cat /proc/$PLAIN/stat | awk '{ print $1 "-" $22 }')"
check "a process the selection leaves out: 404, as a missing one" error_names 404 worker
want=$(sed -n 's/^#define DB_SCHEMA_VERSION \([0-9]*\)$/\1/p' "$NPROF_SRC/src/daemon/store/db.h")
check "the database is at this build's schema version ($want)" \
	[ "$(sqlite3 "$D/state/nprofd.db" 'PRAGMA user_version')" = "$want" ]
finish
