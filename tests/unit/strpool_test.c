/* strpool_test: interned strings that live as long as their pool.
 *
 * Equal strings come back as one pointer, whether given NUL-terminated or
 * as a length into a longer buffer (or one with no NUL at all); prefixes
 * and the empty string are strings of their own; tens of thousands of
 * names, and names larger than a chunk, keep their pointers and their
 * bytes as the pool grows; bytes counts each distinct string once; and
 * max_bytes is a hard limit: past it a new string fails with ENOBUFS
 * while strings already in the pool are still handed out. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/strpool.h"
#include "test.h"

static void test_basic(void)
{
	struct strpool p;
	char buf[] = "function_name";
	const char nonul[3] = { 'x', 'y', 'z' };
	const char *a, *b, *c, *e, *e2, *ab, *abc, *x;

	strpool_init(&p, 0);
	CHECK(p.n == 0 && p.bytes == 0, "init: empty");

	a = strpool_intern(&p, buf);
	CHECK_STR(a, "function_name", "intern: a copy");
	CHECK(a != buf, "intern: not the caller's buffer");
	buf[0] = 'F';
	CHECK_STR(a, "function_name", "intern: the copy outlives a change to the input");
	b = strpool_intern(&p, "function_name");
	CHECK(b == a, "intern: equal strings share one pointer");
	c = strpool_intern_len(&p, "function_name(int, char)", 13);
	CHECK(c == a, "intern_len: a prefix of a longer buffer is the same string");
	CHECK_UINT(p.n, ==, 1, "one distinct string so far");
	CHECK_UINT(p.bytes, ==, sizeof("function_name"), "bytes: len + 1");

	x = strpool_intern_len(&p, nonul, sizeof(nonul));
	CHECK_STR(x, "xyz", "intern_len: input without a NUL gets one");
	CHECK(strpool_intern(&p, "xyz") == x, "and equals the NUL-terminated one");

	e = strpool_intern(&p, "");
	CHECK(e && *e == '\0', "empty string interned");
	e2 = strpool_intern_len(&p, "abc", 0);
	CHECK(e2 == e, "zero length is the empty string");
	CHECK(strpool_intern(&p, "") == e, "empty string again: same pointer");

	ab = strpool_intern(&p, "ab");
	abc = strpool_intern(&p, "abc");
	CHECK(ab && abc && ab != abc, "ab and abc are distinct");
	CHECK(ab != e && abc != e, "and distinct from the empty string");
	CHECK(strpool_intern_len(&p, "abcdef", 2) == ab, "prefix 2 is ab");
	CHECK(strpool_intern_len(&p, "abcdef", 3) == abc, "prefix 3 is abc");
	CHECK_STR(strpool_intern(&p, "a"), "a", "prefix 1 is a new string");
	CHECK(strpool_intern(&p, "a") != ab, "a is not ab");
	CHECK_STR(strpool_intern(&p, "\xc3\xa9t\xc3\xa9\xff"), "\xc3\xa9t\xc3\xa9\xff",
		  "bytes above 0x7f kept");
	CHECK_UINT(p.n, ==, 7, "distinct strings counted");
	CHECK_UINT(p.bytes, ==,
		   sizeof("function_name") + sizeof("xyz") + 1 + sizeof("ab") +
			   sizeof("abc") + sizeof("a") + sizeof("\xc3\xa9t\xc3\xa9\xff"),
		   "bytes: each distinct string once");
	CHECK_STR(a, "function_name", "first string intact at the end");
	strpool_release(&p);
	CHECK(p.n == 0 && p.bytes == 0 && p.nchunks == 0, "release: empty");
}

/* Tens of thousands of names: every pointer stays put and keeps its bytes. */
static void test_many(void)
{
	enum { N = 30000 };
	struct strpool p;
	const char **got = calloc(N, sizeof(*got));
	size_t bytes = 0, bad_new = 0, bad_keep = 0, bad_again = 0;
	char buf[64];

	if (!got)
		abort();
	strpool_init(&p, 0);
	for (int i = 0; i < N; i++) {
		int len = snprintf(buf, sizeof(buf), "ns::Class%d::method_%d", i, i * 7);

		got[i] = strpool_intern(&p, buf);
		if (!got[i] || strcmp(got[i], buf))
			bad_new++;
		bytes += (size_t)len + 1;
	}
	CHECK_UINT(bad_new, ==, 0, "many: every name interned");
	CHECK_UINT(p.n, ==, N, "many: count");
	CHECK_UINT(p.bytes, ==, bytes, "many: bytes");
	CHECK_UINT(p.nchunks, >, 1, "many: several chunks used (%zu)", p.nchunks);
	for (int i = 0; i < N; i++) {
		snprintf(buf, sizeof(buf), "ns::Class%d::method_%d", i, i * 7);
		if (!got[i] || strcmp(got[i], buf))
			bad_keep++;
		if (strpool_intern(&p, buf) != got[i])
			bad_again++;
	}
	CHECK_UINT(bad_keep, ==, 0, "many: early pointers keep their bytes");
	CHECK_UINT(bad_again, ==, 0, "many: interning again gives the same pointer");
	CHECK_UINT(p.n, ==, N, "many: no new strings on the second pass");
	CHECK_UINT(p.bytes, ==, bytes, "many: nor new bytes");
	CHECK(strpool_intern(&p, "ns::Class1::method_8") != got[1],
	      "many: a near miss is a new string");
	strpool_release(&p);
	free(got);
}

/* Strings around and beyond the chunk size, between small ones. */
static void test_large(void)
{
	static const size_t sizes[] = { 16383, 16384, 16385, 65535, 65536,
					65537, 200000, 1, 40000, 70000 };
	enum { NS = sizeof(sizes) / sizeof(sizes[0]) };
	struct strpool p;
	char *want[NS];
	const char *big[NS], *small[NS];
	char name[32];
	size_t bad = 0;

	strpool_init(&p, 0);
	for (size_t i = 0; i < NS; i++) {
		want[i] = malloc(sizes[i] + 1);
		if (!want[i])
			abort();
		for (size_t j = 0; j < sizes[i]; j++)
			want[i][j] = (char)('a' + (i + j) % 26);
		want[i][sizes[i]] = '\0';
		big[i] = strpool_intern(&p, want[i]);
		snprintf(name, sizeof(name), "small%zu", i);
		small[i] = strpool_intern(&p, name);
		CHECK(big[i] && strlen(big[i]) == sizes[i] && small[i],
		      "large: %zu bytes, then a small one", sizes[i]);
	}
	for (size_t i = 0; i < NS; i++) {
		snprintf(name, sizeof(name), "small%zu", i);
		if (!big[i] || strcmp(big[i], want[i]) || !small[i] ||
		    strcmp(small[i], name))
			bad++;
		if (strpool_intern(&p, want[i]) != big[i] ||
		    strpool_intern(&p, name) != small[i])
			bad++;
	}
	CHECK_UINT(bad, ==, 0, "large: all intact and found again");
	CHECK_UINT(p.n, ==, 2 * NS, "large: one entry each");
	strpool_release(&p);
	for (size_t i = 0; i < NS; i++)
		free(want[i]);
}

static void test_limit(void)
{
	struct strpool p;
	const char *a, *b, *r;
	int ok = 1;

	strpool_init(&p, 10);
	a = strpool_intern(&p, "abcd"); /* 5 bytes */
	b = strpool_intern(&p, "efgh"); /* 10: exactly the limit */
	CHECK(a && b, "limit: up to max_bytes exactly");
	CHECK_UINT(p.bytes, ==, 10, "limit: bytes at the limit");
	errno = 0;
	r = strpool_intern(&p, "i");
	CHECK(r == NULL && errno == ENOBUFS, "limit: one more fails with ENOBUFS");
	errno = 0;
	r = strpool_intern(&p, "");
	CHECK(r == NULL && errno == ENOBUFS, "limit: even the empty string");
	CHECK_UINT(p.bytes, ==, 10, "limit: a refused string adds nothing");
	CHECK_UINT(p.n, ==, 2, "limit: nor an entry");
	CHECK(strpool_intern(&p, "abcd") == a && strpool_intern_len(&p, "efghij", 4) == b,
	      "limit: strings already in the pool still come back");
	strpool_release(&p);

	strpool_init(&p, 6);
	errno = 0;
	r = strpool_intern(&p, "abcdef");
	CHECK(r == NULL && errno == ENOBUFS, "limit: a first string too long fails");
	CHECK(p.n == 0 && p.bytes == 0, "limit: and leaves the pool empty");
	CHECK_STR(strpool_intern(&p, "abcde"), "abcde", "limit: one that fits exactly");
	strpool_release(&p);

	/* The limit as the symbolizer uses it: many names, then refusals. */
	strpool_init(&p, 1000);
	for (int i = 0; i < 1000; i++) {
		char buf[16];

		snprintf(buf, sizeof(buf), "sym%03d", i); /* 7 bytes each */
		r = strpool_intern(&p, buf);
		if ((i < 1000 / 7) != (r != NULL))
			ok = 0;
	}
	CHECK(ok, "limit: the first %d names fit, every later one fails", 1000 / 7);
	CHECK_UINT(p.bytes, ==, 1000 / 7 * 7, "limit: bytes stop below the limit");
	CHECK_STR(strpool_intern(&p, "sym000"), "sym000",
		  "limit: the first name still there");
	strpool_release(&p);
}

int main(void)
{
	test_basic();
	test_many();
	test_large();
	test_limit();
	return test_done();
}
