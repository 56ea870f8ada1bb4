#!/usr/bin/env bash
# Issue 23, finding 1: `nprof attach` run by root (for itself, or by
# nprofd for an admin) on a process in a mount namespace its user made
# (unshare -Urm). Root used to copy the agent into that process's /tmp,
# unlink a mismatching copy and read its libraries, all by paths resolved
# there: the user bind-mounted a directory only root may write (standing
# for /etc) onto their /tmp, and root wrote a file into it, or unlinked
# one of that name; a FIFO bound over their libc's path made root's open
# of it block for ever. Now: nothing is written, renamed or unlinked in
# the user's world but as the user; libraries are read from the mapped
# file itself. And the legitimate use: an admin attaches the agent to a
# user's process in its own mount namespace and gets its allocation
# profile.
# test-timeout: 240
. "$(dirname "$0")/../integration/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
[ "$(id -u)" = 0 ] || { skip "attach as root" "needs root"; finish; }

U=nprofatt$$
test_user "$U" || bail "useradd makes a test user"
AS_U="setpriv --reuid=$U --regid=$U --clear-groups"
# The user's own namespace: allowed on these hosts, and what a hostile
# user has.
$AS_U unshare -Urm true 2>/dev/null ||
	bail "an unprivileged user can make a user and mount namespace (unshare -Urm)"

# Outside every /tmp the user could hide: the program, and the agent at a
# path the user's namespace hides.
VT=$(mktemp -d /var/tmp/nprof-sec.XXXXXX)
for n in bind bind2 fifo own; do cp "$PROGS/cxx_alloc" "$VT/alloc_$n"; done
mkdir -p "$VT/agent"
cp "$AGENT" "$VT/agent/libnprof.so"
chmod -R a+rX "$VT"
# A directory only root may write: it stands for /etc or /usr/lib.
RO=$(mktemp -d /var/tmp/nprof-ro.XXXXXX)
chmod 755 "$RO"
cleanup_dirs() { rm -rf "$VT" "$RO"; }
trap 'cleanup_dirs; cleanup' EXIT

BID=$(readelf -n "$AGENT" | awk '/Build ID/ { print $3 }')
[ -n "$BID" ] || bail "the agent has a build-id (readelf -n)"
UID_U=$(id -u "$U")

# start_as_user NAME SCRIPT: the user's shell in a namespace of their
# own runs SCRIPT, which runs $VT/alloc_NAME (cxx_alloc); PID is that
# process once it runs.
start_as_user() {
	local name=$1 script=$2 i
	$AS_U unshare -Urm sh -c "$script" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null &
	bg_pids+=("$!")
	PID=
	for ((i = 0; i < 200; i++)); do
		PID=$(pgrep -u "$U" -x "alloc_$name" | head -n 1)
		[ -n "$PID" ] && grep -q libc "/proc/$PID/maps" 2>/dev/null && return 0
		sleep 0.05
	done
	diag "$name did not start:"
	diag_file "$TMP/$name.err"
	return 1
}

# --- the write: /tmp bound to a directory only root may write -----------------------
start_as_user bind "mount --bind $RO /tmp && mount -t tmpfs tmpfs $VT/agent && exec $VT/alloc_bind --seconds 60" ||
	bail "the user's process runs with a root-only directory as its /tmp"
touch "$RO/marker"
check "in its namespace, its /tmp is the root-only directory" \
	test -e "/proc/$PID/root/tmp/marker"
rm -f "$RO/marker"
NPROF_AGENT=$VT/agent/libnprof.so run_nprof 30 attach "$PID"
found=$(ls -A "$RO")
check "root wrote no file into the directory the user bound over their /tmp (found: ${found:-none})" \
	test -z "$found"
[ -z "$found" ] || diag_file "$TMP/np.err"
kill -KILL "$PID" 2>/dev/null
# Files of the names root would have replaced (unlinked, written anew):
# the old name and the new one; a new process, without the agent.
rm -f "$RO"/*
for f in "nprof-agent-$BID.so" "nprof-agent-$UID_U-$BID.so"; do
	echo victim >"$RO/$f"
done
start_as_user bind2 "mount --bind $RO /tmp && mount -t tmpfs tmpfs $VT/agent && exec $VT/alloc_bind2 --seconds 60" ||
	bail "the user's process runs with a root-only directory as its /tmp"
NPROF_AGENT=$VT/agent/libnprof.so run_nprof 30 attach "$PID"
check "root unlinked or replaced nothing there (both files of the agent's names still say victim)" \
	bash -c "[ \"\$(cat '$RO/nprof-agent-$BID.so')\" = victim ] && [ \"\$(cat '$RO/nprof-agent-$UID_U-$BID.so')\" = victim ] && [ \$(ls -A '$RO' | wc -l) = 2 ]"
check "the attach failed in one line naming the copy as the process's user (uid $UID_U)" \
	bash -c "[ $NP_RC -ne 0 ] && [ $NP_RC -lt 124 ] && [ \$(wc -l <'$TMP/np.err') -eq 1 ] && grep -q 'as its user (uid $UID_U)' '$TMP/np.err'"
[ "$NP_RC" -ne 0 ] && [ "$NP_RC" -lt 124 ] || np_diag
check "the process still runs, and has no agent" \
	bash -c "kill -0 $PID && ! grep -q 'nprof-agent-\|libnprof' /proc/$PID/maps"
kill -KILL "$PID" 2>/dev/null

# --- the read: a FIFO bound over the libc it maps -------------------------------------
LIBC=$(awk '$6 ~ /\/libc\.so\.6$/ { print $6; exit }' /proc/self/maps)
[ -n "$LIBC" ] || bail "this shell maps a libc.so.6"
start_as_user fifo "mount -t tmpfs tmpfs /tmp; $VT/alloc_fifo --seconds 60 & mkfifo /tmp/fifo.\$\$ &&
	mount --bind /tmp/fifo.\$\$ $LIBC && touch /tmp/bound.\$\$; wait" ||
	bail "the user's process runs"
for ((i = 0; i < 100; i++)); do
	ls "/proc/$PID/root/tmp/" 2>/dev/null | grep -q '^bound\.' && break
	sleep 0.05
done
check "in its namespace, the path of the libc it maps is a FIFO" test -p "/proc/$PID/root$LIBC"
NPROF_AGENT=$VT/agent/libnprof.so run_nprof 30 attach "$PID"
check "attach reads the libc it maps, not the FIFO at its path (no hang; status $NP_RC)" \
	bash -c "[ $NP_RC -eq 0 ] && grep -q 'libnprof' /proc/$PID/maps"
[ "$NP_RC" -eq 0 ] || np_diag
kill -KILL "$PID" 2>/dev/null

# --- the legitimate use: the agent copied as the user, an allocation profile -----------
start_as_user own "mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs $VT/agent &&
	exec $VT/alloc_own --seconds 60" ||
	bail "the user's process runs in a namespace of its own"
check "in its namespace, the agent's path is hidden" \
	bash -c "[ ! -e /proc/$PID/root$VT/agent/libnprof.so ]"
NPROF_AGENT=$VT/agent/libnprof.so run_nprof 60 attach -e alloc -i 64k -d 2 -o collapsed \
	-f "$TMP/own.collapsed" "$PID"
check "an admin's attach -e alloc -d 2 gets the user's allocations (ns::Pool<int>::grow)" \
	bash -c "[ $NP_RC -eq 0 ] && grep -q 'ns::Pool<int>::grow' '$TMP/own.collapsed'"
[ "$NP_RC" -eq 0 ] || { np_diag; diag "the process's stderr:"; diag_file "$TMP/own.err"; }
copy=/proc/$PID/root/tmp/nprof-agent-$UID_U-$BID.so
check "the copy in its /tmp is the user's file, not root's ($(stat -c '%U %a' "$copy" 2>/dev/null))" \
	bash -c "[ \"\$(stat -c %u '$copy')\" = $UID_U ]"
check "nothing of the agent in our /tmp" bash -c "! ls /tmp/nprof-agent-*$BID* 2>/dev/null"
run_nprof 30 detach "$PID"
kill -KILL "$PID" 2>/dev/null

# --- the same through nprofd: an admin's "Attach agent" --------------------------------
# nprofd runs nprof attach as root for an admin, with the agent beside
# nprof; the user hides that path and binds the root-only directory over
# their /tmp: refused in one line, nothing written; in a namespace with a
# /tmp of its own, the admin attaches and gets an allocation profile.
NPROFD=$NPROF_BUILD/nprofd
[ -x "$NPROFD" ] || bail "nprofd is built ($NPROFD)"
D=$TMP/daemon
mkdir -p "$D"
chmod 755 "$D"
SOCK=$D/nprofd.sock
printf '[actions]\nattach = on\n' >"$D/nprofd.conf"
start_daemon "$D/nprofd.conf" || bail "nprofd starts"
# The agent's directory is hidden first: a checkout under /tmp is gone
# from the user's view once /tmp is replaced, and still hidden then.
AGENT_DIR=$(dirname "$AGENT")
rm -f "$RO"/*
start_as_user bind "mount -t tmpfs tmpfs $AGENT_DIR && mount --bind $RO /tmp &&
	exec $VT/alloc_bind --seconds 60" || bail "the user's process runs with a root-only /tmp"
api POST "/api/v1/workers/$(worker_of "$PID")/attach"
found=$(ls -A "$RO")
check "nprofd's attach for root, the user's /tmp bound to a root-only directory: 409, nothing written there (${found:-nothing})" \
	bash -c "[ '$CODE' = 409 ] && [ -z '$found' ]"
kill -KILL "$PID" 2>/dev/null
start_as_user own "mount -t tmpfs tmpfs $AGENT_DIR && mount -t tmpfs tmpfs /tmp &&
	exec $VT/alloc_own --seconds 60" || bail "the user's process runs in a namespace of its own"
W=$(worker_of "$PID")
api POST "/api/v1/workers/$W/attach"
check "nprofd's attach for root on the user's process in its own namespace: 200" [ "$CODE" = 200 ]
[ "$CODE" = 200 ] || { diag "POST attach: $CODE $(head -c 400 "$TMP/api.out")"; diag_file "$D/log" 20; }
# The workers' agent column comes from nprofd's next look at /proc.
for ((i = 0; i < 50; i++)); do
	api GET "/api/v1/workers/$W"
	[ "$(json "$TMP/api.out" 'j["agent"]')" = True ] && break
	sleep 0.2
done
start_instance "{\"worker\": \"$W\", \"mode\": \"alloc\", \"duration\": \"2s\", \"format\": \"collapsed\"}"
[ -n "$INST" ] || diag "POST /api/v1/instances: $CODE $(head -c 300 "$TMP/api.out")"
wait_instance "$INST" 30
api GET "/api/v1/artifacts/$(artifact_of)?format=collapsed"
check "and an alloc instance there FINISHED ($STATUS) with the user's allocations (ns::Pool<int>::grow)" \
	bash -c "[ '$STATUS' = FINISHED ] && grep -q 'ns::Pool<int>::grow' '$TMP/api.out'"
kill -KILL "$PID" 2>/dev/null
finish
