#!/usr/bin/env bash
# The JFR writer against the JDK's own `jfr` tool, and the JFR reader
# against a recording the JDK made.
#
# The unit test (tests/unit/jfr_test.c) writes profiles with a known answer
# to $NPROF_BUILD/jfr-test/; here `jfr summary` and `jfr print` must read
# them without an exception and show the stacks (library.function), thread
# names, counts and times we wrote. Then a JVM records a small busy program
# and the reader (`jfr_test --read`) must find the same number of
# execution samples as `jfr summary` counts, and the busy method.
#
# Needs a JDK (Debian: openjdk-17-jdk-headless); without one every check is
# skipped.
set -u
build=${NPROF_BUILD:?set NPROF_BUILD}
unit=$build/tests/unit/jfr_test
dir=$build/jfr-test
n=0 fail=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $1"; }
check() { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }

JFR=$(command -v jfr || true)
[ -z "$JFR" ] && [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/jfr" ] && JFR=$JAVA_HOME/bin/jfr
JAVA=$(command -v java || true)
if [ -z "$JFR" ]; then
	for i in $(seq 1 14); do n=$((n + 1)); echo "ok $n # SKIP no jfr (install openjdk-17-jdk-headless)"; done
	echo "1..$n"
	exit 0
fi

rm -rf "$dir"
check "unit test writes the sample files" \
	'NPROF_BUILD=$build "$unit" >/dev/null && [ -s "$dir/cpu.jfr" ] && [ -s "$dir/alloc.jfr" ]'

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# jfr exits 0 even after some internal errors; look for a stack trace too.
clean() { [ "$1" -eq 0 ] && ! grep -q -E 'Exception|internal error' "$2"; }

"$JFR" summary "$dir/cpu.jfr" >"$out/summary" 2>&1
check "jfr summary reads the cpu recording" 'clean $? "$out/summary"'
check "jfr summary counts 16 execution samples" \
	'grep -Eq "^ *jdk\.ExecutionSample +16 " "$out/summary"'

"$JFR" print --events jdk.ExecutionSample --stack-depth 64 "$dir/cpu.jfr" >"$out/print" 2>&1
check "jfr print reads the execution samples" 'clean $? "$out/print"'
check "jfr print shows 16 samples" \
	'[ "$(grep -c "^jdk.ExecutionSample {" "$out/print")" -eq 16 ]'
check "library functions appear as library.function()" \
	'grep -q "libc.so.6.__memmove_avx_unaligned_erms()" "$out/print" && grep -q "\[kernel\].do_syscall_64()" "$out/print"'
check "known lines are shown, frames in leaf-first order" \
	'grep -A3 "stackTrace = \[" "$out/print" | grep -q "app.compute_hot() line: 40" && grep -q "app.main() line: 12" "$out/print"'
check "thread names and ids are shown" \
	'grep -q "sampledThread = \"worker-1\" (osThreadId = 101)" "$out/print" && grep -q "sampledThread = \"main\" (osThreadId = 100)" "$out/print"'

"$JFR" print --json --events jdk.ExecutionSample "$dir/cpu-timeline.jfr" >"$out/json" 2>&1
check "sample times come from the timeline (first at +1 ms)" \
	'clean $? "$out/json" && grep -q "\"startTime\": \"2023-11-14T22:13:20.001Z\"" "$out/json"'

"$JFR" print --events nprof.Sample "$dir/alloc.jfr" >"$out/alloc" 2>&1
check "other events are nprof.Sample with their values" \
	'clean $? "$out/alloc" && grep -q "value0 = 1048583" "$out/alloc" && grep -q "value1 = 3" "$out/alloc"'

# A -t profile: the thread frames are sampledThread, not stack frames;
# nprof.Profile.threadRoots counts the threads the reader gives them back.
"$JFR" print --events jdk.ExecutionSample "$dir/thread-roots.jfr" >"$out/roots" 2>&1
check "a -t profile: jfr print shows the threads, no thread frames in the stacks" \
	'clean $? "$out/roots" && [ "$(grep -c "^jdk.ExecutionSample {" "$out/roots")" -eq 19 ] &&
	 grep -q "sampledThread = \"worker 1\" (osThreadId = 101)" "$out/roots" && ! grep -q "tid=" "$out/roots"'
"$JFR" summary "$dir/thread-roots.jfr" >"$out/roots-summary" 2>&1 &&
	"$JFR" print --events nprof.Profile "$dir/thread-roots.jfr" >>"$out/roots-summary" 2>&1
check "... jfr summary reads it, nprof.Profile has threadRoots = 3" \
	'clean $? "$out/roots-summary" && grep -q "threadRoots = 3" "$out/roots-summary"'

"$JFR" summary "$dir/empty.jfr" >"$out/empty" 2>&1
check "an empty profile is a valid recording" 'clean $? "$out/empty"'

# The reader on a recording made by the JVM itself.
if [ -z "$JAVA" ]; then
	n=$((n + 1)); echo "ok $n # SKIP no java"
else
	cat >"$out/Busy.java" <<'EOF'
public class Busy {
    static double spin(int n) {
        double s = 0;
        for (int i = 0; i < n; i++) s += Math.sqrt(i) * Math.sin(i);
        return s;
    }
    public static void main(String[] a) throws Exception {
        Thread t = new Thread(() -> {
            double s = 0;
            long end = System.currentTimeMillis() + 1500;
            while (System.currentTimeMillis() < end) s += spin(100000);
            System.out.println(s);
        }, "busy-worker");
        t.start();
        t.join();
    }
}
EOF
	(cd "$out" && "$JAVA" -XX:StartFlightRecording=filename="$out/real.jfr",settings=profile \
		Busy.java >/dev/null 2>&1)
	want=$("$JFR" summary "$out/real.jfr" 2>/dev/null | awk '$1 == "jdk.ExecutionSample" { print $2 }')
	"$unit" --read "$out/real.jfr" >"$out/read" 2>&1
	got=$(sed -n 's/^# event cpu, [0-9]* samples, \([0-9]*\) total.*/\1/p' "$out/read")
	check "the reader reads a JDK recording: $got of ${want:-?} samples, Busy.spin among them" \
		'[ -n "$want" ] && [ "$got" = "$want" ] && grep -q "Busy.spin" "$out/read"'
fi

echo "1..$n"
[ "$fail" -eq 0 ]
