/* series: value 0 of profiles over wall-clock time — each stack's value
 * at its events' times (weighted as the flame graph's strip weighs
 * them), the rest spread over the profile's span, buckets whole steps
 * since the epoch, what falls outside a range counted, a profile of
 * another value refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/series.h"
#include "test.h"

#define SEC 1000000000ull
#define START (1767225600ull * SEC) /* 2026-01-01T00:00:00Z, a multiple of any step below */

static uint32_t stack_of(struct profile *p, const char *leaf)
{
	struct frame l = { .name = leaf, .kind = FRAME_USER };
	uint32_t f, s;

	profile_intern_frame(p, &l, &f);
	profile_intern_stack(p, &f, 1, false, &s);
	return s;
}

/* a: 300 bytes in three events of 1 (0.1 s, 0.2 s, 3.9 s); b: 100 bytes
 * in one (2.5 s); c: 40 bytes and no event; over 4 s from START. */
static struct profile *bytes_profile(const char *type)
{
	struct value_type vt[] = { { type, "bytes" } };
	struct profile *p = profile_new();
	uint32_t a, b, c, t;
	int64_t va = 300, vb = 100, vc = 40;

	profile_set_value_types(p, vt, 1);
	p->start_ns = START;
	p->duration_ns = 4 * SEC;
	p->max_events = 16;
	a = stack_of(p, "a");
	b = stack_of(p, "b");
	c = stack_of(p, "c");
	profile_intern_thread(p, 7, "main", &t);
	profile_add_sample(p, a, t, &va);
	profile_add_sample(p, b, t, &vb);
	profile_add_sample(p, c, t, &vc);
	profile_add_event(p, START + SEC / 10, a, t, 1);
	profile_add_event(p, START + SEC / 5, a, t, 1);
	profile_add_event(p, START + 5 * SEC / 2, b, t, 1);
	profile_add_event(p, START + 39 * SEC / 10, a, t, 1);
	return p;
}

static void test_unbounded(void)
{
	struct series s;
	struct profile *p = bytes_profile("alloc_space"), *q = bytes_profile("alloc_objects");
	const char *type = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	CHECK(series_init(&s, SEC, 0, 0) == 0, "a series of 1 s steps over what the profiles span");
	CHECK(series_add(&s, p, &type) == 0, "a profile added");
	CHECK(s.first == (int64_t)(START / SEC) && s.n == 4, "4 buckets from START (%zu)", s.n);
	/* a: 200 in second 0, 100 in 3; b: 100 in 2; c: 10 in each */
	CHECK(s.values[0] == 210 && s.values[1] == 10 && s.values[2] == 110 && s.values[3] == 110,
	      "each stack at its events' times, the one without events spread: %g %g %g %g",
	      s.values[0], s.values[1], s.values[2], s.values[3]);
	CHECK(s.spread == 1 && s.outside == 0, "one profile spread in part, nothing outside");
	CHECK(series_add(&s, q, &type) == -EINVAL && !strcmp(type, "alloc_objects"),
	      "a profile of another value: refused, naming it");
	out = open_memstream(&buf, &len);
	CHECK(series_write_json(&s, out) == 0, "written");
	fclose(out);
	CHECK_STR(buf, "{\"type\":\"alloc_space\",\"unit\":\"bytes\",\"step\":1.000,\"from\":1767225600.000,"
		  "\"values\":[210,10,110,110],\"profiles\":1,\"spread\":1,\"outside\":0}\n", "its JSON");
	free(buf);
	series_release(&s);
	profile_free(p);
	profile_free(q);
}

static void test_bounded(void)
{
	struct series s;
	struct profile *p = bytes_profile("alloc_space");
	const char *type = NULL;

	/* 2 s steps over [START + 1 s, START + 3 s): buckets START..+2, +2..+4 */
	CHECK(series_init(&s, 2 * SEC, START + SEC, START + 3 * SEC) == 0, "a bounded series");
	CHECK(s.first == (int64_t)(START / (2 * SEC)) && s.n == 2, "two whole steps cover it (%zu)", s.n);
	CHECK(series_add(&s, p, &type) == 0, "added");
	/* inside: c's 10 of [1,2) + 10 of [2,3), b's 100 at 2.5 */
	CHECK(s.values[0] == 10 && s.values[1] == 110, "only what fell in the range: %g %g",
	      s.values[0], s.values[1]);
	CHECK(s.outside == 320, "the rest counted outside: %g", s.outside);
	series_release(&s);
	CHECK(series_init(&s, SEC, 0, 200000ull * SEC) == -E2BIG, "more than SERIES_MAX_BUCKETS: -E2BIG");
	CHECK(series_init(&s, 0, 0, 0) == -EINVAL, "no step: -EINVAL");
	CHECK(series_init(&s, SEC, 5 * SEC, 5 * SEC) == -EINVAL, "from not before until: -EINVAL");
	profile_free(p);
}

int main(void)
{
	test_unbounded();
	test_bounded();
	return test_done();
}
