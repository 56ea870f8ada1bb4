#!/usr/bin/env bash
# C++ frames come out demangled: a class template method in a namespace, a
# function template in a namespace and a lambda (tests/progs/cxx_demangle);
# with -s, simple names: no namespaces, template arguments or parameters.
. "$(dirname "$0")/lib.sh"
need_build

run_nprof 20 record -d 3 -o collapsed -f "$TMP/full.collapsed" -- "$PROGS/cxx_demangle" --seconds 30
f=$TMP/full.collapsed
if [ "$NP_RC" -eq 0 ] && is_collapsed "$f"; then
	ok "record -- cxx_demangle writes a collapsed file"
else
	not_ok "record -- cxx_demangle writes a collapsed file"
	np_diag
	finish
fi
diag "C++ frames seen:"
frames_matching "$f" '(ns::|lambda|churn|heavy|operator)' | diag_file /dev/stdin 10

check "a frame names ns::Worker<int>::churn" has_frame_match "$f" '(^|[ ])ns::Worker<int>::churn([(]|$)'
check "a frame names ns::heavy<double>" has_frame_match "$f" '(^|[ ])ns::heavy<double>([(]|$)'
check "a frame names the lambda in ns::run_lambda" has_frame_match "$f" '^ns::run_lambda[(]int[)]::[{]lambda[(]int[)]#1[}]::operator[(][)]'
check "no frame is left mangled (_Z...)" bash -c "! grep -qE '(^|;)_Z' '$f'"
check "chain main -> cxx_loop -> ns::Worker<int>::churn" has_chain_re "$f" '^main$' '^cxx_loop([(]double[)])?$' 'ns::Worker<int>::churn'
churn=$(share_match "$f" '::churn')
heavy=$(share_match "$f" '::heavy')
lambda=$(share_match "$f" 'lambda')
diag "shares: churn $churn%, heavy $heavy%, lambda $lambda%"
check "the three hot C++ functions hold most of the samples" \
	awk -v a="$churn" -v b="$heavy" -v c="$lambda" 'BEGIN { exit !(a + b + c >= 80 && a >= 10 && b >= 10 && c >= 10) }'
check "no frame is a bare address" no_bare_addresses "$f"

# --- simple names -------------------------------------------------------------

if start_prog cxx "$PROGS/cxx_demangle" --seconds 30; then
	run_nprof 20 record -d 3 -s -o collapsed -f "$TMP/simple.collapsed" "$PID"
	s=$TMP/simple.collapsed
	if [ "$NP_RC" -eq 0 ] && is_collapsed "$s"; then
		ok "record -s PID writes a collapsed file"
	else
		not_ok "record -s PID writes a collapsed file"
		np_diag
	fi
	diag "simple frames seen:"
	frames_matching "$s" '(churn|heavy|lambda|operator|main|cxx_loop)' | diag_file /dev/stdin 10
	# "Simple" keeps the function's own name, perhaps after its class:
	# churn or Worker::churn, heavy, and no namespace, <...> or (...).
	check "-s: churn is named simply (churn or Worker::churn)" has_frame_match "$s" '^(Worker::)?churn$'
	check "-s: heavy is named simply" has_frame_match "$s" '^heavy$'
	check "-s: no frame has a namespace" bash -c "! grep -q 'ns::' '$s'"
	check "-s: no frame has a template argument list" bash -c "! grep -qE '<(int|double)>' '$s'"
	# (operator() is a name, not a parameter list, so it is left out.)
	check "-s: no frame has a parameter list" \
		bash -c "! sed -e 's/ [0-9]*\$//' -e 's/operator()//g' '$s' | grep -qE '\\((int|double|int, int|double, int)?\\)( const)?(;|\$)'"
	check "-s: the lambda is still there, simply named" has_frame_match "$s" '(lambda|operator)'
fi

finish
