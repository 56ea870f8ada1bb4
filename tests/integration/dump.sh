#!/usr/bin/env bash
# nprof dump: a core of threads_zoo that gdb and eu-stack open with every
# thread's stack, while the process runs on (never left stopped or traced,
# also when nprof is SIGKILLed while copying 256 MiB); the heap is in the
# core; --all; the free-space refusal; errors.
. "$(dirname "$0")/lib.sh"
need_build
ZOO=$PROGS/threads_zoo
[ -x "$ZOO" ] || bail "threads_zoo is built"

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

burns() {
	local out=$TMP/$2.out before i
	before=$(grep -c '^burn ' "$out")
	kill -USR1 "$1"
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c '^burn ' "$out")" -gt "$before" ] && break
		sleep 0.02
	done
	grep '^burn ' "$out" | tail -1 | awk '{ print $2 }'
}

FUNCS="main_wait block_in_read sleep_long wait_on_cond burn_cpu recurse pool_wait"

start_prog zoo "$ZOO" --mem 16 || bail "threads_zoo starts"
zoo=$PID
b0=$(burns "$zoo" zoo)
core=$TMP/core.$zoo

run_nprof 60 dump "$zoo" -f "$TMP/core.%p"
if [ "$NP_RC" -eq 0 ] && grep -qE "^nprof: wrote $core .*9 threads.*PID $zoo paused [0-9.]+ (us|ms|s)\$" "$TMP/np.err"; then
	ok "dump exits 0 and reports the pause: $(cat "$TMP/np.err")"
else
	not_ok "dump exits 0 and reports the pause"
	np_diag
fi
cp "$TMP/np.err" "$TMP/dump1.err"
check "the process is not left stopped or traced" not_stopped "$zoo"
check "the core is mode 0600" [ "$(stat -c %a "$core")" = 600 ]
check "the core is an ELF core file" bash -c "readelf -h '$core' | grep -q 'CORE (Core file)'"
check "the heap is in the core (the marker string)" grep -qa "NPROF-ZOO-MARKER-$zoo" "$core"
used=$(du -k "$core" | cut -f1)
check "all-zero pages are holes: $used KiB on disk for $(($(stat -c %s "$core") / 1024)) KiB" [ "$used" -lt $(($(stat -c %s "$core") / 1024)) ]

# --- gdb ----------------------------------------------------------------------

if command -v gdb >/dev/null; then
	timeout 120 gdb -nx -batch -ex 'info threads' -ex 'thread apply all bt' "$ZOO" "$core" >"$TMP/gdb.out" 2>&1
	n=$(grep -cE '^Thread [0-9]+ \(' "$TMP/gdb.out")
	check "gdb: 9 threads (got $n)" [ "$n" -eq 9 ]
	miss=
	for f in $FUNCS; do grep -qE "in $f |#[0-9]+ +$f " "$TMP/gdb.out" || miss="$miss $f"; done
	if [ -z "$miss" ]; then ok "gdb: every thread's stack ($FUNCS)"; else not_ok "gdb: missing$miss"; diag_file "$TMP/gdb.out" 60; fi
	check "gdb: stacks reach main and start_thread" bash -c "grep -qE ' main \(' '$TMP/gdb.out' && [ \$(grep -c 'start_thread' '$TMP/gdb.out') -ge 8 ]"
	check "gdb: no 'Cannot access memory' in any stack" bash -c "! grep -q 'Cannot access memory' '$TMP/gdb.out'"
else
	skip "gdb opens the core" "no gdb"
fi

# --- eu-stack -------------------------------------------------------------------

if command -v eu-stack >/dev/null; then
	timeout 120 eu-stack --core "$core" --executable "$ZOO" >"$TMP/eu.out" 2>&1
	n=$(grep -c '^TID ' "$TMP/eu.out")
	check "eu-stack: 9 threads (got $n)" [ "$n" -eq 9 ]
	miss=
	for f in $FUNCS; do grep -qE " $f\$" "$TMP/eu.out" || miss="$miss $f"; done
	if [ -z "$miss" ]; then ok "eu-stack: every thread's stack ($FUNCS)"; else not_ok "eu-stack: missing$miss"; diag_file "$TMP/eu.out" 60; fi
	check "eu-stack: the process's PID" grep -q "^PID $zoo " "$TMP/eu.out"
else
	skip "eu-stack opens the core" "no eu-stack"
fi

b1=$(burns "$zoo" zoo)
check "the burner kept running ($b0 -> $b1)" [ "${b1:-0}" -gt "${b0:-0}" ]

# --- --all ----------------------------------------------------------------------

run_nprof 60 dump --all -f "$TMP/all.core" "$zoo"
check "--all: exits 0" [ "$NP_RC" -eq 0 ]
copied() { sed -n 's/.* \([0-9]*\) of [0-9]* mappings.*/\1/p' "$1"; }
check "--all: more mappings copied ($(copied "$TMP/np.err") vs $(copied "$TMP/dump1.err"))" [ "$(copied "$TMP/np.err")" -gt "$(copied "$TMP/dump1.err")" ]
if command -v eu-stack >/dev/null; then
	timeout 120 eu-stack --core "$TMP/all.core" --executable "$ZOO" >"$TMP/eu2.out" 2>&1
	check "--all: eu-stack shows 9 threads" [ "$(grep -c '^TID ' "$TMP/eu2.out")" -eq 9 ]
fi
rm -f "$TMP/all.core"
check "the process is not left stopped or traced" not_stopped "$zoo"

# --- free space -------------------------------------------------------------------

mkdir -p "$TMP/small"
if mount -t tmpfs -o size=4m tmpfs "$TMP/small" 2>/dev/null; then
	run_nprof 60 dump -f "$TMP/small/core" "$zoo"
	if one_error_line && [ "$NP_RC" -eq 1 ] && err_says "needs up to .* free; write it elsewhere"; then
		ok "refuses when the file would not fit: $(cat "$TMP/np.err")"
	else
		not_ok "refuses when the file would not fit"
		np_diag
	fi
	check "nothing left on the small file system" [ -z "$(ls -A "$TMP/small")" ]
	check "nothing was stopped for it" not_stopped "$zoo"
	umount "$TMP/small"
else
	skip "refuses when the file would not fit" "cannot mount a small tmpfs here"
fi

# --- SIGKILL during the copy ----------------------------------------------------

if start_prog big "$ZOO" --mem 256; then
	big=$PID
	stuck=0 traced=0
	# "held": the first SIGKILL goes as soon as the threads are seen
	# traced, so that one lands in the hold however quickly this machine
	# copies 256 MiB; the others after fixed delays, before, during or
	# after it.
	for delay in held 0.02 0.05 0.1 0.15 0.2 0.3; do
		"$NPROF" dump -f "$TMP/killed.core" "$big" >/dev/null 2>&1 &
		np=$!
		if [ "$delay" = held ]; then
			for ((i = 0; i < 2000; i++)); do
				grep -qE '^TracerPid:[[:space:]]+[1-9]' "/proc/$big/status" && break
				kill -0 "$np" 2>/dev/null || break
				sleep 0.005
			done
		else
			sleep "$delay"
		fi
		grep -qE '^TracerPid:[[:space:]]+[1-9]' "/proc/$big/status" && traced=$((traced + 1))
		kill -KILL "$np" 2>/dev/null
		wait "$np" 2>/dev/null
		not_stopped "$big" || stuck=$((stuck + 1))
	done
	check "7 SIGKILLs of nprof mid-dump ($traced while it held the threads) leave no thread stopped or traced" [ "$stuck" -eq 0 ]
	check "at least one SIGKILL landed while the threads were held" [ "$traced" -ge 1 ]
	c0=$(burns "$big" big)
	sleep 0.2
	c1=$(burns "$big" big)
	check "the process runs on after the kills ($c0 -> $c1)" [ "${c1:-0}" -gt "${c0:-0}" ]
	run_nprof 120 dump -f "$TMP/big.core" "$big"
	pause=$(sed -n 's/.* paused \(.*\)$/\1/p' "$TMP/np.err")
	check "a 256 MiB heap dumps (paused $pause)" [ "$NP_RC" -eq 0 ]
	rm -f "$TMP/big.core" "$TMP/killed.core"
	kill "$big"
else
	not_ok "threads_zoo --mem 256 starts"
fi

# --- errors ---------------------------------------------------------------------

expect_error() {
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
expect_error "no PID" 2 'no PID' dump
expect_error "not a PID" 2 "not a PID" dump x1
expect_error "no such process" 1 "no process with PID 999999" dump 999999 -f "$TMP/none.core"
check "no file left for a failed dump" [ ! -e "$TMP/none.core" ]
expect_error "unwritable file" 1 "cannot create" dump "$zoo" -f /proc/nope/core
if usable_by_others; then
	RUN_AS=$AS_NOBODY expect_error "another user's process" 1 "belongs to uid 0" dump "$zoo" -f "$(nobody_dir)/core"
else
	skip "another user's process" "nprof not usable by nobody"
fi
RUN_AS="$PROGS/deny_ptrace" expect_error "ptrace denied by seccomp" 1 "seccomp" dump "$zoo" -f "$TMP/sec.core"
check "no file left after the refusal" [ ! -e "$TMP/sec.core" ]
check "the process is not left stopped or traced after the errors" not_stopped "$zoo"
finish
