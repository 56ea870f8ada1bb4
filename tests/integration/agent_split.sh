#!/usr/bin/env bash
# The known CPU split through the agent, both ways a service's operator
# asks for it: GET /prof?event=cpu|itimer&duration=5&output=collapsed, and
# `nprof record -e cpu|itimer PID` to a process with the agent loaded; on
# tests/progs/split built with frame pointers and without (nofp/split,
# whose stacks only DWARF unwinds). Each profile is held to the truth of
# its own window, which split writes at a SIGUSR1 before and after it:
# burn_sixty, burn_thirty and burn_ten within 5 points of their measured
# shares, >= 95% of samples reaching main or worker_main, and the chains
# from both down to each burn_*.
#
# Enough samples for a 5-point bar: interval 1 ms. cpu samples every 1 ms
# of thread CPU time. itimer's timers are checked at scheduler ticks, so it
# samples at most CONFIG_HZ times (often 250) per CPU-second whatever the
# interval: 5 s of a program that gets one core is ~1250 samples, where the
# 60% share's sd is 1.4 points and the bar 3.6 sds wide. So the two
# programs are recorded side by side for cpu (plenty of samples even on a
# busy machine), and one at a time for itimer, the other stopped with
# SIGSTOP meanwhile so that the one recorded gets all the CPU there is.
# A profile with too few samples to judge (under 1000: a machine that
# leaves split a fifth of a core gives ~250 itimer samples in 5 s) is
# taken again, the other program stopped, for longer (lib.sh's
# split_longer), and that one is judged.
# (split leaves out of its truth the CPU time a virtual machine's stalls
# charge it, which no sampler sees: STALL_NS in tests/progs/split.c.)
. "$(dirname "$0")/lib.sh"
need_build
AGENT=$NPROF_BUILD/libnprof.so
[ -r "$AGENT" ] || bail "libnprof.so is built ($AGENT)"
command -v curl >/dev/null || bail "curl is installed (scripts/install-deps)"
SECS=5

# Each program's PID, HTTP address, and count of truth snapshots taken.
declare -A pid addr token marks

# start_split NAME BINARY: split with the agent and its HTTP endpoint.
start_split() {
	local name=$1 bin=$2
	if ! start_prog "$name" env LD_PRELOAD="$AGENT" NPROF_HTTP=127.0.0.1:0 \
		"$bin" --seconds 300 --truth "$TMP/$name.truth" || ! wait_http "$TMP/$name.err"; then
		diag_file "$TMP/$name.err"
		bail "$name: split starts with the agent and its HTTP endpoint"
	fi
	pid[$name]=$PID
	addr[$name]=$ADDR
	token[$name]=$TOKEN
}

# mark NAME: takes NAME's next snapshot of its truth.
mark() {
	marks[$1]=$((${marks[$1]:-0} + 1))
	truth_mark "${pid[$1]}" "$TMP/$1.truth" "${marks[$1]}" ||
		bail "$1: split writes a snapshot of its truth at SIGUSR1"
}
# window NAME OUT: the truth between NAME's last two snapshots, into OUT.
window() {
	truth_window "$TMP/$1.truth.$((marks[$1] - 1))" "$TMP/$1.truth.${marks[$1]}" >"$2"
}

# http_bg NAME EVENT [SECS]: GET /prof for SECS s (default $SECS) from
# NAME, in the background; the profile in $TMP/NAME-http-EVENT.collapsed.
http_bg() {
	local out=$TMP/$1-http-$2
	HTTP_SECS=${3:-$SECS}
	curl -s -m 90 -o "$out.collapsed" -w '%{http_code}' -H "Authorization: Bearer ${token[$1]}" \
		"http://${addr[$1]}/prof?event=$2&duration=$HTTP_SECS&interval=1ms&output=collapsed" \
		>"$out.code" &
	HTTP_BG=$!
}

# http_done NAME EVENT: waits for http_bg, then takes the closing snapshot.
http_done() {
	wait "$HTTP_BG"
	mark "$1"
	window "$1" "$TMP/$1-http-$2.truth"
}

# http_check NAME EVENT: the last http_bg's reply and profile.
http_check() {
	local out=$TMP/$1-http-$2 code
	code=$(cat "$out.code")
	check "$1: GET /prof?event=$2&duration=$HTTP_SECS&output=collapsed: 200 (got $code)" \
		[ "$code" = 200 ]
	split_check "$1 /prof $2" "$out.collapsed" "$out.truth"
}

# record_run NAME EVENT [SECS]: nprof record -e EVENT -d SECS (default
# $SECS) NAME's PID through the agent, then the closing snapshot.
record_run() {
	local out=$TMP/$1-record-$2
	REC_SECS=${3:-$SECS}
	run_nprof 90 record -e "$2" -i 1ms -d "$REC_SECS" -o collapsed -f "$out.collapsed" "${pid[$1]}"
	mark "$1"
	window "$1" "$out.truth"
}

# record_check NAME EVENT: the last record_run's run and profile.
record_check() {
	local out=$TMP/$1-record-$2
	if [ "$NP_RC" -eq 0 ]; then
		ok "$1: record -e $2 -d $REC_SECS PID through the agent (${NP_SECS}s)"
	else
		not_ok "$1: record -e $2 -d $REC_SECS PID through the agent"
		np_diag
	fi
	split_check "$1 record $2" "$out.collapsed" "$out.truth"
}

# take KIND NAME EVENT [SECS]: one profile of NAME (KIND http: GET /prof;
# record: nprof record PID) between two snapshots of its truth.
take() {
	mark "$2"
	if [ "$1" = http ]; then
		http_bg "$2" "$3" "${4:-}"
		http_done "$2" "$3"
	else
		record_run "$2" "$3" "${4:-}"
	fi
}

# judge KIND NAME EVENT: the checks of the last such profile. One with too
# few samples to judge (split_longer) is taken again first, for longer,
# with the other program stopped.
judge() {
	local f=$TMP/$2-$1-$3.collapsed more other=fp
	more=$(split_longer "$f" "$SECS")
	if [ -n "$more" ]; then
		[ "$2" = fp ] && other=nofp
		diag "$2 $1 $3: $(total "$f") samples in $SECS s, too few to judge: again for $more s"
		kill -STOP "${pid[$other]}"
		take "$1" "$2" "$3" "$more"
		[ "${stopped:-}" = "$other" ] || kill -CONT "${pid[$other]}"
	fi
	if [ "$1" = http ]; then
		http_check "$2" "$3"
	else
		record_check "$2" "$3"
	fi
}

start_split fp "$PROGS/split"
start_split nofp "$PROGS/nofp/split"

# --- cpu: both programs at once, each both ways -------------------------------------
mark fp; mark nofp
http_bg fp cpu
record_run nofp cpu
http_done fp cpu
judge record nofp cpu
judge http fp cpu
mark fp; mark nofp
http_bg nofp cpu
record_run fp cpu
http_done nofp cpu
judge record fp cpu
judge http nofp cpu

# --- itimer: one program at a time --------------------------------------------------
stopped=nofp
kill -STOP "${pid[nofp]}"
take http fp itimer
judge http fp itimer
take record fp itimer
judge record fp itimer
stopped=fp
kill -STOP "${pid[fp]}"
kill -CONT "${pid[nofp]}"
take http nofp itimer
judge http nofp itimer
take record nofp itimer
judge record nofp itimer
stopped=
kill -CONT "${pid[fp]}"

for p in "${pid[@]}"; do
	kill -TERM "$p"
	wait_pid "$p" 10
done
finish
