#!/usr/bin/env bash
# nprof diff: two collapsed profiles with known numbers (one function
# doubles its share, one disappears, one appears) through the table, the
# collapsed output and the flame graph in a browser (tests/e2e/diff.test.js);
# errors in one line; then two real recordings of tests/progs/split whose
# CPU split changes by command line, the function that got more CPU on top.
. "$(dirname "$0")/lib.sh"
[ -x "$NPROF" ] || bail "nprof is built ($NPROF)"

# BEFORE 400: alpha 25%, beta 60%, gone 15%. AFTER 800: alpha 50%,
# beta 37.5%, fresh 12.5%. The same files as diff.test.js writes.
printf 'main;work;alpha 100\nmain;work;beta 240\nmain;gone 60\n' >"$TMP/before.collapsed"
printf 'main;work;alpha 400\nmain;work;beta 300\nmain;fresh 100\n' >"$TMP/after.collapsed"

# --- the table -------------------------------------------------------------------

run_nprof 30 diff "$TMP/before.collapsed" "$TMP/after.collapsed"
check "diff BEFORE AFTER succeeds" [ "$NP_RC" -eq 0 ]
[ "$NP_RC" -eq 0 ] || np_diag
# Rows: self before, self after, self change, total before, total after,
# total change, function.
row() { awk -v n="$1" 'NR == n + 2 { print $1, $2, $3, $4, $5, $6, $7 }' "$TMP/np.out"; }
check "the first line gives both totals" grep -q '^# BEFORE 400 samples, AFTER 800 samples' "$TMP/np.out"
check "top row: alpha doubled its share, 25% -> 50%, +25 points" \
	[ "$(row 1)" = "25.00% 50.00% +25.00 25.00% 50.00% +25.00 alpha" ]
check "then beta, 60% -> 37.5%" [ "$(row 2)" = "60.00% 37.50% -22.50 60.00% 37.50% -22.50 beta" ]
check "then gone, which disappeared: 15% -> 0" [ "$(row 3)" = "15.00% 0.00% -15.00 15.00% 0.00% -15.00 gone" ]
check "then fresh, which appeared: 0 -> 12.5%" [ "$(row 4)" = "0.00% 12.50% +12.50 0.00% 12.50% +12.50 fresh" ]
[ "$(row 1)" = "25.00% 50.00% +25.00 25.00% 50.00% +25.00 alpha" ] || diag_file "$TMP/np.out"

run_nprof 30 diff --no-normalize --top 2 "$TMP/before.collapsed" "$TMP/after.collapsed"
check "--no-normalize: raw values, alpha +300" [ "$(row 1)" = "100 400 +300 100 400 +300 alpha" ]
check "--no-normalize: fresh's +100 comes before beta's +60" [ "$(row 2 | awk '{ print $NF }')" = fresh ]
check "--top 2: two rows" [ "$(wc -l <"$TMP/np.out")" -eq 4 ]

# --- collapsed ---------------------------------------------------------------------

run_nprof 30 diff -o collapsed "$TMP/before.collapsed" "$TMP/after.collapsed"
sort "$TMP/np.out" >"$TMP/diff.sorted"
# Normalized, BEFORE is scaled to AFTER's total (x2), as difffolded.pl -n.
printf '%s\n' 'main;fresh 0 100' 'main;gone 120 0' 'main;work;alpha 200 400' 'main;work;beta 480 300' |
	sort >"$TMP/want.sorted"
if cmp -s "$TMP/diff.sorted" "$TMP/want.sorted"; then
	ok "collapsed: STACK BEFORE AFTER per stack of either profile, BEFORE scaled to AFTER's total"
else
	not_ok "collapsed: STACK BEFORE AFTER per stack of either profile"
	diag "$(diff "$TMP/want.sorted" "$TMP/diff.sorted")"
fi
run_nprof 30 diff --no-normalize "$TMP/before.collapsed" "$TMP/after.collapsed" -f "$TMP/raw.collapsed"
check "-f x.collapsed picks collapsed; --no-normalize keeps raw values" \
	grep -qx 'main;work;alpha 100 400' "$TMP/raw.collapsed"

# The inputs may be in different formats: AFTER as pprof.
run_nprof 30 convert "$TMP/after.collapsed" "$TMP/after.pb.gz"
run_nprof 30 diff "$TMP/before.collapsed" "$TMP/after.pb.gz"
check "collapsed against pprof: the same table" \
	[ "$(row 1)" = "25.00% 50.00% +25.00 25.00% 50.00% +25.00 alpha" ]

# --- the flame graph, in a browser ----------------------------------------------------

run_nprof 30 diff "$TMP/before.collapsed" "$TMP/after.collapsed" -f "$TMP/diff.html"
check "-f diff.html writes the flame graph" grep -q '"beforeTotal":400' "$TMP/diff.html"
check "a diff's page has no timeline (its slot holds null, not the template's preview)" \
	grep -q 'id="timeline">null</script>' "$TMP/diff.html"
if need_browser; then
	NPROF_DIFF_PAGE=$TMP/diff.html run_js diff.test.js
else
	skip "the diff page in a browser" "$BROWSER_WHY"
fi

# Files handed over open, as nprofd hands a comparison its two profiles:
# /dev/fd/N is read as given, never opened again by a user who could not.
if [ "$(id -u)" = 0 ]; then
	install -m 600 "$TMP/before.collapsed" "$TMP/root_before.collapsed"
	install -m 600 "$TMP/after.collapsed" "$TMP/root_after.collapsed"
	timeout 30 $AS_NOBODY "$NPROF" diff /dev/fd/3 /dev/fd/4 -o flat 3<"$TMP/root_before.collapsed" \
		4<"$TMP/root_after.collapsed" >"$TMP/fd.flat" 2>"$TMP/fd.err"
	"$NPROF" diff "$TMP/before.collapsed" "$TMP/after.collapsed" -o flat >"$TMP/path.flat" 2>/dev/null
	check "as nobody, two root-only files given open as /dev/fd/3 and /dev/fd/4: the same table as by their paths" \
		cmp -s "$TMP/fd.flat" "$TMP/path.flat"
	run_nprof 30 diff /dev/fd/3 "$TMP/after.collapsed"
	check "/dev/fd/3 not open: one line naming it" eval 'one_error_line && err_says "/dev/fd/3"'
else
	skip "files handed over open" "needs root"
fi

# --- errors: one line each --------------------------------------------------------------

run_nprof 30 diff "$TMP/before.collapsed"
check "one profile: a usage error in one line" eval 'one_error_line && [ "$NP_RC" -eq 2 ]'
run_nprof 30 diff "$TMP/before.collapsed" "$TMP/after.collapsed" -o pprof
check "-o pprof: refused in one line, naming the diff formats" eval 'one_error_line && [ "$NP_RC" -eq 2 ] && err_says "flat, collapsed or flamegraph"'
: >"$TMP/empty.collapsed"
run_nprof 30 diff "$TMP/before.collapsed" "$TMP/empty.collapsed"
check "an empty AFTER: one line naming it" eval 'one_error_line && err_says "empty.collapsed is empty"'
printf 'main;x 0\n' >"$TMP/zero.collapsed"
run_nprof 30 diff "$TMP/zero.collapsed" "$TMP/after.collapsed"
check "a BEFORE with nothing in it: one line" eval 'one_error_line && err_says "BEFORE has no samples"' || np_diag
run_nprof 30 diff "$TMP/before.collapsed" /nonexistent/after.pb.gz
check "a missing file: one line naming it" eval 'one_error_line && err_says "/nonexistent/after.pb.gz"'

# --- two real recordings -------------------------------------------------------------------
# split burns CPU in burn_sixty, burn_thirty and burn_ten in a ratio given
# on its command line, for 5 s of CPU: 1:1:1, then 6:1:1.
# burn_sixty's share goes from a third to three quarters (+42 points), the
# two others' down by half as much: it must top the table, by a margin of
# 21 points that needs only a few dozen samples to hold. Its change is
# then held to split's own within 10 points: the difference of two shares
# of 500 samples each has a standard deviation near 3 points, so 10 is
# over three of them.

# record NAME RATIO: a cpu profile of split's whole run, which ends once
# it has burnt 5 s of CPU: some 500 samples, however busy the host.
record() {
	run_nprof 600 record -d 0 -o collapsed -f "$TMP/$1.collapsed" -- \
		"$PROGS/split" --cpu-seconds 5 --ratio "$2" --truth "$TMP/$1.truth"
	[ "$NP_RC" -eq 0 ] && [ "$(total "$TMP/$1.collapsed")" -ge 300 ]
}
if record slow 1:1:1 && record fast 6:1:1; then
	ok "split recorded twice ($(total "$TMP/slow.collapsed") and $(total "$TMP/fast.collapsed") samples)"
	run_nprof 30 diff "$TMP/slow.collapsed" "$TMP/fast.collapsed"
	check "the function that got more CPU is at the top of the table" \
		[ "$(row 1 | awk '{ print $NF }')" = burn_sixty ]
	# Its change in the table against the change split measured itself.
	got=$(row 1 | awk '{ print $3 }')
	want=$(awk -v a="$(truth_share "$TMP/slow.truth" burn_sixty)" \
		-v b="$(truth_share "$TMP/fast.truth" burn_sixty)" 'BEGIN { printf "%.1f", b - a }')
	check "its change, $got points, is split's own $want within 10 points" within "$got" "$want" 10
	diag_file "$TMP/np.out" 6
else
	not_ok "split recorded twice"
	np_diag
fi

finish
