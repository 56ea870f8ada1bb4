#!/usr/bin/env bash
# bench/compare --smoke: every figure of the side-by-side benchmark once,
# tiny, each tool's output checked by the bench itself (the profile names
# spin_leaf, the dump holds every thread, the flame graph its functions,
# ...), so that the bench cannot rot while benchmarks stay out of `make
# check`. Nothing here is timed: it checks that the bench ran, that every
# figure printed its rows with nprof's value, that each peer either ran
# or was skipped with a line naming its package, and that a tool whose
# output is wrong is caught (a fake nprof).
. "$(dirname "$0")/lib.sh"
need_build
[ -e "$NPROF_BUILD/libnprof.so" ] || bail "the agent is built ($NPROF_BUILD/libnprof.so)"
command -v python3 >/dev/null || bail "python3 is installed (scripts/install-deps)"
COMPARE=$NPROF_SRC/bench/compare

"$COMPARE" --smoke "$NPROF_BUILD" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ]; then
	ok "bench/compare --smoke exits 0"
else
	not_ok "bench/compare --smoke exits 0 (status $rc)"
	diag_file "$TMP/out" 40
	diag_file "$TMP/err" 20
fi
if grep -q '^FAILED' "$TMP/out"; then
	not_ok "no tool failed its output's check"
	grep '^FAILED' "$TMP/out" | cut -c1-300 | sed 's/^/#   /'
else
	ok "no tool failed its output's check"
fi

# figure METRICS: the figure printed one row per metric (a row starts
# with "FIGURE: "), each with nprof's value (a number, or xN.NNN).
for want in record:2 attach:2 stacks:2 alloc:1 convert:2 startup:2; do
	fig=${want%:*} n=${want#*:}
	rows=$(grep -cE "^$fig: .*[^ ]  +x?[0-9]+\.[0-9]+  " "$TMP/out")
	if [ "$rows" -ge "$n" ] && ! grep -E "^$fig: " "$TMP/out" | grep -q failed; then
		ok "figure $fig printed its $n rows with nprof's value"
	else
		not_ok "figure $fig printed its $n rows with nprof's value ($rows)"
		grep -E "^$fig: " "$TMP/out" | sed 's/^/#   /'
	fi
done

# Each peer ran (a ratio in its row) or is skipped with its package named.
for peer in 'perf record -g -F 1000' 'perf record -g -p + script' 'eu-stack -p' \
	'gdb thread apply all bt' 'jemalloc prof' 'heaptrack' 'go tool pprof -svg' \
	'perf --version'; do
	if grep -F -- "$peer" "$TMP/out" | grep -qE '[0-9]\.[0-9]{3} +[0-9]\.[0-9]{3} +[0-9]\.[0-9]{3}$'; then
		ok "peer '$peer' ran beside nprof, with a ratio"
	elif line=$(grep -F "skipped" "$TMP/out" | grep -F -- "$peer"); then
		if [[ $line == *"Debian package"* || $line == *"not permitted"* ]]; then
			skip "peer '$peer' ran beside nprof" "${line#skipped  }"
		else
			not_ok "peer '$peer' skipped with a reason naming its package: $line"
		fi
	else
		not_ok "peer '$peer' ran beside nprof or was skipped"
	fi
done

# A wrong output is caught: an "nprof" that prints something else.
mkdir -p "$TMP/fake"
printf '#!/bin/sh\necho hello\n' >"$TMP/fake/nprof"
chmod +x "$TMP/fake/nprof"
ln -s "$NPROF_BUILD/libnprof.so" "$TMP/fake/libnprof.so"
ln -s "$NPROF_BUILD/tests" "$TMP/fake/tests"
"$COMPARE" --smoke --only startup "$TMP/fake" >"$TMP/fake.out" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q '^FAILED  startup: nprof --version' "$TMP/fake.out"; then
	ok "a tool whose output is wrong fails the smoke run (status $rc, named)"
else
	not_ok "a tool whose output is wrong fails the smoke run (status $rc)"
	diag_file "$TMP/fake.out" 20
fi
finish
