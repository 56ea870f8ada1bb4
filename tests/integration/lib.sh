# Shared by the integration tests: TAP output, background test programs,
# running nprof under a timeout, and reading collapsed stacks.
#
# Source it first thing:  . "$(dirname "$0")/lib.sh"
# It needs NPROF_BUILD (absolute build dir) and NPROF_SRC (repo root), as
# tests/run sets them; run alone, it derives both from its own location.

set -u
NPROF_SRC=${NPROF_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
NPROF_BUILD=${NPROF_BUILD:-$NPROF_SRC/build}
NPROF=$NPROF_BUILD/nprof
PROGS=$NPROF_BUILD/tests/progs

# Every temporary file lives here; world-readable and -searchable so that
# runs as another user can read what they are given.
TMP=$(mktemp -d /tmp/nprof-test.XXXXXX)
chmod 755 "$TMP"

# --- TAP ---------------------------------------------------------------------

tap_n=0
tap_failed=0

ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $*"; }
not_ok() { tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1)); echo "not ok $tap_n - $*"; }
diag() { printf '%s\n' "$@" | sed 's/^/# /'; }
# diag_file FILE [LINES]: the start of a file as diagnostics.
diag_file() { [ -r "$1" ] && head -n "${2:-15}" "$1" | cut -c1-300 | sed 's/^/#   /'; }
skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1 # SKIP $2"; }

# check DESCRIPTION COMMAND...: ok when COMMAND succeeds.
check() {
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

# bail DESCRIPTION: a failure that makes the rest of the script pointless.
bail() {
	not_ok "$1"
	finish
}

finish() {
	echo "1..$tap_n"
	[ "$tap_failed" -eq 0 ]
	exit $?
}

# --- scenarios: the parts of a long script, each runnable alone -------------
#
# A long script (daemon_api.sh) is a list of scenarios: functions named
# scenario_NAME, each calling `given SETUP` for what it needs (a daemon,
# a worker, an artifact) before its checks. `run_scenarios NAME...` runs
# them in that order. NPROF_SCENARIO=NAME[,NAME...] (what
# `tests/run SCRIPT:NAME` sets) runs only those, each with its set-ups:
# one check fixed is tried in seconds, not in the whole script's minutes.

# given SETUP...: runs setup_SETUP, once per script (a later `given` of
# the same set-up finds it done).
given() {
	local s
	for s in "$@"; do
		case " ${given_done:-} " in *" $s "*) continue ;; esac
		"setup_$s" || bail "set-up $s"
		given_done="${given_done:-} $s"
	done
}

# run_scenarios NAME...: every scenario in order, or those NPROF_SCENARIO
# names (one it does not know is a failure naming the ones there are).
run_scenarios() {
	local want=${NPROF_SCENARIO:-} s
	if [ -n "$want" ]; then
		for s in ${want//,/ }; do
			case " $* " in
			*" $s "*) ;;
			*) bail "$(basename "$0") has no scenario $s; it has: $*" ;;
			esac
		done
	fi
	for s in "$@"; do
		[ -z "$want" ] || case ",$want," in *",$s,"*) ;; *) continue ;; esac
		[ -z "$want" ] || diag "scenario $s"
		"scenario_$s"
	done
}

# --- sanitizer builds ---------------------------------------------------------

# sanitize_build VARIANT TARGET FLAGS WHAT: `make TARGET` (a sanitizer
# variant of the tree, in BUILD/sanitize/) against NPROF_BUILD, as one
# check saying what it builds and how long it took, its errors shown
# when it fails (non-zero then). Under `make check` or `make sanitize`,
# MAKEFLAGS names the outer make's jobserver, which the script did not
# inherit: this make runs on its own.
sanitize_build() {
	local variant=$1 target=$2 flags=$3 what=$4 t0=$(date +%s) log=$TMP/build-$2.log
	if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make -C "$NPROF_SRC" -j"$(nproc)" BUILD="$NPROF_BUILD" "$target" >"$log" 2>&1; then
		not_ok "$variant: make $target (clang $flags) builds $what"
		grep -E 'error|warning|Error' "$log" | head -30 | cut -c1-300 | sed 's/^/#   /'
		return 1
	fi
	ok "$variant: make $target (clang $flags) builds $what ($(($(date +%s) - t0))s)"
}

# --- background programs -----------------------------------------------------

bg_pids=()
test_users=()

cleanup() {
	local p
	for p in "${bg_pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	for p in "${bg_pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	for p in "${test_users[@]}"; do
		pkill -KILL -u "$p"
	done
	[ ${#test_users[@]} = 0 ] || sleep 0.2
	for p in "${test_users[@]}"; do
		userdel "$p" 2>/dev/null
	done
	# NPROF_TEST_KEEP=DIR keeps what the test left (daemons' logs and
	# indexes, recordings) in DIR/NAME, to read after a failure.
	if [ -n "${NPROF_TEST_KEEP:-}" ]; then
		mkdir -p "$NPROF_TEST_KEEP" && rm -rf "${NPROF_TEST_KEEP:?}/${0##*/}" &&
			cp -a "$TMP" "$NPROF_TEST_KEEP/${0##*/}" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# test_user NAME [PASSWORD]: a user made for this test (no home, no
# login shell), its password set when given; at the end of the test its
# processes are killed and it is removed. Non-zero if it could not be made.
test_user() {
	useradd -M -s /usr/sbin/nologin "$1" || return 1
	test_users+=("$1")
	[ -z "${2:-}" ] || printf '%s:%s\n' "$1" "$2" | chpasswd
}

# start_prog NAME COMMAND...: starts COMMAND in the background, its stdout in
# $TMP/NAME.out, and waits (up to 10 s) for it to print "ready". Sets PID
# (of the command itself: started with exec, no shell in between).
# Returns non-zero if it never got ready.
start_prog() {
	local name=$1 i
	shift
	: >"$TMP/$name.out"
	"$@" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null &
	PID=$!
	bg_pids+=("$PID")
	for ((i = 0; i < 200; i++)); do
		grep -q '^ready' "$TMP/$name.out" && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.05
	done
	diag "$name did not get ready:"
	diag_file "$TMP/$name.err"
	return 1
}

# wait_agent PID: up to 10 s for the agent preloaded in PID to answer on
# its socket (nprof list shows PID). The program's "ready" can come first:
# the agent's control thread binds its socket on its own time, and an
# event nprof can also record from outside (wall, as root) would quietly
# be taken from outside meanwhile.
wait_agent() {
	local i
	for ((i = 0; i < 100; i++)); do
		"$NPROF" list "$1" 2>/dev/null | awk -v p="$1" '$1 == p' | grep -q . && return 0
		sleep 0.1
	done
	diag "the agent in $1 did not answer in 10 s"
	return 1
}

# wait_for_line FILE LINE [SECONDS]: waits until FILE has LINE.
wait_for_line() {
	local i
	for ((i = 0; i < ${3:-10} * 20; i++)); do
		grep -qx "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# wait_pid PID [SECONDS]: waits for a background program to end.
wait_pid() {
	local i
	for ((i = 0; i < ${2:-20} * 20; i++)); do
		kill -0 "$1" 2>/dev/null || { wait "$1" 2>/dev/null; return 0; }
		sleep 0.05
	done
	return 1
}

# --- running nprof -----------------------------------------------------------

# run_nprof LIMIT ARGS...: runs `nprof ARGS` under `timeout LIMIT` (so a
# hang fails instead of sticking), stdout in $TMP/np.out, stderr in
# $TMP/np.err. Sets NP_RC (124/137: timed out) and NP_SECS (wall time).
# As another user: RUN_AS="setpriv --reuid=65534 ..." run_nprof ...
run_nprof() {
	local limit=$1 t0 t1
	shift
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086
	timeout -k 5 "$limit" ${RUN_AS:-} "$NPROF" "$@" >"$TMP/np.out" 2>"$TMP/np.err" </dev/null
	NP_RC=$?
	t1=$(date +%s.%N)
	NP_SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
}

# np_diag: what the last nprof run said, as diagnostics.
np_diag() {
	diag "nprof exit status $NP_RC after ${NP_SECS}s; stderr:"
	diag_file "$TMP/np.err" 10
	diag "stdout:"
	diag_file "$TMP/np.out" 10
}

# one_error_line: the last run failed (non-zero status, not a timeout or a
# signal) with exactly one line on stderr that starts with "nprof: ".
one_error_line() {
	[ "$NP_RC" -ne 0 ] && [ "$NP_RC" -lt 124 ] &&
		[ "$(wc -l <"$TMP/np.err")" -eq 1 ] &&
		grep -q '^nprof: ' "$TMP/np.err"
}

# err_says REGEX: the error line matches REGEX (extended, case-insensitive).
err_says() { grep -qiE -- "$1" "$TMP/np.err"; }

# --- collapsed stacks --------------------------------------------------------

# total FILE: the sum of all values.
total() { awk '{ t += $NF } END { print t + 0 }' "$1"; }

# share FILE FRAME: percentage of the total in stacks that contain a frame
# named exactly FRAME (counted once per stack however often it recurs).
share() {
	awk -v f="$2" '
	{
		v = $NF; t += v
		s = $0; sub(/ [0-9]+$/, "", s)
		n = split(s, fr, ";")
		for (i = 1; i <= n; i++) if (fr[i] == f) { m += v; break }
	}
	END { printf "%.1f", t ? 100 * m / t : 0 }' "$1"
}

# share_match FILE REGEX: like share, for frames matching REGEX.
share_match() {
	AWK_RE=$2 awk '
	BEGIN { re = ENVIRON["AWK_RE"] }
	{
		v = $NF; t += v
		s = $0; sub(/ [0-9]+$/, "", s)
		n = split(s, fr, ";")
		for (i = 1; i <= n; i++) if (fr[i] ~ re) { m += v; break }
	}
	END { printf "%.1f", t ? 100 * m / t : 0 }' "$1"
}

# has_chain FILE "a;b;c": some stack holds frames a, b, c one right after
# the other, in that order from the root (exact frame names).
has_chain() {
	awk -v c="$2" '
	BEGIN { k = split(c, want, ";") }
	{
		s = $0; sub(/ [0-9]+$/, "", s)
		n = split(s, fr, ";")
		for (i = 1; i + k - 1 <= n; i++) {
			for (j = 1; j <= k && fr[i + j - 1] == want[j]; j++) ;
			if (j > k) { found = 1; exit }
		}
	}
	END { exit !found }' "$1"
}

# has_frame_match FILE REGEX: some frame matches REGEX.
has_frame_match() {
	AWK_RE=$2 awk '
	BEGIN { re = ENVIRON["AWK_RE"] }
	{
		s = $0; sub(/ [0-9]+$/, "", s)
		n = split(s, fr, ";")
		for (i = 1; i <= n; i++) if (fr[i] ~ re) { found = 1; exit }
	}
	END { exit !found }' "$1"
}

# frames_matching FILE REGEX: the distinct frames matching REGEX.
frames_matching() {
	AWK_RE=$2 awk '
	BEGIN { re = ENVIRON["AWK_RE"] }
	{
		s = $0; sub(/ [0-9]+$/, "", s)
		n = split(s, fr, ";")
		for (i = 1; i <= n; i++) if (fr[i] ~ re && !seen[fr[i]]++) print fr[i]
	}' "$1"
}

# is_collapsed FILE: non-empty, and every line is "frames value" with a
# positive integer value.
is_collapsed() {
	[ -s "$1" ] && awk '!/^[^ ].* [1-9][0-9]*$/ { bad = 1; exit } END { exit bad }' "$1"
}

# no_bare_addresses FILE: no frame is only a number or "[unknown]" (an
# unsymbolized address must read module+0xOFFSET). A number has at least one
# decimal digit, so that names such as "add" or "face" are not taken for one.
no_bare_addresses() {
	! has_frame_match "$1" '^((0[xX])?[0-9a-fA-F]*[0-9][0-9a-fA-F]*|[[]unknown[]])$'
}

# truth_share TRUTH FN: FN's percentage of the functions' total CPU time in
# a truth file ("fn NAME NS" lines).
truth_share() {
	awk -v f="$2" '$1 == "fn" { t += $3; if ($2 == f) m = $3 }
		END { printf "%.1f", t ? 100 * m / t : 0 }' "$1"
}

# truth_mark PID TRUTH N: asks a program that writes a truth file (split,
# wall_split) for its totals so far with SIGUSR1, and waits (up to 10 s)
# for TRUTH.N, its Nth snapshot, to be written.
truth_mark() {
	local i
	kill -USR1 "$1" || return 1
	for ((i = 0; i < 200; i++)); do
		[ -s "$2.$3" ] && return 0
		sleep 0.05
	done
	return 1
}

# truth_window BEFORE AFTER: the truth of the window between two
# snapshots (each "fn NAME NS" of AFTER less BEFORE's; the rest as AFTER).
truth_window() {
	awk 'NR == FNR { if ($1 == "fn") b[$2] = $3; next }
		$1 == "fn" { printf "fn %s %.0f\n", $2, $3 - b[$2]; next } { print }' "$1" "$2"
}

# state_of FILE FN: the state frame ending most of FILE's stacks through FN.
state_of() {
	awk -v fn=";$2;" '
		index($0, fn) {
			s = $0; sub(/ [0-9]+$/, "", s); k = split(s, fr, ";"); w[fr[k]] += $NF
		}
		END { for (x in w) if (w[x] > best) { best = w[x]; b = x }; print b }' "$1"
}

# with_truth LABEL FILE TRUTH WHAT: whether FILE is a collapsed profile
# and TRUTH the program's measured truth of its window; a failure (and
# FILE's head) when not.
with_truth() {
	is_collapsed "$2" && [ -s "$3" ] && return 0
	not_ok "$1: $4 and the truth of its window"
	diag_file "$2" 5
	return 1
}

# shares_check LABEL FILE TRUTH TOL OF FN...: each FN's share of FILE
# (OF names what it is a share of) against its share in the program's
# TRUTH, within TOL points.
shares_check() {
	local label=$1 f=$2 truth=$3 tol=$4 of=$5 fn got want
	shift 5
	for fn; do
		got=$(share "$f" "$fn")
		want=$(truth_share "$truth" "$fn")
		if within "$got" "$want" "$tol"; then
			ok "$label: $fn has ${got}% of $of, measured ${want}% (±$tol)"
		else
			not_ok "$label: $fn has ${got}% of $of, measured ${want}% (±$tol)"
		fi
	done
}

# wall_split_check LABEL PROFILE TRUTH [POINTS]: tests/progs/wall_split's
# worker in a per-thread wall profile (collapsed) held to the truth of its
# window: each of wall_compute, wall_sleep and wall_read within POINTS
# (default 5) of its measured share of the worker's wall time, each in its
# state, and the chain to read.
wall_split_check() {
	local label=$1 f=$2 truth=$3 tol=${4:-5} w=$TMP/worker.collapsed st
	with_truth "$label" "$f" "$truth" "a per-thread wall profile" || return
	grep '^\[wall-worker tid=' "$f" >"$w"
	diag "$label: the worker has $(total "$w") samples of $(total "$f"), for a window of" \
		"$(awk '$1 == "fn" { t += $3 } END { printf "%.2f", t / 1e9 }' "$truth") s"
	shares_check "$label" "$w" "$truth" "$tol" "the worker's wall time" \
		wall_compute wall_sleep wall_read
	st=$(state_of "$w" wall_compute)
	# [runnable]: waiting for a CPU, which the engine tells (the
	# scheduler says so) and a busy machine makes the larger part.
	check "$label: wall_compute is [running] or [runnable] ($st)" \
		[ "$st" = "[running]" -o "$st" = "[runnable]" ]
	st=$(state_of "$w" wall_sleep)
	check "$label: wall_sleep is [sleeping] ($st)" [ "$st" = "[sleeping]" ]
	st=$(state_of "$w" wall_read)
	check "$label: wall_read is [sleeping] ($st)" [ "$st" = "[sleeping]" ]
	check "$label: worker_main -> worker_loop -> wall_read -> read" \
		has_chain_re "$w" '^worker_main$' '^worker_loop$' '^wall_read$' '^(__libc_)?read$'
}

# fn_truth TRUTH FN COL: a column of a "fn NAME ..." line of a program's
# truth (alloc_primes, heap_hold, lock_contend, lock_two).
fn_truth() { awk -v f="$2" -v c="$3" '$1 == "fn" && $2 == f { print $c }' "$1"; }
# site_truth TRUTH SITE COL: a column of tests/progs/heap_sites' truth,
# "site NAME ALLOC_BYTES ALLOC_OBJECTS LIVE_BYTES LIVE_OBJECTS".
site_truth() { awk -v f="$2" -v c="$3" '$1 == "site" && $2 == f { print $c }' "$1"; }
# frame_total FILE FN: the sum of the stacks through frame FN.
frame_total() {
	awk -v f="$2" '{ v = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, fr, ";")
		for (i = 1; i <= n; i++) if (fr[i] == f) { t += v; break } } END { printf "%.0f\n", t }' "$1"
}
# pct_off A B: how far A is from B, in percent of B.
pct_off() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.1f", b ? 100 * d / b : 100 }'; }

# share_sd FILE P: the binomial standard deviation, in points, of a share
# of P% estimated from FILE's samples: how wide a tolerance is in sds.
share_sd() {
	awk -v p="$2" '{ n += $NF } END { printf "%.1f", n ? 100 * sqrt(p / 100 * (1 - p / 100) / n) : 100 }' "$1"
}

# split_longer FILE SECS: nothing when FILE (a profile of SECS seconds)
# has the 1000 samples split_check's 5-point bar needs (it is then 3.2 sds
# of a 60% share); else the duration that would get half as many again at
# the rate FILE got them (a busy machine's rate swings), at most 30 s. A
# profile that short is taken again, that long: itimer samples at most
# CONFIG_HZ (often 250) times a CPU-second, so a machine that leaves the
# program a fifth of a core gives ~250 in 5 s, too few to judge either way.
split_longer() {
	awk -v s="$2" '{ n += $NF } END { if (n >= 1000) exit
		d = int(s * 1500 / (n ? n : 1)) + 1; print (d > 30 ? 30 : d) }' "$1"
}

# split_check LABEL COLLAPSED TRUTH: a profile of tests/progs/split held to
# the truth of its window: each burn_*'s share within 5 points of the
# measured one, >= 95% of samples reaching main or worker_main (complete
# chains), both threads' chains down to each burn_*, no bare addresses.
split_check() {
	local label=$1 f=$2 truth=$3 fn reach miss=
	with_truth "$label" "$f" "$truth" "a profile" || return
	diag "$label: $(total "$f") samples (a 60% share's binomial sd: $(share_sd "$f" 60) points)"
	shares_check "$label" "$f" "$truth" 5 "samples" burn_sixty burn_thirty burn_ten
	reach=$(share_match "$f" '^(main|worker_main)$')
	check "$label: ${reach}% of samples reach main or worker_main (>= 95)" \
		less_than 94.999 "$reach"
	for fn in burn_sixty burn_thirty burn_ten; do
		has_chain "$f" "main;run_main_thread;burn_quantum;$fn" ||
			miss+=" main;run_main_thread;burn_quantum;$fn"
		has_chain "$f" "worker_main;worker_loop;burn_quantum;$fn" ||
			miss+=" worker_main;worker_loop;burn_quantum;$fn"
	done
	if [ -z "$miss" ]; then
		ok "$label: main and worker_main chains down to each burn_*"
	else
		not_ok "$label: main and worker_main chains down to each burn_* (missing$miss)"
	fi
	check "$label: no frame is a bare address" no_bare_addresses "$f"
}

# wait_http ERRFILE: the address an agent logged ("HTTP endpoint on
# http://ADDR/") in ERRFILE, in ADDR, and its token (http_token); waits
# up to 5 s.
wait_http() {
	local i
	for ((i = 0; i < 100; i++)); do
		ADDR=$(sed -n 's|.*HTTP endpoint on http://\([^/]*\)/.*|\1|p' "$1" | head -1)
		[ -n "$ADDR" ] && { http_token "$1"; return 0; }
		sleep 0.05
	done
	return 1
}

# http_token ERRFILE: the token file an agent logged ("HTTP endpoint on
# ...; token in PATH") in ERRFILE, in TOKEN_FILE, and the token it holds
# in TOKEN (readable by its owner and root): send it as
# curl -H "Authorization: Bearer $TOKEN". Both empty when the endpoint is
# open (NPROF_HTTP_AUTH=none).
http_token() {
	TOKEN_FILE=$(sed -n 's|.*HTTP endpoint on http://.*; token in \(/.*\)$|\1|p' "$1" | head -1)
	TOKEN=
	[ -z "$TOKEN_FILE" ] || TOKEN=$(cat "$TOKEN_FILE" 2>/dev/null)
	return 0
}

# within A B TOL: |A - B| <= TOL.
within() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }

# less_than A B: A < B (decimals).
less_than() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# --- users -------------------------------------------------------------------

# As user nobody, and as another unprivileged user (daemon, uid 1): with no
# supplementary groups and no capabilities left.
AS_NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all"
AS_DAEMON="setpriv --reuid=1 --regid=1 --clear-groups --inh-caps=-all --bounding-set=-all"

# A directory user nobody can write its output into.
nobody_dir() {
	mkdir -p "$TMP/nobody"
	chown 65534:65534 "$TMP/nobody"
	echo "$TMP/nobody"
}

# The test programs and nprof must be usable by those users.
usable_by_others() {
	$AS_NOBODY test -x "$NPROF" && $AS_NOBODY test -x "$PROGS/split"
}

# --- preconditions -----------------------------------------------------------

# need_build: nprof and the test programs exist, or every test fails here.
need_build() {
	[ -x "$NPROF" ] || bail "nprof is built ($NPROF)"
	[ -x "$PROGS/split" ] || bail "the test programs are built ($PROGS)"
}

# has_chain_re FILE RE1 RE2 ...: some stack holds consecutive frames
# matching RE1, RE2, ... in that order from the root.
has_chain_re() {
	local f=$1
	shift
	AWK_RES=$(printf '%s\n' "$@") awk '
	BEGIN { k = split(ENVIRON["AWK_RES"], want, "\n") }
	{
		s = $0; sub(/ [0-9]+$/, "", s)
		n = split(s, fr, ";")
		for (i = 1; i + k - 1 <= n; i++) {
			for (j = 1; j <= k && fr[i + j - 1] ~ want[j]; j++) ;
			if (j > k) { found = 1; exit }
		}
	}
	END { exit !found }' "$f"
}

# rooted_chain FILE ROOT "a;b;c": some stack's root frame is exactly ROOT
# and it holds frames a, b, c one right after the other (whatever libc
# frames -- _start, clone3, start_thread -- lie between).
rooted_chain() {
	awk -v r="$2" -v c="$3" '
	BEGIN { k = split(c, want, ";") }
	{
		s = $0; sub(/ [0-9]+$/, "", s)
		n = split(s, fr, ";")
		if (fr[1] != r) next
		for (i = 2; i + k - 1 <= n; i++) {
			for (j = 1; j <= k && fr[i + j - 1] == want[j]; j++) ;
			if (j > k) { found = 1; exit }
		}
	}
	END { exit !found }' "$1"
}

# --- nprofd --------------------------------------------------------------------
# need_etcd WHAT: skips the script's checks (WHAT) when Debian's etcd is
# not installed.
need_etcd() {
	command -v etcd >/dev/null && return 0
	skip "$1" "etcd is not installed (scripts/install-deps: etcd-server)"
	finish
}

# start_etcd: etcd on loopback at ETCD_URL (its peer port PPORT), its
# data in $TMP/etcd (kept across a restart), its pid in ETCD; waits up
# to 30 s for it to answer.
start_etcd() {
	local i
	etcd --name nprof-test --data-dir "$TMP/etcd" \
		--listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
		--listen-peer-urls "http://127.0.0.1:$PPORT" \
		--initial-advertise-peer-urls "http://127.0.0.1:$PPORT" \
		--initial-cluster "nprof-test=http://127.0.0.1:$PPORT" >>"$TMP/etcd.log" 2>&1 &
	ETCD=$!
	bg_pids+=("$ETCD")
	for ((i = 0; i < 300; i++)); do
		# (with auth on, the refusal is an answer too)
		curl -s --max-time 2 -X POST "$ETCD_URL/v3/kv/range" -d '{"key": "AA=="}' 2>/dev/null |
			grep -qE 'header|user name' && return 0
		kill -0 "$ETCD" 2>/dev/null || break
		sleep 0.1
	done
	diag_file "$TMP/etcd.log"
	return 1
}

# free_port: a TCP port free on 127.0.0.1 now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# journey_conf SV: the sections of nprofd.conf the page's whole journey
# (tests/e2e/daemon_ui.js) uses: restarts, commands, heap profiling and
# attaching on; the runit service SV (its program $TMP/sv/split_sv)
# restarted by sv; the operator's command hello.
journey_conf() {
	cat <<CONF
[instances]
grace = 5s
[actions]
restart = on
commands = on
heap_profiling = on
attach = on
[service splitsvc]
match = exe:$TMP/sv/split_sv
restart_command = sv restart $1
[command hello]
description = says hello to the worker
run = echo hello %p
timeout = 10s
output = stdout
CONF
}


# need_daemon: nprofd is built, curl is there and we are root (a daemon
# for several users); sets NPROFD, D (the daemon's directory: its
# config, log and state) and SOCK. NPROFD is NPROF_TEST_NPROFD when set:
# tests/integration/daemon_sanitize.sh runs these tests against the
# sanitizer builds of nprofd (BUILD/sanitize/{asan,tsan}/nprofd).
need_daemon() {
	NPROFD=${NPROF_TEST_NPROFD:-$NPROF_BUILD/nprofd}
	[ -x "$NPROFD" ] || bail "nprofd is built ($NPROFD)"
	command -v curl >/dev/null || bail "curl is installed (scripts/install-deps)"
	if [ "$(id -u)" != 0 ]; then
		skip "nprofd" "needs root (a daemon for several users)"
		finish
	fi
	D=$TMP/daemon
	mkdir -p "$D"
	chmod 755 "$D"
	SOCK=$D/nprofd.sock
}

# not_ok_reply DESCRIPTION: not_ok, showing the last reply (a daemon
# test defines not_ok() { not_ok_reply "$@"; }).
not_ok_reply() {
	tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1)); echo "not ok $tap_n - $*"
	diag "last reply (${CODE:-}):"; diag_file "$TMP/api.out" 3
}

# json FILE EXPR: a Python expression on the JSON in FILE (as j).
json() {
	python3 -c "import json,sys; j=json.load(open(sys.argv[1])); v=($2); print(v if isinstance(v, str) else repr(v))" "$1" 2>/dev/null
}

# api [-u AS] METHOD PATH [BODY]: one call over the socket, as root or
# as AS (a setpriv command line); the body in $TMP/api.out (written by
# this shell, so any user's reply lands there), the status in CODE.
api() {
	local as=""
	[ "$1" = -u ] && { as=$2; shift 2; }
	$as curl -s -o - -w '%{stderr}%{http_code}' --max-time 60 --unix-socket "$SOCK" \
		-X "$1" ${3:+-H 'Content-Type: application/json' --data-binary "$3"} "http://nprofd$2" \
		>"$TMP/api.out" 2>"$TMP/api.code"
	CODE=$(cat "$TMP/api.code")
}

# http TOKEN METHOD PATH [BODY]: the same over HTTP with a bearer token.
http() {
	CODE=$(curl -s -o "$TMP/api.out" -w '%{http_code}' --max-time 60 -X "$2" \
		${1:+-H "Authorization: Bearer $1"} ${4:+--data-binary "$4"} "http://$HTTP_ADDR$3")
}

# start_daemon CONFIG [NAME IP [PORT]]: nprofd on this test's socket and
# state ($SOCK, $D/state, its log $D/log, on 127.0.0.1), or NAME's
# ($D/NAME.sock, $D/NAME/state, $D/NAME.log, on IP, on PORT or one the
# kernel picks); sets DAEMON and HTTP_ADDR once it listens (up to 10 s).
start_daemon() {
	local i sock=$SOCK state=$D/state log=$D/log ip=127.0.0.1
	if [ -n "${2:-}" ]; then
		sock=$D/$2.sock state=$D/$2/state log=$D/$2.log ip=$3
		mkdir -p "$D/$2"
	fi
	: >"$log"
	"$NPROFD" --config "$1" --socket "$sock" --state-dir "$state" --listen "$ip:${4:-0}" 2>"$log" &
	DAEMON=$!
	bg_pids+=("$DAEMON")
	for ((i = 0; i < 200; i++)); do
		HTTP_ADDR=$(sed -n 's|.*listening on http://\([^/]*\)/.*|\1|p' "$log" | head -1)
		[ -n "$HTTP_ADDR" ] && return 0
		kill -0 "$DAEMON" 2>/dev/null || break
		sleep 0.05
	done
	diag_file "$log"
	return 1
}

# worker_of PID: its worker id, as root sees it.
worker_of() {
	api GET "/api/v1/workers?pid=$1"
	json "$TMP/api.out" 'j["workers"][0]["id"]'
}

# wait_instance ID [SECONDS]: polls until the instance is not RUNNING;
# its JSON in $TMP/inst.json, its status in STATUS.
wait_instance() {
	local i
	for ((i = 0; i < ${2:-30} * 10; i++)); do
		api GET "/api/v1/instances/$1"
		cp "$TMP/api.out" "$TMP/inst.json"
		STATUS=$(json "$TMP/inst.json" 'j["status"]')
		[ "$STATUS" != RUNNING ] && return 0
		sleep 0.1
	done
	return 1
}

# start_instance BODY: POST /api/v1/instances; its id in INST.
start_instance() {
	api POST /api/v1/instances "$1"
	INST=$(json "$TMP/api.out" 'j["id"]')
}

# artifact_of: the first artifact id of $TMP/inst.json.
artifact_of() { json "$TMP/inst.json" 'j["artifacts"][0]["id"]'; }

# error_names CODE FIELD: the last reply had status CODE and named FIELD.
error_names() {
	[ "$CODE" = "$1" ] && [ "$(json "$TMP/api.out" 'j.get("field")')" = "$2" ] &&
		[ -n "$(json "$TMP/api.out" 'j["error"]')" ]
}


# --- the browser ------------------------------------------------------------------

# need_browser: Debian's chromium, node and playwright-core (installed into
# tests/e2e from its package-lock.json when missing); false, after saying
# why in a diagnostic, when they cannot be had.
need_browser() {
	local e2e=$NPROF_SRC/tests/e2e
	[ -x "${CHROMIUM:-/usr/bin/chromium}" ] && command -v node >/dev/null ||
		{ BROWSER_WHY="chromium or node missing (scripts/install-deps installs them)"; return 1; }
	[ -d "$e2e/node_modules/playwright-core" ] ||
		(cd "$e2e" && npm ci --no-audit --no-fund >/dev/null 2>&1)
	[ -d "$e2e/node_modules/playwright-core" ] ||
		{ BROWSER_WHY="playwright-core missing and npm ci failed (cd tests/e2e && npm ci)"; return 1; }
}

# run_js SCRIPT: runs a tests/e2e script and counts its TAP lines as this
# test's own checks; a script that exits with an error without having
# failed a check (a syntax error, a crash, its time limit: E2E_TIMEOUT
# seconds, 120 by default) is a failed check of its own, with its output.
run_js() {
	local line out=$TMP/run_js.$$.out rc=0 failed=0
	NPROF_E2E_DIR=${NPROF_E2E_DIR:-$TMP} timeout "${E2E_TIMEOUT:-120}" node "$NPROF_SRC/tests/e2e/$1" >"$out" 2>&1 || rc=$?
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "${line#ok * - }" ;;
		"not ok "*) not_ok "${line#not ok * - }"; failed=1 ;;
		"#"*) echo "$line" ;;
		esac
	done <"$out"
	if [ "$rc" = 124 ]; then
		not_ok "node $1 ran out of its time limit (E2E_TIMEOUT=${E2E_TIMEOUT:-120} s); the checks above show how far it got"
	elif [ "$rc" != 0 ] && [ "$failed" = 0 ]; then
		not_ok "node $1 exited with status $rc"
		grep -v '^ok \|^not ok \|^#' "$out" | tail -15 | sed 's/^/# /'
	fi
}
