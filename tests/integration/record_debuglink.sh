#!/usr/bin/env bash
# A stripped binary (no .symtab, hot function static so not in .dynsym)
# whose symbols live in a separate debug file found through .gnu_debuglink
# (tests/progs/debuglink + debuglink.debug). Without the debug file the
# same addresses print as module+0xOFFSET, never as bare numbers.
. "$(dirname "$0")/lib.sh"
need_build

bin=$PROGS/debuglink

# The program really is what the test needs, or it proves nothing.
if ! readelf -S "$bin" | grep -q '\.symtab' && readelf -S "$bin" | grep -q '\.gnu_debuglink' &&
	! nm -D "$bin" 2>/dev/null | grep -q hidden_ && nm "$bin.debug" | grep -q ' t hidden_hot_loop$'; then
	ok "debuglink has no .symtab, a .gnu_debuglink, and its hot functions only in debuglink.debug"
else
	bail "debuglink has no .symtab, a .gnu_debuglink, and its hot functions only in debuglink.debug"
fi

for mode in pid command; do
	f=$TMP/$mode.collapsed
	if [ $mode = pid ]; then
		start_prog dl "$bin" --seconds 8 || { not_ok "debuglink starts"; continue; }
		run_nprof 15 record -d 3 -o collapsed -f "$f" "$PID"
	else
		run_nprof 15 record -d 3 -o collapsed -f "$f" -- "$bin" --seconds 30
	fi
	if [ "$NP_RC" -eq 0 ] && is_collapsed "$f"; then
		ok "$mode: record writes a collapsed file"
	else
		not_ok "$mode: record writes a collapsed file"
		np_diag
		continue
	fi
	diag "$mode: hidden_hot_loop $(share "$f" hidden_hot_loop)% of $(total "$f") samples"
	check "$mode: the static hot function is named from the debug file" has_frame_match "$f" '^hidden_hot_loop$'
	if has_chain "$f" "main;hidden_outer;hidden_hot_loop"; then
		ok "$mode: chain main;hidden_outer;hidden_hot_loop"
	else
		not_ok "$mode: chain main;hidden_outer;hidden_hot_loop"
		sort -t' ' -k2 -nr "$f" | diag_file /dev/stdin 5
	fi
	check "$mode: hidden_hot_loop has most of the samples" \
		awk -v s="$(share "$f" hidden_hot_loop)" 'BEGIN { exit !(s >= 70) }'
	check "$mode: no frame is a bare address" no_bare_addresses "$f"
done

# The same binary alone, its debug file out of reach: its own frames have no
# symbol anywhere, and must print as debuglink+0xOFFSET.
mkdir -p "$TMP/alone"
cp "$bin" "$TMP/alone/debuglink"
f=$TMP/alone.collapsed
run_nprof 15 record -d 2 -o collapsed -f "$f" -- "$TMP/alone/debuglink" --seconds 30
if [ "$NP_RC" -eq 0 ] && is_collapsed "$f"; then
	ok "without the debug file: record still writes a collapsed file"
	frames_matching "$f" 'debuglink' | diag_file /dev/stdin 5
	check "without the debug file: hidden_hot_loop is not named (nothing names it)" \
		bash -c "! grep -q hidden_hot_loop '$f'"
	check "without the debug file: its frames print as debuglink+0xOFFSET" \
		has_frame_match "$f" '^debuglink[+]0x[0-9a-f]+$'
	off=$(nm "$bin.debug" | awk '$3 == "hidden_hot_loop" { print $1 }')
	size=$(nm -S "$bin.debug" | awk '$4 == "hidden_hot_loop" { print $2 }')
	# The hottest offset lies inside hidden_hot_loop (file offsets equal
	# addresses in this PIE's text segment: checked with readelf below).
	hot=$(sort -t' ' -k2 -nr "$f" | head -1 | sed 's/ [0-9]*$//; s/.*;//')
	diag "hottest frame $hot; hidden_hot_loop at 0x$off, size 0x$size"
	if [[ $hot =~ ^debuglink\+0x([0-9a-f]+)$ ]] &&
		awk -v a="$((16#${BASH_REMATCH[1]}))" -v lo="$((16#$off))" -v n="$((16#$size))" \
			'BEGIN { exit !(a >= lo && a < lo + n) }'; then
		ok "without the debug file: the hottest frame's offset falls inside hidden_hot_loop"
	else
		not_ok "without the debug file: the hottest frame's offset falls inside hidden_hot_loop"
		readelf -lW "$bin" | grep LOAD | diag_file /dev/stdin 4
	fi
	check "without the debug file: no frame is a bare address" no_bare_addresses "$f"
else
	not_ok "without the debug file: record still writes a collapsed file"
	np_diag
fi

finish
