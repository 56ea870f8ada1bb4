#!/usr/bin/env bash
# Browser tests of the flamegraph, tree and svg outputs (tests/e2e/*.test.js)
# in Debian's chromium driven by playwright-core. The unit tests write the
# pages (NPROF_E2E_DIR); screenshots land beside them in BUILD/e2e.
#
# Skips (one "ok # SKIP" line) when chromium is not installed; installs
# playwright-core from tests/e2e/package-lock.json when it is missing.
set -u
src=${NPROF_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${NPROF_BUILD:-$src/build}
e2e=$src/tests/e2e

if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ] || ! command -v node >/dev/null; then
	echo "ok 1 # SKIP chromium or node missing (scripts/install-deps installs them)"
	echo "1..1"
	exit 0
fi
if [ ! -d "$e2e/node_modules/playwright-core" ] || [ ! -d "$e2e/node_modules/speedscope" ]; then
	(cd "$e2e" && npm ci --no-audit --no-fund >/dev/null 2>&1)
	if [ ! -d "$e2e/node_modules/playwright-core" ]; then
		echo "ok 1 # SKIP playwright-core missing and npm ci failed (cd tests/e2e && npm ci)"
		echo "1..1"
		exit 0
	fi
fi

export NPROF_E2E_DIR=$build/e2e
mkdir -p "$NPROF_E2E_DIR"
status=0
for t in flamegraph tree svg; do
	if ! "$build/tests/unit/${t}_test" >"$NPROF_E2E_DIR/${t}_test.log" 2>&1; then
		echo "not ok - ${t}_test failed writing the pages (see $NPROF_E2E_DIR/${t}_test.log)"
		status=1
	fi
done
for js in "$e2e"/*.test.js; do
	echo "# $(basename "$js")"
	timeout 300 node "$js" || status=1
done
exit $status
