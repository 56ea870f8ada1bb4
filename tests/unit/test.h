/* test.h: a tiny TAP producer for unit tests.
 *
 * Each CHECK prints "ok N - what" or "not ok N - what (file:line)"; the
 * runner (tests/run) counts them. A test program ends with
 * `return test_done();`, which exits non-zero if anything failed. */
#ifndef NPROF_TEST_H
#define NPROF_TEST_H

#include <stdio.h>
#include <string.h>

static int test_count, test_failed;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		int check_ok_ = !!(cond); /* evaluated once */             \
		test_count++;                                              \
		if (!check_ok_)                                            \
			test_failed++;                                     \
		printf("%s %d - ", check_ok_ ? "ok" : "not ok",            \
		       test_count);                                        \
		printf(__VA_ARGS__);                                       \
		if (!check_ok_)                                            \
			printf(" (%s:%d: %s)", __FILE__, __LINE__, #cond); \
		printf("\n");                                              \
		fflush(stdout);                                            \
	} while (0)

#define CHECK_STR(a, b, ...)                                              \
	do {                                                              \
		const char *a_ = (a), *b_ = (b);                          \
		int same_ = a_ && b_ && !strcmp(a_, b_);                  \
		CHECK(same_, __VA_ARGS__);                                \
		if (!same_)                                               \
			printf("#   got \"%s\", want \"%s\"\n",           \
			       a_ ? a_ : "(null)", b_ ? b_ : "(null)");   \
	} while (0)

/* CHECK_INT(a, op, b, ...) and CHECK_UINT: a comparison of two integers
 * that, when it fails, prints both values, as signed (long long) or
 * unsigned (unsigned long long) numbers:
 *   CHECK_UINT(r->stats.samples, >, 0, "samples before the exit"); */
#define CHECK_CMP_(type, fmt, a, op, b, ...)                              \
	do {                                                              \
		type a_ = (type)(a), b_ = (type)(b);                      \
		int holds_ = a_ op b_;                                    \
		CHECK(holds_, __VA_ARGS__);                               \
		if (!holds_)                                              \
			printf("#   %s = " fmt ", %s = " fmt ": not %s\n", \
			       #a, a_, #b, b_, #op);                      \
	} while (0)
#define CHECK_INT(a, op, b, ...) CHECK_CMP_(long long, "%lld", a, op, b, __VA_ARGS__)
#define CHECK_UINT(a, op, b, ...) \
	CHECK_CMP_(unsigned long long, "%llu", a, op, b, __VA_ARGS__)

static inline int test_done(void)
{
	printf("1..%d\n", test_count);
	return test_failed ? 1 : 0;
}

#endif
