#!/usr/bin/env bash
# The short fuzz run of make check: every target, FUZZ_SECONDS each (5 by
# default: a smoke run over the seeds and a little past them, two targets
# at a time; `make fuzz-long` is the long run).
FUZZ_SECONDS=${FUZZ_SECONDS:-5} exec "$NPROF_SRC/tests/fuzz/run-all" "$NPROF_BUILD"
