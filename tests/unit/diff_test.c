/* diff: two profiles with a known answer compared — one function doubles
 * its share, one disappears, one appears — and the three writers. */
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/numbuf.h"
#include "output/calltree.h"
#include "output/diff.h"
#include "output/output.h"
#include "test.h"

static struct profile *read_text(const char *text)
{
	struct profile *p = NULL;
	struct diag d;

	diag_clear(&d);
	if (collapsed_read(text, strlen(text), &p, &d) < 0)
		printf("# collapsed_read: %s\n", d.msg);
	return p;
}

static const struct diff_function *find(const struct diff *df, const char *name)
{
	for (size_t i = 0; i < df->nfuncs; i++)
		if (!strcmp(df->funcs[i].name, name))
			return &df->funcs[i];
	return NULL;
}

/* The next packed number at *s (numbuf_put_packed), -1 past the end or
 * on a character not of NUMBUF_PACKED_DIGITS. */
static int64_t unpack_one(const char **s)
{
	static const char digits[] = NUMBUF_PACKED_DIGITS;
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 5) {
		const char *at = **s ? strchr(digits, **s) : NULL;
		uint64_t d;

		if (!at)
			return -1;
		(*s)++;
		d = (uint64_t)(at - digits);
		v |= (d & 31) << shift;
		if (d < 32)
			return (int64_t)v;
	}
	return -1;
}

/* A diff page's "stacks", unpacked as decimal numbers with commas: the
 * number of nodes below the root, a colon, then per record the depth, the count of new nodes (-(count + 1) when children
 * were left out), their functions, both selfs, and when cut both values
 * left out and their weight. NULL when it does not decode. */
static char *stacks_of(const char *html)
{
	const char *s = html ? strstr(html, "\"stacks\":\"") : NULL;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	if (!s || !(f = open_memstream(&out, &len)))
		return NULL;
	s += strlen("\"stacks\":\"");
	fprintf(f, "%lld:", (long long)unpack_one(&s));
	for (bool first = true; *s && *s != '"'; first = false) {
		int64_t d = unpack_one(&s), m = unpack_one(&s), n = m / 2;

		if (d < 0 || m < 0)
			break;
		fprintf(f, "%s%lld,%lld", first ? "" : ",", (long long)d,
			(long long)(m % 2 ? -(n + 1) : n));
		for (int64_t k = 0; k < n + 2 + (m % 2 ? 3 : 0); k++) {
			int64_t v = unpack_one(&s);

			/* functions as they are, values zigzag coded */
			if (k >= n)
				v = (v >> 1) ^ -(v & 1);
			fprintf(f, ",%lld", (long long)v);
		}
	}
	fclose(f);
	if (*s != '"') {
		free(out);
		return NULL;
	}
	return out;
}

static char *render(const struct diff *df, enum output_format f,
		    const struct output_options *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int r = diff_write(df, f, o, out);

	fclose(out);
	if (r < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static bool near(double a, double b) { return fabs(a - b) < 1e-9; }

/* A one-stack profile whose frames carry a module, for matching by name. */
static struct profile *with_module(const char *module, const char *leaf,
				   const struct value_type *vt, int64_t n)
{
	struct profile *p = profile_new();
	struct frame root = { .name = "main", .module = module, .kind = FRAME_USER };
	struct frame top = { .name = leaf, .module = module, .kind = FRAME_LIBRARY,
			     .line = 12 };
	uint32_t f[2], s, t;
	int64_t v[1] = { n };

	profile_set_value_types(p, vt, 1);
	profile_intern_frame(p, &root, &f[0]);
	profile_intern_frame(p, &top, &f[1]);
	profile_intern_stack(p, f, 2, false, &s);
	profile_intern_thread(p, 7, "worker", &t);
	profile_add_sample(p, s, t, v);
	return p;
}

int main(void)
{
	/* BEFORE 400: alpha 25%, beta 60%, gone 15%. AFTER 800: alpha 50%
	 * (doubled), beta 37.5%, fresh 12.5% (new); gone is not there. beta
	 * is split over two threads and recurses, which must not count it
	 * twice. */
	struct profile *b = read_text("main;work;alpha 100\n"
				      "main;work;beta 200\n"
				      "[t2 tid=9];main;work;beta 40\n"
				      "main;gone 60\n");
	struct profile *a = read_text("main;work;alpha 400\n"
				      "main;work;beta;beta 300\n"
				      "main;fresh 100\n");
	struct diff *df = NULL;
	struct diag d;
	int r;

	CHECK(b && a, "the two collapsed profiles read");
	if (!b || !a)
		return test_done();
	diag_clear(&d);
	r = diff_new(b, a, true, &df, &d);
	CHECK(r == 0 && df, "diff_new succeeds (%s)", d.msg);
	if (r < 0)
		return test_done();
	CHECK_INT(df->total[DIFF_BEFORE], ==, 400, "BEFORE's total");
	CHECK_INT(df->total[DIFF_AFTER], ==, 800, "AFTER's total");

	/* Sorted by how much the self share changed, either way. */
	CHECK(df->nfuncs >= 5, "every function of either profile has a row");
	CHECK_STR(df->funcs[0].name, "alpha", "the doubled function is first (+25 points)");
	CHECK_STR(df->funcs[1].name, "beta", "then beta (-22.5 points)");
	CHECK_STR(df->funcs[2].name, "gone", "then the vanished one (-15 points)");
	CHECK_STR(df->funcs[3].name, "fresh", "then the new one (+12.5 points)");
	{
		const struct diff_function *al = find(df, "alpha"), *be = find(df, "beta");
		const struct diff_function *go = find(df, "gone"), *fr = find(df, "fresh");
		const struct diff_function *wo = find(df, "work"), *ma = find(df, "main");

		CHECK(al && near(al->self_change, 0.25) && al->self[0] == 100 &&
		      al->self[1] == 400, "alpha: 100 -> 400, +0.25 of the total");
		CHECK(be && be->total[0] == 240 && be->total[1] == 300 &&
		      near(be->total_change, -0.225),
		      "beta: both threads merged, recursion counted once in total");
		CHECK(be && be->self[1] == 300, "beta's self counts its leaf once");
		CHECK(go && go->total[1] == 0 && near(go->self_change, -0.15),
		      "gone: in BEFORE only, -15 points");
		CHECK(fr && fr->total[0] == 0 && near(fr->self_change, 0.125),
		      "fresh: in AFTER only, +12.5 points");
		CHECK(wo && wo->self[0] == 0 && near(wo->total_change, 0.875 - 0.85),
		      "work: no self, total 85%% -> 87.5%%");
		CHECK(ma && ma->total[0] == 400 && near(ma->total_change, 0),
		      "main: on every stack of both, under a thread frame too: no change");
		CHECK(find(df, "[t2 tid=9]") != NULL, "thread frames are frames like any");
	}

	{
		char *text = render(df, OUTPUT_COLLAPSED, NULL);

		CHECK(text && strstr(text, "main;work;alpha 200 400\n"),
		      "collapsed: BEFORE scaled to AFTER's total (x2), AFTER as is");
		CHECK(text && strstr(text, "main;gone 120 0\n"), "collapsed: the vanished stack, 0 after");
		CHECK(text && strstr(text, "main;fresh 0 100\n"), "collapsed: the new stack, 0 before");
		CHECK(text && strstr(text, "main;work;beta;beta 0 300\n"),
		      "collapsed: a stack only AFTER has");
		free(text);
	}
	{
		char *text = render(df, OUTPUT_FLAT, NULL);
		char *first = text ? strchr(text, '\n') : NULL;

		first = first ? strchr(first + 1, '\n') : NULL;
		CHECK(first && !strncmp(first + 1, "       25.00%       50.00%       +25.00", 39),
		      "flat: the first row is alpha's 25%% -> 50%%, +25 points");
		if (first)
			printf("#   %.*s\n", (int)strcspn(first + 1, "\n"), first + 1);
		CHECK(text && strstr(text, "BEFORE 400 samples, AFTER 800 samples"),
		      "flat: both totals on the first line");
		free(text);
	}
	{
		char *html = render(df, OUTPUT_FLAMEGRAPH, NULL);

		CHECK(html && strstr(html, "\"beforeTotal\":400"), "flamegraph: the page has both totals");
		/* Names [t2 tid=9] alpha beta fresh gone main work are 0 to 6.
		 * Per stack: the depth it shares with the one before, the
		 * functions it adds, the selfs before and after. */
		char *stacks = stacks_of(html);

		CHECK(stacks && !strcmp(stacks, "11:0,4,0,5,6,2,40,0,0,2,5,3,0,100,1,1,4,60,0,"
				       "1,2,6,1,100,400,2,1,2,200,0,3,1,2,0,300"),
		      "flamegraph: the union's stacks, each as what it adds to the one before");
		printf("# stacks %s\n", stacks ? stacks : "(not decoded)");
		free(stacks);
		CHECK(html && !strstr(html, "\"nodes\":["),
		      "flamegraph: no weights: the page computes them from the values");
		CHECK(html && strstr(html, "[\"alpha\",100,400,100,400]"),
		      "flamegraph: the table's first row is alpha");
		CHECK(html && strstr(html, "\"gone\""), "flamegraph: the vanished frame is in the page");
		CHECK(html && !strstr(html, "/*DIFF*/null") && !strstr(html, "template preview"),
		      "flamegraph: both placeholders filled");
		free(html);
	}
	{
		/* Frames under 1/6 of the weight (2e9) left out: the thread
		 * (10% + 0), gone (15% + 0) and fresh (0 + 12.5%). Their
		 * values and weight are written with their parent's, which
		 * says so with a count of -(count + 1). */
		struct output_options o = { .width = 1200, .minwidth = 200 };
		char *html = render(df, OUTPUT_FLAMEGRAPH, &o);

		char *stacks = stacks_of(html);

		CHECK(stacks && !strcmp(stacks, "5:0,-1,0,0,40,0,100000000,0,-2,2,0,0,60,100,"
				       "275000000,1,2,3,0,100,400,2,1,1,200,0,3,1,1,0,300"),
		      "flamegraph --minwidth: what was left out is counted where it hung");
		printf("# stacks %s\n", stacks ? stacks : "(not decoded)");
		free(stacks);
		free(html);
	}
	{
		static const unsigned also[2] = { DIFF_BEFORE, DIFF_AFTER };
		struct calltree *t = NULL;

		r = calltree_build_also(df->merged, DIFF_WEIGHT, also, 2, false, 0, &t);
		CHECK(r == 0, "calltree_build_also");
		if (t) {
			CHECK(t->also[0] == 400 && t->also[1] == 800,
			      "the root's also totals are both totals");
			CHECK(llabs(t->nodes[0].total - (int64_t)(2 * DIFF_WEIGHT_SCALE)) <= 8,
			      "the root weighs two whole shares (%lld)", (long long)t->nodes[0].total);
			calltree_free(t);
		}
	}
	diff_free(df);
	df = NULL;

	/* Raw values. */
	r = diff_new(b, a, false, &df, NULL);
	CHECK(r == 0 && df && !strcmp(df->funcs[0].name, "alpha") &&
	      near(df->funcs[0].self_change, 300),
	      "--no-normalize: alpha first, +300");
	CHECK(df && find(df, "fresh") && near(find(df, "fresh")->self_change, 100),
	      "--no-normalize: fresh +100, ahead of beta's +60");
	{
		char *text = df ? render(df, OUTPUT_COLLAPSED, NULL) : NULL;

		CHECK(text && strstr(text, "main;work;alpha 100 400\n"),
		      "collapsed --no-normalize: raw values");
		free(text);
	}
	CHECK(df && diff_write(df, OUTPUT_PPROF, NULL, stdout) == -EOPNOTSUPP,
	      "formats a diff has no writer for are refused");
	diff_free(df);
	profile_free(a);
	profile_free(b);

	/* Frames match by name, whatever their module, kind or line. */
	{
		static const struct value_type cpu = { "samples", "count" };
		static const struct value_type bytes = { "alloc_space", "bytes" };
		struct profile *x = with_module("/v1/app", "hot", &cpu, 10);
		struct profile *y = with_module("/v2/app", "hot", &cpu, 30);
		struct profile *z = with_module("/v2/app", "hot", &bytes, 30);
		struct profile *empty = profile_new();

		df = NULL;
		r = diff_new(x, y, true, &df, NULL);
		CHECK(r == 0 && df && df->merged->nstacks == 1 && df->merged->nframes == 2,
		      "the same names in two modules are one stack");
		diff_free(df);
		df = NULL;
		diag_clear(&d);
		r = diff_new(x, z, true, &df, &d);
		CHECK(r == -EINVAL && strstr(d.msg, "samples (count)") &&
		      strstr(d.msg, "alloc_space (bytes)"),
		      "different value types are refused, naming both: %s", d.msg);
		diag_clear(&d);
		r = diff_new(x, empty, true, &df, &d);
		CHECK(r == -ENODATA && strstr(d.msg, "AFTER has no samples"),
		      "an empty profile is refused: %s", d.msg);
		profile_free(x);
		profile_free(y);
		profile_free(z);
		profile_free(empty);
	}
	return test_done();
}
