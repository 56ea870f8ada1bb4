#!/usr/bin/env bash
# The daemon's API tests (daemon_api.sh, daemon_actions.sh,
# daemon_signin.sh) against the sanitizer builds of nprofd: clang
# -fsanitize=address,undefined (leaks checked when a daemon exits), then
# -fsanitize=thread. nprofd is the most threaded program in the tree:
# libmicrohttpd's thread per connection, the job supervisor, the restart
# watchers. Each test's checks are this test's own, named by variant; a
# sanitizer report written by any daemon a test started is a failure of
# its own, its first lines shown.
#
# Only when asked (NPROF_DAEMON_SANITIZE=1, as `make sanitize` sets it):
# two cold clang builds of the daemon and the core, and the API tests at
# a TSan daemon's pace, would add many minutes to `make check`. Unasked,
# the test plans nothing ("1..0 # SKIP"), which tests/run counts neither
# as passed nor as skipped.
#
# The builds come from the Makefile (`make sanitize-daemon-asan` and
# `sanitize-daemon-tsan`, BUILD/sanitize/{asan,tsan}/nprofd), made here
# against NPROF_BUILD as agent_sanitize.sh makes its own. Each sanitized
# nprofd runs the build's nprof, through the symlink beside it
# (BUILD/sanitize/VARIANT/nprof); lib.sh's need_daemon runs the nprofd
# named by NPROF_TEST_NPROFD. The daemons write their reports into files
# (log_path), not into the standard error the tests read, and go on after
# a TSan report (halt_on_error=0), so that one run shows every race.
# What is suppressed, and why, is in tests/integration/daemon_*.supp.
# test-timeout: 3600
. "$(dirname "$0")/lib.sh"
if [ "${NPROF_DAEMON_SANITIZE:-0}" != 1 ]; then
	echo "1..0 # SKIP only when asked: make sanitize (NPROF_DAEMON_SANITIZE=1)"
	exit 0
fi
need_build
need_daemon
command -v clang >/dev/null || bail "clang is installed (scripts/install-deps)"
SAN=$NPROF_BUILD/sanitize
SUPP=$NPROF_SRC/tests/integration
TESTS_RUN=${DAEMON_SANITIZE_TESTS:-daemon_api.sh daemon_actions.sh daemon_signin.sh}

# relay VARIANT TEST OUT: TEST's TAP lines in OUT as this test's checks.
relay() {
	local line desc
	while IFS= read -r line; do
		case $line in
		"ok "*"# SKIP"*)
			desc=${line#ok * - }
			skip "$1: $2: ${desc%% # SKIP*}" "${desc#* # SKIP }" ;;
		"ok "*) ok "$1: $2: ${line#ok * - }" ;;
		"not ok "*) not_ok "$1: $2: ${line#not ok * - }" ;;
		"#"*) echo "$line" ;;
		esac
	done <"$3"
}

# run_test VARIANT TEST: TEST against BUILD/sanitize/VARIANT/nprofd; its
# checks, then one more: no sanitizer report.
run_test() {
	local v=$1 t=$2 out=$TMP/$1-$2.out reports=$TMP/$1-$2.reports t0=$(date +%s) rc f
	# A job's child reports as the sanitized daemon until it execs, by
	# then as the job's user: anyone may write here. One log_path for
	# every sanitizer: the runtimes share it, the last one read wins.
	mkdir -p "$reports"
	chmod 1777 "$reports"
	timeout -k 10 1500 env NPROF_TEST_NPROFD="$SAN/$v/nprofd" \
		ASAN_OPTIONS="log_path=$reports/$v:detect_leaks=1:external_symbolizer_path=$SAN/bin/llvm-symbolizer" \
		LSAN_OPTIONS="suppressions=$SUPP/daemon_lsan.supp:print_suppressions=0" \
		UBSAN_OPTIONS="log_path=$reports/$v:print_stacktrace=1:halt_on_error=1:external_symbolizer_path=$SAN/bin/llvm-symbolizer" \
		TSAN_OPTIONS="log_path=$reports/$v:halt_on_error=0:exitcode=66:second_deadlock_stack=1:suppressions=$SUPP/daemon_tsan.supp:print_suppressions=0:external_symbolizer_path=$SAN/bin/llvm-symbolizer" \
		"$NPROF_SRC/tests/integration/$t" >"$out" 2>&1 </dev/null
	rc=$?
	relay "$v" "$t" "$out"
	if [ $rc -ne 0 ] && ! grep -q '^not ok ' "$out"; then
		not_ok "$v: $t exited with status $rc"
		tail -n 15 "$out" | cut -c1-300 | sed 's/^/#   /'
	fi
	set -- "$reports"/*
	if [ -e "$1" ]; then
		not_ok "$v: $t: no sanitizer report from its daemons ($# written)"
		for f; do
			diag "$(basename "$f"):"
			diag_file "$f" 40
		done
	else
		ok "$v: $t: no sanitizer report from its daemons ($(($(date +%s) - t0))s)"
	fi
}

for cfg in "asan -fsanitize=address,undefined" "tsan -fsanitize=thread"; do
	set -- $cfg
	# BUILD/sanitize/$1/{nprofd,nprof}, up to date
	sanitize_build "$1" "sanitize-daemon-$1" "$2" nprofd || continue
	for t in $TESTS_RUN; do
		run_test "$1" "$t"
	done
done
finish
