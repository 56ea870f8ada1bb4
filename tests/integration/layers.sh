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

# nprofd's parts, the sub-folders of src/daemon, layered among themselves.
bad=$TMP/dsrc
mkdir -p "$bad/daemon/core" "$bad/daemon/jobs" "$bad/daemon/door" "$bad/daemon/widgets" "$bad/daemon/ui"
printf '#include "daemon/core/log.h"\n#include "daemon/api/api.h"\n' >"$bad/daemon/core/up.c"
printf '#include "daemon/core/daemon.h"\n#include "daemon/store/db.h"\n#include "daemon/main.h"\n' >"$bad/daemon/jobs/sib.c"
printf '#include "daemon/api/api.h"\n#include "daemon/auth/tokens.h"\n#include "base/clock.h"\n' >"$bad/daemon/door/fine.c"
printf '#include "daemon/core/log.h"\n' >"$bad/daemon/widgets/w.c"
printf 'not C\n' >"$bad/daemon/ui/app.js"
printf '#include "daemon/door/server.h"\n' >"$bad/daemon/main.c"
if "$CHECK" "$bad" 2>"$TMP/dbad.err"; then
	not_ok "check-layers fails on a daemon whose parts break their layering"
else
	ok "check-layers fails on a daemon whose parts break their layering"
fi
check "names core including api" grep -q 'daemon/core/up.c:2 (src/daemon/core) includes daemon/api' "$TMP/dbad.err"
check "names jobs including its sibling store" grep -q 'daemon/jobs/sib.c:2 (src/daemon/jobs) includes daemon/store' "$TMP/dbad.err"
check "names a part including a header of src/daemon itself" grep -q 'daemon/jobs/sib.c:3 (src/daemon/jobs) includes daemon/main.h' "$TMP/dbad.err"
check "names a part with no level" grep -q 'src/daemon/widgets has no level' "$TMP/dbad.err"
check "does not blame lower parts, own part, the web UI or main.c" \
	bash -c "! grep -q 'fine.c\|up.c:1\|sib.c:1\|ui\|main.c' '$TMP/dbad.err'"
diag_file "$TMP/dbad.err"
finish
