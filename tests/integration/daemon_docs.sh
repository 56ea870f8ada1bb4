#!/usr/bin/env bash
# docs/api.md's examples are the real thing: every ```sh block of it runs,
# in order, in one shell, against a private nprofd (S its socket, PID a
# running split), and each does what the page says.
. "$(dirname "$0")/lib.sh"
need_build
need_daemon
command -v jq >/dev/null || bail "jq is installed (scripts/install-deps)"
DOC=$NPROF_SRC/docs/api.md
start_daemon /dev/null || bail "nprofd starts"
start_prog split "$PROGS/split" --seconds 120 || bail "split starts"
mkdir -p "$TMP/docs"
awk '/^```sh$/ { on = 1; n++; print "echo \"### block " n "\""; next }
     /^```/ { on = 0; next } on' "$DOC" >"$TMP/docs/examples.sh"
blocks=$(grep -c '^```sh$' "$DOC")
( cd "$TMP/docs" && S=$SOCK PID=$PID timeout 120 bash -e -o pipefail examples.sh ) \
	>"$TMP/docs/out.txt" 2>"$TMP/docs/err.txt"
rc=$?
check "all $blocks sh blocks of docs/api.md run without an error (status $rc)" [ "$rc" = 0 ]
[ "$rc" = 0 ] || { diag_file "$TMP/docs/err.txt"; diag "$(tail -5 "$TMP/docs/out.txt")"; }
out=$TMP/docs/out.txt
check "whoami: root, admin, over the socket" grep -q '"admin":true,"via":"socket"' "$out"
check "the workers block shows split's worker" grep -q '"name": "split"' "$out"
check "the instance ran to FINISHED" grep -q '"status":"FINISHED"' "$out"
check "the stop block printed STOPPED... or RUNNING while it stops" grep -qE '^(STOPPED|RUNNING)$' "$out"
check "the thread dump as text names a thread of split" grep -q burner "$out"
check "cpu.pb.gz is gzip and cpu.html a page" \
	bash -c "[ \"\$(head -c 2 '$TMP/docs/cpu.pb.gz' | od -An -tx1 | tr -d ' ')\" = 1f8b ] && grep -q '<html' '$TMP/docs/cpu.html'"
check "the collapsed download's top stack ends in a burn_*" \
	bash -c "grep -A1 'format=collapsed' '$TMP/docs/examples.sh' >/dev/null && grep -qE 'burn_(sixty|thirty|ten) [0-9]+$' '$out'"
check "the series block sums the schedule's page-faults recordings over time" \
	grep -qE '^\{"recordings":[1-9][0-9]*,"step":15,"unit":"count","total":[0-9]+\}$' "$out"
check "the token block made a token" bash -c "sqlite3 '$D/state/nprofd.db' 'SELECT name FROM tokens' | grep -qx docs"
check "the audit block lists the last requests" grep -q '"method":"POST"' "$out"
check "the error example names field mode" grep -q '"field":"mode"' "$out"
finish
