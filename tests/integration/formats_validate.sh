#!/usr/bin/env bash
# The pprof and JFR writers checked by the readers that own those formats,
# value by value rather than by a few greps:
#
# - `go tool pprof -raw`: every sample (its stack, read through the
#   Locations table, and its values) equals the source's, the sample types
#   and units are right, and the mappings name the modules with the build-ids
#   `readelf -n` finds in those files;
# - `jfr print --json`: the number of jdk.ExecutionSample events equals the
#   source's total samples, every stack (leaf first in JFR, thread from
#   sampledThread) equals the source's, and the top leaf frames by count are
#   the source's top functions by self value.
#
# Sources: a collapsed file written by hand (known values), and a real
# `nprof record -o pprof` of tests/progs/split, whose source is what
# `go tool pprof -raw` reads in it; its JFR conversion must agree with that.
# Each reader is skipped (one SKIP line per check) when not installed.
. "$(dirname "$0")/lib.sh"
need_build

# Distinct (stack, thread) lines; frame names with spaces, kernel frames,
# recursion, thread roots; total 1000. Self values: burn_a 620, burn_b 260,
# recurse 50, malloc 40, do_syscall_64_[k] 30.
cat >"$TMP/in.collapsed" <<'EOF'
main;run;burn_a 600
main;run;burn_b 250
main;recurse;recurse;recurse 50
main;operator new(unsigned long);malloc 40
main;sys_read_[k];do_syscall_64_[k] 30
[worker 1 tid=12];main;run;burn_a 20
[worker 2 tid=13];main;run;burn_b 10
EOF

# --- helpers (python3) -----------------------------------------------------------

# raw.py RAW OUT_COLLAPSED OUT_INFO: `go tool pprof -raw` output to collapsed
# lines (root first, value = the first sample value, equal stacks added) and
# an info file: "types T/U ...", "period_type T U", "period N",
# "sample V1 V2 ..." per sample, "mapping ID FILE BUILDID" per mapping.
cat >"$TMP/raw.py" <<'EOF'
import re, sys
from collections import OrderedDict
lines = open(sys.argv[1]).read().split('\n')
info = open(sys.argv[3], 'w')
sec = None
samples, locs, cur = [], {}, None
line_re = re.compile(r'^(?P<name>.*) (?P<file>\S*):(?P<line>-?\d+) s=-?\d+(\(.*\))?$')
for l in lines:
    if l.startswith('PeriodType:'):
        info.write('period_type %s\n' % l.split(':', 1)[1].strip())
    elif l.startswith('Period:'):
        info.write('period %s\n' % l.split(':', 1)[1].strip())
    elif l in ('Samples:', 'Locations', 'Mappings'):
        sec = l
        continue
    if sec == 'Samples:':
        if l.strip() and '/' in l and ':' not in l:
            info.write('types %s\n' % l.strip())
        elif re.match(r'^\s*-?\d+(\s+-?\d+)*: ', l):
            vals, ids = l.split(':', 1)
            samples.append(([int(v) for v in vals.split()], [int(i) for i in ids.split()]))
            info.write('sample %s\n' % vals.strip())
    elif sec == 'Locations':
        m = re.match(r'^\s*(\d+): 0x[0-9a-f]+ (M=\d+ )?(\[F\] )?(.*)$', l)
        if m:
            cur = int(m.group(1))
            locs[cur] = []
            rest = m.group(4)
        elif l.startswith('             ') and cur is not None:
            rest = l.strip()
        else:
            continue
        if rest:
            lm = line_re.match(rest)
            if not lm:
                sys.exit('cannot parse location line: %r' % l)
            locs[cur].append(lm.group('name'))
    elif sec == 'Mappings':
        m = re.match(r'^\s*(\d+): \S+ (.*)$', l)
        if m:
            w = m.group(2).split()
            flags = [x for x in w if x.startswith('[') and x.endswith(']') and x != w[0]]
            w = [x for x in w if x not in flags]
            info.write('mapping %s %s %s\n' % (m.group(1), w[0] if w else '-', w[1] if len(w) > 1 else '-'))
out = OrderedDict()
for vals, ids in samples:
    frames = []
    for i in ids:
        frames.extend(locs[i])        # inlined first, physical last: leaf first
    key = ';'.join(reversed(frames))  # root first
    out[key] = out.get(key, 0) + vals[0]
with open(sys.argv[2], 'w') as f:
    for k, v in out.items():
        f.write('%s %d\n' % (k, v))
EOF

# jfrjson.py JSON OUT_COLLAPSED: `jfr print --json` execution samples to
# collapsed lines, root first; a sample on a thread other than tid 0 gets
# the root frame "[osName tid=N]", as nprof writes per-thread stacks. Prints
# the number of events.
cat >"$TMP/jfrjson.py" <<'EOF'
import json, sys
from collections import OrderedDict
ev = json.load(open(sys.argv[1]))['recording']['events']
out = OrderedDict()
n = 0
for e in ev:
    if e['type'] != 'jdk.ExecutionSample':
        continue
    n += 1
    v = e['values']
    st = v['stackTrace']
    if st['truncated']:
        sys.exit('a stack came back truncated (raise --stack-depth)')
    fr = [f['method']['name'] for f in st['frames']][::-1]
    t = v['sampledThread']
    if t and t['osThreadId']:
        fr = ['[%s tid=%d]' % (t['osName'], t['osThreadId'])] + fr
    k = ';'.join(fr)
    out[k] = out.get(k, 0) + 1
with open(sys.argv[2], 'w') as f:
    for k, c in out.items():
        f.write('%s %d\n' % (k, c))
print(n)
EOF

# same_stacks A B: the same lines once equal stacks are merged (values
# added), order ignored. Differences go to $TMP/diff.
merged() { awk '{ v = $NF; s = $0; sub(/ [0-9]+$/, "", s); t[s] += v } END { for (s in t) print s " " t[s] }' "$1" | LC_ALL=C sort; }
same_stacks() {
	merged "$1" >"$TMP/a.m"
	merged "$2" >"$TMP/b.m"
	diff "$TMP/a.m" "$TMP/b.m" >"$TMP/diff"
}
# strip_threads FILE: the stacks without their [name tid=N] root frame.
strip_threads() { sed -E 's/^\[[^;]* tid=[0-9]+\];//' "$1"; }
# top_leaves FILE N: the N heaviest leaf frames by self value, "name value"
# per line, ties by name.
top_leaves() {
	awk '{ v = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, f, ";"); self[f[n]] += v }
		END { for (k in self) print self[k] "\t" k }' "$1" |
		LC_ALL=C sort -t"$(printf '\t')" -k1,1nr -k2,2 | head -n "$2" | awk -F'\t' '{ print $2 " " $1 }'
}

conv() {
	local desc=$1
	shift
	run_nprof 60 convert "$@"
	if [ "$NP_RC" -eq 0 ]; then ok "$desc"; else not_ok "$desc"; np_diag; fi
}

have_go=false have_jfr=false
if command -v go >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1; then
	have_go=true
	export HOME=${HOME:-$TMP} GOCACHE=$TMP/gocache GOPATH=$TMP/gopath GOFLAGS=-mod=mod
fi
JFR=$(command -v jfr || true)
[ -z "$JFR" ] && [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/jfr" ] && JFR=$JAVA_HOME/bin/jfr
[ -n "$JFR" ] && command -v python3 >/dev/null 2>&1 && have_jfr=true

# go_raw PB NAME: go tool pprof -raw PB, parsed into $TMP/NAME.raw.collapsed
# and $TMP/NAME.raw.info.
go_raw() {
	if go tool pprof -raw "$1" >"$TMP/$2.raw" 2>"$TMP/$2.raw.err" &&
		python3 "$TMP/raw.py" "$TMP/$2.raw" "$TMP/$2.raw.collapsed" "$TMP/$2.raw.info" 2>>"$TMP/$2.raw.err"; then
		ok "$2: go tool pprof -raw reads it ($(grep -c '^sample ' "$TMP/$2.raw.info") samples)"
	else
		not_ok "$2: go tool pprof -raw reads it"
		diag_file "$TMP/$2.raw.err"
		return 1
	fi
}

# jfr_json JFR NAME: jfr print --json of the execution samples, as
# $TMP/NAME.jfr.collapsed; sets JFR_EVENTS.
jfr_json() {
	JFR_EVENTS=
	if "$JFR" print --json --stack-depth 2048 --events jdk.ExecutionSample "$1" >"$TMP/$2.json" 2>"$TMP/$2.json.err" &&
		JFR_EVENTS=$(python3 "$TMP/jfrjson.py" "$TMP/$2.json" "$TMP/$2.jfr.collapsed" 2>>"$TMP/$2.json.err"); then
		ok "$2: jfr print --json reads it ($JFR_EVENTS execution samples)"
	else
		not_ok "$2: jfr print --json reads it"
		diag_file "$TMP/$2.json.err"
		return 1
	fi
}

# check_same DESC A B
check_same() {
	if same_stacks "$2" "$3"; then
		ok "$1"
	else
		not_ok "$1"
		diag_file "$TMP/diff" 20
	fi
}

# check_top DESC SOURCE OTHER N
check_top() {
	top_leaves "$2" "$4" >"$TMP/top.a"
	top_leaves "$3" "$4" >"$TMP/top.b"
	if [ -s "$TMP/top.a" ] && cmp -s "$TMP/top.a" "$TMP/top.b"; then
		ok "$1: $(tr '\n' ',' <"$TMP/top.a" | sed 's/,$//')"
	else
		not_ok "$1"
		diag "source:" "$(cat "$TMP/top.a")" "read back:" "$(cat "$TMP/top.b")"
	fi
}

# --- a collapsed file written by hand ----------------------------------------------

conv "hand-made collapsed -> pprof" "$TMP/in.collapsed" "$TMP/hand.pb.gz"
conv "hand-made collapsed -> jfr" "$TMP/in.collapsed" "$TMP/hand.jfr"

if $have_go && go_raw "$TMP/hand.pb.gz" hand; then
	check "hand: sample types are samples/count only" \
		test "$(sed -n 's/^types //p' "$TMP/hand.raw.info")" = samples/count
	check "hand: one sample per source line, one value each" \
		test "$(awk '$1 == "sample" && NF == 2' "$TMP/hand.raw.info" | wc -l)" -eq "$(wc -l <"$TMP/in.collapsed")"
	check_same "hand: every sample's stack and value equals the source line" "$TMP/in.collapsed" "$TMP/hand.raw.collapsed"
else
	for c in types samples values; do skip "hand: go tool pprof -raw: $c" "go or python3 not installed"; done
fi

if $have_jfr && jfr_json "$TMP/hand.jfr" hand; then
	check "hand: $JFR_EVENTS execution samples = the source's 1000" test "$JFR_EVENTS" = "$(total "$TMP/in.collapsed")"
	check_same "hand: every stack (with its thread) and count equals the source" "$TMP/in.collapsed" "$TMP/hand.jfr.collapsed"
	check_top "hand: top 5 leaf frames are the source's top functions" "$TMP/in.collapsed" "$TMP/hand.jfr.collapsed" 5
else
	for c in count stacks top; do skip "hand: jfr print --json: $c" "jfr or python3 not installed"; done
fi

# --- a real recording of tests/progs/split -----------------------------------------

run_nprof 30 record -d 2 -o pprof -f "$TMP/split.pb.gz" -- "$PROGS/split" --seconds 2
rec_n=$(sed -n 's/.*wrote .* (\([0-9]*\) samples.*/\1/p' "$TMP/np.err")
if [ "$NP_RC" -eq 0 ] && [ -s "$TMP/split.pb.gz" ] && [ -n "$rec_n" ]; then
	ok "record -o pprof of split: $rec_n samples"
else
	not_ok "record -o pprof of split"
	np_diag
	finish
fi
conv "split.pb.gz -> jfr" "$TMP/split.pb.gz" "$TMP/split.jfr"
run_nprof 30 convert -o collapsed "$TMP/split.pb.gz" "$TMP/split.nprof.collapsed"

if $have_go && go_raw "$TMP/split.pb.gz" split; then
	info=$TMP/split.raw.info
	check "split: sample types samples/count cpu/nanoseconds" \
		test "$(sed -n 's/^types //p' "$info")" = "samples/count cpu/nanoseconds"
	check "split: period type cpu nanoseconds, period 10 ms" \
		test "$(sed -n 's/^period_type //p' "$info")/$(sed -n 's/^period //p' "$info")" = "cpu nanoseconds/10000000"
	check "split: every sample's cpu/nanoseconds = samples x 10 ms" \
		awk '$1 == "sample" { n++; if (NF != 3 || $3 != $2 * 10000000) bad = 1 } END { exit bad || !n }' "$info"
	check "split: the samples add up to the $rec_n nprof reported" \
		test "$(awk '$1 == "sample" { t += $2 } END { print t + 0 }' "$info")" = "$rec_n"
	check_same "split: every stack and value go reads equals what nprof's reader reads" \
		"$TMP/split.nprof.collapsed" "$TMP/split.raw.collapsed"
	check "split: mapping 1 is the split binary" \
		test "$(awk '$1 == "mapping" && $2 == 1 { print $3 }' "$info")" = "$(readlink -f "$PROGS/split")"
	# Every mapping that is a file: its build-id is readelf's.
	bad= nfiles=0
	while read -r _ id file bid; do
		[ -f "$file" ] || continue
		nfiles=$((nfiles + 1))
		want=$(readelf -n "$file" 2>/dev/null | sed -n 's/^ *Build ID: *//p' | head -1)
		[ -n "$want" ] && [ "$bid" = "$want" ] || bad+=" $file ($bid, readelf: ${want:-none})"
	done < <(grep '^mapping ' "$info")
	if [ -z "$bad" ] && [ "$nfiles" -ge 2 ] && grep -q '^mapping [0-9]* /.*/libc\.so\.6 ' "$info"; then
		ok "split: $nfiles file mappings (split, libc.so.6, ...) with the build-ids readelf -n reads"
	else
		not_ok "split: file mappings (split, libc.so.6) with the build-ids readelf -n reads"
		diag "wrong:$bad" "$(grep '^mapping ' "$info")"
	fi
else
	for c in types period values total stacks main mappings; do skip "split: go tool pprof -raw: $c" "go or python3 not installed"; done
fi

if $have_jfr && $have_go && [ -s "$TMP/split.raw.collapsed" ] && jfr_json "$TMP/split.jfr" split; then
	check "split: $JFR_EVENTS execution samples = the source's $rec_n" test "$JFR_EVENTS" = "$rec_n"
	strip_threads "$TMP/split.jfr.collapsed" >"$TMP/split.jfr.nothreads"
	check_same "split: every stack and count equals the source's (go tool pprof -raw)" \
		"$TMP/split.raw.collapsed" "$TMP/split.jfr.nothreads"
	check_top "split: top 3 leaf frames are the source's top functions" \
		"$TMP/split.raw.collapsed" "$TMP/split.jfr.nothreads" 3
	check "split: samples on the split and burner threads (sampledThread)" \
		eval 'grep -q "^\[split tid=[0-9]*\];" "$TMP/split.jfr.collapsed" && grep -q "^\[burner tid=[0-9]*\];" "$TMP/split.jfr.collapsed"'
else
	for c in count stacks top threads; do skip "split: jfr print --json: $c" "jfr, go or python3 not installed"; done
fi

finish
