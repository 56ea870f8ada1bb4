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
# clang, because gcc's ASan (a shared runtime) refuses to run when another
# library is preloaded first; clang links the runtime into the program,
# and the preloaded library resolves the runtime's symbols there (so it is
# linked without -z defs). The program's sanitizer intercepts
# pthread_create before the agent's wrapper does: its threads are found by
# the agent's /proc/self/task scan instead, as for threads made with clone.
#
# src/agent/hot/ and the unwinder's walker (src/unwind/walker.c) are built
# with UBSan only: they run in signal handlers and read other frames of the
# interrupted stack (ASan's redzones, TSan's shadow of another context) by
# design; scripts/check-hot holds them to async-signal-safe calls.
#
# Objects are kept in BUILD/sanitize/{asan,tsan} and rebuilt when a source
# or a header is newer. `make sanitize` runs this test alone.
#
# Two clang builds of the agent and five programs, then their runs: minutes
# on a cold, slow host.
# test-timeout: 900
. "$(dirname "$0")/lib.sh"
need_build
command -v clang >/dev/null || bail "clang is installed (scripts/install-deps)"
SAN=$NPROF_BUILD/sanitize
GEN=$NPROF_BUILD/gen
[ -r "$GEN/profile.pb-c.c" ] || bail "the normal build ran first (build/gen)"

cd "$NPROF_SRC" || bail "cd $NPROF_SRC"
SRCS=$(ls src/base/*.c src/unwind/*.c src/profile/*.c src/symbolize/*.c src/output/*.c \
	src/threaddump/*.c src/engine/*.c src/agent/*.c src/agent/hot/*.c)
newest_header=$(find include src "$GEN" -name '*.h' -printf '%T@\n' | sort -n | tail -1)

# build NAME SANFLAGS: BUILD/sanitize/NAME/libnprof.so and .../split.
build() {
	local name=$1 flags=$2 dir=$SAN/$1 jobs=() s o f
	local base="-std=gnu11 -D_GNU_SOURCE -O1 -g -fPIC -fno-omit-frame-pointer"
	base="$base -fvisibility=hidden -Iinclude -Isrc -I$GEN -w"
	mkdir -p "$dir/obj"
	for s in $SRCS "$GEN/profile.pb-c.c"; do
		o=$dir/obj/$(echo "${s#$NPROF_BUILD/}" | tr / _).o
		f=$flags
		case $s in src/agent/hot/*|src/unwind/walker.c) f="-fsanitize=undefined" ;; esac
		# TSan intercepts malloc, the pthread locks, sigaction and execve
		# in the program; the agent's interposers are left out (their map
		# lines too, below).
		case $name:$s in tsan:src/agent/hot/alloc.c|tsan:src/agent/hot/lock.c|tsan:src/agent/hot/signals.c|tsan:src/agent/exec.c) f="$f -DNPROF_NO_INTERPOSE" ;; esac
		if [ ! -e "$o" ] || [ "$s" -nt "$o" ] ||
			awk -v h="$newest_header" -v m="$(stat -c %Y "$o")" 'BEGIN { exit !(h > m) }'; then
			jobs+=("clang $base $f -fno-sanitize-recover=undefined -c $s -o $o.$$ && mv -f $o.$$ $o")
		fi
	done
	if [ ${#jobs[@]} -gt 0 ]; then
		printf '%s\n' "${jobs[@]}" | xargs -P "$(nproc)" -I{} sh -c '{}' || return 1
	fi
	# TSan: the agent does not take over pthread_create (its wrapper would
	# run instrumented code in a new thread before TSan's own start), nor
	# the malloc family and lock acquisitions (TSan intercepts them in the
	# program, and would call ours as the "real" ones during its own
	# start-up).
	# Their definitions are renamed too, so that the agent's own calls
	# (pthread_mutex_lock, malloc) reach TSan's interceptors.
	local objs=("$dir"/obj/*.o)
	if [ "$name" = tsan ]; then
		echo '{ global: nprof_*; local: *; };' >"$dir/libnprof.map"
		local names n d args
		names=$(sed 's|/\*.*\*/||g; s|^ \*.*||' src/agent/libnprof.map | tr -s ' \t;:' '\n\n\n\n' |
			grep -E '^[a-z_][a-z_0-9]*$' | grep -vE '^(nprof_.*|global|local)$')
		mkdir -p "$dir/renamed"
		objs=()
		for o in "$dir"/obj/*.o; do
			d=$(nm --defined-only "$o" | awk '{ print $3 }')
			args=()
			for n in $names; do
				grep -qx "$n" <<<"$d" && args+=(--redefine-sym "$n=nprof_tsan_$n")
			done
			if [ ${#args[@]} -gt 0 ]; then
				objcopy "${args[@]}" "$o" "$dir/renamed/${o##*/}" || return 1
				objs+=("$dir/renamed/${o##*/}")
			else
				objs+=("$o")
			fi
		done
	else
		cp src/agent/libnprof.map "$dir/libnprof.map"
	fi
	clang -shared $flags -Wl,--version-script="$dir/libnprof.map" -Wl,-soname,libnprof.so \
		-o "$dir/libnprof.so.$$" "${objs[@]}" \
		-ldw -lelf -liberty -lz -lm -lpthread -lprotobuf-c -ldl -lrt -lmicrohttpd || return 1
	clang -O1 -g -fno-omit-frame-pointer -pthread $flags -fno-sanitize-recover=undefined \
		-o "$dir/split.$$" tests/progs/split.c -ldl -lm || return 1
	clang -O1 -g -fno-omit-frame-pointer -pthread $flags -fno-sanitize-recover=undefined \
		-o "$dir/agent_cycles.$$" tests/progs/agent_cycles.c -ldl -lm || return 1
	# Renamed into place: another run may be using the old ones.
	mv -f "$dir/libnprof.so.$$" "$dir/libnprof.so" && mv -f "$dir/split.$$" "$dir/split" &&
		mv -f "$dir/agent_cycles.$$" "$dir/agent_cycles"
}

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

# The sanitizers' symbolizer runs without the preloaded agent (which
# needs the sanitizer runtime of the program).
# A static program, which LD_PRELOAD does not touch, starts it.
mkdir -p "$SAN/bin"
sym=$(command -v llvm-symbolizer || ls /usr/bin/llvm-symbolizer-* 2>/dev/null | head -1)
if [ ! -x "$SAN/bin/llvm-symbolizer" ] || head -c2 "$SAN/bin/llvm-symbolizer" | grep -q '#!'; then
	printf '#include <stdlib.h>\n#include <unistd.h>\nint main(int c, char **v)\n{ (void)c; unsetenv("LD_PRELOAD"); v[0] = "%s"; execv(v[0], v); return 127; }\n' \
		"$sym" >"$SAN/bin/sym.c"
	cc -static -O1 -o "$SAN/bin/llvm-symbolizer.$$" "$SAN/bin/sym.c" &&
		mv -f "$SAN/bin/llvm-symbolizer.$$" "$SAN/bin/llvm-symbolizer"
fi
# split races on purpose on one global (`sink`, a volatile the burners
# write so the compiler keeps their loops): not the agent's.
# libmicrohttpd joins a finished connection thread only when it cleans
# the connection up; one may be left at exit (a "thread leak").
printf 'race:sink\nthread:libmicrohttpd.so\n' >"$SAN/tsan.supp"
ASAN_CYCLES=${ASAN_CYCLES:-300} TSAN_CYCLES=${TSAN_CYCLES:-100}
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:external_symbolizer_path=$SAN/bin/llvm-symbolizer
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:external_symbolizer_path=$SAN/bin/llvm-symbolizer
export TSAN_OPTIONS="halt_on_error=1:report_signal_unsafe=1:suppressions=$SAN/tsan.supp:external_symbolizer_path=$SAN/bin/llvm-symbolizer"

for cfg in "asan -fsanitize=address,undefined" "tsan -fsanitize=thread"; do
	set -- $cfg
	t0=$(date +%s)
	if ! build "$1" "$2" >"$TMP/build-$1.log" 2>&1; then
		not_ok "$1: clang $2 builds libnprof.so and split"
		diag_file "$TMP/build-$1.log" 30
		continue
	fi
	ok "$1: clang $2 builds libnprof.so and split ($(( $(date +%s) - t0 ))s)"
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
# run against the libnprof.so just built: STORM_CYCLES (200) alloc
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
	local name=$1 flags=$2 dir=$SAN/$1 out=$TMP/$1-storm t0 rc
	# Built by this run (a failed build was reported above), not left
	# over from an earlier one: linked after this script started.
	if [ "$(stat -c %Y "$dir/libnprof.so" 2>/dev/null || echo 0)" -lt $(($(date +%s) - SECONDS)) ]; then
		skip "$name: alloc_storm" "libnprof.so was not built in this run"
		return
	fi
	if [ ! -x "$dir/alloc_storm" ] || [ tests/progs/alloc_storm.c -nt "$dir/alloc_storm" ]; then
		clang -O1 -g -fno-omit-frame-pointer -pthread $flags -fno-sanitize-recover=undefined \
			-o "$dir/alloc_storm.$$" tests/progs/alloc_storm.c -ldl >"$out.build" 2>&1 &&
			mv -f "$dir/alloc_storm.$$" "$dir/alloc_storm" || {
			not_ok "$name: clang $flags builds alloc_storm"
			diag_file "$out.build"
			return
		}
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
run_storm asan -fsanitize=address,undefined
run_storm tsan -fsanitize=thread
# --- end of alloc_storm ---------------------------------------------------------
finish
