#!/usr/bin/env bash
# scripts/check-layers: src/ keeps the layering of docs/design.md, and the
# checker itself catches a folder including one above it or a sibling,
# and a folder with no level.
. "$(dirname "$0")/lib.sh"
CHECK=$NPROF_SRC/scripts/check-layers

if "$CHECK" "$NPROF_SRC/src" 2>"$TMP/layers.err"; then
	ok "check-layers: every #include in src/ points to its own folder or a lower layer"
else
	not_ok "check-layers: every #include in src/ points to its own folder or a lower layer"
	diag_file "$TMP/layers.err"
fi

bad=$TMP/src
mkdir -p "$bad/base" "$bad/symbolize" "$bad/cli" "$bad/widgets"
printf '#include "base/diag.h"\n#include "cli/cli.h"\n' >"$bad/base/up.c"
printf '#include "profile/profile.h"\n  #  include "output/output.h"\n' >"$bad/symbolize/sibling.h"
printf '#include "engine/engine.h"\n#include "help/nprof.h"\n#include <stdio.h>\n' >"$bad/cli/fine.c"
printf '#include "base/diag.h"\n' >"$bad/widgets/w.c"
if "$CHECK" "$bad" 2>"$TMP/bad.err"; then
	not_ok "check-layers fails on a tree that breaks the layering"
else
	ok "check-layers fails on a tree that breaks the layering"
fi
check "names base including cli" grep -q 'base/up.c:2 (src/base) includes cli/' "$TMP/bad.err"
check "names symbolize including its sibling output" grep -q 'symbolize/sibling.h:2 (src/symbolize) includes output/' "$TMP/bad.err"
check "names a folder with no level" grep -q 'src/widgets has no level' "$TMP/bad.err"
check "does not blame lower layers, own folder or generated help" bash -c "! grep -q 'fine.c\|up.c:1' '$TMP/bad.err'"
diag_file "$TMP/bad.err"
finish
