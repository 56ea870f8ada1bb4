#!/usr/bin/env bash
# lib.sh's scenarios, on a script made for the purpose: run whole, every
# scenario in order, each set-up once; NPROF_SCENARIO=NAME runs that one
# alone with its set-ups and no other's; two names run both, in the
# script's order; a name the script lacks fails, listing those it has.
. "$(dirname "$0")/lib.sh"

cat >"$TMP/demo.sh" <<'DEMO'
. "$NPROF_SRC/tests/integration/lib.sh"
setup_base() { echo "set-up base" >&2; }
setup_extra() { given base; echo "set-up extra" >&2; }
scenario_first() { given base; ok "first"; }
scenario_second() { given base extra; ok "second"; }
scenario_third() { ok "third"; }
run_scenarios first second third
finish
DEMO

# demo [SCENARIOS]: runs the script (only SCENARIOS), its TAP in
# $TMP/demo.out, its set-ups' lines in $TMP/demo.err.
demo() { NPROF_SCENARIO=${1:-} bash "$TMP/demo.sh" >"$TMP/demo.out" 2>"$TMP/demo.err"; }
oks() { grep '^ok ' "$TMP/demo.out" | sed 's/^ok [0-9]* - //' | tr '\n' ' '; }
setups() { tr '\n' ' ' <"$TMP/demo.err"; }

demo
check "whole: every scenario in order ($(oks)), each set-up once ($(setups))" \
	bash -c "[ '$(oks)' = 'first second third ' ] && [ '$(setups)' = 'set-up base set-up extra ' ]"
demo second
check "second alone: its checks only ($(oks)), with the set-ups it needs ($(setups))" \
	bash -c "[ '$(oks)' = 'second ' ] && [ '$(setups)' = 'set-up base set-up extra ' ]"
demo third
check "third alone: no set-up ($(setups))" bash -c "[ '$(oks)' = 'third ' ] && [ -z '$(setups)' ]"
demo third,first
check "third,first: both, in the script's order ($(oks))" [ "$(oks)" = "first third " ]
demo fourth
rc=$?
check "fourth, which it lacks: a failure (status $rc) naming those it has" \
	bash -c "[ $rc -ne 0 ] && grep -q '^not ok .*no scenario fourth; it has: first second third' '$TMP/demo.out'"
finish
