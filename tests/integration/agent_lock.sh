#!/usr/bin/env bash
# lock: tests/progs/lock_contend (threads fighting over a mutex and an
# rwlock, timing their own waits) with libnprof.so and event=lock: the
# delay recorded per function within 15% of the wait the program
# measured; the waiting stacks; nprof record -e lock -- COMMAND; a large
# interval (most waits sampled proportionally) still unbiased.
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
PROG=$PROGS/lock_contend
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
[ -x "$PROG" ] || bail "lock_contend is built"

truth_col() { awk -v f="$2" -v c="$3" '$1 == "fn" && $2 == f { print $c }' "$1"; }
leaf_total() { awk -v f="$2" '{ v = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, fr, ";"); if (fr[n] == f) t += v } END { print t + 0 }' "$1"; }
pct_off() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.1f", b ? 100 * d / b : 100 }'; }

check_wait() {
	local label=$1 f=$2 truth=$3 fn=$4 tol=$5 got want off
	got=$(leaf_total "$f" "$fn")
	want=$(truth_col "$truth" "$fn" 3)
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
