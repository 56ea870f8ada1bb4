#!/usr/bin/env bash
# nprof record's DWARF unwinding (--cstack dwarf, the default through auto)
# on programs built without frame pointers (build/tests/progs/nofp/, -O2
# -fomit-frame-pointer) and on the same programs with frame pointers:
#
# - split (60/30/10 between burn_sixty, burn_thirty, burn_ten, with its own
#   measurement): shares within 5 points, and at least 95% of the samples
#   reach main or the second thread's start routine, worker_main;
# - qsort_burn: main above sort_things above libc's qsort (qsort_r,
#   msort_with_tmp: Debian's qsort tail-calls qsort_r) above compare_costly;
# - cxx_sort: main above app::run_sort above std::sort's internals above
#   the comparator, app::CostlyLess::operator();
# - syscalls: user frames from DWARF, kernel frames from the kernel's
#   callchain, joined in order (as root);
# - --cstack fp on the no-frame-pointer build loses the callers, and the
#   summary names the method used; as user nobody (paranoid 2: user space
#   only) DWARF works the same.
# test-alone
# as nobody its samples are what a neighbour's CPU leaves split.
. "$(dirname "$0")/lib.sh"
need_build
[ -x "$PROGS/nofp/qsort_burn" ] || bail "the no-frame-pointer programs are built ($PROGS/nofp)"

TOL=5
FNS="burn_sixty burn_thirty burn_ten"
QSORT_RE='(^|;)main;([^;]*;)*sort_things;([^;]*(qsort|msort)[^;]*;)+compare_costly(;|$)'
CXX_RE='(^|;)main;([^;]*;)*app::run_sort\([^;]*;([^;]*(std::|__gnu_cxx::)[^;]*;)+app::CostlyLess::operator\(\)[^;]*(;|$)'

# share_re FILE REGEX: percentage of samples whose whole stack (frames
# joined by ";") matches REGEX.
share_re() {
	AWK_RE=$2 awk '
	BEGIN { re = ENVIRON["AWK_RE"] }
	{
		v = $NF; t += v
		s = $0; sub(/ [0-9]+$/, "", s)
		if (s ~ re) m += v
	}
	END { printf "%.1f", t ? 100 * m / t : 0 }' "$1"
}

# share_re_among FILE LEAF_RE REGEX: among samples with a frame matching
# LEAF_RE, the percentage whose stack matches REGEX.
share_re_among() {
	AWK_LEAF=$2 AWK_RE=$3 awk '
	BEGIN { leaf = ENVIRON["AWK_LEAF"]; re = ENVIRON["AWK_RE"] }
	{
		v = $NF
		s = $0; sub(/ [0-9]+$/, "", s)
		n = split(s, fr, ";"); hit = 0
		for (i = 1; i <= n; i++) if (fr[i] ~ leaf) { hit = 1; break }
		if (!hit) next
		t += v
		if (s ~ re) m += v
	}
	END { printf "%.1f", t ? 100 * m / t : 0 }' "$1"
}

# at_least A B: A >= B (decimals).
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }

top_stacks() {
	diag "top stacks:"
	sort -t' ' -k2 -nr "$1" | cut -c1-400 | diag_file /dev/stdin 6
}

# record_pid LABEL SECONDS_RECORDED PROGRAM_ARGS...: starts the program,
# records it by PID into $TMP/LABEL.collapsed, waits for its end
# (INTERVAL: the sampling interval, else nprof's default).
record_pid() {
	local label=$1 secs=$2
	shift 2
	REC=$TMP/$label.collapsed
	if ! start_prog "$label" "$@"; then
		not_ok "$label: the program starts"
		return 1
	fi
	run_nprof 30 record -d "$secs" ${CSTACK:+--cstack $CSTACK} ${INTERVAL:+-i $INTERVAL} \
		-o collapsed -f "$REC" "$PID"
	wait_pid "$PID" 20
	if [ "$NP_RC" -eq 0 ] && is_collapsed "$REC"; then
		return 0
	fi
	not_ok "$label: record -d $secs writes a collapsed file"
	np_diag
	return 1
}

for build in nofp fp; do
	if [ $build = nofp ]; then dir=$PROGS/nofp; else dir=$PROGS; fi

	# --- split: shares and reaching the roots -----------------------------
	# Every 2 ms: the 1000 samples and more a 5-point bar on a share needs
	# (split_longer, lib.sh), also when a busy host leaves split one CPU of
	# two (at 10 ms a CI run under two hogs got 490 and missed by 5.5).
	if INTERVAL=2ms record_pid "$build-split" 5 "$dir/split" --seconds 7 --truth "$TMP/$build.truth"; then
		f=$REC
		diag "$build split: $(total "$f") samples"
		shares_check "$build split" "$f" "$TMP/$build.truth" "$TOL" samples $FNS
		got=$(share_match "$f" '^(main|worker_main)$')
		if at_least "$got" 95; then
			ok "$build split: ${got}% of samples reach main or worker_main (>= 95%)"
		else
			not_ok "$build split: ${got}% of samples reach main or worker_main (>= 95%)"
			top_stacks "$f"
		fi
		check "$build split: main;run_main_thread;burn_quantum;burn_sixty and worker_main;worker_loop;burn_quantum;burn_sixty" \
			eval 'has_chain "$f" "main;run_main_thread;burn_quantum;burn_sixty" && has_chain "$f" "worker_main;worker_loop;burn_quantum;burn_sixty"'
		check "$build split: no frame is a bare address" no_bare_addresses "$f"
	fi

	# --- qsort: main above sort_things above qsort above the comparator ----
	if record_pid "$build-qsort" 3 "$dir/qsort_burn" --seconds 5; then
		f=$REC
		got=$(share_re_among "$f" '^compare_costly$' "$QSORT_RE")
		if at_least "$got" 95; then
			ok "$build qsort: ${got}% of compare_costly samples read main;..;sort_things;qsort..;compare_costly (>= 95%)"
		else
			not_ok "$build qsort: ${got}% of compare_costly samples read main;..;sort_things;qsort..;compare_costly (>= 95%)"
			top_stacks "$f"
		fi
		check "$build qsort: compare_costly has most of the CPU" \
			at_least "$(share "$f" compare_costly)" 80
	fi

	# --- std::sort: the program's callers above libstdc++ above the lambda -
	if record_pid "$build-cxx" 3 "$dir/cxx_sort" --seconds 5; then
		f=$REC
		got=$(share_re_among "$f" '^app::CostlyLess::operator\(\)' "$CXX_RE")
		if at_least "$got" 95; then
			ok "$build cxx: ${got}% of comparator samples read main;..;app::run_sort;std::..;app::CostlyLess::operator() (>= 95%)"
		else
			not_ok "$build cxx: ${got}% of comparator samples read main;..;app::run_sort;std::..;app::CostlyLess::operator() (>= 95%)"
			top_stacks "$f"
		fi
		check "$build cxx: the comparator has most of the CPU" \
			at_least "$(share_match "$f" '^app::CostlyLess::operator\(\)')" 80
	fi

	# --- kernel frames joined below the user frames (root only) ------------
	if [ "$(id -u)" -eq 0 ] && record_pid "$build-sys" 2 "$dir/syscalls" --seconds 4; then
		f=$REC
		if has_chain_re "$f" '^main$' '^write_loop$' '^entry_SYSCALL'; then
			ok "$build syscalls: user frames (main;write_loop) then kernel frames (entry_SYSCALL_64...)"
		else
			not_ok "$build syscalls: user frames (main;write_loop) then kernel frames (entry_SYSCALL_64...)"
			top_stacks "$f"
		fi
		check "$build syscalls: at least 95% of samples reach main" \
			at_least "$(share "$f" main)" 95
	fi
done

# --- --cstack fp on the no-frame-pointer build: callers lost ---------------

if CSTACK=fp record_pid fp-qsort 2 "$PROGS/nofp/qsort_burn" --seconds 4; then
	fp_main=$(share "$REC" main)
	dw_main=$(share "$TMP/nofp-qsort.collapsed" main)
	if less_than "$fp_main" 50 && [ -n "$dw_main" ] && at_least "$dw_main" 95; then
		ok "nofp qsort: --cstack fp reaches main in ${fp_main}% of samples, dwarf in ${dw_main}%"
	else
		not_ok "nofp qsort: --cstack fp reaches main in ${fp_main}% of samples, dwarf in ${dw_main}%"
		top_stacks "$REC"
	fi
fi

# --- the summary names the method ------------------------------------------

# summary_of MODE: the default output (summary) of a short recording.
summary_of() {
	if start_prog "sum-$1" "$PROGS/nofp/qsort_burn" --seconds 4; then
		run_nprof 20 record -d 1 ${1:+--cstack $1} "$PID"
		wait_pid "$PID" 10
	fi
}
summary_of ""
if grep -q 'unwound with dwarf' "$TMP/np.out"; then
	ok "default: the summary says 'unwound with dwarf'"
else
	not_ok "default: the summary says 'unwound with dwarf'"
	np_diag
fi
if grep -qE '^degraded +0 lost samples, 0 truncated stacks' "$TMP/np.out"; then
	ok "default: no lost samples, no truncated stacks"
else
	not_ok "default: no lost samples, no truncated stacks"
	diag "$(grep -E '^(degraded|note)' "$TMP/np.out")"
fi
summary_of fp
check "--cstack fp: the summary says 'unwound with fp'" grep -q 'unwound with fp' "$TMP/np.out"
check "--cstack fp: a note says callers may be missing" grep -qi 'note.*frame pointers.*missing' "$TMP/np.out"
summary_of dwarf
check "--cstack dwarf: the summary says 'unwound with dwarf'" grep -q 'unwound with dwarf' "$TMP/np.out"

# --- as user nobody (paranoid 2: user space only) --------------------------

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
if [ "$(id -u)" -ne 0 ]; then
	skip "DWARF as user nobody" "needs root to switch users"
elif ! usable_by_others || ! $AS_NOBODY test -x "$PROGS/nofp/split"; then
	not_ok "DWARF as user nobody: nprof and the programs are usable by nobody"
else
	nd=$(nobody_dir)
	if start_prog nb-split $AS_NOBODY "$PROGS/nofp/split" --seconds 7 --truth "$nd/nb.truth"; then
		# every 2 ms: ±5 points is about five standard deviations of a
		# share then, even when a busy host gives split one CPU of two
		# (at 10 ms, two: a CI run under two hogs missed by 5.2)
		RUN_AS=$AS_NOBODY run_nprof 30 record -d 5 -i 2ms -o collapsed -f "$nd/nb.collapsed" "$PID"
		wait_pid "$PID" 20
		f=$nd/nb.collapsed
		if [ "$NP_RC" -eq 0 ] && is_collapsed "$f"; then
			got=$(share_match "$f" '^(main|worker_main)$')
			if at_least "$got" 95; then
				ok "as nobody (paranoid $paranoid), nofp split: ${got}% of samples reach main or worker_main"
			else
				not_ok "as nobody (paranoid $paranoid), nofp split: ${got}% of samples reach main or worker_main"
				top_stacks "$f"
			fi
			bad= seen=
			for fn in $FNS; do
				got=$(share "$f" "$fn")
				want=$(truth_share "$nd/nb.truth" "$fn")
				seen+=" $fn ${got}% vs ${want}%"
				within "$got" "$want" "$TOL" || bad=1
			done
			check "as nobody: shares of $(total "$f") samples within ±$TOL:$seen" [ -z "$bad" ]
			if [ "$paranoid" -ge 2 ]; then
				check "as nobody: no kernel frames" \
					bash -c "! grep -qE 'entry_SYSCALL|do_syscall_64|asm_sysvec' '$f'"
			fi
			grep -qi 'ring buffers cut' "$TMP/np.err" && diag "$(grep -i 'ring buffers cut' "$TMP/np.err")"
		else
			not_ok "as nobody: record -d 4 writes a collapsed file"
			np_diag
		fi
	else
		not_ok "nofp split starts as nobody"
	fi
fi

finish
