#!/usr/bin/env bash
# Schedules nprofd.conf declares ([schedule NAME], nprofd.conf(5)), on a
# private daemon: a bad section stops nprofd with one line naming its
# file and line; a declared schedule of split's worker is in the API
# with its source and name, as user nprofd.conf, and records split each
# period as instances marked with it; PATCH and DELETE on it are
# refused (409) naming the section, and nprof schedule says so too; a
# restart with the section changed updates it in place (same id, its
# recordings still its own), and one with the section removed removes
# the schedule and leaves its recordings. Each part is a scenario
# (tests/run build daemon_conf_schedules:changed); the waits are bounded
# by a few periods of seconds, not by a count of anything.
# test-timeout: 300
. "$(dirname "$0")/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }

# conf [SECTION...]: the daemon's nprofd.conf, with these lines after its
# [instances] section (a [schedule NAME] declared, or nothing).
conf() {
	{
		printf '[instances]\ngrace = 5s\n'
		printf '%s\n' "$@"
	} >"$D/nprofd.conf"
}
# restart: nprofd stopped and started again on the same state.
restart() {
	kill -TERM "$DAEMON"
	wait_pid "$DAEMON" 15 || return 1
	start_daemon "$D/nprofd.conf"
}
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
# declared NAME: the id of the schedule nprofd.conf's [schedule NAME] made.
declared() {
	api GET /api/v1/schedules
	json "$TMP/api.out" "[s['id'] for s in j['schedules'] if s['name'] == '$1'][0]"
}

# --- set-ups (given) ----------------------------------------------------------

# split, the worker the schedule records: its worker id (PID-STARTTIME,
# /proc/PID/stat's 22nd field) read before any daemon runs, for the file
setup_split() {
	start_prog split "$PROGS/split" --seconds 600 || return 1
	SPLIT=$PID
	W=$SPLIT-$(sed 's/.*) //' "/proc/$SPLIT/stat" | awk '{ print $20 }')
}

# nprofd with [schedule conf-split]: split's cpu, 1 s every 2 s
setup_daemon() {
	given split
	conf '[schedule conf-split]' "workers = $W" 'modes = cpu' 'duration = 1s' 'every = 2s' \
		'budget = 50%'
	start_daemon "$D/nprofd.conf" || return 1
	SCHED=$(declared conf-split)
	[ -n "$SCHED" ]
}

# --- scenarios ------------------------------------------------------------------

scenario_bad_section() {
	given split
	conf '[schedule bad]' "workers = $W" 'modes = cpu' 'duration = 10s' 'every = 5s'
	timeout 20 "$NPROFD" --config "$D/nprofd.conf" --socket "$D/bad.sock" \
		--state-dir "$D/bad-state" --listen 127.0.0.1:0 >"$TMP/bad.out" 2>"$TMP/bad.err"
	rc=$?
	check "a period shorter than the recording: nprofd does not start (rc $rc), one line naming the file's line 7 and the fix ($(head -c 200 "$TMP/bad.err"))" \
		bash -c "[ $rc = 1 ] && [ \$(wc -l <'$TMP/bad.err') = 1 ] && grep -q '^nprofd: $D/nprofd.conf:7: \[schedule bad\] every (the period) must be at least duration' '$TMP/bad.err'"
	conf '[schedule bad]' "workers = $W" 'unit = web.service' 'modes = cpu' 'every = 5s'
	"$NPROFD" --check-config --config "$D/nprofd.conf" >"$TMP/bad.out" 2>"$TMP/bad.err"
	check "two selectors: --check-config says so at line 5, naming both ($(head -c 200 "$TMP/bad.err"))" \
		grep -q "nprofd.conf:5: unit: \[schedule bad\] already has a selector (workers)" "$TMP/bad.err"
}

scenario_records() {
	given daemon
	api GET "/api/v1/schedules/$SCHED"
	check "[schedule conf-split] is in the API: ACTIVE, user nprofd.conf, source nprofd.conf, its name, its selector, modes, period and budget" \
		[ "$(json "$TMP/api.out" 'j["status"], j["user"], j["source"], j["name"], j["selector"], j["modes"], j["duration"], j["every"], j["budget"]')" = "('ACTIVE', 'nprofd.conf', 'nprofd.conf', 'conf-split', {'workers': ['$W']}, ['cpu'], 1.0, 2.0, 50.0)" ]
	check "it records split each period: two instances within 20 s" wait_scheduled "$SCHED" 2 20
	api GET "/api/v1/instances?schedule=$SCHED"
	check "its instances are cpu recordings of split's worker, marked with it" \
		[ "$(json "$TMP/api.out" 'sorted(set((i["schedule"], i["mode"], i["worker"]) for i in j["instances"]))')" = "[($SCHED, 'cpu', '$W')]" ]
	api POST /api/v1/schedules "{\"selector\": {\"workers\": [\"$W\"]}, \"modes\": [\"page-faults\"], \"every\": \"1h\", \"duration\": \"1s\"}"
	check "one made through the API beside it: source api, no name" \
		[ "$CODE $(json "$TMP/api.out" 'j["source"], j["name"]')" = "201 ('api', None)" ]
	api DELETE "/api/v1/schedules/$(json "$TMP/api.out" 'j["id"]')"
}

scenario_refused() {
	given daemon
	api PATCH "/api/v1/schedules/$SCHED" '{"status": "PAUSED"}'
	check "PATCH on it: 409 naming the section and the fix" \
		bash -c "[ $CODE = 409 ] && [ '$(json "$TMP/api.out" '"declared in nprofd.conf [schedule conf-split]; change it there and restart nprofd" in j["error"]')' = True ]"
	api DELETE "/api/v1/schedules/$SCHED"
	check "DELETE on it: 409 the same" \
		bash -c "[ $CODE = 409 ] && [ '$(json "$TMP/api.out" '"[schedule conf-split]" in j["error"]')' = True ]"
	api GET "/api/v1/schedules/$SCHED"
	check "and it is still there, ACTIVE" [ "$(json "$TMP/api.out" 'j["status"]')" = ACTIVE ]
	export NPROF_SOCKET=$SOCK
	run_nprof 30 schedule list
	check "nprof schedule list: its line, user nprofd.conf, its name" \
		bash -c "grep -E '^ *$SCHED ACTIVE +nprofd.conf +workers $W +cpu +1s/2s +conf-split ' '$TMP/np.out' >/dev/null"
	[ "$NP_RC" = 0 ] || np_diag
	run_nprof 30 schedule delete "$SCHED"
	check "nprof schedule delete: refused in one line naming the section" \
		eval '[ $NP_RC = 1 ] && one_error_line && err_says "\[schedule conf-split\]; change it there"'
	run_nprof 30 schedule show "$SCHED"
	check "nprof schedule show: says where it is declared" \
		grep -q 'declared in nprofd.conf \[schedule conf-split\]' "$TMP/np.out"
}

scenario_changed() {
	given daemon
	wait_scheduled "$SCHED" 1 20 || true
	before=$(scheduled "$SCHED")
	conf '[schedule conf-split]' "workers = $W" 'modes = page-faults' 'duration = 1s' 'every = 3s' \
		'budget = 50%' 'keep = 2h'
	restart || bail "nprofd starts again"
	check "restarted with the section changed: the schedule keeps its id" [ "$(declared conf-split)" = "$SCHED" ]
	api GET "/api/v1/schedules/$SCHED"
	check "and does what the section says now (page-faults every 3 s, kept 2 h)" \
		[ "$(json "$TMP/api.out" 'j["status"], j["modes"], j["every"], j["keep"]')" = "('ACTIVE', ['page-faults'], 3.0, 7200.0)" ]
	check "its recordings before the restart are still its own ($before)" \
		[ "$(scheduled "$SCHED")" -ge "$before" ]
	for ((i = 0; i < 100; i++)); do
		api GET "/api/v1/instances?schedule=$SCHED&limit=1000"
		[ "$(json "$TMP/api.out" '"page-faults" in [i["mode"] for i in j["instances"]]')" = True ] && break
		sleep 0.2
	done
	check "and it records page-faults under the same id" \
		[ "$(json "$TMP/api.out" '"page-faults" in [i["mode"] for i in j["instances"]]')" = True ]
	restart || bail "nprofd starts again"
	check "restarted with the section unchanged: the same id again" [ "$(declared conf-split)" = "$SCHED" ]
}

scenario_removed() {
	given daemon
	check "it has recorded before the section goes" wait_scheduled "$SCHED" 1 20
	n=$(scheduled "$SCHED")
	conf
	restart || bail "nprofd starts again"
	api GET "/api/v1/schedules/$SCHED"
	check "restarted without the section: the schedule is gone (404)" error_names 404 id
	api GET /api/v1/schedules
	check "and no schedule is listed" [ "$(json "$TMP/api.out" 'len(j["schedules"])')" = 0 ]
	check "what it recorded stays ($n or more, past the last period's)" [ "$(scheduled "$SCHED")" -ge "$n" ]
	grep -q "\[schedule conf-split\] is no longer in nprofd.conf: removed" "$D/log"
	check "nprofd's log says so" [ $? = 0 ]
}

run_scenarios bad_section records refused changed removed
finish
