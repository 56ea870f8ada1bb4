#!/usr/bin/env bash
# "Profile now" of a service through nprofd's API: one POST
# /api/v1/instances with a selector in place of a worker records every
# worker it takes at once, each an instance of the group, and once the
# last has ended the group's profile holds every member's samples, each
# under its process's root "[NAME pid=PID]"; a bad selector is a 400
# naming it, one that takes nothing a 404, one that takes more than
# max_concurrent allows a 429 before anything starts; stopping the group
# stops its members and merges what they recorded; an admin's group of
# two users' workers is merged (as nobody) and shown to admins alone.
# test-timeout: 600
. "$(dirname "$0")/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
cat >"$D/nprofd.conf" <<CONF
[instances]
grace = 5s
max_concurrent = 4
CONF
start_daemon "$D/nprofd.conf" || bail "nprofd starts"
# A name of this test's own: the service of these three and no other
# test's (the service of a process is its executable's name). Not
# niced: under a loaded host a niced spinner is sampled too seldom for a
# root of its own.
SVC=gspin$$
cp "$PROGS/spin" "$TMP/$SVC"
for i in 1 2 3; do
	start_prog "s$i" "$TMP/$SVC" --forever || bail "spin $i starts"
	eval "P$i=\$PID"
done
W1=$(worker_of "$P1") W2=$(worker_of "$P2") W3=$(worker_of "$P3")

# --- bad input ------------------------------------------------------------------
start_instance "{\"selector\": {\"workers\": [\"$W1\"]}, \"worker\": \"$W1\", \"mode\": \"cpu\"}"
check "worker and selector both: 400 naming worker" error_names 400 worker
start_instance '{"selector": {}, "mode": "cpu"}'
check "an empty selector: 400 naming selector" error_names 400 selector
start_instance '{"selector": {"colour": "red"}, "mode": "cpu"}'
check "an unknown selector key: 400 naming selector" error_names 400 selector
start_instance '{"selector": {"service": "no-such-service-*"}, "mode": "cpu"}'
check "a selector that takes no worker: 404 naming selector" error_names 404 selector
api GET "/api/v1/instances?parent=x"
check "?parent=x: 400 naming parent" error_names 400 parent

# --- a service's three workers in one profile -------------------------------------
start_instance "{\"selector\": {\"service\": \"$SVC\"}, \"mode\": \"cpu\", \"duration\": \"3s\"}"
G=$INST
check "service $SVC: 201, the group a profile with no worker, its selector, 3 members" \
	[ "$CODE $(json "$TMP/api.out" 'j["kind"], j["worker"], j["selector"], j["members"], j["status"]')" = "201 ('profile', None, {'service': '$SVC'}, 3, 'RUNNING')" ]
api GET "/api/v1/instances?parent=$G"
check "?parent=$G: its three members, one per worker, each naming the group" \
	[ "$(json "$TMP/api.out" 'sorted((i["worker"], i["parent"], i["mode"]) for i in j["instances"])')" = "$(python3 -c "print(sorted([(w, $G, 'cpu') for w in '$W1 $W2 $W3'.split()]))")" ]
wait_instance "$G" 200
check "the group FINISHED once its members had, saying what it merged" \
	[ "$STATUS $(json "$TMP/inst.json" 'j["message"]')" = "FINISHED the profiles of its 3 workers, a root per process" ]
api GET "/api/v1/artifacts/$(artifact_of)?format=collapsed"
cp "$TMP/api.out" "$TMP/group.collapsed"
# what each member recorded, alone
sum=0
for m in $(api GET "/api/v1/instances?parent=$G"; json "$TMP/api.out" '" ".join(str(i["artifacts"][0]["id"]) for i in j["instances"])'); do
	api GET "/api/v1/artifacts/$m?format=collapsed"
	sum=$((sum + $(total "$TMP/api.out")))
done
check "the group's profile holds every member's samples: $(total "$TMP/group.collapsed") = $sum" \
	[ "$(total "$TMP/group.collapsed")" = "$sum" -a "$sum" -gt 0 ]
for i in 1 2 3; do
	eval "p=\$P$i"
	n=$(grep "^\[$SVC pid=$p\];" "$TMP/group.collapsed" | total /dev/stdin)
	check "process $i's samples under its root [$SVC pid=$p] ($n), spin's functions below it" \
		eval "[ $n -gt 0 ] && grep -q '^\[$SVC pid=$p\];.*spin_leaf' '$TMP/group.collapsed'"
done
check "every stack under one of the three roots" \
	[ "$(grep -vc "^\[$SVC pid=\($P1\|$P2\|$P3\)\];" "$TMP/group.collapsed")" = 0 ]
api GET "/api/v1/instances?parent=none&limit=1000"
check "?parent=none: the group and not its members" \
	[ "$(json "$TMP/api.out" '[i["id"] for i in j["instances"] if i["id"] == '$G' or i["parent"] == '$G']')" = "[$G]" ]

# --- from a shell: nprof start with a selector ---------------------------------------
NPROF_SOCKET=$SOCK run_nprof 200 start --service "$SVC" -e cpu -d 3s -f "$TMP/start.collapsed"
check "nprof start --service: says it records 3 workers at once, and writes their one profile" \
	eval '[ $NP_RC = 0 ] && grep -q "on 3 workers at once" "$TMP/np.out" && [ "$(cut -d";" -f1 "$TMP/start.collapsed" | sort -u | wc -l)" = 3 ]'
NPROF_SOCKET=$SOCK run_nprof 20 start --service "$SVC" --unit x
check "nprof start with two kinds of selector: one line naming both" \
	eval '[ $NP_RC = 2 ] && one_error_line && err_says "one selector at a time: --service and --unit"'
NPROF_SOCKET=$SOCK run_nprof 20 start --service "$SVC" "$P1"
check "nprof start with a PID and a selector: one line naming both" \
	eval '[ $NP_RC = 2 ] && one_error_line && err_says "not both"'

# --- more than max_concurrent allows: refused before anything starts ----------------
start_instance "{\"worker\": \"$W1\", \"mode\": \"cpu\", \"duration\": \"5m\"}"
ON_DEMAND=$INST
[ "$CODE" = 201 ] || diag "the on-demand instance did not start: $(cat "$TMP/api.out")"
api GET "/api/v1/instances?limit=1000"
before=$(json "$TMP/api.out" 'len(j["instances"])')
start_instance "{\"selector\": {\"workers\": [\"$W1\", \"$W2\", \"$W3\"]}, \"mode\": \"cpu\", \"duration\": \"1s\"}"
check "3 workers and the merge beside 1 running, max_concurrent 4: 429 naming selector and the key" \
	eval 'error_names 429 selector && grep -q "max_concurrent = 4" "$TMP/api.out"'
api GET "/api/v1/instances?limit=1000"
check "... and nothing was started" [ "$(json "$TMP/api.out" 'len(j["instances"])')" = "$before" ]
api POST "/api/v1/instances/$ON_DEMAND/stop"
wait_instance "$ON_DEMAND" 120

# --- a member refused: the group is of the others, and says so ------------------------
start_instance "{\"worker\": \"$W2\", \"mode\": \"cpu\", \"duration\": \"5m\"}"
BUSY=$INST
[ "$CODE" = 201 ] || diag "the on-demand instance did not start: $(cat "$TMP/api.out")"
start_instance "{\"selector\": {\"workers\": [\"$W1\", \"$W2\"]}, \"mode\": \"cpu\", \"duration\": \"1s\"}"
G2=$INST
check "a group of two, one busy with cpu on demand: 201, one member, saying which was not" \
	eval "[ $CODE = 201 ] && [ '$(json "$TMP/api.out" 'j["members"], "1 of the 2" in j["message"], "'$W2'" in j["message"]')' = '(1, True, True)' ]"
wait_instance "$G2" 120
check "... FINISHED with that one's profile" \
	eval "[ $STATUS = FINISHED ] && [ '$(json "$TMP/inst.json" 'len(j["artifacts"]) == 1 and j["artifacts"][0]["size"] > 0')' = True ]"
start_instance "{\"selector\": {\"workers\": [\"$W2\"]}, \"mode\": \"cpu\", \"duration\": \"1s\"}"
check "a group whose every member is refused: the member's 409, naming the selector" \
	eval 'error_names 409 selector && grep -q "none of the 1 workers" "$TMP/api.out"'
api POST "/api/v1/instances/$BUSY/stop"
wait_instance "$BUSY" 120

# --- stopped: its members stop, and what they recorded is merged ---------------------
start_instance "{\"selector\": {\"service\": \"$SVC\"}, \"mode\": \"cpu\", \"duration\": \"5m\"}"
G3=$INST
sleep 1
api POST "/api/v1/instances/$G3/stop"
check "stopping the group: 202" [ "$CODE" = 202 ]
wait_instance "$G3" 120
diag "group: $(json "$TMP/inst.json" 'j["status"], j["message"], j["duration"], j["artifacts"]')"
api GET "/api/v1/instances?parent=$G3"
members=$(json "$TMP/api.out" '" ".join(sorted(set(i["status"] for i in j["instances"])))')
check "its members STOPPED, the group FINISHED with their profiles, well before its 5 minutes" \
	[ "$STATUS $members $(json "$TMP/inst.json" 'j["artifacts"][0]["size"] > 0')" = "FINISHED STOPPED True" ]

# --- two users' workers: merged as nobody, shown to admins alone -----------------------
U1=nprofg1$$
test_user "$U1" || bail "useradd makes a test user"
usable_by_others || bail "the test programs are usable by other users"
AS1="setpriv --reuid=$U1 --regid=$U1 --init-groups"
$AS1 "$TMP/$SVC" --forever >/dev/null 2>&1 &
P4=$!; bg_pids+=("$P4")
sleep 0.3
api -u "$AS1" POST /api/v1/instances "{\"selector\": {\"service\": \"$SVC\"}, \"mode\": \"cpu\", \"duration\": \"1s\"}"
G4=$(json "$TMP/api.out" 'j["id"]')
check "$U1's group of the service: its own worker alone" \
	[ "$CODE $(json "$TMP/api.out" 'j["members"]')" = "201 1" ]
wait_instance "$G4" 120
api -u "$AS1" GET "/api/v1/instances/$G4"
check "... which $U1 sees, FINISHED" [ "$CODE $(json "$TMP/api.out" 'j["status"]')" = "200 FINISHED" ]
W4=$(worker_of "$P4")
start_instance "{\"selector\": {\"workers\": [\"$W1\", \"$W4\"]}, \"mode\": \"cpu\", \"duration\": \"1s\"}"
G5=$INST
check "root's group of a worker of root's and one of $U1's: both" \
	[ "$CODE $(json "$TMP/api.out" 'j["members"]')" = "201 2" ]
wait_instance "$G5" 120
api GET "/api/v1/artifacts/$(artifact_of)?format=collapsed"
check "... FINISHED, $U1's process under its root too (merged as nobody: no one user may read all)" \
	eval "[ $STATUS = FINISHED ] && grep -q '^\[$SVC pid=$P4\];' '$TMP/api.out'"
api -u "$AS1" GET "/api/v1/instances/$G5"
check "$U1 does not see root's group of several users' workers: 404" [ "$CODE" = 404 ]

finish
