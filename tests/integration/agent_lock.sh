#!/usr/bin/env bash
# lock: tests/progs/lock_contend (threads fighting over a mutex and an
# rwlock, timing their own waits) with libnprof.so and event=lock: the
# delay recorded per function within 15% of the wait the program
# measured; the waiting stacks; nprof record -e lock -- COMMAND; a large
# interval (most waits sampled proportionally) still unbiased; and
# tests/progs/lock_two (four threads on a mutex with long critical
# sections, now and then on a second one): the mutex with long critical
# sections gets at least 90% of the delay.
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
PROG=$PROGS/lock_contend
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
[ -x "$PROG" ] || bail "lock_contend is built"

leaf_total() { awk -v f="$2" '{ v = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, fr, ";"); if (fr[n] == f) t += v } END { print t + 0 }' "$1"; }

check_wait() {
	local label=$1 f=$2 truth=$3 fn=$4 tol=$5 got want off
	got=$(leaf_total "$f" "$fn")
	want=$(fn_truth "$truth" "$fn" 3)
	off=$(pct_off "$got" "$want")
	if less_than "$off" "$tol"; then
		ok "$label: $fn waited ${got} ns by the profile, ${want} ns measured (${off}% off, < $tol%)"
	else
		not_ok "$label: $fn waited ${got} ns by the profile, ${want} ns measured (${off}% off, < $tol%)"
	fi
}

timeout -k 5 60 env LD_PRELOAD="$AGENT" NPROF_START="event=lock,file=$TMP/lock.collapsed" \
	"$PROG" --seconds 2 --truth "$TMP/lock.truth" >/dev/null 2>"$TMP/lock.err"
check "lock_contend exits normally with event=lock (status $?)" [ $? -eq 0 ]
if is_collapsed "$TMP/lock.collapsed" && [ -s "$TMP/lock.truth" ]; then
	check_wait "lock" "$TMP/lock.collapsed" "$TMP/lock.truth" contend_mutex 15
	check_wait "lock" "$TMP/lock.collapsed" "$TMP/lock.truth" contend_rwlock 15
	check "lock: worker -> contend_mutex (the stack starts at the caller of pthread_mutex_lock)" \
		has_chain "$TMP/lock.collapsed" "worker;contend_mutex"
else
	not_ok "lock: profile and truth written"
	diag_file "$TMP/lock.err"
fi

# Waits here are 0.1-0.3 ms: with a 1 ms interval most are sampled with
# probability wait/interval and scaled; the total must stay unbiased.
timeout -k 5 60 env LD_PRELOAD="$AGENT" NPROF_START="event=lock,interval=1ms,file=$TMP/lock1.collapsed" \
	"$PROG" --seconds 3 --truth "$TMP/lock1.truth" >/dev/null 2>"$TMP/lock.err"
check_wait "interval=1ms" "$TMP/lock1.collapsed" "$TMP/lock1.truth" contend_mutex 20

run_nprof 60 record -e lock -o collapsed -f "$TMP/rec.collapsed" -- "$PROG" --seconds 1 --truth "$TMP/rec.truth"
if [ "$NP_RC" -eq 0 ] && is_collapsed "$TMP/rec.collapsed"; then
	ok "record -e lock -- COMMAND writes the profile"
	check_wait "record -e lock" "$TMP/rec.collapsed" "$TMP/rec.truth" contend_mutex 15
else
	not_ok "record -e lock -- COMMAND writes the profile"
	np_diag
fi

# --- lock_two: four threads on mutex A (2 ms critical
# sections), now and then on mutex B. The waiting functions carry the
# split: wait_on_a must hold at least 90% of the delay (the program's own
# measure gives it ~99%), and both must be on the stacks, right under
# worker, as the callers of pthread_mutex_lock.
timeout -k 5 60 env LD_PRELOAD="$AGENT" NPROF_START="event=lock,file=$TMP/two.collapsed" \
	"$PROGS/lock_two" --truth "$TMP/two.truth" >/dev/null 2>"$TMP/two.err"
check "lock_two exits normally with event=lock (status $?)" [ $? -eq 0 ]
if is_collapsed "$TMP/two.collapsed" && [ -s "$TMP/two.truth" ]; then
	diag "truth: $(tr '\n' ' ' <"$TMP/two.truth")"
	a=$(share "$TMP/two.collapsed" wait_on_a)
	desc="two mutexes: wait_on_a has $a% of the delay (>= 90%; the program measured $(truth_share "$TMP/two.truth" wait_on_a)%)"
	if less_than "$a" 90; then not_ok "$desc"; else ok "$desc"; fi
	for fn in wait_on_a wait_on_b; do
		got=$(frame_total "$TMP/two.collapsed" "$fn")
		want=$(fn_truth "$TMP/two.truth" "$fn" 3)
		off=$(pct_off "$got" "$want")
		check "two mutexes: $fn waited $got ns by the profile, $want ns measured (${off}% off, < 15%)" \
			less_than "$off" 15
		check "two mutexes: worker -> $fn, the waiting function, on the stacks" \
			has_chain "$TMP/two.collapsed" "worker;$fn"
	done
else
	not_ok "two mutexes: profile and truth written"
	diag_file "$TMP/two.err"
fi

# -t: a root per thread, named (lock_contend's threads are "contender")
run_nprof 60 record -e lock -t -o collapsed -f "$TMP/lockt.collapsed" -- "$PROG" --seconds 1
check "record -e lock -t: [contender tid=N] roots above worker;contend_mutex" \
	has_chain_re "$TMP/lockt.collapsed" '^\[contender tid=[0-9]+\]$' '^clone3$' '^start_thread$' '^worker$' '^contend_mutex$'

# pprof: delay and contentions
timeout -k 5 60 env LD_PRELOAD="$AGENT" NPROF_START="event=lock,file=$TMP/lock.pb.gz" \
	"$PROG" --seconds 1 --truth "$TMP/lockp.truth" >/dev/null 2>&1
if command -v go >/dev/null; then
	check "pprof: delay/nanoseconds and contentions/count" bash -c \
		"go tool pprof -raw '$TMP/lock.pb.gz' 2>/dev/null | grep -q 'delay/nanoseconds contentions/count'"
else
	skip "pprof" "go is not installed"
fi
finish
