/* profile_merge: two processes' profiles into one, with a known answer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/output.h"
#include "profile/merge.h"
#include "test.h"

static const struct value_type cpu_types[2] = {
	{ "samples", "count" }, { "cpu", "nanoseconds" } };

static struct profile *make(pid_t tid, const char *leaf, int64_t n, uint64_t start,
			    uint64_t duration, const char *note)
{
	struct profile *p = profile_new();
	struct frame root = { .name = "main", .module = "/usr/bin/app", .kind = FRAME_USER };
	struct frame top = { .name = leaf, .module = "/usr/bin/app", .kind = FRAME_USER };
	uint32_t f[2], s, t;
	int64_t v[2] = { n, n * 1000 };

	profile_set_value_types(p, cpu_types, 2);
	p->start_ns = start;
	p->duration_ns = duration;
	p->degraded.lost_samples = 1;
	p->max_events = 16;
	profile_add_note(p, "%s", note);
	profile_intern_frame(p, &root, &f[0]);
	profile_intern_frame(p, &top, &f[1]);
	profile_intern_stack(p, f, 2, false, &s);
	profile_intern_thread(p, tid, "worker", &t);
	profile_add_sample(p, s, t, v);
	profile_add_event(p, start + 10, s, t, n);
	return p;
}

static char *render(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	output_write(p, OUTPUT_COLLAPSED, NULL, out);
	fclose(out);
	return buf;
}

int main(void)
{
	struct profile *a = make(100, "burn", 30, 2000, 1000, "note one");
	struct profile *b = make(200, "burn", 20, 1000, 500, "note one");
	struct profile *c = make(200, "other", 5, 1500, 100, "note two");
	struct profile *empty = profile_new();
	struct profile *alloc = profile_new();
	const struct value_type alloc_types[1] = { { "alloc_space", "bytes" } };
	struct diag d;
	char *text;

	diag_clear(&d);
	CHECK(profile_merge(a, b, &d) == 0, "merge b: %s", d.msg);
	CHECK(profile_merge(a, c, &d) == 0, "merge c: %s", d.msg);
	CHECK_INT(profile_total(a, 0), ==, 55, "every sample kept");
	CHECK_INT(profile_total(a, 1), ==, 55000, "both values kept");
	CHECK_UINT(a->nthreads, ==, 2, "threads of both processes");
	CHECK_UINT(a->start_ns, ==, 1000, "the earliest start");
	CHECK_UINT(a->duration_ns, ==, 2000, "to the latest end");
	CHECK_UINT(a->degraded.lost_samples, ==, 3, "losses add up");
	CHECK(a->nnotes == 2 && !strcmp(a->notes[1], "note two"), "a note once each");
	CHECK_UINT(a->nevents, ==, 3, "the timelines joined");
	CHECK(a->nevents == 3 && a->events[0].time_ns == 1010 && a->events[1].time_ns == 1510 &&
	      a->events[2].time_ns == 2010, "in time order");
	text = render(a);
	CHECK_STR(text, "main;burn 50\nmain;other 5\n", "equal stacks summed");
	free(text);

	{
		/* many in a row: unsorted, then sorted once, the same answer */
		struct profile *x = make(100, "burn", 30, 2000, 1000, "note one");
		struct profile *y = make(200, "burn", 20, 1000, 500, "note one");
		struct profile *z = make(200, "other", 5, 1500, 100, "note two");

		diag_clear(&d);
		CHECK(profile_merge_unsorted(x, y, &d) == 0 && profile_merge_unsorted(x, z, &d) == 0 &&
		      x->nevents == 3 && x->events[0].time_ns == 2010,
		      "merged unsorted: the timeline as it came");
		profile_sort_events(x);
		CHECK(x->events[0].time_ns == 1010 && x->events[1].time_ns == 1510 &&
		      x->events[2].time_ns == 2010 && profile_total(x, 0) == 55,
		      "sorted once: as profile_merge's");
		profile_free(x);
		profile_free(y);
		profile_free(z);
	}

	diag_clear(&d);
	CHECK(profile_merge(empty, b, &d) == 0 && empty->nvalues == 2 &&
	      profile_total(empty, 0) == 20, "into an empty profile: its types taken");

	/* Under roots: a service's workers, each under its process's. */
	{
		struct profile *into = profile_new();
		const char *roots_b[] = { "[host a]", "[app pid=200]" }, *roots_c[] = { "[app pid=300]" };

		b->event = profile_intern_string(b, "cpu");
		b->interval = 10000000;

		diag_clear(&d);
		CHECK(profile_merge_under(into, b, roots_b, 2, &d) == 0 &&
		      profile_merge_under(into, c, roots_c, 1, &d) == 0, "merged under roots: %s", d.msg);
		text = render(into);
		CHECK_STR(text, "[host a];[app pid=200];main;burn 20\n[app pid=300];main;other 5\n",
			  "each profile's stacks under its roots");
		free(text);
		CHECK(into->event && !strcmp(into->event, "cpu") && into->interval == 10000000,
		      "an empty profile takes the first's event and interval");
		CHECK(into->frames[profile_stack_frames(into, 0)[0]].kind == FRAME_THREAD &&
		      into->frames[profile_stack_frames(into, 0)[1]].kind == FRAME_THREAD,
		      "the roots are root pseudo-frames");
		profile_free(into);
	}

	profile_set_value_types(alloc, alloc_types, 1);
	diag_clear(&d);
	CHECK(profile_merge(alloc, b, &d) == -EINVAL && strstr(d.msg, "of samples into one of alloc_space"),
	      "different value types refused: %s", d.msg);
	profile_free(a);
	profile_free(b);
	profile_free(c);
	profile_free(empty);
	profile_free(alloc);
	return test_done();
}
