#!/usr/bin/env bash
# The alloc, heap and lock engines' robustness scenario:
# tests/progs/alloc_storm with libnprof.so preloaded -- four threads
# allocating, freeing, reallocating (every block checked against the
# pattern it was filled with) and locking a shared mutex, while the main
# thread, through the C API, starts and stops 1000 alloc sessions, enables
# and disables heap profiling 1000 times (a heap snapshot every 50th) and
# starts and stops 200 lock sessions. No crash, no hang (the program's own
# watchdog), every call succeeded, no block corrupted, no increment under
# the mutex lost, as many fds and threads at the end as after the first
# cycle; the profile and heap snapshots it wrote are readable. Again, with
# fewer cycles, with jemalloc preloaded before the agent (the callers the
# agent redirects to itself while they call). The sanitizer runs (ASan+UBSan,
# TSan) are in agent_sanitize.sh.
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
PROG=$PROGS/alloc_storm
JEMALLOC=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
[ -x "$PROG" ] || bail "alloc_storm is built"

# storm LABEL PRELOAD ALLOC HEAP LOCK: one run and its checks.
storm() {
	local label=$1 preload=$2 dir=$TMP/$1 rc phase
	shift 2
	mkdir -p "$dir"
	timeout -k 5 240 env LD_PRELOAD="$preload" NPROF_QUIET=1 "$PROG" --dir "$dir" --watchdog 60 \
		--alloc-cycles "$1" --heap-cycles "$2" --lock-cycles "$3" \
		>"$dir/out" 2>"$dir/err" </dev/null
	rc=$?
	if [ $rc -eq 0 ] && grep -qx "storm ok" "$dir/out"; then
		ok "$label: storm ok (status 0): $(grep -E '^(ops|fds|threads)' "$dir/out" | tr '\n' ' ')"
	else
		not_ok "$label: storm ok (status $rc; 3 = watchdog, 124 = timeout, > 128 = signal)"
		diag_file "$dir/out" 20
		diag_file "$dir/err" 20
	fi
	for phase in "alloc $1" "heap $2" "lock $3"; do
		check "$label: $phase cycles, none failed" grep -qE "^$phase cycles, 0 failed" "$dir/out"
	done
	check "$label: no corrupted block, no lost increment" \
		bash -c "grep -qx 'corrupt 0' '$dir/out' && grep -qx 'lost 0' '$dir/out'"
	check "$label: fds and threads back to the baseline" \
		bash -c "grep -qE '^fds ([0-9]+) -> \\1\$' '$dir/out' && grep -qE '^threads ([0-9]+) -> \\1\$' '$dir/out'"
	if is_collapsed "$dir/heap.collapsed" && has_frame_match "$dir/heap.collapsed" '^(make|step)$'; then
		ok "$label: the last heap dump is collapsed stacks through the workers' allocations"
	else
		not_ok "$label: the last heap dump is collapsed stacks through the workers' allocations"
		diag_file "$dir/heap.collapsed" 5
	fi
	if command -v go >/dev/null; then
		check "$label: the last alloc dump is a pprof go tool pprof reads" \
			bash -c "go tool pprof -raw '$dir/alloc.pb.gz' 2>/dev/null | grep -q 'alloc_space/bytes alloc_objects/count'"
	fi
}

storm glibc "$AGENT" 1000 1000 200
if [ -r "$JEMALLOC" ]; then
	storm jemalloc "$JEMALLOC:$AGENT" 300 300 50
else
	skip "jemalloc" "$JEMALLOC is not installed (scripts/install-deps installs libjemalloc2)"
fi
finish
