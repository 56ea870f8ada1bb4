#!/usr/bin/env bash
# nprof stacks on threads_zoo, whose threads are parked in known places:
# a read on an empty pipe, nanosleep, pthread_cond_wait (futex), a CPU
# loop, a 100-deep recursion, three identical pool threads. Checks names,
# states, system calls and stacks (frame pointers and DWARF-only builds),
# grouping, JSON, that the process is never left stopped or traced (also
# when nprof is SIGKILLed mid-dump), threads coming and going during the
# dump, and the errors: no such PID, another user's process, seccomp,
# already traced.
. "$(dirname "$0")/lib.sh"
need_build
ZOO=$PROGS/threads_zoo
[ -x "$ZOO" ] || bail "threads_zoo is built"

# not_stopped PID: no thread of PID is stopped or traced (waits up to 2 s
# for the kernel to finish detaching after a killed tracer).
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

# burns PID: the burner's loop count (it answers SIGUSR1 on stdout).
burns() {
	local out=$TMP/$2.out before
	before=$(grep -c '^burn ' "$out")
	kill -USR1 "$1"
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c '^burn ' "$out")" -gt "$before" ] && break
		sleep 0.02
	done
	grep '^burn ' "$out" | tail -1 | awk '{ print $2 }'
}

# block TID_NAME: the text dump's block for the first thread named NAME.
block() {
	awk -v n="\"$1\"" '
		/^"/ || /^[0-9]+ threads "/ { p = ($1 == n || $3 == n) }
		/^$/ { p = 0 }
		p' "$TMP/np.out"
}

start_prog zoo "$ZOO" || bail "threads_zoo starts"
zoo=$PID
b0=$(burns "$zoo" zoo)

# --- text, one entry per thread ----------------------------------------------

run_nprof 30 stacks "$zoo"
if [ "$NP_RC" -eq 0 ]; then ok "stacks exits 0 (${NP_SECS}s)"; else not_ok "stacks exits 0"; np_diag; fi
cp "$TMP/np.out" "$TMP/text.out"
check "header names the PID and the pause" grep -qE "^Thread dump of PID $zoo \(threads_zoo\)" "$TMP/np.out"
check "the process is not left stopped or traced" not_stopped "$zoo"
n=$(grep -c '^"' "$TMP/np.out")
check "9 threads listed (got $n)" [ "$n" -eq 9 ]
check "sorted by name" cmp -s <(grep '^"' "$TMP/np.out" | cut -d'"' -f2) <(grep '^"' "$TMP/np.out" | cut -d'"' -f2 | LC_ALL=C sort)

expect_thread() { # NAME HEADER_RE FRAME...
	local name=$1 re=$2 b f miss=
	shift 2
	b=$(block "$name")
	if ! grep -qE "$re" <<<"$b"; then
		not_ok "$name: header matches /$re/"
		diag "$b"
		return
	fi
	for f in "$@"; do
		grep -qE "^	at $f " <<<"$b" || miss="$miss $f"
	done
	if [ -z "$miss" ]; then ok "$name: $(head -1 <<<"$b" | cut -c1-90); frames $*"; else not_ok "$name: frames missing:$miss"; diag "$b"; fi
}

expect_thread zoo-reader 'state=sleeping syscall=read ' read block_in_read reader_main start_thread clone3
expect_thread zoo-sleeper 'state=sleeping syscall=(clock_nanosleep|nanosleep|restart_syscall) ' clock_nanosleep sleep_long sleeper_main
expect_thread zoo-waiter 'state=sleeping syscall=futex ' pthread_cond_wait wait_on_cond waiter_main
expect_thread zoo-burner 'state=running' burn_cpu burner_main start_thread
expect_thread threads_zoo 'state=sleeping syscall=pause ' pause main_wait main _start
deep=$(block zoo-deep | grep -c '^	at recurse ')
check "zoo-deep: 100 recurse frames (got $deep)" [ "$deep" -eq 100 ]
check "no stack is truncated" bash -c "! grep -q 'stack ends here' '$TMP/np.out'"
check "every thread was paused, and said for how long" [ "$(grep -c '^".* paused=' "$TMP/np.out")" -eq 9 ]

# --- -g ------------------------------------------------------------------------

run_nprof 30 stacks -g "$zoo"
check "-g: the three pool threads are one group" grep -qE '^3 threads "zoo-pool" tids=[0-9]+,[0-9]+,[0-9]+ state=sleeping syscall=futex' "$TMP/np.out"
check "-g: 7 entries" [ "$(grep -cE '^("|[0-9]+ threads ")' "$TMP/np.out")" -eq 7 ]

# --- JSON ------------------------------------------------------------------------

run_nprof 30 stacks --json "$zoo"
if command -v python3 >/dev/null && python3 - "$TMP/np.out" "$zoo" >"$TMP/json.check" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["pid"] == int(sys.argv[2]), d["pid"]
t = {x["name"]: x for x in d["threads"]}
assert len(d["threads"]) == 9, len(d["threads"])
assert t["zoo-reader"]["syscall"]["name"] == "read"
assert t["zoo-reader"]["syscall"]["args"][0] in ("0x3", "0x4", "0x5"), t["zoo-reader"]["syscall"]
assert t["zoo-waiter"]["syscall"]["name"] == "futex"
assert t["zoo-burner"]["state"] == "R" and t["zoo-burner"]["syscall"] is None
assert all(x["status"] == "taken" for x in d["threads"])
assert all(x["pause_ns"] > 0 for x in d["threads"])
fr = [f["function"] for f in t["zoo-reader"]["frames"]]
assert fr[:3] == ["read", "block_in_read", "reader_main"], fr
assert t["zoo-reader"]["frames"][1]["module"].endswith("threads_zoo")
ps = sorted(x["pause_ns"] for x in d["threads"])
print("pause per thread: median %.1f us, max %.1f us; total %.2f ms" %
      (ps[len(ps) // 2] / 1e3, ps[-1] / 1e3, d["total_ns"] / 1e6))
EOF
then ok "--json: $(cat "$TMP/json.check")"; else not_ok "--json parses and holds the threads"; diag_file "$TMP/json.check" 20; diag_file "$TMP/np.out" 5; fi

# --- --lines ------------------------------------------------------------------

run_nprof 60 stacks --lines "$zoo"
check "--lines: burn_cpu at threads_zoo.c:LINE" grep -qE '^	at burn_cpu \(threads_zoo\.c:[0-9]+\)' "$TMP/np.out"
check "--lines: block_in_read at threads_zoo.c:LINE" grep -qE '^	at block_in_read \(threads_zoo\.c:[0-9]+\)' "$TMP/np.out"

# --- the process ran on ------------------------------------------------------

b1=$(burns "$zoo" zoo)
check "the burner kept running across the dumps ($b0 -> $b1)" [ "${b1:-0}" -gt "${b0:-0}" ]
reader_tid=$(for t in /proc/"$zoo"/task/*; do [ "$(cat "$t/comm")" = zoo-reader ] && basename "$t"; done)
check "the reader is still blocked in read (restarted, not failed)" grep -q '^0 ' "/proc/$zoo/task/$reader_tid/syscall"
check "the process is not left stopped or traced" not_stopped "$zoo"

# --- without frame pointers: DWARF ------------------------------------------

if start_prog zoonofp "$PROGS/nofp/threads_zoo"; then
	run_nprof 30 stacks "$PID"
	expect_thread zoo-waiter 'syscall=futex' pthread_cond_wait wait_on_cond waiter_main start_thread clone3
	expect_thread zoo-burner 'state=running' burn_cpu burner_main start_thread clone3
	deep=$(block zoo-deep | grep -c '^	at recurse ')
	check "nofp zoo-deep: 100 recurse frames (got $deep)" [ "$deep" -eq 100 ]
	kill "$PID"
else
	not_ok "nofp threads_zoo starts"
fi

# --- threads created and exiting during the dump -----------------------------

if start_prog churn "$ZOO" --churn; then
	churn=$PID
	fails=0
	for i in $(seq 20); do
		run_nprof 30 stacks "$churn"
		[ "$NP_RC" -eq 0 ] && grep -q '"zoo-churn"' "$TMP/np.out" || { fails=$((fails + 1)); np_diag; }
	done
	check "20 dumps of a process creating and ending threads all succeed" [ "$fails" -eq 0 ]
	check "the churning process is not left stopped or traced" not_stopped "$churn"
else
	not_ok "threads_zoo --churn starts"
fi

# --- SIGKILL in the middle -------------------------------------------------

stuck=0
for i in $(seq 30); do
	"$NPROF" stacks "$zoo" >/dev/null 2>&1 &
	np=$!
	sleep "0.00$((i % 10))"
	kill -KILL "$np" 2>/dev/null
	wait "$np" 2>/dev/null
	not_stopped "$zoo" || stuck=$((stuck + 1))
done
check "30 SIGKILLs of nprof mid-dump leave no thread stopped or traced" [ "$stuck" -eq 0 ]
b2=$(burns "$zoo" zoo)
check "the burner still runs after the kills ($b1 -> $b2)" [ "${b2:-0}" -gt "${b1:-0}" ]

# --- errors --------------------------------------------------------------------

expect_error() { # DESCRIPTION STATUS REGEX ARGS...
	local desc=$1 status=$2 re=$3
	shift 3
	run_nprof 15 "$@"
	if one_error_line && [ "$NP_RC" -eq "$status" ] && err_says "$re"; then
		ok "$desc: $(head -c 220 "$TMP/np.err")"
	else
		not_ok "$desc (want status $status, one line matching /$re/)"
		np_diag
	fi
}
expect_error "no PID" 2 'no PID' stacks
expect_error "not a PID" 2 "not a PID" stacks 12abc
expect_error "unknown option" 2 "unknown option" stacks -Z "$zoo"
expect_error "no such process" 1 "no process with PID 999999" stacks 999999
if usable_by_others; then
	RUN_AS=$AS_NOBODY expect_error "another user's process" 1 "belongs to uid 0.*run nprof as that user or as root" stacks "$zoo"
else
	skip "another user's process" "nprof not usable by nobody here"
fi
RUN_AS="$PROGS/deny_ptrace" expect_error "ptrace denied by seccomp" 1 "seccomp" stacks "$zoo"
check "the process is not left stopped or traced after the errors" not_stopped "$zoo"
if command -v gdb >/dev/null; then
	gdb -q -p "$zoo" -batch -ex 'shell sleep 4' >/dev/null 2>&1 &
	gdbpid=$!
	for ((i = 0; i < 100; i++)); do grep -qE '^TracerPid:[[:space:]]+[1-9]' "/proc/$zoo/status" && break; sleep 0.05; done
	expect_error "already traced by gdb" 1 "already traced by PID [0-9]+ \(gdb\)" stacks "$zoo"
	wait "$gdbpid"
	check "not left stopped or traced after gdb" not_stopped "$zoo"
else
	skip "already traced" "no gdb"
fi
finish
