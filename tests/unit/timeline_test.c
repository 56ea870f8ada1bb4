/* The timeline: written into the flame graph page slice by slice against
 * the tree's own nodes (each stack's value spread over its events), kept
 * through pprof (profile.proto's nprof_timeline), and refused when a file
 * gets it wrong. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/output.h"
#include "output/pprof.h"
#include "test.h"
#include "pprof_message.h"

#define START 1000000000000000000ull
#define SEC 1000000000ull

static uint32_t stack_of(struct profile *p, const char *leaf)
{
	struct frame main_ = { .name = "main", .kind = FRAME_USER };
	struct frame l = { .name = leaf, .kind = FRAME_USER };
	uint32_t f[2], s;

	profile_intern_frame(p, &main_, &f[0]);
	profile_intern_frame(p, &l, &f[1]);
	profile_intern_stack(p, f, 2, false, &s);
	return s;
}

/* main;a 300 bytes in three events (0.1 s, 0.2 s, 3.9 s), main;b 100
 * bytes in one (2.5 s), over a recording of 4 s. */
static struct profile *bytes_profile(void)
{
	static const struct value_type vt[] = { { "alloc_space", "bytes" },
						{ "alloc_objects", "count" } };
	struct profile *p = profile_new();
	uint32_t a, b, t;
	int64_t va[2] = { 300, 3 }, vb[2] = { 100, 1 };

	profile_set_value_types(p, vt, 2);
	p->event = "alloc";
	p->interval = 512 * 1024;
	p->interval_unit = "bytes";
	p->start_ns = START;
	p->duration_ns = 4 * SEC;
	p->max_events = 16;
	a = stack_of(p, "a");
	b = stack_of(p, "b");
	profile_intern_thread(p, 7, "main", &t);
	profile_add_sample(p, a, t, va);
	profile_add_sample(p, b, t, vb);
	profile_add_event(p, START + SEC / 10, a, t, 1);
	profile_add_event(p, START + SEC / 5, a, t, 1);
	profile_add_event(p, START + 5 * SEC / 2, b, t, 1);
	profile_add_event(p, START + 39 * SEC / 10, a, t, 1);
	return p;
}

static char *render(const struct profile *p, enum output_format f,
		    const struct output_options *o, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	CHECK(output_write(p, f, o, out) == 0, "output_write");
	fclose(out);
	if (ret_len)
		*ret_len = len;
	return buf;
}

/* The page's timeline element, as written. */
static char *timeline_of(const char *html)
{
	const char *a = strstr(html, "id=\"timeline\">"), *b;

	if (!a)
		return strdup("(no timeline element)");
	a += strlen("id=\"timeline\">");
	b = strstr(a, "</script>");
	return strndup(a, b ? (size_t)(b - a) : strlen(a));
}

/* The cells expected with 7 ms slices over 4 s (572 of them): node
 * `a_node` gets 100 bytes in slices 14, 28 and 557, `b_node` 100 in 357. */
static char *expected(unsigned a_node, unsigned b_node)
{
	size_t cap = 8192, n = 0;
	char *s = malloc(cap);

	n += (size_t)snprintf(s + n, cap - n,
			      "{\"version\":1,\"offsetNs\":0,\"sliceNs\":7000000,\"slices\":572,"
			      "\"events\":4,\"dropped\":0,\"cells\":[");
	for (unsigned k = 0; k < 572; k++) {
		const char *sep = k ? "," : "";

		if (k == 14 || k == 28 || k == 557)
			n += (size_t)snprintf(s + n, cap - n, "%s1,%u,100", sep, a_node);
		else if (k == 357)
			n += (size_t)snprintf(s + n, cap - n, "%s1,%u,100", sep, b_node);
		else
			n += (size_t)snprintf(s + n, cap - n, "%s0", sep);
	}
	snprintf(s + n, cap - n, "]}");
	return s;
}

static void test_page(void)
{
	struct profile *p = bytes_profile();
	struct output_options o = { 0 };
	char *html = render(p, OUTPUT_FLAMEGRAPH, &o, NULL), *tl = timeline_of(html);
	char *want = expected(2, 3);

	/* Nodes: 0 all, 1 main, 2 a, 3 b. Each event of main;a is worth a
	 * third of its 300 bytes. */
	CHECK_STR(tl, want, "the timeline: 7 ms slices, each event in its slice and node, "
			    "worth its stack's bytes per event");
	free(html);
	free(tl);
	free(want);

	/* b (100 of 400) is narrower than minwidth: its value goes to main,
	 * the nearest node that is drawn. */
	o.minwidth = 400;
	html = render(p, OUTPUT_FLAMEGRAPH, &o, NULL);
	tl = timeline_of(html);
	want = expected(2, 1);
	CHECK_STR(tl, want, "a node left out by --minwidth: its events go to its drawn parent");
	free(html);
	free(tl);
	free(want);

	p->nevents = 0;
	html = render(p, OUTPUT_FLAMEGRAPH, NULL, NULL);
	tl = timeline_of(html);
	CHECK_STR(tl, "null", "no timeline: null");
	free(html);
	free(tl);
	profile_free(p);
}

static void test_pprof(void)
{
	struct profile *p = bytes_profile(), *back = NULL;
	size_t gz_len, raw_len;
	char *gz;
	uint8_t *raw;
	pb_profile *pb;
	struct diag d;
	int r;

	p->events[3].value = 2; /* one value that is not 1: values are written */
	gz = render(p, OUTPUT_PPROF, NULL, &gz_len);
	diag_clear(&d);
	r = pprof_read(gz, gz_len, &back, &d);
	CHECK(r == 0 && back, "pprof reads its own timeline: %s", d.msg);
	if (back) {
		CHECK_UINT(back->nevents, ==, 4, "four events");
		for (size_t i = 0; i < back->nevents && i < 4; i++) {
			const struct sample_event *e = &back->events[i], *w = &p->events[i];

			CHECK_UINT(e->time_ns, ==, w->time_ns, "event %zu: its time", i);
			CHECK_INT(e->value, ==, w->value, "event %zu: its value", i);
			CHECK_STR(back->frames[profile_stack_frames(back, e->stack)[1]].name,
				  p->frames[profile_stack_frames(p, w->stack)[1]].name,
				  "event %zu: its stack", i);
			CHECK_INT(back->threads[e->thread].tid, ==, 7, "event %zu: its thread", i);
		}
		CHECK(back->max_events == PPROF_MAX_EVENTS && back->events_dropped == 0,
		      "the reader's limit, nothing dropped");
	}
	profile_free(back);
	back = NULL;

	/* Broken timelines, each refused in one line. */
	raw = gunzip_all(gz, gz_len, &raw_len);
	pb = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	CHECK(pb && pb->nprof_timeline && pb->nprof_timeline->n_sample == 4 &&
	      pb->nprof_timeline->n_value == 4, "the message has the timeline, with values");
	if (pb && pb->nprof_timeline && pb->nprof_timeline->n_sample == 4) {
		Perftools__Profiles__Timeline *tl = pb->nprof_timeline;

		tl->sample[2] = 9;
		diag_clear(&d);
		r = read_packed(pb, &d, &back);
		CHECK(r == -EBADMSG && strstr(d.msg, "timeline event 2 names sample 9"),
		      "an event naming a sample that does not exist: %s", d.msg);
		tl->sample[2] = 1;
		tl->n_value = 3;
		diag_clear(&d);
		r = read_packed(pb, &d, &back);
		CHECK(r == -EBADMSG && strstr(d.msg, "differ in length"),
		      "arrays of different lengths: %s", d.msg);
		tl->n_value = 0;
		tl->time_delta[1] = INT64_MIN; /* a time that wraps */
		diag_clear(&d);
		r = read_packed(pb, &d, &back);
		CHECK(r == 0 && back && back->nevents == 4, "any time at all still reads");
		if (back) {
			char *html = render(back, OUTPUT_FLAMEGRAPH, NULL, NULL);

			CHECK(strstr(html, "\"slices\":") != NULL,
			      "and a flame graph of it is written");
			free(html);
		}
		profile_free(back);
		tl->n_value = 4;
	}
	perftools__profiles__profile__free_unpacked(pb, NULL);
	free(raw);
	free(gz);
	profile_free(p);
}

int main(void)
{
	test_page();
	test_pprof();
	return test_done();
}
