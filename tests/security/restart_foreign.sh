#!/usr/bin/env bash
# Issue 23, hole 3: a user makes root restart a service that is not
# theirs. [service queue] restarts through restart_command, run as root;
# its match, exe:*/bin/queue-worker, is a pattern. Real users (useradd,
# setpriv) try it: the attacker copies sleep to a path of their own that
# the pattern takes, runs it, and asks nprofd to restart it; runs the very
# program of another user's service as themselves; shows another user's
# program's path from a user and mount namespace of their own (unshare).
# Each is refused with one line saying why and what to do, and root's
# restart_command (which writes a line to a file only root can write)
# does not run. Next to them the legitimate uses work: an admin restarts
# the queue; with pid_file naming the service's main process (runit's
# supervise/pid), the owner of that process restarts it; the owner of a
# runit service whose match names one program of theirs (the web UI's
# journey: journey_conf) restarts it, and so does the owner of every
# process of a cgroup root made, until root puts another user's process
# there.
. "$(dirname "$0")/../integration/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
command -v runsv >/dev/null && command -v sv >/dev/null ||
	bail "runit's runsv and sv are installed (scripts/install-deps)"

A=nprofatk$$	# the attacker
B=nprofatb$$	# another one
Q=nprofq$$	# who runs the real queue
U=nprofu$$	# who runs a runit service of their own, as in the journey
W=nprofw$$	# whose processes are all of a cgroup's
M=nprofadm$$	# an admin
for u in "$A" "$B" "$Q" "$U" "$W" "$M"; do
	test_user "$u" || bail "useradd makes the test users"
done
as() { echo "setpriv --reuid=$1 --regid=$1 --init-groups"; }
MARK=$TMP/restarted	# in $TMP, which only root may write
SVQ=$TMP/svq/queue
SVU=$TMP/u/sv/usvc
SVRQ=$TMP/svrq/rqueue
# A cgroup of root's making, where the host has cgroup v2 (nprofd reads
# a process's unified cgroup first).
CG_ROOT=$(findmnt -n -t cgroup2 -o TARGET 2>/dev/null | head -1)
CG=${CG_ROOT:+$CG_ROOT/nprof-restart-$$}
# (cleanup kills the test users' processes: the cgroup is empty after it)
trap 'for s in "$SVQ" "$SVU" "$SVRQ"; do [ -d "$s" ] && sv -w 5 exit "$s" >/dev/null 2>&1; done
	cleanup; [ -z "$CG" ] || rmdir "$CG" 2>/dev/null' EXIT

# The real queue: Q's runit service running Q's queue-worker.
mkdir -p "$TMP/q/bin" "$SVQ"
cp /bin/sleep "$TMP/q/bin/queue-worker"
printf '#!/bin/sh\nexec %s 600\n' "$TMP/q/bin/queue-worker" >"$SVQ/run"
chmod +x "$SVQ/run"
chown -R "$Q" "$TMP/q" "$TMP/svq"
$(as "$Q") runsv "$SVQ" >/dev/null 2>&1 &
bg_pids+=("$!")
# The queue again, its program installed by root (root's, in root's
# directories), run by runsv as Q.
mkdir -p "$TMP/rq/sbin" "$SVRQ"
cp /bin/sleep "$TMP/rq/sbin/rqueue-worker"
chmod 755 "$TMP/rq" "$TMP/rq/sbin" "$TMP/rq/sbin/rqueue-worker"
printf '#!/bin/sh\nexec %s 600\n' "$TMP/rq/sbin/rqueue-worker" >"$SVRQ/run"
chmod +x "$SVRQ/run"
chown -R "$Q" "$TMP/svrq"
$(as "$Q") runsv "$SVRQ" >/dev/null 2>&1 &
bg_pids+=("$!")
# U's runit service: U's program, at a path only U (and root) may change.
mkdir -p "$SVU"
cp /bin/sleep "$TMP/u/sv/u_svc"
printf '#!/bin/sh\nexec %s 600\n' "$TMP/u/sv/u_svc" >"$SVU/run"
chmod +x "$SVU/run"
chown -R "$U" "$TMP/u"
$(as "$U") runsv "$SVU" >/dev/null 2>&1 &
bg_pids+=("$!")

# main_pid SVDIR [NOT]: the pid runsv says its service runs (not NOT),
# once it does (up to 10 s).
main_pid() {
	local i p
	for ((i = 0; i < 100; i++)); do
		p=$(cat "$1/supervise/pid" 2>/dev/null)
		[ -n "$p" ] && [ "$p" != "${2:-}" ] && kill -0 "$p" 2>/dev/null && { echo "$p"; return 0; }
		sleep 0.1
	done
	return 1
}
QPID=$(main_pid "$SVQ") || bail "runsv starts the queue as $Q"
UPID=$(main_pid "$SVU") || bail "runsv starts $U's service"

# The attacker's copy of sleep, at a path of theirs the pattern takes.
mkdir -p "$TMP/a"
chown "$A" "$TMP/a"
$(as "$A") sh -c "mkdir -p '$TMP/a/bin' '$TMP/a/sbin' && cp /bin/sleep '$TMP/a/bin/queue-worker' &&
	cp /bin/sleep '$TMP/a/sbin/rqueue-worker'" ||
	bail "$A copies sleep to $TMP/a/bin/queue-worker and $TMP/a/sbin/rqueue-worker"
$(as "$A") "$TMP/a/bin/queue-worker" 600 >/dev/null 2>&1 &
APID=$!
bg_pids+=("$APID")
$(as "$A") "$TMP/a/sbin/rqueue-worker" 600 >/dev/null 2>&1 &
ARPID=$!
bg_pids+=("$ARPID")

# conf [PID_FILE]: the daemon's configuration, with the queue's pid_file or not.
conf() {
	cat <<CONF
admin_users = $M
[actions]
restart = on
[service queue]
match = exe:*/bin/queue-worker
restart_command = sh -c 'echo %p >>$MARK; exec sv restart $SVQ'
${1:+pid_file = $1}
[service rqueue]
match = exe:*/sbin/rqueue-worker
restart_command = sh -c 'echo %p >>$MARK; exec sv restart $SVRQ'
[service usvc]
match = exe:$TMP/u/sv/u_svc
restart_command = sh -c 'echo %p >>$MARK; exec sv restart $SVU'
[service cgsvc]
match = cgroup:/${CG##*/}
restart_command = sh -c 'echo %p >>$MARK; kill %p; setpriv --reuid=$W --regid=$W --init-groups sleep 601 </dev/null >/dev/null 2>&1 & echo \$! >$CG/cgroup.procs'
CONF
}
conf >"$D/nprofd.conf"
start_daemon "$D/nprofd.conf" || bail "nprofd starts"

# marks: the lines root's restart_command wrote.
marks() { if [ -f "$MARK" ]; then wc -l <"$MARK"; else echo 0; fi; }
# restart_as USER WORKER: USER (a name, or root) asks for WORKER's restart;
# when it is taken (201), waits for its instance to end (the command has
# then run or not).
restart_as() {
	if [ "$1" = root ]; then api POST "/api/v1/workers/$2/restart"
	else api -u "$(as "$1")" POST "/api/v1/workers/$2/restart"; fi
	cp "$TMP/api.out" "$TMP/restart.out"
	RCODE=$CODE
	[ "$CODE" = 201 ] && wait_instance "$(json "$TMP/restart.out" 'j["id"]')" 40
	cp "$TMP/restart.out" "$TMP/api.out"
	CODE=$RCODE
}
# refused CODE WORDS...: the last reply was CODE, its error one line
# holding each of WORDS.
refused() {
	local code=$1 w e
	shift
	[ "$CODE" = "$code" ] || return 1
	e=$(json "$TMP/api.out" 'j["error"] if "\n" not in j["error"] else ""')
	[ -n "$e" ] || return 1
	for w; do [[ $e == *"$w"* ]] || return 1; done
	diag "  $e"
}
# restarted OLD_PID SVDIR: the restart FINISHED and new_worker is the
# service's new main process.
restarted() {
	local new
	new=$(main_pid "$2" "$1") || return 1
	[ "$STATUS" = FINISHED ] &&
		[ "$(json "$TMP/inst.json" 'j["new_worker"].split("-")[0]')" = "$new" ]
}

AW=$(worker_of "$APID")
QW=$(worker_of "$QPID")
api -u "$(as "$A")" GET "/api/v1/workers/$AW"
check "$A's copy of sleep at $TMP/a/bin/queue-worker is in [service queue] (a pattern groups workers)" \
	[ "$(json "$TMP/api.out" 'j["service"]')" = queue ]

# --- the hole as the issue found it ----------------------------------------------
restart_as "$A" "$AW"
check "$A asks nprofd to restart their copy: refused (403), one line naming the pattern and the way out" \
	refused 403 'exe:*/bin/queue-worker' pid_file admin
check "root's restart_command did not run ($(marks) lines)" [ "$(marks)" = 0 ]
check "the queue still runs its first process" [ "$(cat "$SVQ/supervise/pid")" = "$QPID" ]
api -u "$(as "$A")" GET "/api/v1/workers/$AW"
check "$A's worker lists restart as unavailable, saying why" \
	[ "$(json "$TMP/api.out" '"restart" not in j["actions"] and "pid_file" in j["unavailable"]["actions"]["restart"]')" = True ]

# A pattern says nothing of whose the service is, whoever asks: the
# owner of the real queue too, until the operator names its main process.
restart_as "$Q" "$QW"
check "$Q asks for the queue's restart under the pattern alone: refused (403), naming pid_file" \
	refused 403 pid_file
check "root's restart_command did not run ($(marks) lines)" [ "$(marks)" = 0 ]
restart_as "$M" "$QW"
check "the admin $M restarts the queue: FINISHED with its new process" restarted "$QPID" "$SVQ"
check "root's restart_command ran once, for $QPID" [ "$(cat "$MARK" 2>/dev/null)" = "$QPID" ]
QPID=$(main_pid "$SVQ") && QW=$(worker_of "$QPID")

# --- a runit service of U's own, its match one program of theirs --------------------
UW=$(worker_of "$UPID")
restart_as "$U" "$UW"
check "$U restarts their runit service (match = exe: one program of theirs): FINISHED with its new process" \
	restarted "$UPID" "$SVU"
check "root's restart_command ran for $UPID" [ "$(tail -1 "$MARK")" = "$UPID" ]
UPID=$(main_pid "$SVU") && UW=$(worker_of "$UPID")
n=$(marks)
# B runs U's very program as themselves: it is in the service, but not
# theirs to restart.
$(as "$B") "$TMP/u/sv/u_svc" 600 >/dev/null 2>&1 &
BPID=$!
bg_pids+=("$BPID")
BW=$(worker_of "$BPID")
restart_as "$B" "$BW"
check "$B runs $U's program and asks for a restart: refused (403), one line naming $U" refused 403 "$U"
check "root's restart_command did not run ($(marks) lines, $n before)" [ "$(marks)" = "$n" ]
# A program of U's that B runs is not B's grant, and not in U's way.
restart_as "$U" "$UW"
check "and $U, while $B runs their program: FINISHED (a program of $U's makes only $U's processes the service's)" \
	restarted "$UPID" "$SVU"
check "root's restart_command ran for $UPID, not $BPID" [ "$(tail -1 "$MARK")" = "$UPID" ]
UPID=$(main_pid "$SVU") && UW=$(worker_of "$UPID")
n=$(marks)
kill "$BPID"
wait_pid "$BPID"
# B shows U's path from a mount namespace of their own: a file of B's
# mounted where U's is, as B's user namespace sees it.
mkdir -p "$TMP/b"
chown "$B" "$TMP/b"
$(as "$B") unshare -Urm sh -c "mount -t tmpfs none '$TMP/u/sv' && cp /bin/sleep '$TMP/u/sv/u_svc' &&
	exec '$TMP/u/sv/u_svc' 600" >/dev/null 2>"$TMP/b/unshare.err" &
FPID=$!
bg_pids+=("$FPID")
for ((i = 0; i < 100; i++)); do
	[ "$(readlink "/proc/$FPID/exe" 2>/dev/null)" = "$TMP/u/sv/u_svc" ] && break
	sleep 0.05
done
if [ "$(readlink "/proc/$FPID/exe" 2>/dev/null)" = "$TMP/u/sv/u_svc" ]; then
	FW=$(worker_of "$FPID")
	restart_as "$B" "$FW"
	check "$B's own file shown at $U's path (unshare -Urm): refused (403), one line saying it is another file" \
		refused 403 "another file"
	check "root's restart_command did not run for $B ($(marks) lines, $n before)" [ "$(marks)" = "$n" ]
	restart_as "$U" "$UW"
	check "$U still restarts their service beside it: FINISHED with its new process" restarted "$UPID" "$SVU"
	UPID=$(main_pid "$SVU") && UW=$(worker_of "$UPID")
	n=$(marks)
	kill "$FPID"
else
	skip "a path shown from a user namespace" "unshare -Urm as $B failed here: $(head -1 "$TMP/b/unshare.err")"
fi

# --- a program root installed, under a pattern ------------------------------------------
# The common case: the operator installed the program (root's, where only
# root can change it) and runs it as the service's user. The attacker's
# copy at a path of theirs that the pattern takes is nobody's grant, and
# does not stand in the owner's way; the attacker running the very
# program root installed is in the service, so neither may then.
RQPID=$(main_pid "$SVRQ") || bail "runsv starts the root-installed queue as $Q"
RQW=$(worker_of "$RQPID")
AR=$(worker_of "$ARPID")
n=$(marks)
restart_as "$A" "$AR"
check "$A's copy at $TMP/a/sbin/rqueue-worker: refused (403), one line naming the pattern and pid_file" \
	refused 403 'exe:*/sbin/rqueue-worker' pid_file
check "root's restart_command did not run ($(marks) lines, $n before)" [ "$(marks)" = "$n" ]
restart_as "$Q" "$RQW"
check "$Q restarts the queue whose program root installed, beside $A's copy: FINISHED with its new process" \
	restarted "$RQPID" "$SVRQ"
check "root's restart_command ran for $RQPID" [ "$(tail -1 "$MARK")" = "$RQPID" ]
RQPID=$(main_pid "$SVRQ") && RQW=$(worker_of "$RQPID")
n=$(marks)
$(as "$A") "$TMP/rq/sbin/rqueue-worker" 600 >/dev/null 2>&1 &
AGPID=$!
bg_pids+=("$AGPID")
restart_as "$A" "$(worker_of "$AGPID")"
check "$A running the program root installed: refused (403), naming $Q's process" refused 403 "pid $RQPID" "$Q"
restart_as "$Q" "$RQW"
check "and $Q meanwhile: refused (403), naming $A's" refused 403 "pid $AGPID" "$A"
check "root's restart_command did not run ($(marks) lines, $n before)" [ "$(marks)" = "$n" ]
kill "$AGPID"
wait_pid "$AGPID"

# --- a cgroup root made: every process of it W's ----------------------------------------
if [ -n "$CG" ] && mkdir "$CG" 2>/dev/null; then
	$(as "$W") sleep 600 >/dev/null 2>&1 &
	WPID=$!
	bg_pids+=("$WPID")
	echo "$WPID" >"$CG/cgroup.procs"
	WW=$(worker_of "$WPID")
	restart_as "$W" "$WW"
	new=$(json "$TMP/inst.json" 'j["new_worker"].split("-")[0]')
	check "$W, whose every process of [service cgsvc] is, restarts it: FINISHED with a new process of the cgroup" \
		bash -c "[ '$STATUS' = FINISHED ] && grep -qx '0::/${CG##*/}' /proc/$new/cgroup"
	check "root's restart_command ran for $WPID" [ "$(tail -1 "$MARK")" = "$WPID" ]
	WW=$(worker_of "$new")
	n=$(marks)
	# root puts a process of A's there too
	$(as "$A") sleep 600 >/dev/null 2>&1 &
	ACG=$!
	bg_pids+=("$ACG")
	echo "$ACG" >"$CG/cgroup.procs"
	restart_as "$W" "$WW"
	check "once root put a process of $A's in it, $W is refused (403), naming it" refused 403 "pid $ACG" "$A"
	restart_as "$A" "$(worker_of "$ACG")"
	check "and so is $A (403), naming one of $W's" refused 403 "$W"
	check "root's restart_command did not run ($(marks) lines, $n before)" [ "$(marks)" = "$n" ]
	if ! $(as "$A") sh -c "echo \$\$ >'$CG/cgroup.procs'" 2>/dev/null; then
		ok "$A cannot put a process of theirs into the cgroup"
	else
		not_ok "$A cannot put a process of theirs into the cgroup"
	fi
else
	skip "a cgroup of root's making" "no cgroup v2 to make one in (${CG_ROOT:-not mounted})"
fi

# --- the queue's main process named by pid_file ----------------------------------------
kill -TERM "$DAEMON"
wait "$DAEMON" 2>/dev/null
conf "$SVQ/supervise/pid" >"$D/nprofd.conf"
start_daemon "$D/nprofd.conf" || bail "nprofd starts with [service queue] pid_file"
restart_as "$A" "$AW"
check "$A asks again, with pid_file set: refused (403), one line naming the main process and $Q" \
	refused 403 "$QPID" "$Q"
check "root's restart_command did not run ($(marks) lines, $n before)" [ "$(marks)" = "$n" ]
restart_as "$Q" "$QW"
check "$Q, who owns the queue's main process, restarts it: FINISHED with its new process" \
	restarted "$QPID" "$SVQ"
check "root's restart_command ran for $QPID" [ "$(tail -1 "$MARK")" = "$QPID" ]
api -u "$(as "$A")" GET "/api/v1/workers/$AW"
check "the attacker's worker is still theirs and listed (the refusals touched nothing)" [ "$CODE" = 200 ]
finish
