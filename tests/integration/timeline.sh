#!/usr/bin/env bash
# The timeline: a recording keeps when each sample was taken, through
# pprof (nprof's own field, which go tool pprof skips) and into the flame
# graph, whose page draws the samples over time and redraws the graph for
# a range of them (tests/e2e/timeline.js in Debian's chromium). The
# program is tests/progs/phases: phase_one, then phase_two, each for a
# measured second of CPU time, the switch written down by its own clock.
# test-timeout: 120
. "$(dirname "$0")/lib.sh"
need_build

run_nprof 60 record -e cpu -i 1ms -o pprof -f "$TMP/p.pb.gz" -- \
	"$PROGS/phases" --seconds 1 --truth "$TMP/truth"
check "record -o pprof of phases succeeds" [ "$NP_RC" -eq 0 ] && [ -s "$TMP/truth" ]
[ "$NP_RC" -eq 0 ] || np_diag

# The page's two data elements, as JSON files: data and timeline.
page_json() {
	python3 - "$1" "$2" <<'PY'
import json, re, sys
html = open(sys.argv[1]).read()
m = re.search(r'<script type="application/json" id="%s">(.*?)</script>' % sys.argv[2], html, re.S)
print(m.group(1) if m else 'missing')
PY
}

run_nprof 30 convert "$TMP/p.pb.gz" "$TMP/p.html" -o flamegraph
check "convert pprof -> flamegraph succeeds" [ "$NP_RC" -eq 0 ]
page_json "$TMP/p.html" data >"$TMP/data.json"
page_json "$TMP/p.html" timeline >"$TMP/timeline.json"

# Every sample is in one slice of the timeline, once: the slices add up to
# the tree's total, the events to the samples the recording kept.
tl_check() {
	python3 - "$TMP/data.json" "$TMP/timeline.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2]))
c, i, total, nodes = t['cells'], 0, 0, len(d['nodes'])
for k in range(t['slices']):
    m = c[i]; i += 1
    for j in range(m):
        assert 0 <= c[i] and c[i] < nodes, 'node %d out of the tree' % c[i]
        total += c[i + 1]; i += 2
assert i == len(c), 'cells left over'
span = t['slices'] * t['sliceNs']
assert abs(span - d['durationNs']) <= t['sliceNs'], 'slices cover %d ns, the recording %d' % (span, d['durationNs'])
print(total, d['total'], t['events'], t['dropped'])
PY
}
read -r tl_total tree_total tl_events tl_dropped < <(tl_check 2>"$TMP/tl.err") || true
check "the page's timeline: slices over the recording add up to the tree ($tl_total of $tree_total samples, $tl_events events)" \
	bash -c "[ -n '$tl_total' ] && [ '$tl_total' = '$tree_total' ] && [ '$tl_events' = '$tree_total' ] && [ '$tl_dropped' = 0 ]"
[ -n "$tl_total" ] || diag_file "$TMP/tl.err"

# pprof -> pprof keeps it; a source without times has none.
run_nprof 30 convert "$TMP/p.pb.gz" "$TMP/p2.pb.gz" -o pprof
run_nprof 30 convert "$TMP/p2.pb.gz" "$TMP/p2.html" -o flamegraph
page_json "$TMP/p2.html" timeline >"$TMP/timeline2.json"
check "pprof -> pprof -> flamegraph: the same timeline" cmp -s "$TMP/timeline2.json" "$TMP/timeline.json"
run_nprof 30 convert "$TMP/p.pb.gz" "$TMP/p.collapsed" -o collapsed
run_nprof 30 convert "$TMP/p.collapsed" "$TMP/c.html" -o flamegraph
page_json "$TMP/c.html" timeline >"$TMP/c.json"
check "collapsed -> flamegraph: no timeline (null)" [ "$(cat "$TMP/c.json")" = null ]

if command -v go >/dev/null; then
	go tool pprof -raw "$TMP/p.pb.gz" >"$TMP/raw.txt" 2>"$TMP/raw.err"
	check "go tool pprof -raw reads the profile with its timeline, phase_one and phase_two in it" \
		bash -c "grep -q phase_one '$TMP/raw.txt' && grep -q phase_two '$TMP/raw.txt'"
else
	skip "go tool pprof reads the profile with its timeline" "go is not installed (scripts/install-deps)"
fi

# When phase_two began and ended, in seconds after the recording's start.
start_ns=$(python3 -c "import json; print(json.load(open('$TMP/data.json'))['startNs'])")
read -r switch_s end_s < <(awk -v s="$start_ns" '$1 == "phase_two" { printf "%.3f %.3f\n", ($2 - s) / 1e9, ($3 - s) / 1e9 }' "$TMP/truth")
diag "phase_two from $switch_s s to $end_s s after the recording began"
if need_browser; then
	NPROF_TIMELINE_PAGE=$TMP/p.html NPROF_TIMELINE_SWITCH=$switch_s NPROF_TIMELINE_END=$end_s \
		NPROF_E2E_DIR=$NPROF_BUILD/e2e run_js timeline.js
else
	skip "the time range in a browser" "$BROWSER_WHY"
fi
finish
