#!/usr/bin/env bash
# The web UI's deciding functions under node's test runner (tests/ui/:
# formatting, an instance's status and countdown, thread-dump grouping,
# what the actions panel offers and why not, the modules' import graph),
# each node test one TAP line here. They import src/daemon/ui/'s DOM-free
# modules as they are served: no build, no browser.
. "$(dirname "$0")/lib.sh"
trap 'rm -rf "$TMP"' EXIT
if ! command -v node >/dev/null ||
	! node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)'; then
	skip "the web UI's unit tests" "node 20 or later is not installed (scripts/install-deps installs it)"
	finish
fi
# (--experimental-detect-module: the modules are .js files with no
# package.json, ES modules by their syntax; node 20.19 and later know so
# without it.)
rc=0
node --experimental-detect-module --test --test-reporter=tap "$NPROF_SRC"/tests/ui/*.test.mjs \
	>"$TMP/tap" 2>&1 || rc=$?
# node's top-level results, renumbered as ours; the rest (subtests'
# details, its summary) as diagnostics.
while IFS= read -r line; do
	case $line in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	"1.."* | "TAP version"*) ;;
	*) [ "$rc" -ne 0 ] && diag "$line" ;;
	esac
done <"$TMP/tap"
[ "$tap_n" -gt 0 ] || not_ok "node --test ran the tests of tests/ui/"
[ "$rc" -eq 0 ] || [ "$tap_failed" -gt 0 ] || not_ok "node --test exited with status $rc"
finish
