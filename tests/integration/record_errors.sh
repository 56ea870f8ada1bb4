#!/usr/bin/env bash
# Bad input gets one clear line on stderr ("nprof: ...") and a non-zero
# status (2 for usage errors, 1 for runtime failures), never a crash or a
# hang. Also the permission cases: another user's process; perf events
# denied by kernel.perf_event_paranoid; an unprivileged user at paranoid 2
# (works, kernel frames left out, and the output says so); root (kernel
# frames included).
. "$(dirname "$0")/lib.sh"
need_build

# expect_error DESCRIPTION STATUS REGEX ARGS...: `nprof ARGS` fails with
# exit STATUS ("any" for any non-zero) and one "nprof: " line matching REGEX.
expect_error() {
	local desc=$1 status=$2 re=$3
	shift 3
	run_nprof 15 "$@"
	if one_error_line && { [ "$status" = any ] || [ "$NP_RC" -eq "$status" ]; } && err_says "$re"; then
		ok "$desc: $(head -c 200 "$TMP/np.err")"
	else
		not_ok "$desc (want status $status, one line matching /$re/)"
		np_diag
	fi
}

start_prog spin "$PROGS/spin" --forever || bail "spin starts"
spin=$PID

# --- usage errors: status 2 ---------------------------------------------------

expect_error "unknown option -Z" 2 '-Z' record -Z -d 1 "$spin"
expect_error "unknown option --bogus" 2 '--bogus' record --bogus -d 1 "$spin"
expect_error "unknown subcommand" 2 'recrod' recrod "$spin"
for bad in 10xs abc -5ms 1.5.5ms ''; do
	expect_error "malformed interval -i '$bad'" 2 "(-i|interval)" record -i "$bad" -d 1 "$spin"
done
for bad in abc -1 5x 1..2 ''; do
	expect_error "malformed duration -d '$bad'" 2 "(-d|duration)" record -d "$bad" "$spin"
done
expect_error "malformed depth -j x" 2 "(-j|depth)" record -j x -d 1 "$spin"
expect_error "unknown format -o bogus" 2 "bogus" record -o bogus -d 1 "$spin"
expect_error "option missing its value (-d at the end)" 2 "(-d|duration|requires|missing)" record "$spin" -d
expect_error "no PID and no command" 2 "(PID|COMMAND|usage)" record
expect_error "PID that is not a number" 2 "(12ab|PID)" record -d 1 12ab
expect_error "unknown event -e bogus" 2 "bogus" record -e bogus -d 1 "$spin"

# --- runtime errors: status 1 ---------------------------------------------------

# A PID that existed a moment ago and is gone now.
sleep 0 &
gone=$!
wait $gone
if kill -0 $gone 2>/dev/null; then
	skip "no such PID" "PID $gone was reused"
else
	expect_error "no such PID $gone" 1 "(no such|no process|not exist|not found).*$gone|$gone.*(no such|not exist|not found|gone)" record -d 1 $gone
fi
expect_error "a command that does not exist" 1 "/nonexistent/prog" record -d 1 -- /nonexistent/prog
expect_error "an output file that cannot be written" 1 "/nonexistent/dir/out" \
	record -d 1 -o collapsed -f /nonexistent/dir/out.collapsed "$spin"

# A hardware event: a VM without a PMU cannot count it. The line names the
# event and lists what is available. On a host with a PMU it simply works.
if perf stat -e cycles true 2>&1 | grep -qE 'not supported|not counted|<not'; then
	expect_error "hardware event -e cycles on a host without a PMU" 1 'cycles' record -e cycles -d 1 "$spin"
	if err_says 'cpu' && err_says 'page-faults'; then
		ok "-e cycles: the line lists the available events (cpu, page-faults, ...)"
	else
		not_ok "-e cycles: the line lists the available events (cpu, page-faults, ...)"
	fi
else
	run_nprof 15 record -e cycles -d 1 -o collapsed -f "$TMP/cycles.collapsed" "$spin"
	check "hardware event -e cycles on a host with a PMU records" is_collapsed "$TMP/cycles.collapsed"
fi
run_nprof 15 record -e page-faults -d 1 -o collapsed -f "$TMP/pf.collapsed" "$spin"
check "an available software event (-e page-faults) is accepted" test "$NP_RC" -eq 0

# --- another user's process -------------------------------------------------------

usable_by_others || bail "nprof and the test programs are usable by user nobody (check namei -l $NPROF)"
$AS_NOBODY sleep 60 &
other=$!
bg_pids+=("$other")
sleep 0.2
RUN_AS=$AS_DAEMON expect_error "another user's process (nobody's sleep, nprof as daemon)" 1 \
	"another user|belongs to|owned by|not yours|uid" record -d 1 "$other"
if err_says 'root|CAP_|same user|as that user|sudo'; then
	ok "another user's process: the line says what would allow it"
else
	not_ok "another user's process: the line says what would allow it"
fi

# --- perf events denied by kernel.perf_event_paranoid -----------------------------
# Upstream kernels treat values above 2 as 2, so a host that denies perf
# events to unprivileged users (Debian's perf_event_paranoid=3) is simulated:
# in a private mount namespace the sysctl reads 3 and a seccomp filter
# (deny_perf) makes perf_event_open fail with EACCES, as that kernel does.
# Nothing outside this one command sees either.
echo 3 >"$TMP/paranoid"
chmod 644 "$TMP/paranoid"
if unshare -m true 2>/dev/null; then
	t0=$(date +%s.%N)
	timeout -k 5 15 unshare -m bash -c '
		mount --bind "$1" /proc/sys/kernel/perf_event_paranoid || exit 99
		shift
		exec "$@"' _ "$TMP/paranoid" $AS_NOBODY "$PROGS/deny_perf" "$NPROF" record -d 1 "$other" \
		>"$TMP/np.out" 2>"$TMP/np.err" </dev/null
	NP_RC=$?
	NP_SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	if [ "$NP_RC" -eq 99 ]; then
		skip "perf events denied by perf_event_paranoid=3" "cannot bind-mount over the sysctl here"
	elif one_error_line && [ "$NP_RC" -eq 1 ] && err_says 'perf_event_paranoid' && err_says '=3|= 3| 3[^0-9]'; then
		ok "perf_event_paranoid=3: the line names the setting: $(head -c 200 "$TMP/np.err")"
		# ... and a value that would allow it (2, 1, 0 or -1).
		if sed 's/perf_event_paranoid=3//' "$TMP/np.err" | grep -qE '(^|[^0-9-])(-1|0|1|2)([^0-9]|$)'; then
			ok "perf_event_paranoid=3: the line says which value would allow it"
		else
			not_ok "perf_event_paranoid=3: the line says which value would allow it"
		fi
	else
		not_ok "perf_event_paranoid=3: one line naming the setting, status 1"
		np_diag
	fi
else
	skip "perf events denied by perf_event_paranoid=3" "no unshare -m here"
fi

# --- perf events denied by a container's seccomp profile ---------------------------
# The sysctl allows it, and root runs nprof, but a seccomp filter on nprof
# answers perf_event_open with EPERM, as Docker's default profile does.
timeout -k 5 15 "$PROGS/deny_perf" --eperm "$NPROF" record -d 1 "$other" \
	>"$TMP/np.out" 2>"$TMP/np.err" </dev/null
NP_RC=$?
check "seccomp refuses perf_event_open (EPERM, as in a container): one line naming seccomp, the container and -e itimer" \
	bash -c "[ $NP_RC -eq 1 ] && [ \$(wc -l <'$TMP/np.err') -eq 1 ] && grep -q 'seccomp' '$TMP/np.err' && grep -q 'container' '$TMP/np.err' && grep -q 'itimer' '$TMP/np.err'"
[ "$NP_RC" -eq 1 ] || np_diag

# --- an unprivileged user at perf_event_paranoid=2 ---------------------------------

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
nd=$(nobody_dir)
if [ "$paranoid" -ge 2 ]; then
	if start_prog nb_split $AS_NOBODY "$PROGS/split" --seconds 6; then
		RUN_AS=$AS_NOBODY run_nprof 15 record -d 2 "$PID"
		if [ "$NP_RC" -eq 0 ] && grep -q burn_sixty "$TMP/np.out"; then
			ok "as nobody at paranoid $paranoid: recording nobody's own process works"
		else
			not_ok "as nobody at paranoid $paranoid: recording nobody's own process works"
			np_diag
		fi
		if grep -qi 'kernel frames omitted' "$TMP/np.out" "$TMP/np.err"; then
			ok "as nobody: the output says kernel frames were omitted: $(grep -hi 'kernel frames omitted' "$TMP/np.out" "$TMP/np.err" | head -1)"
			check "as nobody: ... and why (perf_event_paranoid)" \
				grep -qi 'kernel frames omitted.*paranoid' "$TMP/np.out" "$TMP/np.err"
		else
			not_ok "as nobody: the output says kernel frames were omitted"
			np_diag
		fi
	else
		not_ok "split starts as nobody"
	fi
	# Until it has spent 0.5 s in user mode, the part a recording without
	# the kernel samples (~50 samples), recorded until it exits: a loaded
	# host gave 2 s of wall time no user-mode sample at all.
	if start_prog nb_sys $AS_NOBODY "$PROGS/syscalls" --user-cpu-seconds 0.5; then
		RUN_AS=$AS_NOBODY run_nprof 600 record -d 0 -o collapsed -f "$nd/sys.collapsed" "$PID"
		f=$nd/sys.collapsed
		if [ "$NP_RC" -eq 0 ] && is_collapsed "$f" && has_chain "$f" "main;write_loop"; then
			ok "as nobody: a syscall-heavy process records (main;write_loop)"
			check "as nobody: no kernel frames in it" \
				bash -c "! grep -qE 'do_syscall_64|entry_SYSCALL|ksys_write|vfs_write|\\[k(ernel)?\\]' '$f'"
			check "as nobody: no bare addresses in it" no_bare_addresses "$f"
		else
			not_ok "as nobody: a syscall-heavy process records (main;write_loop)"
			np_diag
			diag_file "$f" 5
		fi
		grep -qi 'kernel frames omitted' "$TMP/np.err" &&
			diag "(collapsed run also noted on stderr: $(grep -i 'kernel frames omitted' "$TMP/np.err"))"
	else
		not_ok "syscalls starts as nobody"
	fi
else
	skip "unprivileged run at paranoid 2" "perf_event_paranoid is $paranoid here"
fi

# --- root: kernel frames included -------------------------------------------------------

if [ "$(id -u)" -eq 0 ]; then
	if start_prog sys "$PROGS/syscalls" --seconds 6; then
		run_nprof 15 record -d 2 -o collapsed -f "$TMP/sys.collapsed" "$PID"
		f=$TMP/sys.collapsed
		if [ "$NP_RC" -eq 0 ] && is_collapsed "$f"; then
			kshare=$(share_match "$f" '(do_syscall_64|entry_SYSCALL|ksys_write|vfs_write)')
			diag "kernel write path in ${kshare}% of the samples"
			check "root: kernel frames (entry_SYSCALL_64/do_syscall_64/ksys_write/vfs_write) appear" \
				has_frame_match "$f" '(do_syscall_64|entry_SYSCALL|ksys_write|vfs_write)'
			check "root: they sit above write_loop (main;write_loop;<kernel>)" \
				has_chain_re "$f" '^main$' '^write_loop$' '(entry_SYSCALL|do_syscall_64)'
			check "root: no bare addresses" no_bare_addresses "$f"
		else
			not_ok "root: record of syscalls writes a collapsed file"
			np_diag
		fi
		run_nprof 15 record -d 1 "$PID"
		check "root: the output does not say kernel frames were omitted" \
			bash -c "[ $NP_RC -eq 0 ] && ! grep -qi 'kernel frames omitted' '$TMP/np.out' '$TMP/np.err'"
	else
		not_ok "syscalls starts"
	fi
else
	skip "kernel frames as root" "not running as root"
fi

finish
