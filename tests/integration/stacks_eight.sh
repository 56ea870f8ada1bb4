#!/usr/bin/env bash
# Thread dumps (nprof stacks) and core files (nprof dump) of a process
# with blocked threads: eight_threads (four threads blocked in poll()
# inside wait_in_poll, four in pthread_cond_wait inside wait_for_work, all
# named) with frame pointers, without (DWARF only), and with the agent
# preloaded. nprof stacks must show every thread with its name, its state,
# its system call and its blocking function (text and --json); gdb must
# open the core nprof dump writes and show each thread's backtrace with
# the same functions as nprof stacks; the process must run on after both
# (not stopped, not traced, and every thread still wakes up). With the
# agent, nprof stacks must not trace the process at all (TracerPid sampled
# throughout the thread dump stays 0), and --ptrace must force ptrace.
# The agent's own thread dump (GET /stacks, ?output=json) and nprof
# stacks' must be one format: the same JSON keys, top-level and per
# thread, and the same text header.
. "$(dirname "$0")/lib.sh"
need_build
[ -x "$PROGS/eight_threads" ] || bail "eight_threads is built"
[ -x "$PROGS/nofp/eight_threads" ] || bail "nofp/eight_threads is built"
AGENT=$NPROF_BUILD/libnprof.so
HAVE_PY=
command -v python3 >/dev/null && HAVE_PY=1

# not_stopped PID: no thread of PID is stopped or traced (waits up to 2 s
# for the kernel to finish a detach).
not_stopped() {
	local i f bad
	for ((i = 0; i < 40; i++)); do
		bad=
		for f in /proc/"$1"/task/*/status; do
			[ -r "$f" ] || continue
			if grep -qE '^State:[[:space:]]+[tT]' "$f" ||
				! grep -qE '^TracerPid:[[:space:]]+0$' "$f"; then
				bad=$f
				break
			fi
		done
		[ -z "$bad" ] && return 0
		sleep 0.05
	done
	diag "still stopped or traced: $bad"
	diag_file "$bad" 12
	return 1
}

# block NAME: the text dump's block for the thread named NAME.
block() {
	awk -v n="\"$1\"" '
		/^"/ { p = ($1 == n) }
		/^$/ { p = 0 }
		p' "$TMP/np.out"
}

# expect_thread LABEL NAME HEADER_RE FRAME...: NAME's block in the last
# text dump has a header matching HEADER_RE and every FRAME.
expect_thread() {
	local label=$1 name=$2 re=$3 b f miss=
	shift 3
	b=$(block "$name")
	if ! grep -qE "$re" <<<"$b"; then
		not_ok "$label: $name: header matches /$re/"
		diag "$b"
		return 1
	fi
	for f in "$@"; do
		grep -qE "^	at $f " <<<"$b" || miss="$miss $f"
	done
	if [ -n "$miss" ]; then
		not_ok "$label: $name: frames missing:$miss"
		diag "$b"
		return 1
	fi
	return 0
}

# expect_all LABEL: the eight threads and main, as they should be.
expect_all() {
	local label=$1 i bad=0
	for i in 0 1 2 3; do
		expect_thread "$label" "poller-$i" '^"poller-[0-3]" tid=[0-9]+ state=sleeping syscall=poll (\(restarted\) )?' \
			"(__)?poll" wait_in_poll poller_main start_thread || bad=1
		expect_thread "$label" "waiter-$i" '^"waiter-[0-3]" tid=[0-9]+ state=sleeping syscall=futex ' \
			pthread_cond_wait wait_for_work waiter_main start_thread || bad=1
	done
	expect_thread "$label" eight_threads '^"eight_threads" tid=[0-9]+ state=sleeping syscall=rt_sigsuspend ' \
		main_wait main || bad=1
	[ "$bad" -eq 0 ] && ok "$label: poller-0..3 sleeping in poll in wait_in_poll, waiter-0..3 sleeping in futex in wait_for_work, main in main_wait"
}

# json_check LABEL METHOD: the last --json dump has the eight threads
# with their names, state S, their system call and blocking function.
json_check() {
	if [ -z "$HAVE_PY" ]; then
		skip "$1: --json" "no python3"
		return
	fi
	if python3 - "$TMP/np.out" "$2" >"$TMP/json.check" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["method"] == sys.argv[2], d["method"]
t = {x["name"]: x for x in d["threads"] if x["status"] != "agent"}
for k in range(4):
    for name, sc, fn in (("poller-%d" % k, "poll", "wait_in_poll"),
                         ("waiter-%d" % k, "futex", "wait_for_work")):
        x = t[name]
        assert x["state"] == "S", (name, x["state"])
        assert x["status"] == "taken", (name, x["status"])
        # After an earlier ptrace stop, poll waits on in restart_syscall:
        # nprof names the call it restarts.
        assert x["syscall"] and sc in (x["syscall"]["name"], x["syscall"].get("restart_of")), \
            (name, x["syscall"])
        fr = [f["function"] for f in x["frames"]]
        assert fn in fr, (name, fr)
        assert fr.index(fn) <= 3, (name, fr)  # right under the libc call
        assert not x["truncated"], (name, fr)
print("%d threads, %d taken, in %.1f ms" % (len(d["threads"]),
      sum(x["status"] == "taken" for x in d["threads"]), d["total_ns"] / 1e6))
EOF
	then ok "$1: --json: $(cat "$TMP/json.check")"; else not_ok "$1: --json holds the eight threads"; diag_file "$TMP/json.check" 20; fi
}

# alive LABEL PID NAME: the main thread answers SIGUSR1.
alive() {
	local before
	before=$(grep -c '^alive ' "$TMP/$3.out")
	kill -USR1 "$2"
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c '^alive ' "$TMP/$3.out")" -gt "$before" ] && break
		sleep 0.02
	done
	check "$1: the process still answers signals" [ "$(grep -c '^alive ' "$TMP/$3.out")" -gt "$before" ]
}

# wake_all LABEL PID NAME: SIGUSR2 wakes the eight threads; each must
# return from its wait, and the process must exit 0.
wake_all() {
	local n
	kill -USR2 "$2"
	wait_for_line "$TMP/$3.out" "all woke" 10
	n=$(grep -cE '^woke (poller|waiter)-[0-3]$' "$TMP/$3.out")
	if [ "$n" -eq 8 ] && wait_pid "$2" 10; then
		ok "$1: all 8 threads still wake up and return from poll / the condition wait"
	else
		not_ok "$1: all 8 threads still wake up (woke $n)"
		diag_file "$TMP/$3.out" 20
		diag_file "$TMP/$3.err" 10
	fi
}

# --- with and without frame pointers: ptrace, then a core for gdb -------------

for variant in fp nofp; do
	if [ "$variant" = fp ]; then prog=$PROGS/eight_threads; else prog=$PROGS/nofp/eight_threads; fi
	if ! start_prog "et-$variant" "$prog"; then
		not_ok "$variant: eight_threads starts"
		continue
	fi
	pid=$PID

	run_nprof 30 stacks "$pid"
	if [ "$NP_RC" -eq 0 ] && grep -qE '^9 threads, taken in .*\(ptrace\)$' "$TMP/np.out"; then
		ok "$variant: nprof stacks exits 0 with 9 threads (${NP_SECS}s)"
	else
		not_ok "$variant: nprof stacks exits 0 with 9 threads"
		np_diag
	fi
	expect_all "$variant"
	check "$variant: no stack is truncated" bash -c "! grep -q 'stack ends here' '$TMP/np.out'"
	check "$variant: not left stopped or traced after nprof stacks" not_stopped "$pid"

	run_nprof 30 stacks --json "$pid"
	json_check "$variant" ptrace
	cp "$TMP/np.out" "$TMP/$variant.json"

	core=$TMP/core.$variant
	run_nprof 60 dump "$pid" -f "$core"
	if [ "$NP_RC" -eq 0 ] && [ -s "$core" ]; then ok "$variant: nprof dump: $(cat "$TMP/np.err")"; else not_ok "$variant: nprof dump writes the core"; np_diag; fi
	check "$variant: not left stopped or traced after nprof dump" not_stopped "$pid"

	if ! command -v gdb >/dev/null; then
		skip "$variant: gdb opens the core" "no gdb"
	elif [ -z "$HAVE_PY" ]; then
		skip "$variant: gdb's backtraces match nprof's" "no python3"
	else
		timeout 120 gdb -nx -batch -ex 'thread apply all bt' "$prog" "$core" >"$TMP/gdb.$variant" 2>&1
		nm --defined-only "$prog" | awk '$2 ~ /^[tT]$/ { print $3 }' >"$TMP/own.$variant"
		# Per thread (by LWP): the program's own functions on gdb's stack,
		# in order, must be those on nprof's; and each must have its
		# blocking function.
		if python3 - "$TMP/gdb.$variant" "$TMP/$variant.json" "$TMP/own.$variant" >"$TMP/gdb.check" 2>&1 <<'EOF'
import json, re, sys
gdb = open(sys.argv[1]).read()
d = json.load(open(sys.argv[2]))
own = set(open(sys.argv[3]).read().split())
stacks, cur = {}, None
for line in gdb.splitlines():
    m = re.match(r"^Thread \d+ \(.*LWP (\d+)\)", line)
    if m:
        cur = int(m.group(1))
        stacks[cur] = []
        continue
    m = re.match(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(", line)
    if m and cur is not None:
        stacks[cur].append(m.group(1))
assert len(stacks) == 9, "gdb shows %d threads: %s" % (len(stacks), gdb[-2000:])
want = {"poller": "wait_in_poll", "waiter": "wait_for_work", "eight_threads": "main_wait"}
for t in d["threads"]:
    g = [f for f in stacks.get(t["tid"], []) if f in own]
    n = [f["function"] for f in t["frames"] if f["function"] in own]
    if "main" in n:  # gdb stops at main (set backtrace past-main off)
        n = n[:n.index("main") + 1]
    assert t["tid"] in stacks, ("gdb lacks thread", t["name"], t["tid"])
    assert g == n, (t["name"], "gdb", g, "nprof", n)
    assert want[t["name"].split("-")[0]] in g, (t["name"], g)
print("9 threads, each with the same functions as nprof's (e.g. %s: %s)" % (
      d["threads"][1]["name"], " <- ".join(f for f in stacks[d["threads"][1]["tid"]] if f in own)))
EOF
		then ok "$variant: gdb on the core: $(cat "$TMP/gdb.check")"; else not_ok "$variant: gdb's backtraces from the core match nprof stacks"; diag_file "$TMP/gdb.check" 20; diag_file "$TMP/gdb.$variant" 40; fi
		check "$variant: gdb: no 'Cannot access memory'" bash -c "! grep -q 'Cannot access memory' '$TMP/gdb.$variant'"
	fi
	rm -f "$core"

	check "$variant: not stopped or traced after both" not_stopped "$pid"
	alive "$variant" "$pid" "et-$variant"
	wake_all "$variant" "$pid" "et-$variant"
done

# --- with the agent: no ptrace --------------------------------------------------

# watch_tracer PID OUT STOPFILE: samples every thread's TracerPid and state
# until STOPFILE exists; OUT gets "samples N traced M stopped K".
watch_tracer() {
	python3 - "$@" <<'EOF'
import glob, os, sys, time
pid, out, stop = sys.argv[1], sys.argv[2], sys.argv[3]
n = traced = stopped = 0
open(out + ".started", "w").close()
while not os.path.exists(stop):
    for f in glob.glob("/proc/%s/task/*/status" % pid):
        try:
            s = open(f).read()
        except OSError:
            continue
        for line in s.splitlines():
            if line.startswith("TracerPid:") and line.split()[1] != "0":
                traced += 1
            elif line.startswith("State:") and line.split()[1] in "tT":
                stopped += 1
    n += 1
open(out, "w").write("samples %d traced %d stopped %d\n" % (n, traced, stopped))
EOF
}

# same_format LABEL PID NAME: the agent's own thread dump (GET /stacks)
# and nprof stacks' ($TMP/cli.json, then a text dump) are one format: the
# same top-level keys, the same keys per thread of each status, the same
# keys per frame; text with the same two header lines (but for the times).
same_format() {
	local label=$1 pid=$2 name=$3 code
	if ! command -v curl >/dev/null || [ -z "$HAVE_PY" ]; then
		skip "$label: the agent's /stacks and nprof stacks have one format" "no curl or python3"
		return
	fi
	if ! wait_http "$TMP/$name.err"; then
		not_ok "$label: the agent logs its HTTP endpoint"
		diag_file "$TMP/$name.err"
		return
	fi
	code=$(curl -s -m 30 -o "$TMP/agent.json" -w '%{http_code}' \
		-H "Authorization: Bearer $TOKEN" "http://$ADDR/stacks?output=json")
	if [ "$code" = 200 ] && python3 - "$TMP/cli.json" "$TMP/agent.json" >"$TMP/keys.check" 2>&1 <<'EOF2'
import json, sys
cli, agent = (json.load(open(f)) for f in sys.argv[1:3])
assert set(cli) == set(agent), ("top-level", sorted(set(cli) ^ set(agent)))
assert cli["method"] == agent["method"] == "agent", (cli["method"], agent["method"])
def keys(d):
    # per status: the union of the thread keys and of the frame keys
    # (error, errno and walk_end come with a status or a truncated stack)
    k, f = {}, set()
    for t in d["threads"]:
        k.setdefault((t["status"], t["truncated"]), set()).update(t)
        for fr in t["frames"]:
            f.update(fr)
    return k, f
(ck, cf), (ak, af) = keys(cli), keys(agent)
common = set(ck) & set(ak)
assert ("taken", False) in common, (sorted(ck), sorted(ak))
for s in common:
    assert ck[s] == ak[s], (s, sorted(ck[s] ^ ak[s]))
assert cf == af, ("frame", sorted(cf ^ af))
print("%d top-level keys, %d per taken thread, %d per frame" % (len(cli), len(ck[("taken", False)]), len(cf)))
EOF2
	then ok "$label: GET /stacks?output=json and nprof stacks --json have the same keys: $(cat "$TMP/keys.check")"
	else not_ok "$label: GET /stacks?output=json and nprof stacks --json have the same keys (HTTP $code)"; diag_file "$TMP/keys.check" 20; diag_file "$TMP/agent.json" 5; fi

	code=$(curl -s -m 30 -o "$TMP/agent.txt" -w '%{http_code}' \
		-H "Authorization: Bearer $TOKEN" "http://$ADDR/stacks")
	run_nprof 30 stacks "$pid"
	# Times and counts aside, the header is the same text.
	local strip='s/ at [0-9-]+ [0-9:]+$/ at T/; s/^[0-9]+ threads, taken in [^ ]+ [^ ]+ /N threads, taken in D /'
	if [ "$code" = 200 ] && [ "$(head -2 "$TMP/agent.txt" | sed -E "$strip")" = "$(head -2 "$TMP/np.out" | sed -E "$strip")" ] &&
		grep -qE '^"eight_threads" tid=[0-9]+ state=sleeping syscall=rt_sigsuspend cpu=' "$TMP/agent.txt" &&
		grep -qE '^	at wait_in_poll \(eight_threads\)$' "$TMP/agent.txt"; then
		ok "$label: GET /stacks has nprof stacks' header and layout: $(head -1 "$TMP/agent.txt" | cut -c1-50)..."
	else
		not_ok "$label: GET /stacks has nprof stacks' header and layout (HTTP $code)"
		diag_file "$TMP/agent.txt" 12
		diag_file "$TMP/np.out" 4
	fi
}

for variant in fp nofp; do
	label="agent $variant"
	if [ "$variant" = fp ]; then prog=$PROGS/eight_threads; else prog=$PROGS/nofp/eight_threads; fi
	if [ ! -r "$AGENT" ]; then
		not_ok "$label: libnprof.so is built ($AGENT)"
		continue
	fi
	if ! start_prog "eta-$variant" env LD_PRELOAD="$AGENT" NPROF_HTTP=127.0.0.1:0 "$prog"; then
		not_ok "$label: eight_threads starts with the agent"
		continue
	fi
	pid=$PID
	for ((i = 0; i < 100; i++)); do
		grep -q "@nprof-agent-$pid\$" /proc/net/unix && break
		sleep 0.05
	done
	check "$label: the agent listens (@nprof-agent-$pid)" grep -q "@nprof-agent-$pid\$" /proc/net/unix

	if [ -n "$HAVE_PY" ]; then
		rm -f "$TMP/stop" "$TMP/watch" "$TMP/watch.started"
		watch_tracer "$pid" "$TMP/watch" "$TMP/stop" &
		watcher=$!
		for ((i = 0; i < 200; i++)); do [ -e "$TMP/watch.started" ] && break; sleep 0.02; done
		sleep 0.05
	fi
	run_nprof 30 stacks "$pid"
	if [ -n "$HAVE_PY" ]; then
		sleep 0.05
		touch "$TMP/stop"
		wait "$watcher"
	fi
	if [ "$NP_RC" -eq 0 ] && grep -qE '^[0-9]+ threads, taken in .* by the in-process agent .*no ptrace' "$TMP/np.out"; then
		ok "$label: nprof stacks goes through the agent (${NP_SECS}s): $(sed -n 2p "$TMP/np.out" | cut -c1-60)..."
	else
		not_ok "$label: nprof stacks goes through the agent"
		np_diag
	fi
	expect_all "$label"
	check "$label: the agent's control thread is listed, not dumped" \
		grep -q "one of the nprof agent's own threads" "$TMP/np.out"
	if [ -n "$HAVE_PY" ]; then
		if read -r _ n _ traced _ stopped <"$TMP/watch" && [ "$n" -ge 3 ] && [ "$traced" -eq 0 ] && [ "$stopped" -eq 0 ]; then
			ok "$label: never traced nor stopped: TracerPid 0 in all $n samples of every thread during the dump"
		else
			not_ok "$label: never traced nor stopped during the dump"
			diag_file "$TMP/watch"
		fi
	else
		skip "$label: TracerPid sampled during the dump" "no python3"
	fi
	check "$label: not stopped or traced after" not_stopped "$pid"

	run_nprof 30 stacks --json "$pid"
	json_check "$label" agent
	cp "$TMP/np.out" "$TMP/cli.json"
	same_format "$label" "$pid" "eta-$variant"

	run_nprof 30 stacks --ptrace "$pid"
	if [ "$NP_RC" -eq 0 ] && grep -qE '^[0-9]+ threads, taken in .*\(ptrace\)$' "$TMP/np.out"; then
		ok "$label: --ptrace forces ptrace"
	else
		not_ok "$label: --ptrace forces ptrace"
		np_diag
	fi
	expect_all "$label --ptrace"
	check "$label: not stopped or traced after --ptrace" not_stopped "$pid"
	alive "$label" "$pid" "eta-$variant"
	wake_all "$label" "$pid" "eta-$variant"
done
finish
