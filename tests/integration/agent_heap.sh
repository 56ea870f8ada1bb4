#!/usr/bin/env bash
# heap: nprof heap PID enable|status|dump|disable on tests/progs/alloc_primes
# running with the agent: in-use bytes per function within 15% of what the
# program still holds, and after it frees three quarters of make_a's
# blocks, make_a's estimate follows; dumps as dot (rendered by dot -Tsvg,
# in MB) and pprof (four sample types, read by go tool pprof); errors for
# enable twice and dump when off; NPROF_START=event=heap at load.
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
PROG=$PROGS/alloc_primes
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
TOL=15

leaf_total() { awk -v f="$2" '{ v = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, fr, ";"); if (fr[n] == f) t += v } END { print t + 0 }' "$1"; }
pct_off() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.1f", b ? 100 * d / b : 100 }'; }

check_live() {
	local label=$1 f=$2 fn=$3 want=$4 tol=$5 got off
	got=$(leaf_total "$f" "$fn")
	off=$(pct_off "$got" "$want")
	if less_than "$off" "$tol"; then
		ok "$label: $fn holds ~$got bytes, the program holds $want (${off}% off, < $tol%)"
	else
		not_ok "$label: $fn holds ~$got bytes, the program holds $want (${off}% off, < $tol%)"
	fi
}

start_prog heap env LD_PRELOAD="$AGENT" "$PROG" --wait --truth "$TMP/heap.truth" ||
	bail "alloc_primes starts with the agent"
run_nprof 10 heap "$PID" status
check "status before enable: off" grep -q "heap profiling off" "$TMP/np.out"
run_nprof 10 heap "$PID" enable -i 16k
check "enable -i 16k: ok (status $NP_RC)" [ "$NP_RC" -eq 0 ]
run_nprof 10 heap "$PID" status
if grep -q "heap profiling on since .*interval 16384 bytes" "$TMP/np.out"; then
	ok "status: on, since when, interval 16384 bytes"
else
	not_ok "status: on, since when, interval 16384 bytes"
	np_diag
fi
run_nprof 10 heap "$PID" enable
check "enable twice: one error line, already on" bash -c "[ $NP_RC -eq 1 ] && grep -q 'already on' '$TMP/np.err'"

kill -USR1 "$PID"
wait_for_line "$TMP/heap.out" allocated 30 || bail "alloc_primes allocated"
run_nprof 30 heap "$PID" dump -f "$TMP/live1.collapsed"
is_collapsed "$TMP/live1.collapsed" || { np_diag; bail "dump -f x.collapsed writes collapsed stacks"; }
for fn in make_a make_c make_d; do
	check_live "allocated" "$TMP/live1.collapsed" "$fn" "$(fn_truth "$TMP/heap.truth" "$fn" 5)" "$TOL"
done
freed=$(( $(leaf_total "$TMP/live1.collapsed" make_b) + $(leaf_total "$TMP/live1.collapsed" make_e) ))
all=$(total "$TMP/live1.collapsed")
check "allocated: freed blocks (make_b, make_e) hold ~$freed of $all bytes (< 2%)" \
	less_than "$(awk -v a="$freed" -v b="$all" 'BEGIN { print 100 * a / b }')" 2
run_nprof 10 heap "$PID" status
check "status: live sampled blocks and estimated MB" grep -qE "[1-9][0-9]* live sampled blocks, [0-9.]+ MB estimated in use" "$TMP/np.out"

kill -USR1 "$PID"
wait_for_line "$TMP/heap.out" freed 30 || bail "alloc_primes freed"
run_nprof 30 heap "$PID" dump -o collapsed -f "$TMP/live2.txt"
check_live "after freeing 3/4 of make_a" "$TMP/live2.txt" make_a "$(fn_truth "$TMP/heap.truth" make_a 5)" 25
check_live "after freeing 3/4 of make_a" "$TMP/live2.txt" make_d "$(fn_truth "$TMP/heap.truth" make_d 5)" "$TOL"

run_nprof 30 heap "$PID" dump -o dot -f "$TMP/heap.dot"
if [ "$NP_RC" -eq 0 ] && dot -Tsvg "$TMP/heap.dot" -o "$TMP/heap.svg" 2>"$TMP/dot.err" && grep -q '<svg' "$TMP/heap.svg"; then
	ok "dump -o dot: dot -Tsvg renders it"
else
	not_ok "dump -o dot: dot -Tsvg renders it"
	diag_file "$TMP/dot.err"
fi
check "dot: the total in MB" grep -qE 'Total inuse_space: [0-9]+\.[0-9] MB' "$TMP/heap.dot"
check "dot: make_d's box in MB with its share" grep -qE 'make_d\\n[0-9]+\.[0-9] \([0-9.]+%\)' "$TMP/heap.dot"
run_nprof 30 heap "$PID" dump -f "$TMP/heap.pb.gz"
if command -v go >/dev/null; then
	check "pprof: four sample types (go tool pprof -raw)" bash -c \
		"go tool pprof -raw '$TMP/heap.pb.gz' 2>/dev/null | grep -q 'inuse_space/bytes inuse_objects/count alloc_space/bytes alloc_objects/count'"
	check "pprof: go tool pprof -sample_index=inuse_space -top names make_d" bash -c \
		"go tool pprof -sample_index=inuse_space -top '$TMP/heap.pb.gz' 2>/dev/null | grep -q make_d"
else
	skip "pprof" "go is not installed"
fi
run_nprof 30 heap "$PID" dump -o flamegraph -f "$TMP/heap.html"
check "dump -o flamegraph: an HTML file" grep -qi '<html' "$TMP/heap.html"

run_nprof 30 heap "$PID" dump -t -o collapsed
check "dump -t after enable without -t: under [threads not kept apart]" \
	rooted_chain "$TMP/np.out" "[threads not kept apart]" make_a

run_nprof 10 heap "$PID" disable
check "disable: ok" [ "$NP_RC" -eq 0 ]
run_nprof 10 heap "$PID" dump
check "dump when off: one error line saying to enable it" bash -c "[ $NP_RC -eq 1 ] && grep -q 'enable it first' '$TMP/np.err'"
run_nprof 10 heap "$PID" status
check "status after disable: off" grep -q "heap profiling off" "$TMP/np.out"
run_nprof 10 heap "$PID" frobnicate
check "an unknown action: usage error (status $NP_RC = 2)" [ "$NP_RC" -eq 2 ]
kill -TERM "$PID"

# --- NPROF_START=event=heap: on from the start, no session taken ----------------
start_prog heap2 env LD_PRELOAD="$AGENT" NPROF_START=event=heap,interval=64k "$PROG" --wait ||
	bail "alloc_primes starts with NPROF_START=event=heap"
run_nprof 10 heap "$PID" status
check "NPROF_START=event=heap: heap profiling on at load, interval 65536" \
	grep -q "heap profiling on since .*interval 65536 bytes" "$TMP/np.out"
kill -USR1 "$PID"
wait_for_line "$TMP/heap2.out" allocated 30
run_nprof 30 heap "$PID" dump -o collapsed
check "NPROF_START=event=heap: dump names make_a" grep -q "make_a" "$TMP/np.out"
run_nprof 30 record -e itimer -d 1 -o collapsed "$PID"
check "NPROF_START=event=heap: a cpu-time profile can still be taken (status $NP_RC)" [ "$NP_RC" -eq 0 ]
kill -TERM "$PID"

# --- thread roots and simple names: enable -t, dump -t -s ------------------------
start_prog heap3 env LD_PRELOAD="$AGENT" "$PROG" --wait || bail "alloc_primes starts (heap3)"
run_nprof 10 heap "$PID" enable -t -i 16k
check "enable -t: ok (status $NP_RC)" [ "$NP_RC" -eq 0 ]
kill -USR1 "$PID"
wait_for_line "$TMP/heap3.out" allocated 30
run_nprof 30 heap "$PID" dump -t -s -o collapsed -f "$TMP/threads.collapsed"
check "dump -t: make_a under [alloc_primes tid=$PID]" \
	rooted_chain "$TMP/threads.collapsed" "[alloc_primes tid=$PID]" make_a
check "dump -t: make_c under its thread, named though it has ended ([alloc_worker tid=N])" \
	has_frame_match "$TMP/threads.collapsed" '^\[alloc_worker tid=[0-9]+\]$'
run_nprof 30 heap "$PID" dump -o collapsed -f "$TMP/nothreads.collapsed"
check "dump without -t: no thread roots" bash -c "! grep -q 'tid=' '$TMP/nothreads.collapsed'"
run_nprof 10 heap "$PID" status -s
check "-s with status: usage error (status $NP_RC = 2)" [ "$NP_RC" -eq 2 ]
kill -TERM "$PID"
finish
