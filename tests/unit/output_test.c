/* The text writers on a profile built by hand with a known answer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/output.h"
#include "output/rank.h"
#include "test.h"

static uint32_t fr(struct profile *p, const char *name, enum frame_kind k)
{
	struct frame f = { .name = name, .module = "/usr/bin/app", .kind = k };
	uint32_t id;

	profile_intern_frame(p, &f, &id);
	return id;
}

static void add(struct profile *p, const uint32_t *frames, uint32_t n,
		pid_t tid, int64_t samples)
{
	uint32_t s, t;
	int64_t v[2] = { samples, samples * 10000000 };

	profile_intern_stack(p, frames, n, false, &s);
	profile_intern_thread(p, tid, tid == 1 ? "main" : "worker", &t);
	profile_add_sample(p, s, t, v);
}

/* Writes format f of p into a malloc'ed string. */
static char *render(const struct profile *p, enum output_format f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	if (output_write(p, f, NULL, out) < 0)
		CHECK(0, "output_write failed");
	fclose(out);
	return buf;
}

int main(void)
{
	static const struct value_type vt[] = { { "samples", "count" },
						{ "cpu", "nanoseconds" } };
	struct profile *p = profile_new();
	enum output_format f;
	uint32_t main_ = fr(p, "main", FRAME_USER), run = fr(p, "run", FRAME_USER),
		 a = fr(p, "burn_a", FRAME_USER), b = fr(p, "burn_b", FRAME_USER),
		 rec = fr(p, "recurse", FRAME_USER);
	char *text;

	profile_set_value_types(p, vt, 2);
	p->event = "cpu";
	p->interval = 10000000;
	p->interval_unit = "nanoseconds";
	p->pid = 42;
	p->duration_ns = 5000000000ull;
	{
		uint32_t s1[] = { main_, run, a }, s2[] = { main_, run, b },
			 s3[] = { main_, rec, rec, rec };
		add(p, s1, 3, 1, 60);
		add(p, s2, 3, 2, 30);
		add(p, s3, 4, 1, 10);
	}

	text = render(p, OUTPUT_COLLAPSED);
	CHECK(strstr(text, "main;run;burn_a 60\n") != NULL, "collapsed line for burn_a");
	CHECK(strstr(text, "main;run;burn_b 30\n") != NULL, "collapsed line for burn_b");
	CHECK(strstr(text, "main;recurse;recurse;recurse 10\n") != NULL,
	      "collapsed keeps recursion");
	free(text);

	{
		struct rank_function *rows;
		size_t n;
		int64_t rec_total = -1, main_total = -1;

		CHECK(rank_functions(p, 0, &rows, &n) == 0, "rank_functions");
		CHECK(n == 5 && rows[0].frame == a && rows[0].self == 60,
		      "burn_a ranks first by self");
		for (size_t i = 0; i < n; i++) {
			if (rows[i].frame == rec)
				rec_total = rows[i].total;
			if (rows[i].frame == main_)
				main_total = rows[i].total;
		}
		CHECK(rec_total == 10, "recursive function counted once per stack (%lld)",
		      (long long)rec_total);
		CHECK(main_total == 100, "root total is everything");
		free(rows);
	}

	text = render(p, OUTPUT_FLAT);
	CHECK(strstr(text, "60  60.0%") != NULL && strstr(text, "burn_a [app]"),
	      "flat shows burn_a at 60%%");
	free(text);

	text = render(p, OUTPUT_TRACES);
	CHECK(strstr(text, "--- 60 samples (60.00%)\n  [ 0] burn_a [app]\n  [ 1] run [app]\n  [ 2] main [app]")
		      != NULL, "traces leaf first with share");
	free(text);

	profile_add_note(p, "kernel frames omitted: test");
	p->target_exited = true;
	text = render(p, OUTPUT_SUMMARY);
	CHECK(strstr(text, "samples      100\n") != NULL, "summary sample count");
	CHECK(strstr(text, "cpu          1.00 s\n") != NULL, "summary cpu time");
	CHECK(strstr(text, "note         kernel frames omitted: test") != NULL,
	      "summary carries notes");
	CHECK(strstr(text, "exited during the recording") != NULL,
	      "summary says the target exited");
	CHECK(strstr(text, "threads      2\n") != NULL, "summary thread count");
	free(text);

	CHECK(output_format_parse("collapsed", &f) == 0 && f == OUTPUT_COLLAPSED,
	      "format by name");
	CHECK(output_format_parse("nope", &f) == -EINVAL, "unknown format refused");
	CHECK(output_format_from_path("/tmp/x.folded", &f) == 0 &&
		      f == OUTPUT_COLLAPSED, "format from extension");
	CHECK(output_format_from_path("/tmp/x", &f) == -EINVAL,
	      "no extension, no format");

	/* A ';' inside a name must not split the frame in collapsed. */
	{
		uint32_t odd = fr(p, "operator;weird", FRAME_USER), s[] = { main_, odd };

		add(p, s, 2, 1, 1);
		text = render(p, OUTPUT_COLLAPSED);
		CHECK(strstr(text, "main;operator:weird 1\n") != NULL,
		      "';' in a name is replaced");
		free(text);
	}
	profile_free(p);
	return test_done();
}
