#!/usr/bin/env bash
# nprof record --loop: a running split recorded for 1 s every 2 s, each
# recording to its own file named by %t, until Ctrl-C (SIGINT), then no
# more; the recordings begin a period apart (their times as the files
# say them) and each holds split's burn_* functions; the loop ends by
# itself when the process exits; --loop without %t in -f, with a
# recording longer than the period, under 1 s or for a command is a
# usage error naming the fix.
. "$(dirname "$0")/lib.sh"
need_build

start_prog split "$PROGS/split" --seconds 120 || bail "split starts"
SPLIT=$PID
mkdir -p "$TMP/loop"
"$NPROF" record --loop 2s -d 1 -o pprof -f "$TMP/loop/cpu-%t.pb.gz" "$SPLIT" \
	>"$TMP/loop.out" 2>"$TMP/loop.err" &
LOOP=$!
bg_pids+=("$LOOP")
# Three periods begin at 0, 2 and 4 s; the third recording ends at 5 s.
for ((i = 0; i < 150; i++)); do
	[ "$(ls "$TMP/loop" | wc -l)" -ge 3 ] && break
	sleep 0.1
done
kill -INT "$LOOP"
check "SIGINT: the loop ends (status 0)" wait_pid "$LOOP" 10
wait "$LOOP"
rc=$?
n=$(ls "$TMP/loop" | wc -l)
check "three periods: three files, or four with the one Ctrl-C cut short ($n; status $rc)" \
	bash -c "[ $n -ge 3 ] && [ $n -le 4 ] && [ $rc = 0 ]"
sleep 2.5
check "none after the loop ended" [ "$(ls "$TMP/loop" | wc -l)" = "$n" ]
bad=
for f in "$TMP"/loop/*.pb.gz; do
	"$NPROF" convert -o collapsed "$f" "$f.collapsed" 2>/dev/null &&
		has_frame_match "$f.collapsed" '^burn_(sixty|thirty|ten)$' || bad+=" $(basename "$f")"
done
check "each recording holds split's burn_* functions${bad:+ (not:$bad)}" [ -z "$bad" ]
# The names' times (YYYYMMDD-HHMMSS, when each was written) a period apart.
gaps=$(ls "$TMP/loop" | grep -v collapsed | sed 's/cpu-\(.*\)\.pb\.gz/\1/' |
	while read -r t; do date -d "${t:0:8} ${t:9:2}:${t:11:2}:${t:13:2}" +%s; done |
	awk 'NR > 1 { printf "%d ", $1 - last } { last = $1 }')
check "the files' times are a period apart (gaps: $gaps; 2 s, a second either way)" \
	bash -c "for g in $gaps; do [ \$g -ge 1 ] && [ \$g -le 3 ] || exit 1; done"

# The loop ends when the process does.
start_prog brief "$PROGS/split" --seconds 3 || bail "a 3 s split starts"
mkdir -p "$TMP/brief"
run_nprof 30 record --loop 1s -d 0.5 -o pprof -f "$TMP/brief/cpu-%t.pb.gz" "$PID"
check "a process that exits ends the loop ($NP_SECS s, status $NP_RC), saying so" \
	bash -c "[ $NP_RC = 0 ] && grep -q 'has exited: the loop ends' '$TMP/np.err'"

run_nprof 10 record --loop 5s -d 1 -f "$TMP/cpu.pb.gz" "$SPLIT"
check "--loop with a -f without %t: a usage error saying so" \
	bash -c "[ $NP_RC = 2 ] && grep -q 'with %t in its name' '$TMP/np.err'"
run_nprof 10 record --loop 2s -d 5 -f "$TMP/cpu-%t.pb.gz" "$SPLIT"
check "--loop shorter than -d: a usage error saying so" \
	bash -c "[ $NP_RC = 2 ] && grep -q 'must end within the period' '$TMP/np.err'"
run_nprof 10 record --loop 500ms -d 0.2 -f "$TMP/cpu-%t.pb.gz" "$SPLIT"
check "--loop 500ms: a usage error (1s or more)" \
	bash -c "[ $NP_RC = 2 ] && grep -q '1s or more' '$TMP/np.err'"
run_nprof 10 record --loop 2s -d 1 -f "$TMP/cpu-%t.pb.gz" -- /bin/true
check "--loop of a command: a usage error (a running PID)" \
	bash -c "[ $NP_RC = 2 ] && grep -q 'running PID, not a command' '$TMP/np.err'"
finish
