/* --include, --exclude and --reverse on a profile with a known answer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/output.h"
#include "profile/transform.h"
#include "test.h"

static uint32_t fr(struct profile *p, const char *name, enum frame_kind k)
{
	struct frame f = { .name = name, .module = "/usr/bin/app", .kind = k,
			   .address = 0x40 };
	uint32_t id;

	profile_intern_frame(p, &f, &id);
	return id;
}

static void add(struct profile *p, const uint32_t *frames, uint32_t n,
		pid_t tid, int64_t samples)
{
	uint32_t s, t;
	int64_t v[2] = { samples, samples * 1000 };

	profile_intern_stack(p, frames, n, false, &s);
	profile_intern_thread(p, tid, tid == 1 ? "main" : "worker", &t);
	profile_add_sample(p, s, t, v);
	profile_add_event(p, 1000 + (uint64_t)samples, s, t, samples);
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

/* Transforms p with o and returns the collapsed text, or NULL. */
static char *apply(const struct profile *p, struct transform_options o,
		   struct profile **keep)
{
	struct profile *t = NULL;
	struct diag d;
	char *text;

	diag_clear(&d);
	if (profile_transform(p, &o, &t, &d) < 0) {
		CHECK(0, "profile_transform: %s", d.msg);
		return NULL;
	}
	text = render(t);
	if (keep)
		*keep = t;
	else
		profile_free(t);
	return text;
}

int main(void)
{
	static const struct value_type vt[] = { { "samples", "count" },
						{ "cpu", "nanoseconds" } };
	struct profile *p = profile_new(), *t = NULL;
	uint32_t main_ = fr(p, "main", FRAME_USER), run = fr(p, "run", FRAME_USER),
		 a = fr(p, "burn_a", FRAME_USER), b = fr(p, "burn_b", FRAME_USER),
		 m = fr(p, "malloc", FRAME_LIBRARY),
		 th = fr(p, "[worker tid=2]", FRAME_THREAD);
	struct diag d;
	char *text;
	int r;

	p->max_events = 100;
	profile_set_value_types(p, vt, 2);
	p->event = "cpu";
	p->interval = 10000000;
	p->interval_unit = "nanoseconds";
	p->pid = 42;
	p->command = "app";
	p->start_ns = 123;
	p->duration_ns = 456;
	p->degraded.lost_samples = 3;
	profile_add_note(p, "a note");
	{
		uint32_t s1[] = { main_, run, a }, s2[] = { main_, run, b, m },
			 s3[] = { th, main_, run, m };
		add(p, s1, 3, 1, 60);
		add(p, s2, 4, 1, 30);
		add(p, s3, 4, 2, 10);
	}

	text = apply(p, (struct transform_options){ .include = "burn" }, NULL);
	CHECK_STR(text, "main;run;burn_a 60\nmain;run;burn_b;malloc 30\n",
		  "--include keeps stacks with a matching frame");
	free(text);
	text = apply(p, (struct transform_options){ .exclude = "^malloc$" }, NULL);
	CHECK_STR(text, "main;run;burn_a 60\n", "--exclude drops stacks with a matching frame");
	free(text);
	text = apply(p, (struct transform_options){ .include = "run", .exclude = "burn_a" },
		     NULL);
	CHECK_STR(text, "main;run;burn_b;malloc 30\n[worker tid=2];main;run;malloc 10\n",
		  "--include and --exclude together");
	free(text);
	text = apply(p, (struct transform_options){ .include = "b(urn|ar)_b" }, NULL);
	CHECK_STR(text, "main;run;burn_b;malloc 30\n", "extended regex syntax");
	free(text);
	text = apply(p, (struct transform_options){ .include = "nothing-matches" }, NULL);
	CHECK_STR(text, "", "no stack left: an empty profile");
	free(text);

	text = apply(p, (struct transform_options){ .reverse = true }, &t);
	CHECK_STR(text, "burn_a;run;main 60\nmalloc;burn_b;run;main 30\n"
			"[worker tid=2];malloc;run;main 10\n",
		  "--reverse puts the leaf first; the thread frame stays the root");
	free(text);
	if (t) {
		CHECK_STR(t->event, "cpu", "event copied");
		CHECK(t->interval == 10000000 && t->pid == 42 && t->start_ns == 123 &&
		      t->duration_ns == 456, "description copied");
		CHECK_STR(t->command, "app", "command copied");
		CHECK(t->nnotes == 1 && !strcmp(t->notes[0], "a note"), "notes copied");
		CHECK(t->degraded.lost_samples == 3, "degradations copied");
		CHECK(t->nvalues == 2 && profile_total(t, 1) == 100000, "both values kept");
		CHECK(t->nthreads == 2, "threads copied");
		CHECK(t->nevents == 3, "timeline copied");
		CHECK(t->frames[0].address == 0x40, "frame addresses kept");
		profile_free(t);
	}
	t = NULL;
	text = apply(p, (struct transform_options){ .include = "burn_a", .reverse = true },
		     &t);
	CHECK_STR(text, "burn_a;run;main 60\n", "filter then reverse");
	CHECK(t && t->nevents == 1, "the timeline keeps only kept stacks");
	free(text);
	profile_free(t);

	t = NULL;
	diag_clear(&d);
	r = profile_transform(p, &(struct transform_options){ .include = "(" }, &t, &d);
	CHECK(r == -EINVAL && !t && strstr(d.msg, "--include '('"),
	      "a bad regex is -EINVAL and named: %s", d.msg);
	CHECK(transform_is_noop(&(struct transform_options){ 0 }), "no option: no-op");
	CHECK(!transform_is_noop(&(struct transform_options){ .reverse = true }),
	      "--reverse is not a no-op");
	profile_free(p);
	return test_done();
}
