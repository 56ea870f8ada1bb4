#!/usr/bin/env bash
# Schedules (continuous profiling) through nprofd's API, on a private
# daemon: every bad field is a 400 naming it, a selector that matches
# nothing is taken and says so; a schedule records its worker each
# period as instances marked with it, leaves a period to an on-demand
# instance of the same mode, stops while paused and starts again when
# resumed, removes what is past its keep, and goes on after nprofd's
# restart; a user's schedule of every service records only their own
# workers, and other users cannot see or touch it; deleted, what it
# recorded stays; a service's recordings over a range merge into one
# holding every sample of each, and sum over time to the same; nprof schedule does the same from a shell. Periods are
# seconds here: the waits are bounded by
# them, not by a count of anything.
# test-timeout: 400
. "$(dirname "$0")/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
cat >"$D/nprofd.conf" <<CONF
[instances]
grace = 5s
CONF
start_daemon "$D/nprofd.conf" || bail "nprofd starts"
start_prog split "$PROGS/split" --seconds 600 || bail "split starts"
SPLIT=$PID
W=$(worker_of "$SPLIT")

# scheduled ID: how many instances schedule ID made so far.
scheduled() {
	api GET "/api/v1/instances?schedule=$1&limit=1000"
	json "$TMP/api.out" 'len(j["instances"])'
}
# wait_scheduled ID N SECONDS: until schedule ID has made N instances.
wait_scheduled() {
	local i
	for ((i = 0; i < $3 * 5; i++)); do
		[ "$(scheduled "$1")" -ge "$2" ] 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}
# create BODY: POST /api/v1/schedules; its id in SCHED.
create() {
	api POST /api/v1/schedules "$1"
	SCHED=$(json "$TMP/api.out" 'j["id"]')
}

# --- bad input --------------------------------------------------------------
create '{"modes": ["cpu"], "every": "10s"}'
check "no selector: 400 naming selector" error_names 400 selector
create '{"selector": {}, "modes": ["cpu"], "every": "10s"}'
check "an empty selector: 400 naming selector" error_names 400 selector
create "{\"selector\": {\"workers\": [\"$W\"], \"unit\": \"x\"}, \"modes\": [\"cpu\"], \"every\": \"10s\"}"
check "a selector of two kinds: 400 naming selector" error_names 400 selector
create "{\"selector\": {\"colour\": \"red\"}, \"modes\": [\"cpu\"], \"every\": \"10s\"}"
check "an unknown selector key: 400 naming selector" error_names 400 selector
create "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [], \"every\": \"10s\"}"
check "no mode: 400 naming modes" error_names 400 modes
create "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [\"cpux\"], \"every\": \"10s\"}"
check "mode cpux: 400 naming modes" error_names 400 modes
create "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [\"cpu\", \"cpu\"], \"every\": \"10s\"}"
check "a mode twice: 400 naming modes" error_names 400 modes
create "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [\"cpu\"]}"
check "no period: 400 naming every" error_names 400 every
create "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [\"cpu\"], \"duration\": \"10s\", \"every\": \"5s\"}"
check "a period shorter than the recording: 400 naming every" error_names 400 every
create "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [\"cpu\"], \"duration\": \"2h\", \"every\": \"1d\"}"
check "a recording above duration_max: 400 naming duration" error_names 400 duration
create "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [\"cpu\"], \"every\": \"10s\", \"colour\": 1}"
check "an unknown field: 400 naming it" error_names 400 colour
create "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [\"cpu\"], \"every\": \"10s\", \"budget\": \"0%\"}"
check "budget 0%: 400 naming budget" error_names 400 budget
create "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [\"cpu\"], \"every\": \"10s\", \"budget\": 101}"
check "budget 101: 400 naming budget" error_names 400 budget
create "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [\"cpu\"], \"every\": \"10s\", \"budget\": \"lots\"}"
check "budget lots: 400 naming budget" error_names 400 budget
create '{"selector": {"service": "no-such-service-*"}, "modes": ["cpu"], "every": "1h"}'
check "a selector that matches nothing: 201, saying so; no budget given: [continuous] cpu_budget's 1%" \
	bash -c "[ $CODE = 201 ] && [ '$(json "$TMP/api.out" 'j["matches"], "matches none" in j["message"], j["budget"]')' = '(0, True, 1.0)' ]"
api DELETE "/api/v1/schedules/$SCHED"

# --- a schedule records its worker each period -------------------------------
# (a budget a recording of 1 s every 3 s keeps: nprof's own CPU for one
# is tens of ms, several per cent of the period)
create "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [\"cpu\"], \"duration\": \"1s\", \"every\": \"3s\", \"budget\": \"50%\"}"
check "a schedule of split's worker: 201 ACTIVE, matching 1, its budget 50%, its interval its period" \
	[ "$CODE $(json "$TMP/api.out" 'j["status"], j["matches"], j["modes"], j["budget"], j["interval"]')" = "201 ('ACTIVE', 1, ['cpu'], 50.0, 3.0)" ]
S1=$SCHED
wait_scheduled "$S1" 2 20
api GET "/api/v1/instances?schedule=$S1"
cp "$TMP/api.out" "$TMP/s1.json"
check "two periods: two cpu instances of its worker, marked with the schedule" \
	[ "$(json "$TMP/s1.json" 'sorted(set((i["schedule"], i["mode"], i["worker"]) for i in j["instances"]))')" = "[($S1, 'cpu', '$W')]" ]
gap=$(json "$TMP/s1.json" '(lambda t: (t[0] - t[-1]).total_seconds())([__import__("datetime").datetime.fromisoformat(i["created"][:-1]) for i in j["instances"]])')
check "a period apart: ${gap}s between them (every 3s)" awk -v g="$gap" 'BEGIN { exit !(g >= 2.5) }'
I1=$(json "$TMP/s1.json" 'j["instances"][-1]["id"]')
wait_instance "$I1" 20
check "its first recording FINISHED with a profile, the CPU its nprof used measured ($(json "$TMP/inst.json" 'j["cpu"]') s)" \
	bash -c "[ '$STATUS' = FINISHED ] && [ '$(json "$TMP/inst.json" 'j["artifacts"][0]["size"] > 0 and 0 < j["cpu"] < 5')' = True ]"
api GET "/api/v1/artifacts/$(artifact_of)?format=summary"
check "the profile names the governor's interval, budget and measured cost in a note" \
	grep -qE 'continuous profiling: interval=3s budget=50.00% measured_cost=[0-9.]+%' "$TMP/api.out"
api GET "/api/v1/schedules/$S1"
check "the schedule says what its last period did" \
	bash -c "[ '$(json "$TMP/api.out" '"1 worker matched" in j["message"] and j["last_run"] is not None')' = True ]"

# --- a budget too small: the governor stretches the period, and says so ---------
create "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [\"page-faults\"], \"duration\": \"1s\", \"every\": \"2s\", \"budget\": \"0.01%\"}"
SG=$SCHED
wait_scheduled "$SG" 1 10
# a period once the first recording has ended measures its cost: past
# 2 s, well within 20
for ((i = 0; i < 100; i++)); do
	api GET "/api/v1/schedules/$SG"
	[ "$(json "$TMP/api.out" 'j["interval"] > 2')" = True ] && break
	sleep 0.2
done
cp "$TMP/api.out" "$TMP/sg.json"
# what the governor knew when that period began: the mean CPU of the
# recordings ended by then (on a loaded host, one or more)
api GET "/api/v1/instances?schedule=$SG&limit=1000"
used=$(json "$TMP/api.out" '(lambda done: sum(done) / len(done))([i["cpu"] for i in j["instances"] if i["finished"] and i["cpu"] is not None and i["finished"] <= '"'$(json "$TMP/sg.json" 'j["last_run"]')'"'])')
# and nprofd's own work for the period, which the message names
own=$(json "$TMP/sg.json" '(lambda m: float(m.group(1)) / 1000 if m else -1)(__import__("re").search(r"\(nprofd ([0-9.]+) ms a period\)", j["message"]))')
want=$(awk -v u="$used" -v o="$own" 'BEGIN { printf "%.1f", (u + o) / 0.0001 }')
check "budget 0.01%: the period stretched to its recordings' and nprofd's cost over the budget (interval $(json "$TMP/sg.json" 'j["interval"]') s, (${used} + ${own}) s of CPU / 0.01% = $want s)" \
	bash -c "[ '$(json "$TMP/sg.json" 'j["interval"] > 2 and abs(j["interval"] - '"$want"') <= max(1, 0.05 * j["interval"])')' = True ]"
check "and says so, naming the budget" \
	bash -c "[ '$(json "$TMP/sg.json" '"more than its budget (0.01% of a CPU) allows a period: one every" in j["message"] and j["cost"] > 0.01')' = True -a '$own' != -1 ]"
n=$(scheduled "$SG")
sleep 4
check "no period begins before the stretched one ($n, then $(scheduled "$SG"))" [ "$(scheduled "$SG")" = "$n" ]
api DELETE "/api/v1/schedules/$SG"

# --- a budget that pays for some of the workers: each period takes the
# least recently recorded, in turn ------------------------------------------------
IDS=
for k in 1 2 3 4 5 6; do
	start_prog "idle$k" "$PROGS/eight_threads" || bail "eight_threads $k starts"
	IDS+="${IDS:+,}\"$(worker_of "$PID")\""
done
create "{\"selector\": {\"workers\": [$IDS]}, \"modes\": [\"page-faults\"], \"duration\": \"1s\", \"every\": \"2s\", \"budget\": \"$(awk -v u="$used" 'BEGIN { printf "%.2f", 2.5 * u / 2 * 100 }')%\"}"
SD=$SCHED
# period 1 learns the cost with one; then 2 a period (2.5 recordings' worth)
wait_scheduled "$SD" 7 30
api GET "/api/v1/instances?schedule=$SD&limit=1000"
cp "$TMP/api.out" "$TMP/sd.json"
api GET "/api/v1/schedules/$SD"
# (2 when each costs what the first did; the workers' own costs differ a little)
check "a budget of about 2.5 recordings a period: some of the 6 a period, saying so ($(json "$TMP/api.out" 'j["message"]' | cut -c1-160))" \
	bash -c "[ '$(json "$TMP/api.out" 'bool(__import__("re").search(r"; [123] of the 6 recordings it wants this period", j["message"]))')' = True ]"
check "in turn: the first 7 recordings cover all 6 workers ($(json "$TMP/sd.json" 'len(set(i["worker"] for i in j["instances"][-7:]))'))" \
	[ "$(json "$TMP/sd.json" 'len(set(i["worker"] for i in j["instances"][-7:]))')" = 6 ]
api DELETE "/api/v1/schedules/$SD"

# --- on demand wins; paused; resumed ------------------------------------------
# (a 409 while the schedule's own 1 s recording runs: again, once it ends)
for ((i = 0; i < 50; i++)); do
	start_instance "{\"worker\": \"$W\", \"mode\": \"cpu\", \"duration\": \"8s\"}"
	[ "$CODE" = 409 ] || break
	sleep 0.1
done
ONDEMAND=$INST
sleep 4
api GET "/api/v1/schedules/$S1"
check "a period while an on-demand cpu instance runs leaves it to that one" \
	bash -c "[ '$(json "$TMP/api.out" '"1 left to on-demand" in j["message"]')' = True ]"
wait_instance "$ONDEMAND" 20
api PATCH "/api/v1/schedules/$S1" '{"status": "PAUSED"}'
check "PATCH status PAUSED: paused" [ "$(json "$TMP/api.out" 'j["status"]')" = PAUSED ]
sleep 1
n=$(scheduled "$S1")
sleep 5
check "paused: no recording in two periods ($n, then $(scheduled "$S1"))" [ "$(scheduled "$S1")" = "$n" ]
api PATCH "/api/v1/schedules/$S1" '{"status": "ACTIVE"}'
check "PATCH status ACTIVE: active again" [ "$(json "$TMP/api.out" 'j["status"]')" = ACTIVE ]
check "resumed: it records at once" wait_scheduled "$S1" $((n + 1)) 5
api PATCH "/api/v1/schedules/$S1" '{"status": "DONE"}'
check "PATCH status DONE: 400 naming status" error_names 400 status

# --- nprofd restarted: it goes on ----------------------------------------------
kill -TERM "$DAEMON"
wait_pid "$DAEMON" 15
n=$(sqlite3 "$D/state/nprofd.db" "SELECT COUNT(*) FROM instances WHERE schedule = $S1")
start_daemon "$D/nprofd.conf" || bail "nprofd starts again"
api GET "/api/v1/schedules/$S1"
check "after a restart the schedule is there, ACTIVE" [ "$(json "$TMP/api.out" 'j["status"]')" = ACTIVE ]
check "and records again ($n before the restart)" wait_scheduled "$S1" $((n + 1)) 10

# --- a service's recordings merged --------------------------------------------------
# (paused, and its last recording ended: the sum below is of them all)
api PATCH "/api/v1/schedules/$S1" '{"status": "PAUSED"}'
for ((i = 0; i < 100; i++)); do
	api GET "/api/v1/instances?schedule=$S1&status=RUNNING"
	[ "$(json "$TMP/api.out" 'len(j["instances"])')" = 0 ] && break
	sleep 0.1
done
api GET "/api/v1/workers/$W"
SVC=$(json "$TMP/api.out" 'j["service"]')
SVC_Q=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$SVC")
# (what a merge takes: FINISHED and STOPPED — one ended early by the
# restart is kept — not FAILED)
api GET "/api/v1/instances?schedule=$S1&limit=1000"
json "$TMP/api.out" 'json.dumps({"instances": [i for i in j["instances"] if i["status"] in ("FINISHED", "STOPPED") and i["artifacts"]]})' >"$TMP/s1done.json"
FROM=$(json "$TMP/s1done.json" 'min(i["created"] for i in j["instances"])')
# (until the last one listed: a period begun as the pause came is not in the sum, nor in the merge)
UNTIL=$(json "$TMP/s1done.json" 'max(i["created"] for i in j["instances"])')
sum=0
for art in $(json "$TMP/s1done.json" '" ".join(str(i["artifacts"][0]["id"]) for i in j["instances"] if i["mode"] == "cpu")'); do
	api GET "/api/v1/artifacts/$art?format=collapsed"
	sum=$((sum + $(total "$TMP/api.out")))
done
api GET "/api/v1/profiles?service=$SVC_Q&mode=cpu&from=$FROM&until=$UNTIL&format=collapsed"
cp "$TMP/api.out" "$TMP/merged.collapsed"
check "GET /api/v1/profiles: the service's cpu recordings merged into one, every sample of each ($(total "$TMP/merged.collapsed") = $sum)" \
	bash -c "[ $CODE = 200 ] && [ $(total "$TMP/merged.collapsed") = $sum ] && [ $sum -gt 0 ]"
check "the merged profile holds split's burn_* functions" has_frame_match "$TMP/merged.collapsed" '^burn_sixty$'
curl -s --unix-socket "$SOCK" -o "$TMP/merged.pb.gz" "http://nprofd/api/v1/profiles?service=$SVC_Q&mode=cpu&from=$FROM&until=$UNTIL"
check "as stored (pprof): a profile nprof reads back" \
	bash -c "'$NPROF' convert -o collapsed '$TMP/merged.pb.gz' - | grep -q burn_sixty"
# the same recordings as a timeline: every sample of each, at its time
api GET "/api/v1/profiles/series?service=$SVC_Q&mode=cpu&from=$FROM&until=$UNTIL&step=1"
cp "$TMP/api.out" "$TMP/series.json"
check "GET /api/v1/profiles/series: 200, by the second, the merged recordings ($(json "$TMP/series.json" 'j.get("recordings")'))" \
	bash -c "[ $CODE = 200 ] && [ '$(json "$TMP/series.json" 'j["step"], j["unit"], j["recordings"] > 0, j["spread"]')' = '(1, '"'count'"', True, 0)' ]"
check "its points and what fell past until add up to the merged profile's samples ($(json "$TMP/series.json" 'sum(p["value"] for p in j["points"]), j["outside"]') = $sum)" \
	[ "$(json "$TMP/series.json" 'round(sum(p["value"] for p in j["points"]) + j["outside"])')" = "$sum" ]
# (each recording is 1 s: its samples lie in the second it began and the next two)
stray=$(python3 - "$TMP/s1done.json" "$TMP/series.json" <<'PY'
import datetime, json, sys
at = lambda t: datetime.datetime.fromisoformat(t.rstrip("Z"))
starts = [at(i["created"]).replace(microsecond=0) for i in json.load(open(sys.argv[1]))["instances"] if i["mode"] == "cpu"]
print([p["t"] for p in json.load(open(sys.argv[2]))["points"]
       if p["value"] and not any(0 <= (at(p["t"]) - s).total_seconds() <= 2 for s in starts)])
PY
)
check "the samples lie where the recordings ran: no second holds some unless a recording began in it or the two before ($stray)" \
	[ "$stray" = "[]" ]
api GET "/api/v1/profiles/series?service=$SVC_Q&mode=cpu"
check "no range, no step: the hour before now, by what draws it in at most 300 steps (15 s)" \
	[ "$CODE $(json "$TMP/api.out" 'j["step"], len(j["points"]) <= 300')" = "200 (15, True)" ]
api GET "/api/v1/profiles/series?service=$SVC_Q&mode=cpu&from=1000&until=2000"
check "a range with no recording: 200, no points, recordings 0" \
	[ "$CODE $(json "$TMP/api.out" 'j["points"], j["recordings"]')" = "200 ([], 0)" ]
for bad in step=0 step=1.5 step=-1 step=86401 "step=1&from=0&until=86400000"; do
	api GET "/api/v1/profiles/series?service=$SVC_Q&mode=cpu&$bad"
	check "series $bad: 400 naming step" error_names 400 step
done
api GET "/api/v1/profiles/series?service=$SVC_Q&mode=cpux"
check "series mode cpux: 400 naming mode (the query /profiles takes)" error_names 400 mode
api GET "/api/v1/profiles/series?mode=cpu"
check "series without service: 400 naming service" error_names 400 service
api GET "/api/v1/profiles/series?service=$SVC_Q&mode=cpu&until=never"
check "series until=never: 400 naming until" error_names 400 until
api GET "/api/v1/profiles/series?service=$SVC_Q&mode=cpu&user=no-such-user-$$"
check "series user=no-such-user: 400 naming user" error_names 400 user
api GET "/api/v1/profiles?mode=cpu"
check "no service: 400 naming service" error_names 400 service
api GET "/api/v1/profiles?service=$SVC_Q&mode=cpux"
check "mode cpux: 400 naming mode" error_names 400 mode
api GET "/api/v1/profiles?service=$SVC_Q&mode=cpu&from=yesterday"
check "from=yesterday: 400 naming from" error_names 400 from
api GET "/api/v1/profiles?service=$SVC_Q&mode=cpu&from=$UNTIL&until=$FROM"
check "from after until: 400 naming from" error_names 400 from
api GET "/api/v1/profiles?service=$SVC_Q&mode=cpu&from=1000&until=2000"
check "a range with no recording (Unix seconds of 1970): 404" error_names 404 service

# --- keep -----------------------------------------------------------------------
api DELETE "/api/v1/schedules/$S1"
check "DELETE: 200, deleted" [ "$CODE $(json "$TMP/api.out" 'j["deleted"]')" = "200 $S1" ]
api GET "/api/v1/schedules/$S1"
check "then GET: 404" error_names 404 id
check "what it recorded stays" [ "$(scheduled "$S1")" -gt 0 ]
create "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [\"page-faults\"], \"duration\": \"1s\", \"every\": \"2s\", \"keep\": \"3s\", \"budget\": \"50%\"}"
S2=$SCHED
wait_scheduled "$S2" 1 10
api GET "/api/v1/instances?schedule=$S2"
FIRST=$(json "$TMP/api.out" 'j["instances"][-1]["id"]')
sleep 9
api GET "/api/v1/instances/$FIRST"
check "keep 3s: its first recording is gone 9 s later (404)" [ "$CODE" = 404 ]
check "and it keeps no more than its keep holds ($(scheduled "$S2"))" [ "$(scheduled "$S2")" -le 3 ]
api DELETE "/api/v1/schedules/$S2"

# --- nprof schedule -------------------------------------------------------------
export NPROF_SOCKET=$SOCK
# (the schedule above may still record split: its modes would be left to it)
for ((i = 0; i < 100; i++)); do
	api GET "/api/v1/instances?worker=$W&status=RUNNING"
	[ "$(json "$TMP/api.out" 'len(j["instances"])')" = 0 ] && break
	sleep 0.1
done
run_nprof 30 schedule create --worker "$SPLIT" -e cpu -e page-faults -d 1s --every 1h --keep 2h
check "nprof schedule create: says what it records and how many workers it takes" \
	bash -c "[ $NP_RC = 0 ] && grep -q 'cpu,page-faults of workers $W for 1s every 1h, kept 2h' '$TMP/np.out' && grep -q 'it takes 1 of your workers now' '$TMP/np.out'"
[ "$NP_RC" = 0 ] || np_diag
CLI=$(sed -n 's/^schedule \([0-9]*\) .*/\1/p' "$TMP/np.out" | head -1)
run_nprof 30 schedule list
check "nprof schedule list: a line for it, ACTIVE, its selector and modes" \
	bash -c "grep -E '^ *$CLI ACTIVE +root +workers $W +cpu,page-faults' '$TMP/np.out' >/dev/null"
run_nprof 30 schedule pause "$CLI"
check "nprof schedule pause: PAUSED" bash -c "[ $NP_RC = 0 ] && grep -q '(PAUSED, root)' '$TMP/np.out'"
run_nprof 30 schedule resume "$CLI"
check "nprof schedule resume: ACTIVE" bash -c "[ $NP_RC = 0 ] && grep -q '(ACTIVE, root)' '$TMP/np.out'"
wait_scheduled "$CLI" 2 20
run_nprof 30 instances --schedule "$CLI"
check "nprof instances --schedule: its recordings, both modes" \
	bash -c "grep -q ' cpu ' '$TMP/np.out' && grep -q ' page-faults ' '$TMP/np.out'"
run_nprof 30 schedule show "$CLI" --json
check "nprof schedule show --json: the API's JSON" \
	[ "$(json "$TMP/np.out" 'j["id"], j["modes"]')" = "($CLI, ['cpu', 'page-faults'])" ]
run_nprof 30 schedule delete "$CLI"
check "nprof schedule delete: deleted, what it recorded stays" \
	bash -c "[ $NP_RC = 0 ] && grep -q 'deleted; what it recorded stays' '$TMP/np.out'"
run_nprof 30 schedule create -e cpu --every 1m
check "create without a selector: usage error naming the selectors" \
	bash -c "[ $NP_RC = 2 ] && grep -q 'give --service, --worker' '$TMP/np.err'"
run_nprof 30 schedule create --service x --unit y -e cpu --every 1m
check "two selectors: usage error" bash -c "[ $NP_RC = 2 ] && grep -q 'one selector at a time' '$TMP/np.err'"
run_nprof 30 schedule create --service x -e cpu -d 10s --every 5s
check "a period shorter than the recording: nprofd's 400, one line" \
	eval '[ $NP_RC = 1 ] && one_error_line && err_says "at least duration"'
run_nprof 30 schedule pause 999999
check "pause of a schedule that is not there: one line naming it" \
	eval '[ $NP_RC = 1 ] && one_error_line && err_says "no schedule 999999"'

# --- another user --------------------------------------------------------------
U1=nprofs1$$ U2=nprofs2$$
test_user "$U1" && test_user "$U2" || bail "useradd makes two test users"
usable_by_others || bail "the test programs are usable by other users"
AS1="setpriv --reuid=$U1 --regid=$U1 --init-groups"
AS2="setpriv --reuid=$U2 --regid=$U2 --init-groups"
$AS1 "$PROGS/split" --seconds 600 >/dev/null 2>&1 &
P1=$!; bg_pids+=("$P1")
sleep 0.3
W1=$(worker_of "$P1")
api -u "$AS1" POST /api/v1/schedules '{"selector": {"service": "*"}, "modes": ["cpu"], "duration": "1s", "every": "2s", "budget": "50%"}'
S3=$(json "$TMP/api.out" 'j["id"]')
# (its curl asking is one of its processes too, for that moment)
check "$U1 schedules every service: 201, matching its processes ($(json "$TMP/api.out" 'j["matches"]'))" \
	[ "$CODE $(json "$TMP/api.out" 'j["matches"] >= 1')" = "201 True" ]
for ((i = 0; i < 100; i++)); do
	api GET "/api/v1/instances?schedule=$S3"
	[ "$(json "$TMP/api.out" '"'"$W1"'" in [i["worker"] for i in j["instances"]]')" = True ] && break
	sleep 0.2
done
api GET "/api/v1/instances?schedule=$S3"
# (its curl asking, a process of its too for that moment, may be taken)
check "its recordings are all of $U1's processes, split's among them, none of root's" \
	[ "$(json "$TMP/api.out" 'sorted(set(i["worker_uid"] for i in j["instances"])), "'"$W1"'" in [i["worker"] for i in j["instances"]]')" = "([$(id -u "$U1")], True)" ]
api -u "$AS2" GET "/api/v1/schedules/$S3"
check "$U2 asks for $U1's schedule: 404" error_names 404 id
api -u "$AS2" PATCH "/api/v1/schedules/$S3" '{"status": "PAUSED"}'
check "$U2 pauses it: 404" error_names 404 id
api -u "$AS2" DELETE "/api/v1/schedules/$S3"
check "$U2 deletes it: 404" error_names 404 id
api -u "$AS2" GET /api/v1/schedules
check "$U2's list is empty" [ "$(json "$TMP/api.out" 'len(j["schedules"])')" = 0 ]
api GET /api/v1/schedules
check "an admin's list has $U1's" [ "$(json "$TMP/api.out" "any(s['id'] == $S3 for s in j['schedules'])")" = True ]
api -u "$AS1" DELETE "/api/v1/schedules/$S3"
check "$U1 deletes its own: 200" [ "$CODE" = 200 ]

# --- the agent's CPU inside the target counts ----------------------------------------
# A schedule in alloc mode on a worker with the agent: the agent says in
# its profile what it spent in the process (agent_cpu), and the
# recording's cpu, which the governor sums, holds it beside nprof's own.
start_prog demo env LD_PRELOAD="$NPROF_BUILD/libnprof.so" "$PROGS/demo" ||
	bail "demo with the agent starts"
WA=$(worker_of "$PID")
create "{\"selector\": {\"workers\": [\"$WA\"]}, \"modes\": [\"alloc\"], \"duration\": \"2s\", \"every\": \"1h\", \"budget\": \"50%\"}"
SA=$SCHED
wait_scheduled "$SA" 1 10
api GET "/api/v1/instances?schedule=$SA"
IA=$(json "$TMP/api.out" 'j["instances"][0]["id"]')
wait_instance "$IA" 30
api GET "/api/v1/artifacts/$(artifact_of)?format=flamegraph"
said=$(grep -o 'agent_cpu=[0-9.]*ms' "$TMP/api.out" | head -1 | sed 's/agent_cpu=\(.*\)ms/\1/')
cpu=$(json "$TMP/inst.json" 'j["cpu"]')
check "an alloc recording through the agent: its profile says the agent's CPU (${said:-none} ms), and its cpu ($cpu s) holds it" \
	bash -c "[ -n '$said' ] && awk -v s='$said' -v c='$cpu' 'BEGIN { exit !(s > 0 && c * 1000 >= s) }'"
api DELETE "/api/v1/schedules/$SA"
finish
