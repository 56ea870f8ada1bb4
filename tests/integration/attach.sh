#!/usr/bin/env bash
# nprof attach / detach on programs that never heard of nprof (started
# without LD_PRELOAD): wall_split gets its known wall split through the
# agent loaded by attach; heap_sites its bytes per site (alloc, heap) and
# lock_two its contended mutex (lock), through call sites redirected in
# the GOT, put back at detach; `attach -e ... PID` records at once; detach
# stops the agent's thread and socket, and a second attach wakes it; a
# sleep interrupted by the attach still ends on time (its system call
# restarted); a process in its own mount namespace with a /tmp of its own
# gets a copy of the agent there; nprof killed in the middle of the
# injection leaves the process running, untraced, with the call finished;
# a static binary and another user's process are refused in one line.
# test-timeout: 180
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"

has_agent() { grep -q 'libnprof\|nprof-agent-' "/proc/$1/maps"; }
answers() { "$NPROF" list | awk 'NR > 1 { print $1 }' | grep -qx "$1"; }
traced_by() { awk '$1 == "TracerPid:" { print $2 }' "/proc/$1/status"; }
agent_thread() { cat /proc/"$1"/task/*/comm 2>/dev/null | grep -qx nprof-control; }

# --- attach, then wall through the agent ------------------------------------------
start_prog ws "$PROGS/wall_split" --seconds 120 --truth "$TMP/ws.truth" ||
	bail "wall_split starts (without the agent)"
WS=$PID
check "wall_split runs without the agent" bash -c "! grep -q libnprof /proc/$WS/maps"
run_nprof 30 attach "$WS"
line=$(tail -n 1 "$TMP/np.err")
[ "$NP_RC" -eq 0 ] && has_agent "$WS" && answers "$WS"
check "attach PID: the agent is loaded and answers ($line)" [ $? -eq 0 ]
[ "$NP_RC" -eq 0 ] || np_diag
check "attach names the thread it used and how long it was stopped and busy" \
	bash -c "grep -qE 'by thread [0-9]+ .*stopped [0-9.]+ ms, then busy [0-9.]+ ms' '$TMP/np.err'"
check "the process is no longer traced" [ "$(traced_by "$WS")" = 0 ]

truth_mark "$WS" "$TMP/ws.truth" 1 || bail "wall_split writes its truth at SIGUSR1"
run_nprof 60 record -e wall -i 5ms -d 4 -t -o collapsed -f "$TMP/rec.collapsed" "$WS"
truth_mark "$WS" "$TMP/ws.truth" 2 || bail "wall_split writes its truth at SIGUSR1"
truth_window "$TMP/ws.truth.1" "$TMP/ws.truth.2" >"$TMP/rec.truth"
check "record -e wall PID after attach" [ "$NP_RC" -eq 0 ]
[ "$NP_RC" -eq 0 ] || np_diag
wall_split_check "wall after attach" "$TMP/rec.collapsed" "$TMP/rec.truth"

# With record options: the agent is reused, the recording made.
run_nprof 60 attach -e wall -i 5ms -d 2 -t -o collapsed -f "$TMP/att.collapsed" "$WS"
check "attach -e wall -d 2 ... PID: the agent is used as it is, and the profile written" \
	bash -c "[ $NP_RC -eq 0 ] && grep -q 'already runs' '$TMP/np.err' && grep -q wall_compute '$TMP/att.collapsed'"
[ "$NP_RC" -eq 0 ] || np_diag

# --- detach, attach again ------------------------------------------------------------
run_nprof 30 detach "$WS"
sleep 0.2
[ "$NP_RC" -eq 0 ] && ! answers "$WS" && has_agent "$WS"
check "detach PID: the agent's thread and socket are gone, the library stays" [ $? -eq 0 ]
agent_thread "$WS" && not_ok "no nprof-control thread after detach" || ok "no nprof-control thread after detach"
# alloc: only the agent has it (wall is now recorded from outside as well).
run_nprof 30 record -e alloc -d 1 -o collapsed "$WS"
check "after detach, record -e alloc says there is no agent, in one line" one_error_line
maps_before=$(grep -c 'libnprof.so' "/proc/$WS/maps")
run_nprof 30 attach "$WS"
check "attach again wakes the agent (its control restarted, the library not mapped again)" \
	bash -c "[ $NP_RC -eq 0 ] && grep -q 'agent woken' '$TMP/np.err' && [ \$(grep -c libnprof.so /proc/$WS/maps) -eq $maps_before ]"
run_nprof 60 record -e wall -i 5ms -d 1 -t -o collapsed -f "$TMP/again.collapsed" "$WS"
check "and it records again" bash -c "[ $NP_RC -eq 0 ] && grep -q wall_sleep '$TMP/again.collapsed'"
kill -TERM "$WS"
wait_pid "$WS" 10
check "wall_split ran on and ends at SIGTERM, writing its truth" [ -s "$TMP/ws.truth" ]

# --- alloc and heap after attach ---------------------------------------------------
# heap_sites (tests/progs/heap_sites.c) counts its own allocations per site;
# the agent, loaded after the C library, reaches them by rewriting the
# modules' GOT entries (src/agent/mem_hook.c). 32 KiB sampling: a 10 % bar
# is at least 5.7 standard errors (agent_heap_sites.sh).
hs_cmd() {
	local n=$(( $(grep -cx "done $1" "$TMP/hs.out") + 1 )) i
	echo "$1" >"$TMP/hs.fifo"
	for ((i = 0; i < 1200; i++)); do
		[ "$(grep -cx "done $1" "$TMP/hs.out")" -ge "$n" ] && return 0
		sleep 0.05
	done
	return 1
}
near_pct() {
	local off
	off=$(pct_off "$2" "$3")
	less_than "$off" 10 && ok "$1: $2, truth $3 (${off}% off, bar 10%)" ||
		not_ok "$1: $2, truth $3 (${off}% off, bar 10%)"
}
mkfifo "$TMP/hs.fifo"
start_prog hs "$PROGS/heap_sites" --control "$TMP/hs.fifo" --truth "$TMP/hs.truth" ||
	bail "heap_sites starts (without the agent)"
HS=$PID
hs_cmd sites || bail "heap_sites runs its sites before the attach"
cp "$TMP/hs.truth" "$TMP/hs.truth.0"
run_nprof 30 attach "$HS"
check "attach heap_sites" [ "$NP_RC" -eq 0 ]
"$NPROF" record -e alloc -i 32k -d 8 -o collapsed -f "$TMP/alloc.collapsed" "$HS" 2>"$TMP/alloc.err" &
REC=$!
sleep 1
hs_cmd sites || not_ok "heap_sites runs its sites while alloc records"
wait "$REC"
check "record -e alloc PID after attach (status $?)" [ -s "$TMP/alloc.collapsed" ]
for site in site_small_1k site_big_64k site_live_48m; do
	near_pct "alloc after attach: $site bytes" "$(frame_total "$TMP/alloc.collapsed" "$site")" \
		"$(( $(site_truth "$TMP/hs.truth" "$site" 3) - $(site_truth "$TMP/hs.truth.0" "$site" 3) ))"
done
run_nprof 10 heap "$HS" enable -i 32k
hs_cmd sites || not_ok "heap_sites runs its sites with heap profiling on"
run_nprof 30 heap "$HS" dump -f "$TMP/heap.collapsed"
# Only what was allocated since enable is seen: the blocks of the earlier
# runs were allocated before it (and before the attach); their frees are
# not miscounted.
near_pct "heap after attach: site_live_48m in use (the last run's 48 MiB)" \
	"$(frame_total "$TMP/heap.collapsed" site_live_48m)" \
	"$(( $(site_truth "$TMP/hs.truth" site_live_48m 5) / 3 ))"
hs_cmd free || not_ok "heap_sites frees its live blocks (allocated before and after the attach)"
run_nprof 30 heap "$HS" dump -f "$TMP/heap2.collapsed"
left=$(frame_total "$TMP/heap2.collapsed" site_live_48m)
check "after every live block is freed (most allocated before the attach), the heap holds $left bytes of them (< 1 MiB)" \
	[ "$left" -lt 1048576 ]
run_nprof 30 detach "$HS"
check "detach heap_sites (heap profiling off)" bash -c "[ $NP_RC -eq 0 ] && grep -q 'heap profiling off' '$TMP/np.err'"
hs_cmd exit
wait_pid "$HS" 20
wait "$HS"
check "heap_sites exits normally after detach (status $?)" [ $? -eq 0 ]

# --- lock after attach ---------------------------------------------------------------
# lock_two: four threads on mutex A (2 ms critical sections), B contended
# twice, briefly; the agent reaches pthread_mutex_lock's callers through
# their GOT entries once the C library's definition is the one ahead.
start_prog lt "$PROGS/lock_two" --seconds 7 --truth "$TMP/lt.truth" || bail "lock_two starts"
LT=$PID
run_nprof 30 attach "$LT"
run_nprof 60 record -e lock -d 3 -o collapsed -f "$TMP/lock.collapsed" "$LT"
check "record -e lock PID after attach" [ "$NP_RC" -eq 0 ]
[ "$NP_RC" -eq 0 ] || np_diag
a=$(share "$TMP/lock.collapsed" wait_on_a)
check "lock after attach: wait_on_a, the contended site, has $a% of the delay (>= 90%)" \
	awk -v a="$a" 'BEGIN { exit !(a >= 90) }'
check "lock after attach: worker -> wait_on_a, the waiting function, on the stacks" \
	has_chain_re "$TMP/lock.collapsed" '^worker$' '^wait_on_a$'
run_nprof 30 detach "$LT"
sites=$(sed -n 's/.* \([0-9][0-9]*\) call sites put back.*/\1/p' "$TMP/np.err")
check "detach puts the redirected call sites back ($sites)" bash -c "[ $NP_RC -eq 0 ] && [ '${sites:-0}' -gt 0 ]"
[ "${sites:-0}" -gt 0 ] || { np_diag; diag "lock_two: $(kill -0 "$LT" 2>/dev/null && echo running || echo ended)"; }
wait_pid "$LT" 30
wait "$LT"
check "lock_two runs to its end and exits normally after detach (status $?)" [ $? -eq 0 ]

# --- a sleep interrupted by the attach ends on time -----------------------------------
start=$(date +%s.%N)
sleep 2 &
SL=$!
sleep 0.4
run_nprof 30 attach "$SL"
wait "$SL"
st=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
check "a sleep 2 attached to while in clock_nanosleep exits 0 after ${took}s (>= 2: its sleep restarted, not cut short)" \
	bash -c "[ $NP_RC -eq 0 ] && [ $st -eq 0 ] && awk -v t=$took 'BEGIN { exit !(t >= 2.0 && t < 5) }'"
[ "$NP_RC" -eq 0 ] || np_diag

# --- record --attach ----------------------------------------------------------------
sleep 30 &
SL=$!
sleep 0.2
run_nprof 30 record -e lock -d 1 -o collapsed "$SL"
one_error_line && grep -q -- '--attach' "$TMP/np.err"
check "record -e lock PID without the agent: one line offering --attach" [ $? -eq 0 ]
run_nprof 30 record --attach -e wall -d 1 -o collapsed "$SL"
check "record --attach -e wall PID: the agent loaded, then the profile (the sleep in clock_nanosleep)" \
	bash -c "[ $NP_RC -eq 0 ] && grep -q 'agent loaded' '$TMP/np.err' && grep -q 'nanosleep' '$TMP/np.out'"
[ "$NP_RC" -eq 0 ] || np_diag
kill "$SL"

# --- killed in the middle: the process finishes the call alone --------------------------
start_prog ws2 "$PROGS/wall_split" --seconds 120 --truth "$TMP/ws2.truth" || bail "wall_split starts"
WS2=$PID
NPROF_AGENT=$PROGS/libslowinit.so "$NPROF" attach "$WS2" >"$TMP/kill.out" 2>&1 &
NP=$!
sleep 0.6
kill -KILL "$NP"
wait "$NP" 2>/dev/null
sleep 2
check "nprof SIGKILLed while the process was in dlopen: the process is not traced and not stopped, the library loaded" \
	bash -c "[ $(traced_by "$WS2") = 0 ] && ! grep -q '^State:.*[tT]' /proc/$WS2/status && grep -q libslowinit /proc/$WS2/maps"
truth_mark "$WS2" "$TMP/ws2.truth" 1 || not_ok "wall_split still answers SIGUSR1"
sleep 1
truth_mark "$WS2" "$TMP/ws2.truth" 2 || not_ok "wall_split still answers SIGUSR1"
truth_window "$TMP/ws2.truth.1" "$TMP/ws2.truth.2" >"$TMP/ws2.window"
check "and it runs on: its worker did a second of work after" \
	awk '$1 == "fn" { t += $3 } END { exit !(t > 0.5e9) }' "$TMP/ws2.window"
kill -TERM "$WS2"
wait_pid "$WS2" 10

# --- its own mount namespace and /tmp ------------------------------------------------
VT=$(mktemp -d /var/tmp/nprof-attach.XXXXXX)
cp "$PROGS/wall_split" "$VT/"
mkdir -p "$TMP/agent"
cp "$AGENT" "$TMP/agent/libnprof.so"
if start_prog ns unshare -m --propagation private sh -c \
	"mount -t tmpfs tmpfs /tmp && exec $VT/wall_split --seconds 120 --truth /tmp/ws.truth"; then
	NS=$PID
	check "the process's /tmp is its own (the agent's path is not there)" \
		bash -c "[ ! -e /proc/$NS/root$TMP/agent/libnprof.so ]"
	NPROF_AGENT=$TMP/agent/libnprof.so run_nprof 30 attach "$NS"
	bid=$(sed -n 's/.*from a copy at \(\/tmp\/nprof-agent-[0-9]*-[0-9a-f]*\.so\).*/\1/p' "$TMP/np.err")
	check "attach copies the agent into its /tmp, named by build-id ($bid), not into ours" \
		bash -c "[ $NP_RC -eq 0 ] && [ -n '$bid' ] && [ -f /proc/$NS/root$bid ] && [ ! -e '$bid' ] && grep -q nprof-agent- /proc/$NS/maps"
	[ "$NP_RC" -eq 0 ] || np_diag
	truth_mark "$NS" "/proc/$NS/root/tmp/ws.truth" 1 || bail "wall_split writes its truth"
	run_nprof 60 record -e wall -i 5ms -d 3 -t -o collapsed -f "$TMP/ns.collapsed" "$NS"
	truth_mark "$NS" "/proc/$NS/root/tmp/ws.truth" 2 || bail "wall_split writes its truth"
	truth_window "/proc/$NS/root/tmp/ws.truth.1" "/proc/$NS/root/tmp/ws.truth.2" >"$TMP/ns.truth"
	wall_split_check "wall in another mount namespace" "$TMP/ns.collapsed" "$TMP/ns.truth"
	kill -TERM "$NS"
	wait_pid "$NS" 10
else
	not_ok "wall_split starts in its own mount namespace (unshare -m)"
fi
rm -rf "$VT"

# --- threads made after the attach -----------------------------------------------------
# pthread_create is the C library's, not the agent's, after an attach:
# threads started later are found all the same.
start_prog late "$PROGS/late_thread" --spawn-after 1 --seconds 6 --truth "$TMP/late.truth" ||
	bail "late_thread starts"
run_nprof 30 attach -e wall -i 5ms -d 3 -t -o collapsed -f "$TMP/late.collapsed" "$PID"
check "attach -e wall on late_thread: the threads it starts later (latecomer, grandchild) are sampled" \
	bash -c "[ $NP_RC -eq 0 ] && grep -q '^\[latecomer tid=.*late_work' '$TMP/late.collapsed' &&
		grep -q '^\[grandchild tid=.*grandchild_work' '$TMP/late.collapsed'"
[ "$NP_RC" -eq 0 ] || np_diag

# --- C++ with std::thread ----------------------------------------------------------------
# cxx_alloc: main and a std::thread ("pool") allocating 64 KiB blocks in
# ns::Pool<int>::grow for 20 s.
"$PROGS/cxx_alloc" --seconds 20 >/dev/null 2>&1 &
CX=$!
bg_pids+=("$CX")
sleep 0.3
run_nprof 30 attach -e alloc -i 64k -d 2 -t -o collapsed -f "$TMP/cxx.collapsed" "$CX"
check "attach -e alloc on a C++ program: both threads' allocations in ns::Pool<int>::grow" \
	bash -c "[ $NP_RC -eq 0 ] && grep -q '^\[pool tid=.*ns::Pool<int>::grow' '$TMP/cxx.collapsed' &&
		grep -q '^\[cxx_alloc tid=.*ns::Pool<int>::grow' '$TMP/cxx.collapsed'"
[ "$NP_RC" -eq 0 ] || np_diag
kill "$CX"

# --- the target killed in the middle: nprof says so, nothing is left ----------------------
sleep 30 &
SL=$!
( sleep 0.5; kill -KILL "$SL" ) &
NPROF_AGENT=$PROGS/libslowinit.so run_nprof 30 attach "$SL"
one_error_line && grep -q 'exited' "$TMP/np.err"
check "the process killed during the injection: one line saying it exited ($(cat "$TMP/np.err"))" [ $? -eq 0 ]
check "and nprof is done at once (${NP_SECS}s)" less_than "$NP_SECS" 5

# --- refused in one line -------------------------------------------------------------
sleep 30 &
SL=$!
strace -p "$SL" -o /dev/null 2>/dev/null &
ST=$!
sleep 0.3
run_nprof 30 attach "$SL"
one_error_line && grep -qi 'trac' "$TMP/np.err"
check "a process already being traced (strace): refused in one line naming its tracer" [ $? -eq 0 ]
diag_file "$TMP/np.err" 2
kill "$ST" "$SL" 2>/dev/null

start_prog st "$PROGS/static_spin" --forever || bail "static_spin starts"
run_nprof 30 attach "$PID"
one_error_line && grep -q 'static' "$TMP/np.err"
check "a static binary: refused in one line naming why" [ $? -eq 0 ]
diag_file "$TMP/np.err" 2
check "and left untraced" [ "$(traced_by "$PID")" = 0 ]
kill "$PID"
sleep 30 &
SL=$!
RUN_AS="setpriv --reuid=65534 --regid=65534 --clear-groups" run_nprof 30 attach "$SL"
check "another user's process: refused in one line" one_error_line
diag_file "$TMP/np.err" 2
kill "$SL"
run_nprof 30 attach 999999999
check "no such process: one line" one_error_line
finish
