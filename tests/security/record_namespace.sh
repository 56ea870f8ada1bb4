#!/usr/bin/env bash
# Issue 23, finding 1 beyond attach: root recording another user's process
# (nprof run by root, or by nprofd for an admin) reads that process's
# executable for symbols and DWARF unwind tables, and looks for its perf
# map in its /tmp. In a mount namespace its user made (unshare -Urm), the
# user can put a FIFO at each of those paths once the file is mapped: root
# opening them by path (/proc/PID/root/...) blocked for ever. Now the
# mapped file is read through its mapping, the perf map and debug files
# as the user: the recording ends on time and names the functions, with
# DWARF unwinding (nofp binary) too. And a binary's DWARF may name a
# split-DWARF file (.dwo) anywhere: with --lines, libdw opened it as root
# (a FIFO there hung the recording; a device there would have been
# opened); nprof never asks for split units.
# test-timeout: 180
. "$(dirname "$0")/../integration/lib.sh"
need_build
[ "$(id -u)" = 0 ] || { skip "record as root" "needs root"; finish; }

U=nprofrec$$
test_user "$U" || bail "useradd makes a test user"
AS_U="setpriv --reuid=$U --regid=$U --clear-groups"
$AS_U unshare -Urm true 2>/dev/null ||
	bail "an unprivileged user can make a user and mount namespace (unshare -Urm)"

VT=$(mktemp -d /var/tmp/nprof-sec.XXXXXX)
cp "$PROGS/nofp/split" "$VT/split_fifo"
chmod -R a+rX "$VT"
trap 'rm -rf "$VT"; cleanup' EXIT

# The user's process, then, in its namespace (with a /tmp of its own), a
# FIFO bound over its own executable's path and put at its perf map's.
$AS_U unshare -Urm sh -c "mount -t tmpfs tmpfs /tmp; $VT/split_fifo --seconds 120 & p=\$!; sleep 0.2
	mkfifo /tmp/fifo.\$\$ && mount --bind /tmp/fifo.\$\$ $VT/split_fifo &&
	mkfifo /tmp/perf-\$p.map && touch /tmp/bound.\$\$; wait" \
	>"$TMP/user.out" 2>"$TMP/user.err" </dev/null &
bg_pids+=("$!")
PID=
for ((i = 0; i < 200; i++)); do
	PID=$(pgrep -u "$U" -x split_fifo | head -n 1)
	[ -n "$PID" ] && ls "/proc/$PID/root/tmp/" 2>/dev/null | grep -q '^bound\.' && break
	sleep 0.05
done
[ -n "$PID" ] || { diag_file "$TMP/user.err"; bail "the user's split runs"; }
check "in its namespace, its executable's path is a FIFO" test -p "/proc/$PID/root$VT/split_fifo"
check "in its namespace, its perf map is a FIFO" test -p "/proc/$PID/root/tmp/perf-$PID.map"

run_nprof 40 record -d 2 -o collapsed -f "$TMP/fifo.collapsed" "$PID"
check "root's record of it ends on time (status $NP_RC in ${NP_SECS}s) and names burn_sixty" \
	bash -c "[ $NP_RC -eq 0 ] && grep -q burn_sixty '$TMP/fifo.collapsed'"
[ "$NP_RC" -eq 0 ] || np_diag
run_nprof 40 record -d 2 --cstack dwarf -o collapsed -f "$TMP/dwarf.collapsed" "$PID"
check "... with DWARF unwinding from the mapped file: main;run_main_thread;burn_quantum;burn_sixty (status $NP_RC)" \
	bash -c "[ $NP_RC -eq 0 ] && grep -q 'main;run_main_thread;burn_quantum;burn_sixty' '$TMP/dwarf.collapsed'"
[ "$NP_RC" -eq 0 ] || np_diag
run_nprof 40 stacks "$PID"
check "root's thread dump of it ends on time and names its threads' functions (status $NP_RC)" \
	bash -c "[ $NP_RC -eq 0 ] && grep -q 'burn_\|worker_loop\|run_main_thread' '$TMP/np.out'"
[ "$NP_RC" -eq 0 ] || np_diag
# --- a split-DWARF binary whose .dwo is a FIFO -----------------------------------------
mkdir -p "$VT/dwo"
cat >"$VT/dwo/burn_dwo.c" <<'C'
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) void burn_dwo(void) { for (unsigned long i = 0; i < 1000000; i++) sink += i; }
int main(void) { time_t t = time(0); while (time(0) - t < 60) burn_dwo(); return 0; }
C
if (cd "$VT/dwo" && cc -O1 -g -gsplit-dwarf -gdwarf-5 burn_dwo.c -o burn_dwo) 2>"$TMP/cc.err"; then
	rm -f "$VT/dwo/burn_dwo.dwo"
	mkfifo "$VT/dwo/burn_dwo.dwo"
	chmod -R a+rX "$VT/dwo"
	$AS_U "$VT/dwo/burn_dwo" >/dev/null 2>&1 &
	DPID=$!
	bg_pids+=("$DPID")
	sleep 0.2
	run_nprof 40 record -d 1 --lines -o collapsed -f "$TMP/dwo.collapsed" "$DPID"
	check "--lines on a binary whose .dwo is a FIFO: root's record ends on time (status $NP_RC in ${NP_SECS}s), burn_dwo named" \
		bash -c "[ $NP_RC -eq 0 ] && grep -q burn_dwo '$TMP/dwo.collapsed'"
	[ "$NP_RC" -eq 0 ] || np_diag
else
	not_ok "cc -gsplit-dwarf builds a test binary"
	diag_file "$TMP/cc.err"
fi
finish
