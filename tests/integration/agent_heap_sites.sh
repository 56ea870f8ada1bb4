#!/usr/bin/env bash
# The alloc and heap scenarios the agent is held to, on
# tests/progs/heap_sites, whose three sites have distinctive block sizes
# and whose truth the program counts itself: site_small_1k (100 MiB in 1 KiB blocks, freed),
# site_big_64k (300 MiB in 64 KiB blocks, freed, on its own thread) and
# site_live_48m (48 MiB in 48 KiB blocks, kept).
#   - alloc (NPROF_START=event=alloc): bytes and objects per site within
#     10% of the truth;
#   - heap at run time (nprof heap PID ...): the live site's in-use bytes
#     within 10%, the freed sites under 2% of it; enable -> dump ->
#     disable -> dump (refused, one line) -> enable again -> dump; the
#     dumps as collapsed, dot (rendered by dot) and pprof (go tool pprof);
# under glibc and again with Debian's libjemalloc.so.2 preloaded before the
# agent (callers bound to jemalloc are pointed at the agent, which forwards
# to it) and after it (the agent's interposers forward to whatever comes
# next).
#
# The interval is 32 KiB, not the default 512 KiB: the relative standard
# error of a site's estimate is sqrt((1-p) / (N p)) for N blocks of S bytes
# sampled with p = 1 - exp(-S/T) (docs/memory.md). At 512 KiB the 1 KiB
# site (N = 102400) has 7.1% and the 64 KiB site 4.0%: a 10% bar would fail
# one run in 6 or in 80. At 32 KiB: 1 KiB site 1.75%, 64 KiB site 0.57%,
# 48 KiB live site 1.67% -- the 10% bar is at least 5.7 standard errors.
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
PROG=$PROGS/heap_sites
JEMALLOC=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
[ -x "$PROG" ] || bail "heap_sites is built"
TOL=10
SITES="site_small_1k site_big_64k site_live_48m"

pct_of() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? 100 * a / b : 100 }'; }
# raw_value PPROF INDEX FN: value INDEX (0-based) summed over the samples
# with FN on their stack, from go tool pprof -raw.
raw_value() {
	go tool pprof -raw "$1" 2>/dev/null | awk -v k="$2" -v f="$3" '
	/^Samples:/ { mode = 1; next }
	/^Locations/ { mode = 2; next }
	/^Mappings/ { mode = 3; next }
	mode == 1 && /^ +[0-9].*:/ { split($0, a, ":"); split(a[1], v, " "); nids = split(a[2], ids, " ");
		ns++; val[ns] = v[k + 1]; for (j = 1; j <= nids; j++) loc[ns, j] = ids[j]; cnt[ns] = nids }
	mode == 2 && /^ +[0-9]+:/ { id = $1; sub(":", "", id); name[id] = $4 }
	END { for (i = 1; i <= ns; i++) for (j = 1; j <= cnt[i]; j++) if (name[loc[i, j]] == f) { t += val[i]; break }
		printf "%.0f\n", t }'
}
# near LABEL GOT WANT: GOT within TOL% of WANT.
near() {
	local off
	off=$(pct_off "$2" "$3")
	if less_than "$off" "$TOL"; then
		ok "$1: $2, truth $3 (${off}% off, < $TOL%)"
	else
		not_ok "$1: $2, truth $3 (${off}% off, < $TOL%)"
	fi
}

# --- alloc: one run to exit, the profile written then ---------------------------
alloc_run() {
	local label=$1 preload=$2 f
	for f in collapsed pb.gz; do
		timeout -k 5 60 env LD_PRELOAD="$preload" \
			NPROF_START="event=alloc,interval=32k,file=$TMP/$label.alloc.$f" \
			"$PROG" --truth "$TMP/$label.alloc.truth" >/dev/null 2>"$TMP/$label.alloc.err" </dev/null
		check "$label alloc: heap_sites exits normally with the agent ($f; status $?)" [ $? -eq 0 ]
	done
	if ! is_collapsed "$TMP/$label.alloc.collapsed" || ! [ -s "$TMP/$label.alloc.truth" ]; then
		not_ok "$label alloc: profile and truth written"
		diag_file "$TMP/$label.alloc.err"
		return
	fi
	for s in $SITES; do
		near "$label alloc: $s estimated bytes" "$(frame_total "$TMP/$label.alloc.collapsed" "$s")" \
			"$(site_truth "$TMP/$label.alloc.truth" "$s" 3)"
	done
	if command -v go >/dev/null; then
		for s in $SITES; do
			near "$label alloc (pprof): $s estimated objects" \
				"$(raw_value "$TMP/$label.alloc.pb.gz" 1 "$s")" \
				"$(site_truth "$TMP/$label.alloc.truth" "$s" 4)"
		done
	else
		skip "$label alloc (pprof): objects per site" "go is not installed"
	fi
}

# --- heap: switched on and off while the program runs ---------------------------
# cmd LABEL COMMAND: has heap_sites run COMMAND (through its fifo) and
# waits for it to say so (its Nth "done COMMAND").
declare -A sent
cmd() {
	local key=$1:$2 i
	sent[$key]=$(( ${sent[$key]:-0} + 1 ))
	echo "$2" >"$TMP/$1.fifo"
	for ((i = 0; i < 1200; i++)); do
		[ "$(grep -cx "done $2" "$TMP/$1.out")" -ge "${sent[$key]}" ] && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.05
	done
	not_ok "$1: heap_sites ran '$2'"
	diag_file "$TMP/$1.err"
	return 1
}

# check_live LABEL FILE TRUTH: the live site within TOL%, the freed ones
# under 2% of it.
check_live() {
	local label=$1 f=$2 truth=$3 live freed
	if ! is_collapsed "$f"; then
		not_ok "$label: the dump is collapsed stacks"
		np_diag
		return
	fi
	live=$(frame_total "$f" site_live_48m)
	near "$label: site_live_48m in use (bytes)" "$live" "$(site_truth "$truth" site_live_48m 5)"
	for s in site_small_1k site_big_64k; do
		freed=$(frame_total "$f" "$s")
		check "$label: $s (all freed) holds $freed bytes, $(pct_of "$freed" "$live")% of the live site (< 2%)" \
			less_than "$(pct_of "$freed" "$live")" 2
	done
}

heap_run() {
	local label=$1 preload=$2 truth=$TMP/$1.heap.truth before i
	mkfifo "$TMP/$label.fifo" || { not_ok "$label: mkfifo"; return; }
	if ! start_prog "$label" env LD_PRELOAD="$preload" "$PROG" --control "$TMP/$label.fifo" \
		--truth "$truth"; then
		not_ok "$label heap: heap_sites starts with the agent"
		return
	fi
	case $preload in
	*jemalloc*) check "$label heap: libjemalloc is mapped in the program" \
		grep -q libjemalloc "/proc/$PID/maps" ;;
	esac
	# A first round at a coarse interval: the program's threads are left
	# with countdowns drawn for 64 MiB; at 32 KiB they must not carry them.
	run_nprof 10 heap "$PID" enable -i 64m
	check "$label heap: enable -i 64m (status $NP_RC)" [ "$NP_RC" -eq 0 ]
	cmd "$label" sites || return
	run_nprof 10 heap "$PID" disable
	cmd "$label" free || return
	cp "$truth" "$truth.before"

	run_nprof 10 heap "$PID" enable -i 32k
	check "$label heap: enable -i 32k (status $NP_RC)" [ "$NP_RC" -eq 0 ]
	cmd "$label" sites || return

	run_nprof 30 heap "$PID" dump -f "$TMP/$label.live1.collapsed"
	check_live "$label heap, enabled" "$TMP/$label.live1.collapsed" "$truth"
	run_nprof 30 heap "$PID" dump -o dot -f "$TMP/$label.heap.dot"
	if [ "$NP_RC" -eq 0 ] && dot -Tsvg "$TMP/$label.heap.dot" -o "$TMP/$label.heap.svg" \
		2>"$TMP/dot.err" && grep -q '<svg' "$TMP/$label.heap.svg"; then
		ok "$label heap: dump -o dot, rendered by dot -Tsvg"
	else
		not_ok "$label heap: dump -o dot, rendered by dot -Tsvg"
		diag_file "$TMP/dot.err"
	fi
	# jeprof's boxes: "NAME\nSELF (PCT%)" in MB (MiB) with one decimal.
	near "$label heap (dot): site_live_48m's box, MB" \
		"$(grep -oE 'site_live_48m\\n[0-9]+\.[0-9]' "$TMP/$label.heap.dot" | head -1 | sed 's/.*\\n//')" \
		"$(awk -v b="$(site_truth "$truth" site_live_48m 5)" 'BEGIN { printf "%.1f", b / 1048576 }')"
	run_nprof 30 heap "$PID" dump -f "$TMP/$label.heap.pb.gz"
	if command -v go >/dev/null; then
		near "$label heap (pprof): site_live_48m inuse_space" \
			"$(raw_value "$TMP/$label.heap.pb.gz" 0 site_live_48m)" "$(site_truth "$truth" site_live_48m 5)"
		for s in $SITES; do
			near "$label heap (pprof): $s alloc_space since enable" \
				"$(raw_value "$TMP/$label.heap.pb.gz" 2 "$s")" \
				"$(( $(site_truth "$truth" "$s" 3) - $(site_truth "$truth.before" "$s" 3) ))"
		done
		check "$label heap (pprof): go tool pprof -sample_index=inuse_space -top names site_live_48m" \
			bash -c "go tool pprof -sample_index=inuse_space -top '$TMP/$label.heap.pb.gz' 2>/dev/null | grep -q site_live_48m"
	else
		skip "$label heap (pprof)" "go is not installed"
	fi

	run_nprof 10 heap "$PID" disable
	check "$label heap: disable (status $NP_RC)" [ "$NP_RC" -eq 0 ]
	run_nprof 10 heap "$PID" dump -f "$TMP/$label.off.collapsed"
	if one_error_line && err_says 'enable it first' && [ ! -e "$TMP/$label.off.collapsed" ]; then
		ok "$label heap: dump when off refused in one line saying to enable it"
	else
		not_ok "$label heap: dump when off refused in one line saying to enable it"
		np_diag
	fi
	run_nprof 10 heap "$PID" status
	check "$label heap: status says off" grep -q "heap profiling off" "$TMP/np.out"

	# Enabled again: the live set starts empty (the 48 MiB held since is
	# not seen), and new allocations are.
	run_nprof 10 heap "$PID" enable -i 32k
	check "$label heap: enable again (status $NP_RC)" [ "$NP_RC" -eq 0 ]
	run_nprof 10 heap "$PID" status
	check "$label heap: status right after enabling again: on, nothing live, 0 samples (counted since enable)" \
		grep -q "heap profiling on since .* 0 live sampled blocks, 0.0 MB estimated in use, 0 samples" "$TMP/np.out"
	run_nprof 30 heap "$PID" dump -o collapsed
	check "$label heap: dump right after enabling again works (status $NP_RC)" [ "$NP_RC" -eq 0 ]
	cmd "$label" free || return
	cmd "$label" sites || return
	run_nprof 30 heap "$PID" dump -f "$TMP/$label.live2.collapsed"
	check_live "$label heap, enabled again" "$TMP/$label.live2.collapsed" "$truth"
	before=$(frame_total "$TMP/$label.live2.collapsed" site_live_48m)
	cmd "$label" free || return
	run_nprof 30 heap "$PID" dump -o collapsed -f "$TMP/$label.live3.collapsed"
	check "$label heap: after the live site frees its blocks, it holds $(frame_total "$TMP/$label.live3.collapsed" site_live_48m) bytes (< 2% of $before)" \
		less_than "$(pct_of "$(frame_total "$TMP/$label.live3.collapsed" site_live_48m)" "$before")" 2
	run_nprof 10 heap "$PID" status
	check "$label heap: status says on, interval 32768" grep -q "heap profiling on since .*interval 32768 bytes" "$TMP/np.out"
	run_nprof 10 heap "$PID" disable
	check "$label heap: disable again (status $NP_RC)" [ "$NP_RC" -eq 0 ]
	echo exit >"$TMP/$label.fifo"
	for ((i = 0; i < 400; i++)); do
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.05
	done
	wait "$PID" 2>/dev/null
	check "$label heap: heap_sites exits normally (status $?)" [ $? -eq 0 ]
}

alloc_run glibc "$AGENT"
heap_run glibc "$AGENT"
if [ -r "$JEMALLOC" ]; then
	# jemalloc first: every module binds malloc to it, and the agent
	# points their GOT slots at its own (mem_hook.c).
	alloc_run jemalloc "$JEMALLOC:$AGENT"
	heap_run jemalloc "$JEMALLOC:$AGENT"
	check "jemalloc: the profile says jemalloc came first and calls were redirected" \
		bash -c "LD_PRELOAD='$JEMALLOC:$AGENT' NPROF_START='event=alloc,file=$TMP/je.txt,output=summary' '$PROG' && grep -q 'libjemalloc.so.2 comes before the agent in the search order: [1-9][0-9]* call sites' '$TMP/je.txt'"
	# jemalloc after: the agent's interposers come first and forward to it.
	alloc_run jemalloc-after "$AGENT:$JEMALLOC"
	heap_run jemalloc-after "$AGENT:$JEMALLOC"
else
	skip "jemalloc" "$JEMALLOC is not installed (scripts/install-deps installs libjemalloc2)"
fi

# --- other definitions of malloc ahead of the agent ------------------------------
# glibc's malloc debugging library (an allocator of sorts: it calls
# glibc's internals) is redirected like jemalloc. A wrapper that forwards
# with RTLD_NEXT, as the agent does, already calls the agent: it must be
# left as it is (forwarding to it would go round for ever).
DEBUG_LIB=/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0
if [ -r "$DEBUG_LIB" ]; then
	alloc_run malloc_debug "$DEBUG_LIB:$AGENT"
else
	skip "malloc_debug" "$DEBUG_LIB is not there (glibc 2.34+)"
fi
cat >"$TMP/wrap.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
/* calloc's first call is dlsym's own: served from a static buffer */
static char boot[4096];
static void *(*next_malloc)(size_t), *(*next_calloc)(size_t, size_t), *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);
void *malloc(size_t n) { if (!next_malloc) next_malloc = dlsym(RTLD_NEXT, "malloc"); return next_malloc(n); }
void *calloc(size_t k, size_t n) { static int in; if (!next_calloc) { if (in) return boot; in = 1; next_calloc = dlsym(RTLD_NEXT, "calloc"); } return next_calloc(k, n); }
void *realloc(void *p, size_t n) { if (!next_realloc) next_realloc = dlsym(RTLD_NEXT, "realloc"); return next_realloc(p, n); }
void free(void *p) { if ((char *)p == boot) return; if (!next_free) next_free = dlsym(RTLD_NEXT, "free"); next_free(p); }
EOF
if cc -shared -fPIC -O1 -o "$TMP/libwrap.so" "$TMP/wrap.c" -ldl 2>"$TMP/wrap.err"; then
	alloc_run wrapper "$TMP/libwrap.so:$AGENT"
else
	not_ok "a malloc wrapper builds (cc)"
	diag_file "$TMP/wrap.err"
fi
finish
