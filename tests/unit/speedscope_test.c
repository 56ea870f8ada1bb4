/* The speedscope writer: the file's shape, the weights, one profile per
 * thread with the thread frames left out, and JSON string escaping. */
#include <stdlib.h>
#include <string.h>

#include "output/output.h"
#include "test.h"

static uint32_t fr(struct profile *p, const char *name, enum frame_kind k)
{
	struct frame f = { .name = name, .module = "/usr/bin/app", .kind = k };
	uint32_t id;

	profile_intern_frame(p, &f, &id);
	return id;
}

static void add(struct profile *p, const uint32_t *frames, uint32_t n,
		pid_t tid, const char *tname, int64_t samples)
{
	uint32_t s, t;
	int64_t v[2] = { samples, samples * 1000 };

	profile_intern_stack(p, frames, n, false, &s);
	profile_intern_thread(p, tid, tname, &t);
	profile_add_sample(p, s, t, v);
}

static char *render(const struct profile *p, const struct output_options *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	if (output_write(p, OUTPUT_SPEEDSCOPE, o, out) < 0)
		CHECK(0, "output_write failed");
	fclose(out);
	return buf;
}

static int count(const char *s, const char *needle)
{
	int n = 0;

	for (; (s = strstr(s, needle)); s++)
		n++;
	return n;
}

int main(void)
{
	static const struct value_type one[] = { { "samples", "count" } };
	static const struct value_type two[] = { { "samples", "count" },
						 { "cpu", "nanoseconds" } };
	struct output_options o = { .title = "my \"title\"" };
	struct profile *p = profile_new();
	uint32_t main_ = fr(p, "main", FRAME_USER), run = fr(p, "run", FRAME_USER),
		 odd = fr(p, "q\"uo\\te\x01\xff\xc3\xa9", FRAME_USER);
	char *text;

	profile_set_value_types(p, one, 1);
	p->event = "cpu";
	{
		uint32_t s1[] = { main_, run }, s2[] = { main_, odd };
		add(p, s1, 2, 0, NULL, 60);
		add(p, s2, 2, 0, NULL, 40);
	}
	text = render(p, &o);
	CHECK(strstr(text, "\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""),
	      "the schema");
	CHECK(strstr(text, "\"name\":\"my \\\"title\\\"\""), "the title, escaped");
	CHECK(count(text, "\"type\":\"sampled\"") == 1, "one thread: one profile");
	CHECK(strstr(text, "\"unit\":\"none\"") && strstr(text, "\"endValue\":100"),
	      "counts have no unit; endValue is the total");
	CHECK(strstr(text, "[0,1]") && strstr(text, "[0,2]"),
	      "samples are frame indexes, root first");
	CHECK(strstr(text, "\"weights\":[60,40]"), "weights");
	CHECK(strstr(text, "\"name\":\"q\\\"uo\\\\te\\u0001\\ufffd\xc3\xa9\""),
	      "quotes, backslashes, control bytes and bad UTF-8 escaped; good UTF-8 kept");
	CHECK(strstr(text, "\"file\":\"/usr/bin/app\""), "the module as the frame's file");
	free(text);
	profile_free(p);

	/* Several threads and a time value: one profile per thread, busiest
	 * first, weighed in nanoseconds, thread frames left out. */
	p = profile_new();
	main_ = fr(p, "main", FRAME_USER);
	run = fr(p, "run", FRAME_USER);
	{
		uint32_t t1 = fr(p, "[main tid=1]", FRAME_THREAD),
			 t2 = fr(p, "[worker tid=2]", FRAME_THREAD);
		uint32_t s1[] = { t1, main_, run }, s2[] = { t2, main_ };

		profile_set_value_types(p, two, 2);
		add(p, s1, 3, 1, "main", 10);
		add(p, s2, 2, 2, "worker", 30);
	}
	text = render(p, NULL);
	CHECK(count(text, "\"type\":\"sampled\"") == 2, "two threads: two profiles");
	CHECK(strstr(text, "\"name\":\"worker tid=2\"") &&
	      strstr(text, "\"name\":\"main tid=1\"") &&
	      strstr(text, "worker tid=2\"") < strstr(text, "main tid=1\","),
	      "named name tid=N, busiest first");
	CHECK(strstr(text, "\"unit\":\"nanoseconds\"") && strstr(text, "\"weights\":[30000]") &&
	      strstr(text, "\"weights\":[10000]"), "weighed by the nanoseconds value");
	CHECK(strstr(text, "[0,1]") && strstr(text, "\"samples\":[\n[0]]"),
	      "thread frames are left out of the stacks");
	free(text);
	profile_free(p);
	return test_done();
}
