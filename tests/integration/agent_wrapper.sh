#!/usr/bin/env bash
# NPROF_START across a process tree (docs/agent.md, "Process trees"): the
# program a wrapper starts (timeout, sh -c, nice, env -S) keeps its
# profile, named from file= and printed on stderr; the wrapper, which
# only waited, writes nothing over it; forked workers record themselves;
# %p still names each file; nprof record -e alloc|lock -- sh -c ... reads
# the program's profile, not the shell's.
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
SPLIT=$PROGS/split
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
[ -x "$SPLIT" ] || bail "split is built"

# printed ERR COMM: the path of COMM's "COMM: profile in PATH (N ...)" line.
printed() { sed -n "s/^nprof-agent\[[0-9]*\]: $2: profile in \(.*\) ([0-9]* [a-z_]*)\$/\1/p" "$1" | head -n 1; }

# expected_samples TRUTH INTERVAL_NS: the cpu samples split's measured CPU
# time is worth at that interval.
expected_samples() { awk -v i="$2" '$1 == "fn" { t += $3 } END { printf "%d", t / i }' "$1"; }

# wrapped LABEL WRAPPER...: split --seconds 2 under WRAPPER with
# NPROF_START=event=cpu,interval=5ms,file=$TMP/LABEL.collapsed; its
# profile must be the one printed, named LABEL.*collapsed in $TMP, hold
# the CPU split measured, and be the only file of that name.
wrapped() {
	local label=$1 f path want got others
	shift
	f=$TMP/$label.collapsed
	timeout -k 5 60 env LD_PRELOAD="$AGENT" NPROF_START="event=cpu,interval=5ms,file=$f" \
		"$@" >/dev/null 2>"$TMP/$label.err"
	path=$(printed "$TMP/$label.err" split)
	case "$path" in
	"$TMP/$label."*collapsed) ok "$label: split's profile is named from file= and printed: $path" ;;
	*) not_ok "$label: split's profile is named from file= and printed (got '$path')"
	   diag_file "$TMP/$label.err"
	   return ;;
	esac
	want=$(expected_samples "$TMP/$label.truth" 5000000)
	got=$(total "$path")
	if has_frame_match "$path" '^burn_sixty$' && [ "$got" -ge $((want / 2)) ]; then
		ok "$label: it is split's: burn_sixty, $got samples for $want measured at 5 ms (>= half)"
	else
		not_ok "$label: it is split's: burn_sixty, $got samples for $want measured at 5 ms (>= half)"
		diag_file "$path" 5
	fi
	others=$(ls "$TMP/$label."*collapsed 2>/dev/null | grep -vxF "$path")
	check "$label: no other process's profile beside it or in its place (${others:-none})" \
		[ -z "$others" ]
}

wrapped timeout timeout 30 "$SPLIT" --seconds 2 --truth "$TMP/timeout.truth"
check "timeout: the wrapper says it recorded nothing and where the others went" \
	grep -qF "timeout recorded nothing, so wrote nothing; the processes it started write theirs to $TMP/timeout.%p.collapsed (%p: their pid)" "$TMP/timeout.err"

wrapped sh sh -c "'$SPLIT' --seconds 2 --truth '$TMP/sh.truth'; true"
wrapped nice nice -n 1 "$SPLIT" --seconds 2 --truth "$TMP/nice.truth"
check "nice: the program exec'd in place keeps the name itself" \
	[ "$(printed "$TMP/nice.err" split)" = "$TMP/nice.collapsed" ]
wrapped env_s env -S "'$SPLIT' --seconds 2 --truth '$TMP/env_s.truth'"

# --- %p: unique already ----------------------------------------------------------
timeout -k 5 60 env LD_PRELOAD="$AGENT" NPROF_START="event=cpu,file=$TMP/p-%p.collapsed" \
	timeout 30 "$SPLIT" --seconds 1 >"$TMP/p.out" 2>"$TMP/p.err"
path=$(printed "$TMP/p.err" split)
check "%p: split's profile is p-PID.collapsed, PID its own ($path)" \
	grep -qx "$TMP/p-[0-9]*.collapsed" <<<"$path"
check "%p: and the file is there" is_collapsed "$path"

# --- alloc and lock, under timeout and sh -c -----------------------------------------
timeout -k 5 60 env LD_PRELOAD="$AGENT" NPROF_START="event=alloc,file=$TMP/alloc.collapsed" \
	timeout 30 "$PROGS/alloc_primes" >/dev/null 2>"$TMP/alloc.err"
path=$(printed "$TMP/alloc.err" alloc_primes)
check "alloc under timeout: alloc_primes's profile ($path) names make_a" \
	has_frame_match "${path:-/nonexistent}" '^make_a$'
# timeout itself allocates a little (setlocale): about one run in thirty
# the sampler takes one of those, and timeout then writes its own profile
# under the bare name. What must never be there is the program's.
check "alloc under timeout: the bare name holds nothing of alloc_primes (timeout's own samples at most)" \
	bash -c "[ ! -e '$TMP/alloc.collapsed' ] || ! grep -q make_a '$TMP/alloc.collapsed'"

timeout -k 5 60 env LD_PRELOAD="$AGENT" NPROF_START="event=lock,file=$TMP/lock.pb.gz" \
	sh -c "'$PROGS/lock_contend' --seconds 1; true" >/dev/null 2>"$TMP/lock.err"
path=$(printed "$TMP/lock.err" lock_contend)
check "lock under sh -c: lock_contend's profile is lock.PID.pb.gz ($path)" \
	grep -qx "$TMP/lock\.[0-9]*\.pb\.gz" <<<"$path"
run_nprof 30 convert "${path:-/nonexistent}" "$TMP/lock.from_pb.collapsed"
check "lock under sh -c: it names contend_mutex" has_frame_match "$TMP/lock.from_pb.collapsed" '^contend_mutex$'

# --- workers forked, not exec'd: each records itself -------------------------------
timeout -k 5 60 env LD_PRELOAD="$AGENT" NPROF_START="event=cpu,file=$TMP/fw.collapsed" \
	"$PROGS/fork_workers" --workers 2 --seconds 1 >"$TMP/fw.out" 2>"$TMP/fw.err"
n=0
for w in $(awk '$1 == "worker" { print $2 }' "$TMP/fw.out"); do
	if has_chain "$TMP/fw.$w.collapsed" "main;worker_burn" &&
	   grep -qF "fork_workers: profile in $TMP/fw.$w.collapsed" "$TMP/fw.err"; then
		n=$((n + 1))
	fi
done
check "forked workers: both wrote fw.PID.collapsed with main;worker_burn, and said so ($n of 2)" \
	[ "$n" -eq 2 ]
check "forked workers: the parent, which only waited, wrote nothing" \
	[ ! -e "$TMP/fw.collapsed" ]

# --- NPROF_QUIET: the files, no lines ------------------------------------------------
timeout -k 5 60 env LD_PRELOAD="$AGENT" NPROF_START="event=cpu,file=$TMP/q.collapsed" NPROF_QUIET=1 \
	timeout 30 "$SPLIT" --seconds 1 >/dev/null 2>"$TMP/q.err"
check "NPROF_QUIET=1: nothing on stderr" [ ! -s "$TMP/q.err" ]
check "NPROF_QUIET=1: split's profile still written" \
	bash -c "ls '$TMP'/q.[0-9]*.collapsed >/dev/null 2>&1"

# --- nprof record through the agent: the program's profile, not the shell's -------
run_nprof 60 record -e alloc -o collapsed -f "$TMP/rec_alloc.collapsed" -- \
	sh -c "'$PROGS/alloc_primes'; true"
if [ "$NP_RC" -eq 0 ] && has_frame_match "$TMP/rec_alloc.collapsed" '^make_a$'; then
	ok "record -e alloc -- sh -c: alloc_primes's allocations (make_a)"
else
	not_ok "record -e alloc -- sh -c: alloc_primes's allocations (make_a)"
	np_diag
fi
check "record -e alloc: no line from the agents on the command's stderr" \
	bash -c "! grep -q '^nprof-agent' '$TMP/np.err'"
run_nprof 60 record -e lock -o collapsed -f "$TMP/rec_lock.collapsed" -- \
	timeout 30 "$PROGS/lock_contend" --seconds 1
check "record -e lock -- timeout: lock_contend's waits (contend_mutex)" \
	has_frame_match "$TMP/rec_lock.collapsed" '^contend_mutex$'
run_nprof 60 record -e alloc -o collapsed -f "$TMP/rec_true.collapsed" -- true
check "record -e alloc -- true: a program that allocates nothing still gives a profile (status $NP_RC)" \
	[ "$NP_RC" -eq 0 ]
finish
