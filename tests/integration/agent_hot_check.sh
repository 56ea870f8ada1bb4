#!/usr/bin/env bash
# scripts/check-hot: the objects that run in signal handlers (src/agent/hot/
# and the unwind walker they call) reference only async-signal-safe
# symbols; and the checker itself catches an object that calls malloc,
# printf or pthread_mutex_lock.
. "$(dirname "$0")/lib.sh"
CHECK=$NPROF_SRC/scripts/check-hot
shopt -s nullglob
hot=("$NPROF_BUILD"/src/agent/hot/*.o)
[ ${#hot[@]} -gt 0 ] || bail "the hot objects are built ($NPROF_BUILD/src/agent/hot/*.o)"
walker=$NPROF_BUILD/src/unwind/walker.o

if "$CHECK" "${hot[@]}" "$walker" 2>"$TMP/hot.err"; then
	ok "check-hot: ${#hot[@]} hot objects and the walker reference only allowed symbols"
else
	not_ok "check-hot: the hot objects reference only allowed symbols"
	diag_file "$TMP/hot.err"
fi

# The checker must fail on a bad object, naming each forbidden symbol.
cat >"$TMP/bad.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
void bad_handler(int sig);
void bad_handler(int sig)
{
	char *p = malloc(16);
	pthread_mutex_lock(&m);
	printf("signal %d %p\n", sig, (void *)p);
	pthread_mutex_unlock(&m);
	free(p);
}
C
${CC:-cc} -O2 -c "$TMP/bad.c" -o "$TMP/bad.o" || bail "the bad object compiles"
if "$CHECK" "${hot[@]}" "$walker" "$TMP/bad.o" 2>"$TMP/bad.err"; then
	not_ok "check-hot fails on an object calling malloc, printf and pthread_mutex_lock"
else
	ok "check-hot fails on an object calling malloc, printf and pthread_mutex_lock"
fi
for s in malloc free pthread_mutex_lock; do
	check "check-hot names $s" grep -q "bad.o references $s," "$TMP/bad.err"
done
check "check-hot names printf (or the puts/printf gcc turned it into)" \
	grep -qE "bad.o references (printf|__printf_chk)," "$TMP/bad.err"
check "check-hot does not blame the good objects" bash -c "! grep -q '/hot/' '$TMP/bad.err'"
finish
