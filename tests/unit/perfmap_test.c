/* perfmap_test: /tmp/perf-PID.map text; later lines win over earlier. */
#include <string.h>

#include "symbolize/perfmap.h"
#include "test.h"

static const char *name_at(struct perfmap *m, uint64_t addr)
{
	const struct perfmap_entry *e = perfmap_find(m, addr);

	return e ? perfmap_name(m, e) : NULL;
}

int main(void)
{
	int rc;
	struct perfmap m;
	static const char text[] =
		"1000 100 LazyCompile:*foo /app/a.js:10\n"
		"0x2000 0x80 py::bar:/app/b.py\r\n"
		"bad line\n"
		"3000 0 zero_size\n"
		"1040 10 inner_later\n"
		"500 10 out_of_order\n"
		"4000 10 partial"; /* the JIT is mid-write */

	perfmap_init(&m);
	rc = perfmap_parse(&m, text, sizeof(text) - 1);
	CHECK(rc == 0, "parse");
	CHECK(m.n == 4, "4 entries (%zu)", m.n);
	CHECK(m.skipped_lines == 2, "bad and zero-size skipped");
	CHECK(m.consumed == sizeof(text) - 1 - strlen("4000 10 partial"),
	      "partial last line left");
	CHECK_STR(name_at(&m, 0x1010), "LazyCompile:*foo /app/a.js:10", "name with spaces");
	CHECK_STR(name_at(&m, 0x2010), "py::bar:/app/b.py", "0x prefix, CRLF");
	CHECK_STR(name_at(&m, 0x1045), "inner_later", "later overlapping entry wins");
	CHECK_STR(name_at(&m, 0x1060), "LazyCompile:*foo /app/a.js:10", "outer again");
	CHECK_STR(name_at(&m, 0x505), "out_of_order", "unsorted input");
	CHECK(name_at(&m, 0x1100) == NULL, "end exclusive");
	CHECK(name_at(&m, 0x10) == NULL, "below all");
	/* The rest of the file arrives. */
	rc = perfmap_parse(&m, "4000 10 partial_done\n1000 100 reused\n", strlen("4000 10 partial_done\n1000 100 reused\n"));
	CHECK(rc == 0,
	      "append");
	CHECK_STR(name_at(&m, 0x4004), "partial_done", "completed line");
	CHECK_STR(name_at(&m, 0x1010), "reused", "reused address: newest wins");
	rc = perfmap_parse(&m, "ffffffffffffffff 10 wraps\n", strlen("ffffffffffffffff 10 wraps\n"));
	CHECK(rc == 0 &&
	      name_at(&m, 0xffffffffffffffff) == NULL, "wrapping range rejected");
	rc = perfmap_parse(&m, "11112222333344445 10 long\n", strlen("11112222333344445 10 long\n"));
	CHECK(rc == 0 && m.n == 6,
	      "17-digit address rejected");
	perfmap_release(&m);
	perfmap_release(NULL);
	return test_done();
}
