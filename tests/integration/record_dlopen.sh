#!/usr/bin/env bash
# A function in a shared library that the target dlopens during the
# recording (tests/progs/dlopen_host + libhot.so) is named, with its chain
# from main.
. "$(dirname "$0")/lib.sh"
need_build

CHAIN="main;call_library;hot_in_library;hot_mix"

# check_profile LABEL FILE
check_profile() {
	local label=$1 f=$2 sh
	sh=$(share "$f" hot_in_library)
	diag "$label: $(total "$f") samples, hot_in_library ${sh}%"
	check "$label: hot_in_library (exported, .dynsym) is named" has_frame_match "$f" '^hot_in_library$'
	check "$label: hot_mix (static, the library's .symtab only) is named" has_frame_match "$f" '^hot_mix$'
	if has_chain "$f" "$CHAIN"; then
		ok "$label: chain $CHAIN"
	else
		not_ok "$label: chain $CHAIN"
		sort -t' ' -k2 -nr "$f" | diag_file /dev/stdin 6
	fi
	check "$label: no frame is a bare address" no_bare_addresses "$f"
}

# By PID, the library loaded 1 s into a 4 s recording: after that the
# program does nothing but call it, so it has most of the samples.
if start_prog host "$PROGS/dlopen_host" --delay 1 --seconds 8; then
	grep -q libhot "/proc/$PID/maps" && diag "libhot.so already mapped before the recording?"
	run_nprof 15 record -d 4 -o collapsed -f "$TMP/pid.collapsed" "$PID"
	if [ "$NP_RC" -eq 0 ] && is_collapsed "$TMP/pid.collapsed"; then
		ok "PID: record -d 4 writes a collapsed file"
		check "PID: the program loaded the library during the recording" grep -qx loaded "$TMP/host.out"
		check_profile PID "$TMP/pid.collapsed"
		check "PID: hot_in_library has at least half the samples" \
			awk -v s="$(share "$TMP/pid.collapsed" hot_in_library)" 'BEGIN { exit !(s >= 50) }'
	else
		not_ok "PID: record -d 4 writes a collapsed file"
		np_diag
	fi
else
	not_ok "dlopen_host starts"
fi

# Via -- COMMAND, the library loaded half a second in.
run_nprof 20 record -d 3 -o collapsed -f "$TMP/cmd.collapsed" -- "$PROGS/dlopen_host" --delay 0.5 --seconds 30
if [ "$NP_RC" -eq 0 ] && is_collapsed "$TMP/cmd.collapsed"; then
	ok "COMMAND: record -d 3 -- dlopen_host writes a collapsed file"
	check_profile COMMAND "$TMP/cmd.collapsed"
else
	not_ok "COMMAND: record -d 3 -- dlopen_host writes a collapsed file"
	np_diag
fi

finish
