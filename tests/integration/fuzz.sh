#!/usr/bin/env bash
# The short fuzz run of make check: every target, FUZZ_SECONDS each.
exec "$NPROF_SRC/tests/fuzz/run-all" "$NPROF_BUILD"
