#!/usr/bin/env bash
# alloc: libnprof.so preloaded into tests/progs/alloc_primes (prime sizes
# from known functions, through every malloc-family entry point, the
# truth computed by the program): the estimated bytes and objects per
# function within 15% of what it allocated, under glibc and, when
# installed, tcmalloc and jemalloc; nprof record -e alloc -- COMMAND; the
# exports; and with the agent loaded but alloc off, the program unharmed.
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
PROG=$PROGS/alloc_primes
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
[ -x "$PROG" ] || bail "alloc_primes is built"
TOL=15
FNS="make_a make_b make_c make_d make_e"

# leaf_total FILE FN: the sum of stacks whose leaf is FN.
leaf_total() { awk -v f="$2" '{ v = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, fr, ";"); if (fr[n] == f) t += v } END { print t + 0 }' "$1"; }
# pct_off GOT WANT: |got - want| / want in percent.
pct_off() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.1f", b ? 100 * d / b : 100 }'; }
# raw_leaf_value PPROF INDEX FN: value INDEX (0-based) summed over samples
# whose leaf location is FN, from go tool pprof -raw.
raw_leaf_value() {
	go tool pprof -raw "$1" 2>/dev/null | awk -v k="$2" -v f="$3" '
	/^Samples:/ { mode = 1; next }
	/^Locations/ { mode = 2; next }
	/^Mappings/ { mode = 3; next }
	mode == 1 && /:/ { split($0, a, ":"); split(a[1], v, " "); split(a[2], ids, " ");
		val[NR] = v[k + 1]; leaf[NR] = ids[1] }
	mode == 2 && /^ +[0-9]+:/ { id = $1; sub(":", "", id); name[id] = $4 }
	END { for (i in val) if (name[leaf[i]] == f) t += val[i]; print t + 0 }'
}

check_alloc() {
	local label=$1 f=$2 truth=$3 fn got want off
	if ! is_collapsed "$f" || ! [ -s "$truth" ]; then
		not_ok "$label: profile and truth written"
		diag_file "$TMP/agent.err"
		return
	fi
	for fn in $FNS; do
		got=$(leaf_total "$f" "$fn")
		want=$(fn_truth "$truth" "$fn" 3)
		off=$(pct_off "$got" "$want")
		if less_than "$off" "$TOL"; then
			ok "$label: $fn estimated $got bytes, allocated $want (${off}% off, < $TOL%)"
		else
			not_ok "$label: $fn estimated $got bytes, allocated $want (${off}% off, < $TOL%)"
		fi
	done
}

run_agent() {
	local start=$1 preload=$2
	shift 2
	timeout -k 5 60 env LD_PRELOAD="$preload" NPROF_START="$start" "$@" \
		>"$TMP/agent.out" 2>"$TMP/agent.err" </dev/null
}

# --- glibc: bytes per function, written at exit -------------------------------
run_agent "event=alloc,interval=32k,file=$TMP/glibc.collapsed" "$AGENT" \
	"$PROG" --truth "$TMP/glibc.truth"
check "glibc: alloc_primes exits normally with the agent (status $?)" [ $? -eq 0 ]
check_alloc "glibc" "$TMP/glibc.collapsed" "$TMP/glibc.truth"
check "glibc: main -> run_all -> make_a (the stack starts at the caller of malloc)" \
	has_chain "$TMP/glibc.collapsed" "main;run_all;make_a"
check "glibc: make_c sampled on its own thread (start_thread -> make_c)" \
	has_chain "$TMP/glibc.collapsed" "start_thread;make_c"
check "glibc: no frame of the agent's own interposers" \
	bash -c "! grep -qE '(^|;)(malloc_slow|calloc_slow|account|mem_stack_here)(;| )' '$TMP/glibc.collapsed'"

# --- objects, from the pprof (alloc_space, alloc_objects) ----------------------
run_agent "event=alloc,interval=32k,file=$TMP/glibc.pb.gz" "$AGENT" \
	"$PROG" --truth "$TMP/obj.truth"
if command -v go >/dev/null; then
	for fn in make_a make_b make_e; do
		got=$(raw_leaf_value "$TMP/glibc.pb.gz" 1 "$fn")
		want=$(fn_truth "$TMP/obj.truth" "$fn" 4)
		off=$(pct_off "$got" "$want")
		if less_than "$off" "$TOL"; then
			ok "pprof: $fn estimated $got objects, allocated $want (${off}% off)"
		else
			not_ok "pprof: $fn estimated $got objects, allocated $want (${off}% off)"
		fi
	done
	check "pprof: go tool pprof reads alloc_space and alloc_objects" \
		bash -c "go tool pprof -raw '$TMP/glibc.pb.gz' 2>/dev/null | grep -q 'alloc_space/bytes alloc_objects/count'"
else
	skip "pprof objects" "go is not installed"
fi

# --- other allocators: whatever dlsym(RTLD_NEXT) finds ---------------------------
for lib in /usr/lib/x86_64-linux-gnu/libtcmalloc.so.4 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2; do
	name=$(basename "$lib" | sed 's/\.so.*//')
	if [ ! -r "$lib" ]; then
		skip "$name" "$lib is not installed"
		continue
	fi
	run_agent "event=alloc,interval=32k,file=$TMP/$name.collapsed" "$AGENT:$lib" \
		"$PROG" --truth "$TMP/$name.truth"
	check "$name: alloc_primes exits normally (status $?)" [ $? -eq 0 ]
	check_alloc "$name" "$TMP/$name.collapsed" "$TMP/$name.truth"
done

# --- nprof record -e alloc -- COMMAND ------------------------------------------------
run_nprof 60 record -e alloc -i 64k -o collapsed -f "$TMP/rec.collapsed" -- \
	"$PROG" --truth "$TMP/rec.truth"
if [ "$NP_RC" -eq 0 ] && is_collapsed "$TMP/rec.collapsed"; then
	ok "record -e alloc -- COMMAND writes the profile"
	got=$(total "$TMP/rec.collapsed")
	want=$(awk '$1 == "fn" { t += $3 } END { print t }' "$TMP/rec.truth")
	off=$(pct_off "$got" "$want")
	check "record -e alloc: total $got bytes, allocated $want (${off}% off, < 10%)" less_than "$off" 10
else
	not_ok "record -e alloc -- COMMAND writes the profile"
	np_diag
fi
run_nprof 10 record -e alloc -i 10ms -- "$PROG"
check "record -e alloc -i 10ms: refused (status $NP_RC = 2), the error naming a byte count" \
	bash -c "[ $NP_RC -eq 2 ] && grep -q 'count' '$TMP/np.err'"

# --- -t and -s: thread roots and simple names, as -e cpu has them -----------------------
run_nprof 60 record -e alloc -t -s -o collapsed -f "$TMP/ts.collapsed" -- \
	"$PROGS/cxx_alloc" --seconds 1
if [ "$NP_RC" -eq 0 ] && is_collapsed "$TMP/ts.collapsed"; then
	check "record -e alloc -t: the main thread's root [cxx_alloc tid=N] above _start" \
		has_chain_re "$TMP/ts.collapsed" '^\[cxx_alloc tid=[0-9]+\]$' '^_start$'
	check "record -e alloc -s: main;run;grow" has_chain "$TMP/ts.collapsed" "main;run;grow"
	check "record -e alloc -t: the ended thread named by its root [pool tid=N]" \
		has_frame_match "$TMP/ts.collapsed" '^\[pool tid=[0-9]+\]$'
	check "record -e alloc -s: simple names (no ns::Pool<int>::grow(unsigned long))" \
		bash -c "! grep -q 'ns::Pool' '$TMP/ts.collapsed'"
else
	not_ok "record -e alloc -t -s -- cxx_alloc writes the profile"
	np_diag
fi
run_nprof 60 record -e alloc -o collapsed -f "$TMP/full.collapsed" -- "$PROGS/cxx_alloc" --seconds 1
check "record -e alloc without -s: full names (ns::Pool<int>::grow(unsigned long)), no roots" \
	bash -c "grep -qF 'ns::Pool<int>::grow(unsigned long)' '$TMP/full.collapsed' && ! grep -q 'tid=' '$TMP/full.collapsed'"

# --- loaded, alloc off: the program runs as before --------------------------------
timeout -k 5 60 env LD_PRELOAD="$AGENT" "$PROG" --truth "$TMP/off.truth" >/dev/null 2>"$TMP/off.err"
check "agent loaded, nothing started: alloc_primes runs (status $?)" [ $? -eq 0 ]
check "... and writes the same truth" cmp -s "$TMP/off.truth" "$TMP/glibc.truth"

# --- exports: the interposed malloc family ------------------------------------------
for s in malloc calloc realloc reallocarray free posix_memalign aligned_alloc memalign valloc \
	pvalloc malloc_usable_size; do
	nm -D --defined-only "$AGENT" | awk '{ print $3 }' | grep -qx "$s" || not_ok "libnprof.so exports $s"
done
ok "libnprof.so exports the malloc family"
finish
