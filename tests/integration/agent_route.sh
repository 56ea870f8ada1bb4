#!/usr/bin/env bash
# route: with libnprof.so preloaded, the program's PLT slots of malloc,
# free and pthread_mutex_lock point straight at the C library while no
# engine needs their calls, at the agent while one does (malloc with
# alloc or heap on, free with heap on, the lock with lock on), and back
# when it stops (tests/progs/alloc_route, lazily bound and -z now); heap
# profiling's live set stays right across the switches: blocks sampled
# while on and freed while off are not live once heap is on again, and
# blocks freed while on leave it.
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"

C=libc.so.6
A=libnprof.so
expect() {
	cat <<END
idle malloc=$C free=$C pthread_mutex_lock=$C
heap malloc=$A free=$A pthread_mutex_lock=$C
heap-off malloc=$C free=$C pthread_mutex_lock=$C
alloc malloc=$A free=$C pthread_mutex_lock=$C
alloc-off malloc=$C free=$C pthread_mutex_lock=$C
lock malloc=$C free=$C pthread_mutex_lock=$A
lock-off malloc=$C free=$C pthread_mutex_lock=$C
END
}
live_of() { awk -v s="$2" '$1 == s { sub(/^live=/, "", $2); print $2 }' "$1"; }

for prog in alloc_route alloc_route_now; do
	[ -x "$PROGS/$prog" ] || bail "$prog is built"
	NPROF_QUIET=1 LD_PRELOAD="$AGENT" timeout 60 "$PROGS/$prog" "$TMP/$prog.profile" \
		>"$TMP/$prog.out" 2>"$TMP/$prog.err"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		not_ok "$prog: exits 0 (status $rc)"
		diag_file "$TMP/$prog.err"
		continue
	fi
	grep -v ' live=' "$TMP/$prog.out" >"$TMP/$prog.slots"
	if expect | diff - "$TMP/$prog.slots" >"$TMP/$prog.diff"; then
		ok "$prog: the slots point past the agent exactly while no engine needs the calls"
	else
		not_ok "$prog: the slots point past the agent exactly while no engine needs the calls"
		diag_file "$TMP/$prog.diff" 20
	fi
	n=$(live_of "$TMP/$prog.out" heap-allocated)
	check "$prog: heap on, 2000 blocks of 4099 bytes at interval 1k: most sampled and live ($n > 1500)" \
		[ "${n:-0}" -gt 1500 ]
	check "$prog: freed while heap was off, none live once it is on again ($(live_of "$TMP/$prog.out" heap-again))" \
		[ "$(live_of "$TMP/$prog.out" heap-again)" = 0 ]
	check "$prog: allocated and freed while heap is on, none live ($(live_of "$TMP/$prog.out" heap-freed))" \
		[ "$(live_of "$TMP/$prog.out" heap-freed)" = 0 ]
done
finish
