#!/usr/bin/env bash
# Sanitizer builds of the agent, preloaded: libnprof.so, tests/progs/split
# and tests/progs/agent_cycles built with clang -fsanitize=address,undefined,
# and again with -fsanitize=thread, then the cpu, itimer and wall sessions
# (and the HTTP endpoint's /prof and /stacks) run under LD_PRELOAD, and
# agent_cycles' start/stop cycles per engine (ASAN_CYCLES, 300;
# TSAN_CYCLES, 100 in make check; `make sanitize` runs the judged 1,000
# of each, and 1,000 alloc_storm cycles) with threads coming and going
# (as agent_cycles.sh).
# Any sanitizer report fails the test.
#
# The builds come from the Makefile: `make sanitize-asan` and `make
# sanitize-tsan` (clang, the project's warnings, objects and -MMD
# dependencies in BUILD/sanitize/{asan,tsan}; the Makefile says which
# files get which sanitizer and why), run here against NPROF_BUILD, so
# that only what changed is rebuilt. When tests/run tests a copy of the
# build (/tmp/nprof-build.*, for user nobody), they are made in the copy,
# from scratch. `make sanitize` makes them first and runs this test alone.
#
# clang, because gcc's ASan (a shared runtime) refuses to run when another
# library is preloaded first; clang links the runtime into the program,
# and the preloaded library resolves the runtime's symbols there. The
# program's sanitizer intercepts pthread_create before the agent's
# wrapper does: its threads are found by the agent's /proc/self/task scan
# instead, as for threads made with clone.
#
# Two cold clang builds of the agent and three programs, then their runs:
# minutes on a cold, slow host.
# test-timeout: 900
. "$(dirname "$0")/lib.sh"
need_build
command -v clang >/dev/null || bail "clang is installed (scripts/install-deps)"
SAN=$NPROF_BUILD/sanitize

# sanitizer_clean FILE: no sanitizer report in FILE.
sanitizer_clean() {
	! grep -qE 'ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|WARNING: ThreadSanitizer|ThreadSanitizer:|AddressSanitizer:' "$1"
}

# run_session NAME EVENT: split under the agent with NPROF_START.
run_session() {
	local name=$1 event=$2 dir=$SAN/$1 out=$TMP/$1-$2
	timeout -k 5 60 env LD_PRELOAD="$dir/libnprof.so" NPROF_CONTROL=0 \
		NPROF_START="event=$event,interval=5ms,file=$out.collapsed" \
		"$dir/split" --seconds 2 >/dev/null 2>"$out.err" </dev/null
	local rc=$?
	if [ $rc -eq 0 ] && sanitizer_clean "$out.err" && is_collapsed "$out.collapsed" &&
		grep -q burn_sixty "$out.collapsed"; then
		ok "$name: $event session preloaded, no report ($(total "$out.collapsed") samples)"
	else
		not_ok "$name: $event session preloaded, no report (status $rc)"
		diag_file "$out.err" 40
	fi
}

# run_cycles NAME CYCLES: tests/progs/agent_cycles (agent_cycles.sh) under
# the sanitizer: CYCLES start/stop cycles of cpu, itimer and wall with 16
# threads working and coming and going; no report, every cycle
# succeeded, and the fds, threads and timers the process had before.
run_cycles() {
	local name=$1 n=$2 dir=$SAN/$1 out=$TMP/$1-cycles t0=$(date +%s) rc bad
	timeout -k 5 400 env LD_PRELOAD="$dir/libnprof.so" NPROF_QUIET=1 "$dir/agent_cycles" \
		--cycles "$n" --interval 1ms --stall 60 >"$out.out" 2>"$out.err" </dev/null
	rc=$?
	bad=$(awk -v n="$n" '/^event / && ($3 != "cycles=" n || $4 != "errors=0") { print $2 }
		/^before / { b = $2 " " $3 " " $4 } /^after / { a = $2 " " $3 " " $4 }
		END { if (a == "" || a != b) print "fds/threads/timers (" b " before, " a " after)" }' "$out.out")
	if [ $rc -eq 0 ] && sanitizer_clean "$out.err" && [ -z "$bad" ] &&
		[ "$(grep -c '^event ' "$out.out")" -eq 3 ]; then
		ok "$name: $n start/stop cycles each of cpu, itimer, wall, no report, nothing left ($(($(date +%s) - t0))s)"
	else
		not_ok "$name: $n start/stop cycles each of cpu, itimer, wall, no report (status $rc${bad:+; failed: }$bad)"
		diag_file "$out.out" 10
		diag_file "$out.err" 40
	fi
}

# run_http NAME: /prof and /stacks through the endpoint.
run_http() {
	local name=$1 dir=$SAN/$1 out=$TMP/$1-http addr="" i
	env LD_PRELOAD="$dir/libnprof.so" NPROF_HTTP=127.0.0.1:0 NPROF_CONTROL=0 \
		"$dir/split" --seconds 6 >/dev/null 2>"$out.err" </dev/null &
	local pid=$!
	bg_pids+=("$pid")
	for ((i = 0; i < 200; i++)); do
		addr=$(sed -n 's|.*HTTP endpoint on http://\([^/]*\)/.*|\1|p' "$out.err" | head -1)
		[ -n "$addr" ] && break
		sleep 0.05
	done
	http_token "$out.err"
	curl -s -m 20 -o "$out.collapsed" -H "Authorization: Bearer $TOKEN" \
		"http://$addr/prof?event=wall&duration=1&output=collapsed"
	curl -s -m 20 -o "$out.stacks" "http://$addr/stacks?token=$TOKEN"
	curl -s -m 20 -o /dev/null "http://$addr/prof?event=bogus&token=$TOKEN"
	wait "$pid"
	local rc=$?
	if [ -n "$addr" ] && [ $rc -eq 0 ] && sanitizer_clean "$out.err" &&
		is_collapsed "$out.collapsed" && grep -q '^"burner" tid=' "$out.stacks"; then
		ok "$name: HTTP /prof (wall) and /stacks, no report"
	else
		not_ok "$name: HTTP /prof (wall) and /stacks, no report (status $rc, addr '$addr')"
		diag_file "$out.err" 40
	fi
}

# The sanitizers' symbolizer is BUILD/sanitize/bin/llvm-symbolizer, which
# drops LD_PRELOAD (tests/integration/sanitize_symbolizer.c).
mkdir -p "$SAN"
# split races on purpose on one global (`sink`, a volatile the burners
# write so the compiler keeps their loops): not the agent's.
# libmicrohttpd joins a finished connection thread only when it cleans
# the connection up; one may be left at exit (a "thread leak").
printf 'race:sink\nthread:libmicrohttpd.so\n' >"$SAN/tsan.supp"
ASAN_CYCLES=${ASAN_CYCLES:-300} TSAN_CYCLES=${TSAN_CYCLES:-100}
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:external_symbolizer_path=$SAN/bin/llvm-symbolizer
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:external_symbolizer_path=$SAN/bin/llvm-symbolizer
export TSAN_OPTIONS="halt_on_error=1:report_signal_unsafe=1:suppressions=$SAN/tsan.supp:external_symbolizer_path=$SAN/bin/llvm-symbolizer"

built=()
for cfg in "asan -fsanitize=address,undefined" "tsan -fsanitize=thread"; do
	set -- $cfg
	# BUILD/sanitize/$1/{libnprof.so,split,agent_cycles,alloc_storm} and
	# BUILD/sanitize/bin/llvm-symbolizer, up to date
	sanitize_build "$1" "sanitize-$1" "$2" "libnprof.so, split, agent_cycles and alloc_storm" ||
		continue
	built+=("$1")
	for ev in cpu itimer wall; do
		run_session "$1" "$ev"
	done
	run_http "$1"
	# TSan makes a start/stop ~10 times slower (~150 ms a cycle here):
	# 1,000 per engine would take minutes.
	if [ "$1" = tsan ]; then run_cycles "$1" "$TSAN_CYCLES"; else run_cycles "$1" "$ASAN_CYCLES"; fi
done

# --- alloc_storm: the alloc, heap and lock engines ------------------------------
# tests/progs/alloc_storm (agent_storm.sh) built with each sanitizer and
# run against that build's libnprof.so: STORM_CYCLES (200) alloc
# sessions, as many heap enable/disable cycles (a heap snapshot every 50th) and a
# quarter as many lock sessions, through the C API, while four threads
# allocate, check and free blocks and contend on a mutex. No report,
# every call succeeded, no corruption, fds and threads back to the
# baseline. (ASan's runtime, linked into the program, defines the malloc
# family ahead of the agent: the agent points the libraries' calls at
# itself (src/agent/mem_hook.c), but the program's own calls go straight
# to ASan; under TSan the agent interposes nothing. agent_storm.sh runs
# the interposers under the program's storm.)
STORM_CYCLES=${STORM_CYCLES:-200}
run_storm() {
	local name=$1 dir=$SAN/$1 out=$TMP/$1-storm t0 rc
	# Made up to date by this run (a failed make was reported above), not
	# left over from an earlier one.
	if [[ " ${built[*]} " != *" $name "* ]]; then
		skip "$name: alloc_storm" "make sanitize-$name failed in this run"
		return
	fi
	mkdir -p "$out"
	t0=$(date +%s)
	timeout -k 5 300 env LD_PRELOAD="$dir/libnprof.so" NPROF_QUIET=1 "$dir/alloc_storm" \
		--dir "$out" --watchdog 120 --alloc-cycles "$STORM_CYCLES" \
		--heap-cycles "$STORM_CYCLES" --lock-cycles $((STORM_CYCLES / 4)) \
		>"$out.out" 2>"$out.err" </dev/null
	rc=$?
	if [ $rc -eq 0 ] && sanitizer_clean "$out.err" && grep -qx "storm ok" "$out.out"; then
		ok "$name: alloc_storm, $STORM_CYCLES alloc and heap cycles, $((STORM_CYCLES / 4)) lock, no report, storm ok ($(($(date +%s) - t0))s)"
	else
		not_ok "$name: alloc_storm, $STORM_CYCLES alloc and heap cycles, $((STORM_CYCLES / 4)) lock, no report (status $rc)"
		diag_file "$out.out" 12
		diag_file "$out.err" 40
	fi
}
run_storm asan
run_storm tsan
# --- end of alloc_storm ---------------------------------------------------------
finish
