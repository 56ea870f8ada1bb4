#!/usr/bin/env bash
# nprof convert on a collapsed file written by hand (known totals): to
# pprof, speedscope, dot and collapsed and back, checked with the tools
# that read those formats (go tool pprof, dot, python3's json), plus
# --include/--exclude/--reverse and bad input (one clear line, exit 1 or 2).
. "$(dirname "$0")/lib.sh"
[ -x "$NPROF" ] || bail "nprof is built ($NPROF)"

# Distinct stacks, so a round trip must give back exactly these lines.
# Frame names with spaces, a kernel frame, thread frames; total 1000.
cat >"$TMP/in.collapsed" <<'EOF'
main;run;burn_a 600
main;run;burn_b 250
main;recurse;recurse;recurse 50
main;operator new(unsigned long);malloc 40
main;sys_read_[k];do_syscall_64_[k] 30
[worker 1 tid=12];main;run;burn_a 20
[worker 2 tid=13];main;run;burn_b 10
EOF
want_total=1000
sort "$TMP/in.collapsed" >"$TMP/in.sorted"

# conv DESCRIPTION ARGS...: runs `nprof convert ARGS`, ok when it succeeds.
conv() {
	local desc=$1
	shift
	run_nprof 60 convert "$@"
	if [ "$NP_RC" -eq 0 ]; then ok "$desc"; else not_ok "$desc"; np_diag; fi
}

# --- pprof --------------------------------------------------------------------

conv "collapsed -> pprof (.pb.gz from the extension)" "$TMP/in.collapsed" "$TMP/out.pb.gz"
check "the pprof file is gzipped" \
	test "$(head -c 2 "$TMP/out.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b
conv "pprof -> collapsed" "$TMP/out.pb.gz" "$TMP/back.collapsed"
sort "$TMP/back.collapsed" >"$TMP/back.sorted"
if cmp -s "$TMP/in.sorted" "$TMP/back.sorted"; then
	ok "collapsed -> pprof -> collapsed keeps every line"
else
	not_ok "collapsed -> pprof -> collapsed keeps every line"
	diag "$(diff "$TMP/in.sorted" "$TMP/back.sorted" | head -20)"
fi
gunzip -c "$TMP/out.pb.gz" >"$TMP/out.raw.pprof"
conv "an uncompressed pprof file reads too" "$TMP/out.raw.pprof" "$TMP/raw.collapsed"
check "... with the same lines" cmp -s "$TMP/back.collapsed" "$TMP/raw.collapsed"

if command -v go >/dev/null 2>&1; then
	export HOME=${HOME:-$TMP} GOCACHE=$TMP/gocache GOPATH=$TMP/gopath GOFLAGS=-mod=mod
	if go tool pprof -raw "$TMP/out.pb.gz" >"$TMP/raw.txt" 2>"$TMP/raw.err"; then
		ok "go tool pprof -raw reads the file"
	else
		not_ok "go tool pprof -raw reads the file"
		diag_file "$TMP/raw.err"
	fi
	check "-raw: samples/count sample type" grep -q '^samples/count' "$TMP/raw.txt"
	check "-raw: thread labels on per-thread samples" grep -q 'thread:\[worker 1\]' "$TMP/raw.txt"
	check "-raw: the thread id label" grep -q 'thread_id:\[12\]' "$TMP/raw.txt"
	if go tool pprof -top -nodecount=100 "$TMP/out.pb.gz" >"$TMP/top.txt" 2>&1; then
		ok "go tool pprof -top reads the file"
	else
		not_ok "go tool pprof -top reads the file"
		diag_file "$TMP/top.txt"
	fi
	check "-top: the total is $want_total" grep -q "of $want_total total" "$TMP/top.txt"
	if awk '$NF == "burn_a" && $1 == 620 { f = 1 } END { exit !f }' "$TMP/top.txt" &&
		grep -q 'operator new(unsigned long)$' "$TMP/top.txt" &&
		grep -q 'sys_read_\[k\]$' "$TMP/top.txt"; then
		ok "-top: names and self values (burn_a 620)"
	else
		not_ok "-top: names and self values (burn_a 620)"
		diag_file "$TMP/top.txt" 20
	fi
else
	skip "go tool pprof reads the file" "go not installed (scripts/install-deps installs golang-go)"
fi

# --- speedscope -----------------------------------------------------------------

conv "collapsed -> speedscope (.speedscope.json)" "$TMP/in.collapsed" "$TMP/out.speedscope.json"
if command -v python3 >/dev/null 2>&1; then
	check "python3 -m json.tool parses it" \
		python3 -m json.tool "$TMP/out.speedscope.json" /dev/null
	# Three threads (the anonymous one and two named): three profiles,
	# weights adding up to the total, no thread frames in the stacks.
	if python3 - "$TMP/out.speedscope.json" "$want_total" >"$TMP/ss.txt" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["$schema"] == "https://www.speedscope.app/file-format-schema.json"
frames = d["shared"]["frames"]
profs = d["profiles"]
assert len(profs) == 3, "profiles: %d" % len(profs)
names = sorted(p["name"] for p in profs)
assert names == ["no thread", "worker 1 tid=12", "worker 2 tid=13"], names
total = 0
for p in profs:
    assert p["type"] == "sampled" and len(p["samples"]) == len(p["weights"])
    assert p["endValue"] == sum(p["weights"])
    total += sum(p["weights"])
    for s in p["samples"]:
        for i in s:
            assert " tid=" not in frames[i]["name"], frames[i]["name"]
assert total == int(sys.argv[2]), total
EOF
	then
		ok "speedscope: one profile per thread, weights add up to $want_total"
	else
		not_ok "speedscope: one profile per thread, weights add up to $want_total"
		diag_file "$TMP/ss.txt"
	fi
else
	skip "python3 -m json.tool parses it" "python3 not installed"
fi

# --- dot -------------------------------------------------------------------------

conv "collapsed -> dot (.dot)" "$TMP/in.collapsed" "$TMP/out.dot"
check "dot: the legend says the total" grep -q 'Total samples: 1000' "$TMP/out.dot"
check "dot: burn_a with self 620 (62.0%)" grep -q 'label="burn_a\\n620 (62.0%)' "$TMP/out.dot"
if command -v dot >/dev/null 2>&1; then
	if dot -Tsvg "$TMP/out.dot" -o "$TMP/out.svg" 2>"$TMP/dot.err" && grep -q '<svg' "$TMP/out.svg"; then
		ok "dot -Tsvg renders it"
	else
		not_ok "dot -Tsvg renders it"
		diag_file "$TMP/dot.err"
	fi
else
	skip "dot -Tsvg renders it" "graphviz not installed"
fi

# --- collapsed, standard streams, other writers --------------------------------------

conv "collapsed -> collapsed" "$TMP/in.collapsed" "$TMP/same.collapsed"
check "... is the same file" cmp -s "$TMP/in.collapsed" "$TMP/same.collapsed"
run_nprof 30 convert -o collapsed "$TMP/out.pb.gz" -
check "-o collapsed - writes standard output" cmp -s "$TMP/np.out" "$TMP/back.collapsed"
if timeout 30 "$NPROF" convert -o collapsed - - <"$TMP/in.collapsed" >"$TMP/stdin.out" 2>"$TMP/stdin.err" &&
	cmp -s "$TMP/stdin.out" "$TMP/in.collapsed"; then
	ok "- as INPUT reads standard input"
else
	not_ok "- as INPUT reads standard input"
	diag_file "$TMP/stdin.err"
fi
run_nprof 30 convert -o flat "$TMP/out.pb.gz" -
check "pprof -> flat: burn_a on top" awk 'NR == 2 && $1 == 620 && $NF == "burn_a" { f = 1 } END { exit !f }' "$TMP/np.out"

# --- JFR ---------------------------------------------------------------------------

conv "collapsed -> jfr (.jfr)" "$TMP/in.collapsed" "$TMP/out.jfr"
check "the JFR file starts with FLR\\0" test "$(head -c 4 "$TMP/out.jfr" | od -An -c | tr -d ' ')" = 'FLR\0'
conv "jfr -> collapsed (recognized by its magic)" "$TMP/out.jfr" "$TMP/jfr.collapsed"
check "... with the total of $want_total" test "$(total "$TMP/jfr.collapsed")" = "$want_total"
check "... and burn_a's stacks" test "$(share "$TMP/jfr.collapsed" burn_a)" = 62.0
# Every line back, thread roots included: JFR keeps the thread as
# sampledThread (jfr print shows "worker 1" tid 12,
# tests/integration/formats_validate.sh) and nprof.Profile's threadRoots
# tells the reader to put the [name tid=N] root frame back.
sort "$TMP/jfr.collapsed" >"$TMP/jfr.sorted"
if cmp -s "$TMP/in.sorted" "$TMP/jfr.sorted"; then
	ok "collapsed -> jfr -> collapsed keeps every line, thread roots too"
else
	not_ok "collapsed -> jfr -> collapsed keeps every line, thread roots too"
	diag "$(diff "$TMP/in.sorted" "$TMP/jfr.sorted" | head -20)"
fi
grep -v 'tid=' "$TMP/in.collapsed" >"$TMP/nothreads.collapsed"
conv "collapsed without thread roots -> jfr" "$TMP/nothreads.collapsed" "$TMP/nothreads.jfr"
conv "... -> collapsed" "$TMP/nothreads.jfr" "$TMP/nothreads.back.collapsed"
if cmp -s <(sort "$TMP/nothreads.collapsed") <(sort "$TMP/nothreads.back.collapsed"); then
	ok "... gives back exactly the same lines"
else
	not_ok "... gives back exactly the same lines"
	diag "$(diff <(sort "$TMP/nothreads.collapsed") <(sort "$TMP/nothreads.back.collapsed") | head -20)"
fi

# --- transforms ----------------------------------------------------------------------

run_nprof 30 convert --include 'burn_(a|b)' --exclude worker -o collapsed "$TMP/in.collapsed" -
check "--include/--exclude keep the matching stacks" \
	test "$(sort "$TMP/np.out" | tr '\n' '|')" = "main;run;burn_a 600|main;run;burn_b 250|"
run_nprof 30 convert --reverse --include '^malloc$' -o collapsed "$TMP/in.collapsed" -
check "--reverse puts the leaf first" \
	test "$(cat "$TMP/np.out")" = "malloc;operator new(unsigned long);main 40"
run_nprof 30 convert --reverse --include 'tid=12' -o collapsed "$TMP/out.pb.gz" -
check "--reverse keeps the thread frame at the root" \
	test "$(cat "$TMP/np.out")" = "[worker 1 tid=12];burn_a;run;main 20"

# --- bad input: one line, exit 1 (failure) or 2 (usage) ------------------------------

# expect_error DESCRIPTION STATUS REGEX ARGS...
expect_error() {
	local desc=$1 status=$2 re=$3
	shift 3
	run_nprof 30 "$@"
	if one_error_line && [ "$NP_RC" -eq "$status" ] && err_says "$re"; then
		ok "$desc: $(head -c 200 "$TMP/np.err")"
	else
		not_ok "$desc (want status $status, one line matching /$re/)"
		np_diag
	fi
}

head -c 4096 /dev/zero | tr '\000' '\377' >"$TMP/garbage.bin"
printf '\x01\x02binary\x00junk' >>"$TMP/garbage.bin"
printf 'main;run 10\nthis line has no count\n' >"$TMP/bad.collapsed"
: >"$TMP/empty"
expect_error "a garbage file" 1 'garbage.bin: .*(pprof|gzip|protobuf)' convert "$TMP/garbage.bin" "$TMP/x.collapsed"
check "... leaves no output file" test ! -e "$TMP/x.collapsed"
expect_error "a collapsed line without a count" 1 "line 2: 'count' is not a count" convert "$TMP/bad.collapsed" "$TMP/x.collapsed"
expect_error "a missing file" 1 'cannot read .*/nope.*No such file' convert "$TMP/nope.pb.gz" "$TMP/x.collapsed"
expect_error "an empty file" 1 'empty' convert "$TMP/empty" "$TMP/x.collapsed"
expect_error "an unknown -o format" 2 '-o bogus: unknown format; use one of:.*pprof' convert -o bogus "$TMP/in.collapsed" "$TMP/x"
expect_error "an unknown extension" 2 'x\.bin: cannot tell the format.*-o FORMAT' convert "$TMP/in.collapsed" "$TMP/x.bin"
expect_error "standard output without -o" 2 'needs -o FORMAT' convert "$TMP/in.collapsed" -
expect_error "a bad regex" 2 "--include '\(': not a valid extended regex" convert --include '(' "$TMP/in.collapsed" "$TMP/x.collapsed"
expect_error "no OUTPUT" 2 'no OUTPUT given' convert "$TMP/in.collapsed"
expect_error "an unknown option" 2 'unknown option --frobnicate' convert --frobnicate "$TMP/in.collapsed" "$TMP/x.collapsed"
expect_error "an unwritable OUTPUT" 1 'cannot write /nonexistent/dir/x.collapsed' convert "$TMP/in.collapsed" /nonexistent/dir/x.collapsed

# Several inputs merge into one; --parts reads them from one stream,
# each after its length and a newline (as nprofd sends them).
run_nprof 10 convert -o collapsed "$TMP/in.collapsed" "$TMP/out.pb.gz" "$TMP/merged.collapsed"
check "two inputs (collapsed and pprof) merge: every stack at twice its value" \
	eval '[ $NP_RC = 0 ] && [ "$(total "$TMP/merged.collapsed")" = $((2 * $(total "$TMP/in.collapsed"))) ]'
{
	printf '%d\n' "$(stat -c %s "$TMP/out.pb.gz")"; cat "$TMP/out.pb.gz"
	printf '%d\n' "$(stat -c %s "$TMP/in.collapsed")"; cat "$TMP/in.collapsed"
} >"$TMP/parts"
run_nprof 10 convert --parts -o collapsed "$TMP/parts" "$TMP/parts.collapsed"
check "--parts: the stream's two profiles merged the same" cmp -s "$TMP/merged.collapsed" "$TMP/parts.collapsed"
# A part under roots: its stacks go under them, a process's and a host's
# (a service's workers merged, nprofd's "profile now" of a selector).
{
	printf '%d\t[host b]\t[web pid=12]\n' "$(stat -c %s "$TMP/out.pb.gz")"; cat "$TMP/out.pb.gz"
	printf '%d\t[web pid=13]\n' "$(stat -c %s "$TMP/in.collapsed")"; cat "$TMP/in.collapsed"
} >"$TMP/rooted"
run_nprof 10 convert --parts -o collapsed "$TMP/rooted" "$TMP/rooted.collapsed"
check "--parts under roots: every stack of the first under [host b];[web pid=12], at its value" \
	eval '[ $NP_RC = 0 ] && [ "$(grep "^\[host b\];\[web pid=12\];" "$TMP/rooted.collapsed" | total /dev/stdin)" = "$(total "$TMP/in.collapsed")" ]'
check "... and the second's under [web pid=13] alone: nothing else" \
	eval '[ "$(grep "^\[web pid=13\];" "$TMP/rooted.collapsed" | total /dev/stdin)" = "$(total "$TMP/in.collapsed")" ] && [ "$(total "$TMP/rooted.collapsed")" = $((2 * $(total "$TMP/in.collapsed"))) ]'
run_nprof 10 convert --parts -o pprof "$TMP/rooted" "$TMP/rooted.pb.gz"
run_nprof 10 convert -o collapsed "$TMP/rooted.pb.gz" "$TMP/rooted2.collapsed"
check "... and through pprof the roots stay roots (and the same stacks)" \
	eval '[ $NP_RC = 0 ] && cmp -s <(sort "$TMP/rooted.collapsed") <(sort "$TMP/rooted2.collapsed")'
{ printf '%d\tweb\n' "$(stat -c %s "$TMP/in.collapsed")"; cat "$TMP/in.collapsed"; } >"$TMP/badroot"
run_nprof 10 convert --parts -o collapsed "$TMP/badroot" -
check "--parts, a root that is not a root's name: one line naming it" \
	eval '[ $NP_RC = 1 ] && one_error_line && err_says "part 1: .*roots"'
printf '9999\nshort' >"$TMP/cut"
run_nprof 10 convert --parts -o collapsed "$TMP/cut" -
check "--parts, a part cut short: one line naming it" \
	eval '[ $NP_RC = 1 ] && one_error_line && err_says "part 1 .* cut short"'
run_nprof 10 convert "$TMP/in.collapsed" "$TMP/in.jfr.none" "$TMP/x.collapsed"
check "an input that is not there: one line naming it" \
	eval '[ $NP_RC = 1 ] && one_error_line && err_says "in.jfr.none"'

run_nprof 10 convert --help
check "--help prints the usage" grep -q '^usage: nprof convert' "$TMP/np.out"

finish
