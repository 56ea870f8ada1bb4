#!/usr/bin/env bash
# nprofd's API driven with curl, over its unix socket and its loopback
# HTTP listener: a private daemon (its own socket, state directory and
# config) lists workers with their owner and modes; a cpu instance of
# split FINISHES within its duration plus 1 s with each function's share
# within 5 points of what split measured; STOP keeps a partial profile;
# a thread dump of eight_threads, a heap snapshot through the agent, a
# core file gdb opens; downloads converted on demand (go tool pprof -raw,
# jfr print); 400 naming the field, 404, 409, 410, 413, 429 and 507
# provoked; two unprivileged users who cannot see or touch each other's
# workers and artifacts, an admin who can, all in the audit log; no TLS
# off loopback refuses to start; SIGKILL during four running instances
# leaves every target running, untraced and no longer sampled, and the
# restarted daemon lists them FAILED in a database that passes
# integrity_check; retention keeps the newest. (199 s here; 312 s on a
# CI host beside cluster.sh: the limit is a safety net.) Each part is a
# scenario that runs alone with the set-ups it needs:
# tests/run build daemon_api:stop_keeps_partial (run_scenarios, below).
# test-timeout: 600
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
need_daemon
not_ok() { not_ok_reply "$@"; }
# agent_says_running PID: nprof list shows a profile running in PID.
agent_says_running() { "$NPROF" list "$1" 2>/dev/null | awk -v p="$1" '$1 == p && / running /' | grep -q .; }
# agent_running PID: up to 10 s for the agent in PID to say a profile runs.
agent_running() {
	local i
	for ((i = 0; i < 100; i++)); do
		agent_says_running "$1" && return 0
		sleep 0.1
	done
	return 1
}

# --- set-ups (given) ----------------------------------------------------------

# the daemon, with small limits its checks can reach
setup_daemon() {
	cat >"$D/nprofd.conf" <<-CONF
	# the test's daemon: small limits it can reach
	max_body = 4k
	[instances]
	max_concurrent = 4
	grace = 5s
	[actions]
	core_file = on
	CONF
	start_daemon "$D/nprofd.conf" || return 1
	ok "nprofd starts on $HTTP_ADDR and $SOCK"
}

# split, the worker most checks act on (W), writing its truth
setup_split() {
	start_prog split "$PROGS/split" --seconds 900 --truth "$TMP/split.truth" || return 1
	SPLIT=$PID
	W=$(worker_of "$SPLIT")
}

# eight_threads, for thread dumps and core files
setup_eight() {
	start_prog eight "$PROGS/eight_threads" || return 1
	EIGHT=$PID
}

# a profile of root's (ART): cpu_truth's, or a short one of its own
setup_root_profile() {
	[ -n "${ART:-}" ] && return 0
	given daemon split
	start_instance "{\"worker\": \"$W\", \"mode\": \"cpu\", \"duration\": \"1s\"}"
	wait_instance "$INST" 20 && ART=$(artifact_of) && [ -n "$ART" ]
}

# a thread dump of root's (STACKS_ART): captures', or one of its own
setup_thread_dump() {
	[ -n "${STACKS_ART:-}" ] && return 0
	given daemon eight
	api POST "/api/v1/workers/$(worker_of "$EIGHT")/stacks"
	wait_instance "$(json "$TMP/api.out" 'j["id"]')" 30 && STACKS_ART=$(artifact_of) && [ -n "$STACKS_ART" ]
}

# --- scenarios -----------------------------------------------------------------

# no TLS off loopback: nprofd refuses to start
scenario_no_tls() {
	timeout 10 "$NPROFD" --socket "$D/x.sock" --state-dir "$D/x" --listen 0.0.0.0:0 2>"$D/tls.err"
	rc=$?
	check "listen 0.0.0.0 without TLS: refuses to start (status $rc), naming tls_cert" \
		bash -c "[ $rc -ne 0 ] && grep -q tls_cert '$D/tls.err' && [ \$(wc -l <'$D/tls.err') -eq 1 ]"
	[ -e "$D/x.sock" ] && not_ok "no socket left by the refused start" || ok "no socket left by the refused start"
}

# who the socket says, and HTTP without a token
scenario_doors() {
	given daemon
	api GET /api/v1/whoami
	check "whoami over the socket: root, admin" \
		[ "$(json "$TMP/api.out" 'j["user"], j["admin"], j["via"]')" = "('root', True, 'socket')" ]
	http "" GET /api/v1/workers
	check "HTTP without a token: 401" [ "$CODE" = 401 ]
}

# a worker's facts and modes, ?wait=, the list and its search
scenario_workers() {
	given daemon split
	api GET "/api/v1/workers/$W"
	check "worker $W: pid, name, user root, threads, agent false" \
		[ "$(json "$TMP/api.out" 'j["pid"], j["name"], j["user"], j["threads"] >= 2, j["agent"]')" = \
		  "($SPLIT, 'split', 'root', True, False)" ]
	check "worker $W: cpu and (for root, from outside) wall and offcpu available; alloc not, saying it needs the agent" \
		[ "$(json "$TMP/api.out" '"cpu" in j["modes"], "wall" in j["modes"], "offcpu" in j["modes"], "alloc" in j["modes"], "agent" in j["unavailable"]["modes"]["alloc"]')" = \
		  "(True, True, True, False, True)" ]
	start_instance "{\"worker\": \"$W\", \"mode\": \"wall\", \"duration\": \"2s\", \"format\": \"collapsed\"}"
	# ?wait= holds the answer until the instance ends (or the seconds pass).
	api GET "/api/v1/instances/$INST?wait=60"
	check "GET /api/v1/instances/ID?wait=60 on a 2 s instance answers once it has ended ($(json "$TMP/api.out" 'j["status"]'))" \
		[ "$(json "$TMP/api.out" 'j["status"]')" = FINISHED ]
	api GET "/api/v1/instances/$INST?wait=61"
	check "?wait=61: 400 naming wait" error_names 400 wait
	api GET "/api/v1/instances/$INST?wait=soon"
	check "?wait=soon: 400 naming wait" error_names 400 wait
	wait_instance "$INST" 30
	api GET "/api/v1/artifacts/$(artifact_of)?format=collapsed"
	check "a wall instance on a worker without the agent FINISHED ($STATUS), its stacks ending in [running]" \
		bash -c "[ '$STATUS' = FINISHED ] && grep -q 'running\]' '$TMP/api.out'"
	api GET /api/v1/workers
	check "the list is light: no reasons unless ?detail=1" \
		[ "$(json "$TMP/api.out" 'any("unavailable" in w for w in j["workers"])')" = False ]
	check "the list has no kernel thread (no kthreadd)" \
		[ "$(json "$TMP/api.out" 'len([w for w in j["workers"] if w["name"] == "kthreadd"])')" = 0 ]
	api GET "/api/v1/workers?q=split&agent=false"
	check "search q=split finds it" \
		[ "$(json "$TMP/api.out" "any(w['pid'] == $SPLIT for w in j['workers'])")" = True ]
}

# a cpu instance held to split's truth; downloads in three formats, read
# by their real readers
scenario_cpu_truth() {
	given daemon split
	truth_mark "$SPLIT" "$TMP/split.truth" 1 || bail "split writes its truth"
	start_instance "{\"worker\": \"$W\", \"mode\": \"cpu\", \"duration\": \"4s\", \"interval\": \"1ms\", \"format\": \"collapsed\"}"
	check "POST /api/v1/instances: 201 RUNNING with an id" \
		bash -c "[ $CODE = 201 ] && [ '$(json "$TMP/api.out" 'j["status"]')' = RUNNING ]"
	CPU_INST=$INST
	wait_instance "$CPU_INST" 20 || not_ok "the cpu instance ends"
	truth_mark "$SPLIT" "$TMP/split.truth" 2
	truth_window "$TMP/split.truth.1" "$TMP/split.truth.2" >"$TMP/cpu.window"
	took=$(json "$TMP/inst.json" '(__import__("datetime").datetime.fromisoformat(j["finished"][:-1]) - __import__("datetime").datetime.fromisoformat(j["created"][:-1])).total_seconds()')
	check "cpu instance FINISHED in ${took}s (duration 4 s, + 1 s at most)" \
		bash -c "[ '$STATUS' = FINISHED ] && awk -v t='$took' 'BEGIN { exit !(t >= 4 && t <= 5) }'"
	ART=$(artifact_of)
	api GET "/api/v1/artifacts/$ART?format=collapsed"
	cp "$TMP/api.out" "$TMP/cpu.collapsed"
	split_check "cpu instance" "$TMP/cpu.collapsed" "$TMP/cpu.window"

	# downloads in three formats, read by their real readers
	curl -s --unix-socket "$SOCK" -o "$TMP/cpu.pb.gz" -D "$TMP/h.txt" "http://nprofd/api/v1/artifacts/$ART"
	check "download as stored: pprof, a .pb.gz attachment" \
		bash -c "grep -qi 'content-disposition: attachment; filename=\"cpu-$SPLIT-.*\.pb\.gz\"' '$TMP/h.txt'"
	if command -v go >/dev/null; then
		check "go tool pprof -raw reads it, with burn_sixty" \
			bash -c "HOME=$TMP GOCACHE=$TMP/go go tool pprof -raw '$TMP/cpu.pb.gz' 2>/dev/null | grep -q burn_sixty"
	else
		skip "go tool pprof -raw reads it" "golang-go is not installed"
	fi
	curl -s --unix-socket "$SOCK" -o "$TMP/cpu.jfr" "http://nprofd/api/v1/artifacts/$ART?format=jfr"
	if command -v jfr >/dev/null; then
		check "?format=jfr: jfr print shows execution samples in burn_thirty" \
			bash -c "jfr print --events jdk.ExecutionSample '$TMP/cpu.jfr' | grep -q burn_thirty"
	else
		skip "?format=jfr read by jfr print" "openjdk-17-jdk-headless is not installed"
	fi
	curl -s --unix-socket "$SOCK" -o "$TMP/cpu.html" -D "$TMP/h.txt" "http://nprofd/api/v1/artifacts/$ART?format=flamegraph"
	check "?format=flamegraph: text/html, a page naming burn_ten" \
		bash -c "grep -qi 'content-type: text/html' '$TMP/h.txt' && grep -q burn_ten '$TMP/cpu.html'"
	if need_browser; then
		api POST /api/v1/tokens '{"name": "browser"}'
		NPROF_E2E_TOKEN=$(json "$TMP/api.out" 'j["token"]') NPROF_E2E_FRAME=burn_sixty \
			NPROF_E2E_URL="http://$HTTP_ADDR/api/v1/artifacts/$ART?format=flamegraph&inline=1" \
			run_js daemon_download.js
	else
		skip "the served flame graph in a browser" "$BROWSER_WHY"
	fi
	api GET "/api/v1/artifacts/$ART?format=bogus"
	check "?format=bogus: 400 naming format" error_names 400 format
}

# stop keeps a partial profile; 409 while one runs
scenario_stop_keeps_partial() {
	given daemon split
	start_instance "{\"worker\": \"$W\", \"mode\": \"cpu\", \"duration\": \"60s\"}"
	LONG=$INST
	start_instance "{\"worker\": \"$W\", \"mode\": \"cpu\", \"duration\": \"5s\"}"
	check "a second cpu instance on the worker: 409 naming the running one" \
		bash -c "[ $CODE = 409 ] && grep -q 'instance $LONG' '$TMP/api.out'"
	sleep 1
	api POST "/api/v1/instances/$LONG/stop"
	check "stop: 202" [ "$CODE" = 202 ]
	wait_instance "$LONG" 10
	check "stopped instance: STOPPED, a partial profile kept" \
		bash -c "[ '$STATUS' = STOPPED ] && [ \$(python3 -c 'import json; print(json.load(open(\"$TMP/inst.json\"))[\"artifacts\"][0][\"size\"])') -gt 0 ]"
	api POST "/api/v1/instances/$LONG/stop"
	check "stopping it again: 409" [ "$CODE" = 409 ]
}

# 400 naming the field, 404, 410, 413
scenario_bad_input() {
	given daemon split
	start_instance "{\"worker\": \"$W\", \"mode\": \"cpux\"}"
	check "mode cpux: 400 naming mode" error_names 400 mode
	start_instance "{\"worker\": \"$W\", \"duration\": \"1h\"}"
	check "duration 1h (above duration_max): 400 naming duration" error_names 400 duration
	start_instance "{\"worker\": \"$W\", \"durration\": \"1s\"}"
	check "unknown field durration: 400 naming it" error_names 400 durration
	start_instance "{\"worker\": \"1-x\"}"
	check "worker 1-x: 400 naming worker" error_names 400 worker
	start_instance "not json"
	check "a body that is not JSON: 400" [ "$CODE" = 400 ]
	start_instance "{\"worker\": \"$W\", \"pad\": \"$(head -c 8000 /dev/zero | tr '\0' x)\"}"
	check "an 8 KB body (max_body 4k): 413" [ "$CODE" = 413 ]
	api GET /api/v1/nothing
	check "an unknown path: 404 JSON" bash -c "[ $CODE = 404 ] && grep -q '\"error\"' '$TMP/api.out'"
	start_prog gone "$PROGS/split" --seconds 30 || true
	GONE_W=$(worker_of "$PID")
	kill -KILL "$PID"; wait "$PID" 2>/dev/null
	start_instance "{\"worker\": \"$GONE_W\", \"mode\": \"cpu\"}"
	check "a worker that exited: 410" error_names 410 worker
}

# a thread dump and a core file; the target runs on
scenario_captures() {
	given daemon eight
	api POST "/api/v1/workers/$(worker_of "$EIGHT")/stacks"
	INST=$(json "$TMP/api.out" 'j["id"]')
	wait_instance "$INST" 30
	[ "$STATUS" = FINISHED ] || diag "thread dump: $(cat "$TMP/inst.json")"
	STACKS_ART=$(artifact_of)
	api GET "/api/v1/artifacts/$STACKS_ART?format=text"
	cp "$TMP/api.out" "$TMP/stacks.txt"
	check "thread dump FINISHED; as text it names poller-0, waiter-0 and main_wait" \
		bash -c "[ '$STATUS' = FINISHED ] && grep -q poller-0 '$TMP/stacks.txt' && grep -q waiter-0 '$TMP/stacks.txt' && grep -q main_wait '$TMP/stacks.txt'"
	api GET "/api/v1/artifacts/$(artifact_of)"
	check "thread dump as stored: JSON with eight threads and more" \
		[ "$(json "$TMP/api.out" 'len(j["threads"]) >= 9')" = True ]

	api POST "/api/v1/workers/$(worker_of "$EIGHT")/coredump"
	INST=$(json "$TMP/api.out" 'j["id"]')
	wait_instance "$INST" 60
	curl -s --unix-socket "$SOCK" -o "$TMP/eight.core" "http://nprofd/api/v1/artifacts/$(artifact_of)"
	if command -v gdb >/dev/null; then
		check "core file FINISHED; gdb opens it and finds main_wait" \
			bash -c "[ '$STATUS' = FINISHED ] && timeout 60 gdb -batch -ex 'thread apply all bt' '$PROGS/eight_threads' '$TMP/eight.core' 2>/dev/null | grep -q main_wait"
	else
		skip "gdb opens the core file" "gdb is not installed"
	fi
	check "eight_threads runs on after both" kill -0 "$EIGHT"
}

# a heap snapshot through the agent
scenario_heap_snapshot() {
	given daemon
	start_prog heap env LD_PRELOAD="$AGENT" NPROF_START=event=heap "$PROGS/alloc_primes" --wait ||
		bail "alloc_primes starts with the agent"
	HEAP_W=$(worker_of "$PID")
	kill -USR1 "$PID"
	wait_for_line "$TMP/heap.out" allocated 20 || not_ok "alloc_primes allocates"
	api GET "/api/v1/workers/$HEAP_W"
	check "with the agent: agent true, alloc available" \
		[ "$(json "$TMP/api.out" 'j["agent"], "alloc" in j["modes"], "heapdump" in j["actions"]')" = "(True, True, True)" ]
	api POST "/api/v1/workers/$HEAP_W/heapdump"
	INST=$(json "$TMP/api.out" 'j["id"]')
	wait_instance "$INST" 30
	api GET "/api/v1/artifacts/$(artifact_of)?format=collapsed"
	check "heap snapshot FINISHED, holding make_a's blocks" \
		bash -c "[ '$STATUS' = FINISHED ] && grep -qE 'make_a.* [0-9]+$' '$TMP/api.out'"
}

# wall and alloc instances through the agent; none without it
scenario_agent_instances() {
	given daemon split
	start_prog wsplit env LD_PRELOAD="$AGENT" "$PROGS/wall_split" --seconds 600 || bail "wall_split starts with the agent"
	wait_agent "$PID"
	start_instance "{\"worker\": \"$(worker_of "$PID")\", \"mode\": \"wall\", \"duration\": \"3s\"}"
	wait_instance "$INST" 20
	api GET "/api/v1/artifacts/$(artifact_of)?format=collapsed"
	check "a wall instance through the agent FINISHED; its profile has the time asleep and blocked (wall_sleep, wall_read)" \
		bash -c "[ '$STATUS' = FINISHED ] && grep -q wall_sleep '$TMP/api.out' && grep -q wall_read '$TMP/api.out'"
	mkfifo "$TMP/sites.fifo"
	start_prog sites env LD_PRELOAD="$AGENT" "$PROGS/heap_sites" --control "$TMP/sites.fifo" ||
		bail "heap_sites starts with the agent"
	SITES=$PID
	exec 7<>"$TMP/sites.fifo"
	start_instance "{\"worker\": \"$(worker_of "$SITES")\", \"mode\": \"alloc\", \"duration\": \"5s\"}"
	ALLOC_INST=$INST
	agent_running "$SITES" || not_ok "the alloc instance's session runs in heap_sites"
	echo sites >&7
	wait_for_line "$TMP/sites.out" "done sites" 20 || not_ok "heap_sites ran its sites"
	wait_instance "$ALLOC_INST" 20
	api GET "/api/v1/artifacts/$(artifact_of)?format=collapsed"
	check "an alloc instance through the agent FINISHED; its profile has the three sites" \
		bash -c "[ '$STATUS' = FINISHED ] && grep -q site_small_1k '$TMP/api.out' && grep -q site_big_64k '$TMP/api.out' && grep -q site_live_48m '$TMP/api.out'"
	echo exit >&7
	exec 7>&-
	api POST "/api/v1/workers/$W/heapdump"
	check "heap snapshot of a worker without the agent: 400 saying so" \
		bash -c "[ $CODE = 400 ] && grep -q agent '$TMP/api.out'"
}

# 429 at max_concurrent
scenario_max_concurrent() {
	given daemon split eight
	for m in cpu page-faults context-switches; do
		start_instance "{\"worker\": \"$W\", \"mode\": \"$m\", \"duration\": \"30s\"}"
		[ "$CODE" = 201 ] || { diag "$m: $CODE"; diag_file "$TMP/api.out"; }
		eval "RUN_$(echo $m | tr - _)=$INST"
	done
	start_instance "{\"worker\": \"$(worker_of "$EIGHT")\", \"mode\": \"cpu\", \"duration\": \"30s\"}"
	RUN_wall=$INST
	start_instance "{\"worker\": \"$(worker_of "$EIGHT")\", \"mode\": \"page-faults\", \"duration\": \"30s\"}"
	check "a fifth instance at max_concurrent = 4: 429 naming the limit" \
		bash -c "[ $CODE = 429 ] && grep -q max_concurrent '$TMP/api.out'"
	if [ "$CODE" != 429 ]; then
		api GET "/api/v1/instances?status=RUNNING"
		diag "running: $(json "$TMP/api.out" '[(i["id"], i["mode"]) for i in j["instances"]]')"
		api GET "/api/v1/instances?limit=6"
		diag "latest: $(json "$TMP/api.out" '[(i["id"], i["mode"], i["status"], i["message"]) for i in j["instances"]]')"
	fi
	for i in $RUN_cpu $RUN_wall $RUN_page_faults $RUN_context_switches; do api POST "/api/v1/instances/$i/stop"; done
	for i in $RUN_cpu $RUN_wall $RUN_page_faults $RUN_context_switches; do wait_instance "$i" 15; done
}

# two users and an admin: each sees and acts on its own, all audited
scenario_users() {
	given daemon split root_profile thread_dump
	U1=nprofu1$$ U2=nprofu2$$
	test_user "$U1" && test_user "$U2" || bail "useradd makes two test users"
	AS1="setpriv --reuid=$U1 --regid=$U1 --init-groups"
	AS2="setpriv --reuid=$U2 --regid=$U2 --init-groups"
	usable_by_others || bail "the test programs are usable by other users"
	api -u "$AS1" GET /api/v1/whoami
	check "$U1 over the socket is $U1 (uid $(id -u "$U1"))" \
		[ "$(json "$TMP/api.out" 'j["user"], j["uid"]')" = "('$U1', $(id -u "$U1"))" ]
	$AS1 "$PROGS/split" --seconds 600 >/dev/null 2>&1 &
	P1=$!; bg_pids+=("$P1")
	$AS2 "$PROGS/split" --seconds 600 >/dev/null 2>&1 &
	P2=$!; bg_pids+=("$P2")
	sleep 0.3
	W1=$(worker_of "$P1") W2=$(worker_of "$P2")
	api -u "$AS1" GET /api/v1/workers
	check "$U1 lists its own worker, not $U2's nor root's" \
		[ "$(json "$TMP/api.out" "sorted(set(w['user'] for w in j['workers'])), any(w['pid'] == $P1 for w in j['workers'])")" = "(['$U1'], True)" ]
	api -u "$AS1" POST /api/v1/tokens '{"name": "t1"}'
	T1=$(json "$TMP/api.out" 'j["token"]')
	api -u "$AS2" POST /api/v1/tokens '{"name": "t2"}'
	T2=$(json "$TMP/api.out" 'j["token"]')
	check "each user creates a token over the socket" bash -c "[ '${T1:0:6}' = nprof_ ] && [ '${T2:0:6}' = nprof_ ]"
	http "$T1" GET /api/v1/whoami
	check "HTTP with $U1's token: $U1, not admin" \
		[ "$(json "$TMP/api.out" 'j["user"], j["admin"]')" = "('$U1', False)" ]
	http "$T2" GET "/api/v1/workers/$W1"
	check "$U2 asks for $U1's worker: 404, as for one that does not exist" error_names 404 worker
	http "$T2" POST /api/v1/instances "{\"worker\": \"$W1\", \"mode\": \"cpu\", \"duration\": \"1s\"}"
	check "$U2 starts an instance on $U1's worker: 404" error_names 404 worker
	http "$T1" POST /api/v1/instances "{\"worker\": \"$W1\", \"mode\": \"cpu\", \"duration\": \"2s\"}"
	U1_INST=$(json "$TMP/api.out" 'j["id"]')
	check "$U1 starts one on its own: 201" [ "$CODE" = 201 ]
	wait_instance "$U1_INST" 15
	U1_ART=$(artifact_of)
	check "$U1's instance, run as $U1, FINISHED" [ "$STATUS" = FINISHED ]
	http "$T1" GET "/api/v1/artifacts/$U1_ART?format=collapsed"
	check "$U1 downloads its profile (burn_sixty in it)" bash -c "[ $CODE = 200 ] && grep -q burn_sixty '$TMP/api.out'"
	http "$T2" GET "/api/v1/artifacts/$U1_ART"
	check "$U2 downloads $U1's artifact: 404" error_names 404 id
	http "$T1" GET "/api/v1/diff?before=$U1_ART&after=$U1_ART&format=flat"
	check "$U1 compares its profile with itself (run as $U1): burn_sixty, unchanged" \
		bash -c "[ $CODE = 200 ] && grep -E 'burn_sixty' '$TMP/api.out' | grep -q '+0.00\|-0.00\|±0.00\| 0.00 '"
	http "$T1" GET "/api/v1/diff?before=$ART&after=$U1_ART"
	check "$U1 compares root's profile with its own: 404 for root's" error_names 404 id
	http "$T2" GET "/api/v1/diff?before=$U1_ART&after=$U1_ART"
	check "$U2 compares $U1's: 404" error_names 404 id
	api GET "/api/v1/diff?before=$ART&after=$U1_ART"
	check "an admin compares root's profile with $U1's: 400, workers of different users" \
		bash -c "[ $CODE = 400 ] && grep -q 'different users' '$TMP/api.out'"
	api GET "/api/v1/diff?before=$STACKS_ART&after=$ART"
	check "a thread dump is not a profile: 400 naming before" error_names 400 before
	api GET "/api/v1/diff?before=$ART&after=$ART&format=svg"
	check "format=svg: 400, a diff is flamegraph, flat or collapsed" error_names 400 format
	api GET "/api/v1/diff?before=$ART"
	check "no after: 400 naming after" error_names 400 after
	curl -s --unix-socket "$SOCK" -D "$TMP/h.txt" -o "$TMP/diff.html" "http://nprofd/api/v1/diff?before=$ART&after=$ART&inline=1"
	check "the differential flame graph, inline: HTML in a sandbox" \
		bash -c "grep -qi '^content-type: text/html' '$TMP/h.txt' && grep -qi '^content-security-policy: sandbox' '$TMP/h.txt' && grep -q difftable '$TMP/diff.html'"
	# The page is sent as nprof writes it; nprof failing before it writes
	# anything is still one error (a stored file damaged behind the index).
	U1_FILE="$D/state/artifacts/$(sqlite3 "$D/state/nprofd.db" "SELECT file FROM artifacts WHERE id = $U1_ART")"
	cp -p "$U1_FILE" "$TMP/u1.keep"
	printf 'not a profile\n' >"$U1_FILE"
	http "$T1" GET "/api/v1/diff?before=$U1_ART&after=$U1_ART&inline=1"
	check "a diff whose nprof fails: 500, one line naming the comparison and why" \
		bash -c "[ $CODE = 500 ] && grep -q 'comparing the two profiles failed: ' '$TMP/api.out'"
	diag "$(cat "$TMP/api.out")"
	# nprofd's fault (500 and above) names the request, and its log the same.
	REQ=$(json "$TMP/api.out" 'j["request"]' 2>/dev/null)
	check "the 500 names its request ($REQ), and nprofd's log has that request's line" \
		bash -c "[ -n '$REQ' ] && grep -q 'nprofd error: request $REQ: GET /api/v1/diff by .* answered 500' '$D/log'"
	cp -p "$TMP/u1.keep" "$U1_FILE"
	http "$T2" GET /api/v1/artifacts
	check "$U2's artifact list holds none of $U1's" \
		[ "$(json "$TMP/api.out" "any(a['id'] == $U1_ART for a in j['artifacts'])")" = False ]
	api -u "$AS2" POST "/api/v1/workers/$W1/stacks"
	check "$U2 over the socket takes $U1's thread dump: 404" error_names 404 worker
	http "$T2" POST /api/v1/tokens '{}'
	check "a token cannot make tokens over HTTP: 403" [ "$CODE" = 403 ]
	api GET "/api/v1/artifacts/$U1_ART?info=1"
	check "root (admin) sees $U1's artifact" [ "$CODE" = 200 ]
	api GET "/api/v1/audit?user=$U2"
	check "the audit log has $U2's refused attempts (404s on $W1)" \
		[ "$(json "$TMP/api.out" "len([a for a in j['audit'] if a['status'] == 404 and a['worker'] == '$W1'])")" -ge 2 ]
	api -u "$AS1" GET /api/v1/audit
	check "the audit log is for admins: 403 for $U1" [ "$CODE" = 403 ]
	api -u "$AS1" GET /api/v1/tokens
	T1_ID=$(json "$TMP/api.out" 'j["tokens"][0]["id"]')
	api -u "$AS1" DELETE "/api/v1/tokens/$T1_ID"
	http "$T1" GET /api/v1/whoami
	check "a revoked token: 401" [ "$CODE" = 401 ]
}

# SIGKILL during four instances; restart, retention, the quota, SIGTERM
scenario_kill_restart() {
	given daemon split eight
	start_prog spin "$PROGS/split" --seconds 600 || true
	SPIN=$PID
	start_prog wallagent env LD_PRELOAD="$AGENT" "$PROGS/split" --seconds 600 || true
	AGENTED=$PID
	wait_agent "$AGENTED"
	# The thread dump and the core file first (either may end before the
	# kill), then the 20 s instances, whose nprof must still run at it: on a
	# loaded host the two requests took 8 s, and once 20.
	api POST "/api/v1/workers/$(worker_of "$EIGHT")/stacks"
	K3=$(json "$TMP/api.out" 'j["id"]')
	api POST "/api/v1/workers/$(worker_of "$SPIN")/coredump"
	K4=$(json "$TMP/api.out" 'j["id"]')
	start_instance "{\"worker\": \"$W\", \"mode\": \"cpu\", \"duration\": \"20s\"}"
	K1=$INST
	start_instance "{\"worker\": \"$(worker_of "$AGENTED")\", \"mode\": \"wall\", \"duration\": \"20s\"}"
	K2=$INST
	K2_T0=$(date +%s.%N)
	# The wall instance's nprof has started its session in the agent.
	if ! agent_running "$AGENTED"; then
		api GET "/api/v1/instances/$K2"
		diag "nprof list $AGENTED: $("$NPROF" list "$AGENTED" 2>&1)" "$(cat /proc/$AGENTED/cmdline | tr '\0' ' ')"
		not_ok "the wall instance's session runs in the agent"
	fi
	diag "the kill comes $(awk -v t0="$K2_T0" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1f", t1 - t0 }') s after the wall instance started"
	# The daemon's own children, named before it dies (then they are init's,
	# and other tests running beside this one have nprof processes too).
	kids=$(pgrep -P "$DAEMON" | tr '\n' ' ')
	kill -KILL "$DAEMON"
	wait "$DAEMON" 2>/dev/null
	sleep 0.5
	bad=
	for p in $SPLIT $AGENTED $EIGHT $SPIN; do
		kill -0 "$p" 2>/dev/null || bad+=" $p:gone"
		st=$(awk '/^State:/ { print $2 }' /proc/$p/status 2>/dev/null)
		tr=$(awk '/^TracerPid:/ { print $2 }' /proc/$p/status 2>/dev/null)
		[ "$st" = T ] || [ "$st" = t ] && bad+=" $p:stopped"
		[ "${tr:-0}" = 0 ] || bad+=" $p:traced"
	done
	check "after SIGKILL of nprofd: every target runs, none stopped or traced${bad}" [ -z "$bad" ]
	# SIGKILL reaches each child as the daemon dies (PR_SET_PDEATHSIG); a
	# loaded host may take a moment to run its end.
	# kids_left: those of its children still running nprof.
	kids_left() {
		local k
		for k in $kids; do
			tr '\0' ' ' <"/proc/$k/cmdline" 2>/dev/null | grep -q "^$NPROF_BUILD/nprof " &&
				echo "$k $(tr '\0' ' ' <"/proc/$k/cmdline" | cut -c1-100)"
		done
	}
	for ((i = 0; i < 50; i++)); do
		[ -z "$(kids_left)" ] && break
		sleep 0.1
	done
	left=$(kids_left)
	diag "the killed daemon's children: ${kids:-none}"
	check "no nprof child of the killed daemon is left (5 s after)${left:+: $left}" [ -z "$left" ]
	# The agent's wall session (20 s) outlives the daemon and its nprof, and
	# ends by its own deadline (2 s past its duration): nothing samples on.
	check "the agent's wall session is still on after the kill" agent_says_running "$AGENTED"
	for ((i = 0; i < 400; i++)); do
		agent_says_running "$AGENTED" || break
		sleep 0.1
	done
	ended=$(awk -v t0="$K2_T0" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1f", t1 - t0 }')
	check "the agent's session is over ${ended} s after the 20 s instance started (at most 20 + 2 + 1)" \
		bash -c "! '$NPROF' list $AGENTED 2>/dev/null | awk '\$1 == $AGENTED && / running /' | grep -q . && awk -v e=$ended 'BEGIN { exit !(e <= 23) }'"

	cat >"$D/nprofd2.conf" <<-CONF
	[artifacts]
	max_count = 2
	CONF
	start_daemon "$D/nprofd2.conf" || bail "nprofd starts again on the same state"
	failed=0 ended= statuses=
	for i in $K1 $K2 $K3 $K4; do
		api GET "/api/v1/instances/$i"
		st=$(json "$TMP/api.out" 'j["status"], j["message"]')
		statuses+="$i: $st; "
		[ "$st" = "('FAILED', 'nprofd restarted while it ran')" ] && failed=$((failed + 1))
		# A thread dump or a core file of a small process can be done
		# before the kill lands; the cpu and wall instances cannot.
		[ "$st" = "('FAILED', 'nprofd restarted while it ran')" ] || { [ $i = $K3 ] || [ $i = $K4 ]; } &&
			[[ $st == "('FINISHED'"* ]] && ended+=" $i"
	done
	check "the instances running at the kill are FAILED: nprofd restarted ($failed, finished before it:${ended:- none})" \
		[ $((failed + $(echo $ended | wc -w))) = 4 ]
	[ $((failed + $(echo $ended | wc -w))) = 4 ] || diag "$statuses"
	check "the database passes PRAGMA integrity_check" \
		[ "$(sqlite3 "$D/state/nprofd.db" 'PRAGMA integrity_check')" = ok ]
	check "no file in the state directory that the index does not list" \
		bash -c "[ \$(ls '$D/state/artifacts' | wc -l) = \$(sqlite3 '$D/state/nprofd.db' 'SELECT COUNT(*) FROM artifacts') ]"
	api GET /api/v1/artifacts
	check "retention (max_count = 2): two artifacts left, the newest" \
		[ "$(json "$TMP/api.out" 'len(j["artifacts"])')" = 2 ]

	kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null
	cat >"$D/nprofd3.conf" <<-CONF
	[artifacts]
	max_bytes = 1k
	CONF
	start_daemon "$D/nprofd3.conf" || bail "nprofd starts with a 1 KiB quota"
	start_instance "{\"worker\": \"$W\", \"mode\": \"cpu\", \"duration\": \"1s\"}"
	check "over the quota (max_bytes = 1k): 507 naming it" \
		bash -c "[ $CODE = 507 ] && grep -q max_bytes '$TMP/api.out'"
	kill -TERM "$DAEMON"
	check "SIGTERM: nprofd exits" wait_pid "$DAEMON" 10
	check "its socket is removed" [ ! -e "$SOCK" ]
}

run_scenarios no_tls doors workers cpu_truth stop_keeps_partial bad_input captures \
	heap_snapshot agent_instances max_concurrent users kill_restart
finish
