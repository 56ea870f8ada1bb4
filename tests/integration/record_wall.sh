#!/usr/bin/env bash
# nprof record -e wall and -e offcpu from outside (no agent), held to what
# the programs measure themselves (docs/engine.md, "Wall and off-CPU time"):
#
# - tests/progs/nofp/wall_split (no frame pointers: DWARF unwinding): its
#   worker spends its wall time computing, sleeping in clock_nanosleep and
#   blocked in read(2) on a pipe, measuring each. `record -e wall -d 5`
#   gives each share of the worker within 3 points of the truth of the
#   same window, each in its state, the callers above clock_nanosleep and
#   read; `record -e offcpu -d 5` gives the sleep and read times (ns)
#   within 3 % of the truth.
# - tests/progs/nofp/wall_crowd --threads 201 --busy 1 --nappers 0: 200
#   threads blocked the whole recording, and one busy: every thread is
#   there, each with about the recording's length.
# - as user nobody (perf_event_paranoid 2 or more): one error line naming
#   what would allow it; with the agent loaded, record -e wall uses it.
# - a fresh host, whose tracefs nothing has mounted yet: the first
#   `record -e wall` runs in a private mount namespace without tracefs
#   (nor debugfs), where nprof mounts it as perf does and says so; as
#   nobody there, the error line names the mount command.
#
# The window: the truth is snapshotted (SIGUSR1) once nprof has opened
# every event (the recording has begun: /proc/NPROF/fd holds them all) and
# again the recording's length later, so truth and profile cover the same
# seconds within a few milliseconds, however slow nprof is to start or to
# finish (a busy machine). Shares are of time, not of counts: nothing here
# depends on the machine's speed.
# test-alone
# its off-CPU spans are held to the program's own clock within
# 3 %, which a neighbour's CPU would blur.
. "$(dirname "$0")/lib.sh"
need_build
[ "$(id -u)" -eq 0 ] || bail "root (the scheduler's tracepoint; tests as nobody too)"
[ -x "$PROGS/nofp/wall_split" ] && [ -x "$PROGS/nofp/wall_crowd" ] ||
	bail "tests/progs/nofp/wall_split and wall_crowd are built"
SECS=5
CPUS=$(getconf _NPROCESSORS_ONLN)

# perf_fds PID: how many perf events PID holds open.
perf_fds() { find "/proc/$1/fd" -lname 'anon_inode:\[perf_event\]' 2>/dev/null | wc -l; }

# record_window NAME TARGET EVENTS_PER_THREAD ARGS...: runs `nprof record
# ARGS` in the background; once it holds EVENTS_PER_THREAD perf events per
# thread of TARGET and CPU, marks the truth (TRUTH.1), SECS later marks it
# again (TRUTH.2), then waits for nprof. Sets NP_RC; TRUTH_DIR/NAME.truth is
# the truth of the window.
record_window() {
	local name=$1 target=$2 per=$3 np kid want i t0
	shift 3
	timeout -k 5 60 ${WRAP:-} "$NPROF" "$@" >"$TMP/np.out" 2>"$TMP/np.err" </dev/null &
	np=$!
	want=$(($(ls "/proc/$target/task" | wc -l) * CPUS * per))
	# nprof is timeout's child.
	for ((i = 0; i < 1000; i++)); do
		kid=$(pgrep -P "$np" -n)
		[ -n "$kid" ] && [ "$(perf_fds "$kid")" -ge "$want" ] && break
		kill -0 "$np" 2>/dev/null || break
		sleep 0.005
	done
	[ "$i" -lt 1000 ] || diag "$name: nprof never held $want perf events"
	t0=$(date +%s.%N)
	truth_mark "$target" "$TMP/ws.truth" $((MARK + 1)) || diag "$name: no truth at SIGUSR1"
	sleep "$(awk -v a="$t0" -v b="$(date +%s.%N)" -v s="$SECS" 'BEGIN { print s - (b - a) }')"
	truth_mark "$target" "$TMP/ws.truth" $((MARK + 2)) || diag "$name: no truth at SIGUSR1"
	wait "$np"
	NP_RC=$?
	NP_SECS=?
	truth_window "$TMP/ws.truth.$((MARK + 1))" "$TMP/ws.truth.$((MARK + 2))" >"$TMP/$name.truth"
	MARK=$((MARK + 2))
}

# $NO_TRACEFS COMMAND...: COMMAND in a private mount namespace where
# tracefs is not mounted (nor debugfs, whose tracing/ would mount it), as
# on a freshly booted host.
NO_TRACEFS=$TMP/no_tracefs
cat >"$NO_TRACEFS" <<'SH'
#!/bin/sh
exec unshare -m --propagation private sh -c \
	'umount -l /sys/kernel/tracing 2>/dev/null; umount -l /sys/kernel/debug 2>/dev/null; exec "$@"' sh "$@"
SH
chmod 755 "$NO_TRACEFS"
check "in that namespace, tracefs is not mounted" \
	"$NO_TRACEFS" sh -c '! grep -q " /sys/kernel/tracing \| /sys/kernel/debug " /proc/self/mounts'

MARK=0
if ! start_prog ws "$PROGS/nofp/wall_split" --seconds 120 --truth "$TMP/ws.truth"; then
	bail "wall_split starts"
fi

# --- -e wall, where tracefs is not mounted ------------------------------------------
WRAP=$NO_TRACEFS record_window wall "$PID" 2 record -e wall -d "$SECS" -t -o collapsed -f "$TMP/wall.collapsed" "$PID"
check "record -e wall -d $SECS -t PID (no agent), tracefs not mounted" [ "$NP_RC" -eq 0 ]
check "the notes say nprof mounted tracefs" grep -q 'nprof mounted it at /sys/kernel/tracing' "$TMP/np.err"
[ "$NP_RC" -eq 0 ] || np_diag
wall_split_check "record wall" "$TMP/wall.collapsed" "$TMP/wall.truth" 3
check "the worker's sleep: wall_sleep -> sleep_until -> clock_nanosleep" \
	has_chain_re "$TMP/worker.collapsed" '^wall_sleep$' '^sleep_until$' '^(__)?clock_nanosleep'
each=$(awk '{ s = $0; sub(/;.*/, "", s); t[s] += $NF } END { for (k in t) print t[k] }' \
	"$TMP/wall.collapsed" | sort -n | uniq -c | awk '{ printf "%s%s x %s", n++ ? ", " : "", $1, $2 }')
diag "samples per thread (10 ms each): $each"
check "every thread has the recording's length, within 2 % ($each)" \
	awk -v s="$SECS" '{ x = $0; sub(/;.*/, "", x); t[x] += $NF }
		END { for (k in t) { n++; if (t[k] < 98 * s || t[k] > 102 * s) exit 1 }; exit n != 3 }' \
		"$TMP/wall.collapsed"
check "the notes say where the time came from" grep -q 'sched:sched_switch' "$TMP/np.err"

# --- -e offcpu -------------------------------------------------------------------
record_window offcpu "$PID" 1 record -e offcpu -d "$SECS" -t -o collapsed -f "$TMP/off.collapsed" "$PID"
check "record -e offcpu -d $SECS -t PID" [ "$NP_RC" -eq 0 ]
[ "$NP_RC" -eq 0 ] || np_diag
grep '^\[wall-worker tid=' "$TMP/off.collapsed" >"$TMP/off.worker"
for fn in wall_sleep wall_read; do
	got=$(frame_total "$TMP/off.worker" "$fn")
	want=$(fn_truth "$TMP/offcpu.truth" "$fn" 3)
	off=$(pct_off "$got" "$want")
	check "offcpu: $fn off CPU for $((got / 1000000)) ms, measured $((want / 1000000)) ms ($off % off, ±3 %)" \
		less_than "$off" 3
done
no_running() { ! grep -q '\[running\] [0-9]*$' "$1"; }
check "offcpu: no [running] stacks" no_running "$TMP/off.collapsed"
check "offcpu: read blocked as [sleeping] under wall_read -> read" \
	has_chain_re "$TMP/off.worker" '^wall_read$' '^(__libc_)?read$'
kill -TERM "$PID"
wait_pid "$PID" 10

# --- 200 idle threads, one busy -----------------------------------------------------
if start_prog crowd "$PROGS/nofp/wall_crowd" --seconds 60 --threads 201 --busy 1 --nappers 0; then
	run_nprof 60 record -e wall -d 3 -t -o collapsed -f "$TMP/crowd.collapsed" "$PID"
	[ "$NP_RC" -eq 0 ] || np_diag
	awk '{ x = $0; sub(/;.*/, "", x); t[x] += $NF } END { for (k in t) print k, t[k] }' \
		"$TMP/crowd.collapsed" >"$TMP/crowd.threads"
	n=$(wc -l <"$TMP/crowd.threads")
	check "every thread of 202 is in the profile ($n)" [ "$n" -eq 202 ]
	bad=$(awk '$NF < 294 || $NF > 306' "$TMP/crowd.threads" | wc -l)
	check "each has the recording's 3 s within 2 % ($bad do not)" [ "$bad" -eq 0 ]
	[ "$bad" -eq 0 ] || { awk '$NF < 294 || $NF > 306' "$TMP/crowd.threads" >"$TMP/crowd.bad"; diag_file "$TMP/crowd.bad" 10; grep -F -f <(awk '{ print $1 }' "$TMP/crowd.bad") "$TMP/crowd.collapsed" >"$TMP/crowd.bad.stacks"; diag_file "$TMP/crowd.bad.stacks" 20; }
	check "the idle ones wait in crowd_wait -> pthread_cond_wait, [sleeping]" \
		has_chain_re "$TMP/crowd.collapsed" '^crowd_wait$' '^(__)?pthread_cond_wait' '.*' '^\[sleeping\]$'
	kill -TERM "$PID"
	wait_pid "$PID" 10
else
	not_ok "wall_crowd starts"
fi

# --- without privilege; with the agent -------------------------------------------------
if start_prog nb setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$PROGS/nofp/wall_split" --seconds 60; then
	RUN_AS="setpriv --reuid=65534 --regid=65534 --clear-groups" run_nprof 30 record -e wall -d 1 "$PID"
	check "as nobody: one error line" one_error_line
	check "naming root, CAP_PERFMON, the sysctl and the agent" \
		err_says 'root.*CAP_PERFMON.*perf_event_paranoid.*agent'
	RUN_AS="$NO_TRACEFS setpriv --reuid=65534 --regid=65534 --clear-groups" \
		run_nprof 30 record -e offcpu -d 1 "$PID"
	names_mount() { one_error_line && err_says 'mount -t tracefs nodev /sys/kernel/tracing'; }
	check "as nobody where tracefs is not mounted: one error line naming the mount command" \
		names_mount
	names_mount || np_diag
	kill -TERM "$PID"
	wait_pid "$PID" 10
fi
if start_prog nba setpriv --reuid=65534 --regid=65534 --clear-groups \
	env LD_PRELOAD="$NPROF_BUILD/libnprof.so" "$PROGS/nofp/wall_split" --seconds 60; then
	RUN_AS="setpriv --reuid=65534 --regid=65534 --clear-groups" run_nprof 30 record -e wall -d 1 "$PID"
	check "as nobody, with the agent loaded: record -e wall works" [ "$NP_RC" -eq 0 ]
	check "and the summary says the agent recorded it" grep -q "recorded by nprof's agent" "$TMP/np.out"
	kill -TERM "$PID"
	wait_pid "$PID" 10
fi
finish
