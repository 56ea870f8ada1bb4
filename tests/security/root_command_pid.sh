#!/usr/bin/env bash
# Issue 23, hole 3's last part: %p in a command nprofd runs as root must
# name the process the request was about, not whichever process holds its
# pid by the time the command starts. nprofd pins the worker with a pidfd
# when the request comes; its child checks, right before exec, that the
# pinned process still runs.
#
# Made to happen for real, in a fixed order, however fast the machine:
# the owner of [service queue]'s main process asks for a restart through
# one of the queue's workers (a process of theirs the service's pattern
# takes). A watcher holds the index's write lock, so nprofd's request
# stops at its first write, after it pinned the worker and read the
# queue's pid_file. When nprofd opens the pid file, the watcher kills the
# worker, reaps it, has the kernel give its pid to another user's process
# (ns_last_pid), and only then lets go of the lock: the restart_command
# (which writes %p into a file only root can write) must not run, the
# instance FAILED saying the worker exited; the process that took the pid
# is untouched. The same without the kill: the command runs, %p the
# worker's pid.
. "$(dirname "$0")/../integration/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
command -v runsv >/dev/null && command -v sv >/dev/null ||
	bail "runit's runsv and sv are installed (scripts/install-deps)"
[ -w /proc/sys/kernel/ns_last_pid ] || bail "root may write /proc/sys/kernel/ns_last_pid"

Q=nprofpq$$	# owns the queue
V=nprofpv$$	# whose process takes the worker's pid
test_user "$Q" && test_user "$V" || bail "useradd makes the test users"
MARK=$TMP/restarted
SVQ=$TMP/svq/queue
trap '[ -d "$SVQ" ] && sv -w 5 exit "$SVQ" >/dev/null 2>&1; cleanup' EXIT
mkdir -p "$TMP/q/bin" "$SVQ"
cp /bin/sleep "$TMP/q/bin/queue-worker"
printf '#!/bin/sh\nexec %s 600\n' "$TMP/q/bin/queue-worker" >"$SVQ/run"
chmod +x "$SVQ/run"
chown -R "$Q" "$TMP/q" "$TMP/svq"
setpriv --reuid="$Q" --regid="$Q" --init-groups runsv "$SVQ" >/dev/null 2>&1 &
bg_pids+=("$!")
for ((i = 0; i < 100; i++)); do
	[ -s "$SVQ/supervise/pid" ] && break
	sleep 0.1
done
[ -s "$SVQ/supervise/pid" ] || bail "runsv starts the queue as $Q"

cat >"$D/nprofd.conf" <<CONF
[actions]
restart = on
[service queue]
match = exe:*/bin/queue-worker
pid_file = $SVQ/supervise/pid
restart_command = sh -c 'echo %p >>$MARK; exec sv restart $SVQ'
CONF
start_daemon "$D/nprofd.conf" || bail "nprofd starts"

# The watcher: starts the worker (as Q), holds the index's write lock,
# and once nprofd opens the pid file: with "kill", kills and reaps the
# worker and starts V's sleep under its pid (a few tries: another
# process of the host may take it first); then lets go. It writes the
# worker's pid to OUT.ready when armed, "victim PID" to OUT at the end.
cat >"$TMP/watch.py" <<'PY'
import ctypes, os, select, sqlite3, subprocess, sys

pid_file, db, mode, q, v, prog, out = sys.argv[1:]
libc = ctypes.CDLL(None, use_errno=True)
IN_OPEN = 0x20
as_user = lambda u: ["setpriv", "--reuid=" + u, "--regid=" + u, "--init-groups"]
worker = subprocess.Popen(as_user(q) + [prog, "900"])
fd = libc.inotify_init1(os.O_CLOEXEC)
if fd < 0 or libc.inotify_add_watch(fd, pid_file.encode(), IN_OPEN) < 0:
    sys.exit("inotify: %s" % os.strerror(ctypes.get_errno()))
lock = sqlite3.connect(db, isolation_level=None, timeout=10)
lock.execute("BEGIN IMMEDIATE")
with open(out + ".ready", "w") as f:
    f.write("%d\n" % worker.pid)
if not select.select([fd], [], [], 60)[0]:
    sys.exit("nprofd did not open the pid file in 60 s")
victim = 0
if mode == "kill":
    worker.kill()
    worker.wait()
    for _ in range(50):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(worker.pid - 1))
        p = subprocess.Popen(as_user(v) + ["sleep", "600"])
        if p.pid == worker.pid:
            victim = p.pid
            break
        p.kill()
        p.wait()
lock.execute("ROLLBACK")
lock.close()
with open(out, "w") as f:
    f.write("victim %d\n" % victim)
PY

# watch MODE: runs the watcher, the worker's pid in HPID once it is armed.
watch() {
	rm -f "$TMP/watch" "$TMP/watch.ready"
	python3 "$TMP/watch.py" "$SVQ/supervise/pid" "$D/state/nprofd.db" "$1" "$Q" "$V" \
		"$TMP/q/bin/queue-worker" "$TMP/watch" 2>"$TMP/watch.err" &
	WATCHER=$!
	bg_pids+=("$WATCHER")
	for ((i = 0; i < 200; i++)); do
		[ -s "$TMP/watch.ready" ] && break
		kill -0 "$WATCHER" 2>/dev/null || break
		sleep 0.05
	done
	HPID=$(cat "$TMP/watch.ready" 2>/dev/null)
	[ -n "$HPID" ] || { diag_file "$TMP/watch.err"; return 1; }
}
# restart_while_watched: Q asks for the restart through the worker; the
# instance's end in STATUS and $TMP/inst.json.
restart_while_watched() {
	HW=$(worker_of "$HPID")
	api -u "setpriv --reuid=$Q --regid=$Q --init-groups" POST "/api/v1/workers/$HW/restart"
	cp "$TMP/api.out" "$TMP/restart.out"
	RCODE=$CODE
	wait_pid "$WATCHER" 60 || diag "the watcher did not end"
	[ "$CODE" = 201 ] && wait_instance "$(json "$TMP/restart.out" 'j["id"]')" 40
}
marked() { grep -qx "$1" "$MARK" 2>/dev/null; }

# --- the worker exits, its pid taken by another user's process ---------------------
watch kill || bail "the watcher starts the worker and holds the lock"
restart_while_watched
VICTIM=$(sed -n 's/^victim \([0-9]*\)$/\1/p' "$TMP/watch" 2>/dev/null)
diag "worker $HPID ($HW); the process that took its pid: ${VICTIM:-none}"
check "the restart was taken (201) while the worker still ran" [ "$RCODE" = 201 ]
check "its instance FAILED, saying the worker exited and nothing was run" \
	bash -c "[ '$STATUS' = FAILED ] && grep -q 'exited before its command started' '$TMP/inst.json'"
check "root's restart_command did not run for pid $HPID" bash -c "! grep -qx '$HPID' '$MARK' 2>/dev/null"
if [ "${VICTIM:-0}" = "$HPID" ]; then
	check "pid $HPID now names $V's sleep, which runs on untouched" \
		bash -c "kill -0 $VICTIM && [ \"\$(stat -c %U /proc/$VICTIM)\" = '$V' ]"
else
	skip "pid $HPID given to another user's process" "other processes of the host took it first 50 times"
fi

# --- the same, the worker left alone: the command runs, %p its pid ------------------
watch keep || bail "the watcher starts the worker and holds the lock"
restart_while_watched
check "left alone, the restart FINISHED" [ "$STATUS" = FINISHED ]
check "and root's restart_command ran with %p = $HPID" marked "$HPID"
finish
