/* calltree: merging, reversing, bounding, and the escaping helpers, on a
 * profile built by hand with a known answer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/calltree.h"
#include "test.h"

static uint32_t fr(struct profile *p, const char *name, const char *module,
		   uint32_t line, enum frame_kind k)
{
	struct frame f = { .name = name, .module = module, .file = "a.c",
			   .line = line, .kind = k };
	uint32_t id;

	profile_intern_frame(p, &f, &id);
	return id;
}

static void add(struct profile *p, const uint32_t *frames, uint32_t n,
		pid_t tid, int64_t samples)
{
	uint32_t s, t;
	int64_t v[1] = { samples };

	profile_intern_stack(p, frames, n, false, &s);
	profile_intern_thread(p, tid, "t", &t);
	profile_add_sample(p, s, t, v);
}

/* The child of n named name, or CALLTREE_NONE. */
static uint32_t child(const struct calltree *t, uint32_t n, const char *name)
{
	for (uint32_t c = calltree_first_child(t, n); c != CALLTREE_NONE;
	     c = t->nodes[c].next_sibling)
		if (!strcmp(t->funcs[t->nodes[c].func].name, name))
			return c;
	return CALLTREE_NONE;
}

static char *xml(const char *s, size_t max)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	calltree_put_xml(s, max, out);
	fclose(out);
	return buf;
}

static int fill_x(void *ctx, FILE *out)
{
	fputs(ctx, out);
	return 0;
}

/* Adds 2,000 stacks to p in the order of seed: 1 to 4 frames of f[0], or
 * a third of them 100 (deep recursion), then three picked from f (some
 * stacks repeat, and some end where another goes on). */
static void add_many(struct profile *p, const uint32_t *f, uint32_t seed)
{
	uint32_t frames[103];

	for (uint32_t i = 0; i < 2000; i++) {
		uint32_t j = (i * seed) % 2000; /* seed odd: each j once */
		uint32_t x = j * 2654435761u, d = j % 3 ? 1 + j % 4 : 100;

		for (uint32_t k = 0; k < d; k++)
			frames[k] = f[0];
		for (uint32_t k = 0; k < 3; k++)
			frames[d + k] = f[1 + (x >> (8 * k)) % 7];
		add(p, frames, d + (j % 4 ? 3 : 2), 1, 1 + j % 5);
	}
}

/* Sorting: many stacks that share a long prefix (past the splits the
 * multikey sort makes before it hands over to qsort) give the same tree
 * whatever order they were added in, in pre-order with children in
 * name order, each total its self and its children's. */
static void check_sorting(void)
{
	static const struct value_type vt[] = { { "samples", "count" } };
	struct profile *p[2] = { profile_new(), profile_new() };
	struct calltree *t[2] = { NULL, NULL };
	bool same = true, ordered = true;
	int64_t *ends;

	for (int k = 0; k < 2; k++) {
		uint32_t f[8];

		profile_set_value_types(p[k], vt, 1);
		for (int i = 0; i < 8; i++) {
			char name[8];

			snprintf(name, sizeof(name), "f%d", i);
			f[i] = fr(p[k], name, "/app", 0, FRAME_USER);
		}
		add_many(p[k], f, k ? 7 : 1999);
		calltree_build(p[k], 0, false, 0, &t[k]);
	}
	CHECK(t[0] && t[1] && t[0]->nnodes == t[1]->nnodes && t[0]->nnodes > 300,
	      "many stacks: as many nodes in either order (%zu)", t[0] ? t[0]->nnodes : 0);
	/* What ends at each node, from the samples: its self. */
	ends = t[0] ? calloc(t[0]->nnodes, sizeof(*ends)) : NULL;
	for (size_t j = 0; ends && j < p[0]->nsamples; j++) {
		uint32_t n = t[0]->stack_node[p[0]->samples[j].stack];

		if (n != CALLTREE_NONE)
			ends[n] += p[0]->samples[j].values[0];
	}
	for (size_t i = 1; t[0] && t[1] && t[0]->nnodes == t[1]->nnodes && i < t[0]->nnodes; i++) {
		const struct calltree_node *a = &t[0]->nodes[i], *b = &t[1]->nodes[i];
		int64_t kids = 0;

		same = same && a->parent == b->parent && a->total == b->total &&
		       !strcmp(t[0]->funcs[a->func].name, t[1]->funcs[b->func].name);
		ordered = ordered && a->parent < i &&
			  a->depth == t[0]->nodes[a->parent].depth + 1;
		if (a->next_sibling != CALLTREE_NONE)
			ordered = ordered && a->func < t[0]->nodes[a->next_sibling].func;
		for (uint32_t c = calltree_first_child(t[0], (uint32_t)i); c != CALLTREE_NONE;
		     c = t[0]->nodes[c].next_sibling)
			kids += t[0]->nodes[c].total;
		ordered = ordered && ends && calltree_self(t[0], (uint32_t)i) == ends[i] &&
			  a->total == ends[i] + kids;
	}
	free(ends);
	CHECK(same, "many stacks: the same tree in either order");
	CHECK(ordered, "many stacks: pre-order, children in name order, totals summed, selfs where stacks end");
	for (int k = 0; k < 2; k++) {
		calltree_free(t[k]);
		profile_free(p[k]);
	}
}

int main(void)
{
	static const struct value_type vt[] = { { "samples", "count" } };
	struct profile *p = profile_new();
	struct calltree *t;
	int rc;
	uint32_t main_ = fr(p, "main", "/app", 10, FRAME_USER),
		 main2 = fr(p, "main", "/app", 11, FRAME_USER),
		 run = fr(p, "run", "/app", 20, FRAME_USER),
		 cpy = fr(p, "memcpy", "/libc.so", 0, FRAME_LIBRARY),
		 cpy_inl = fr(p, "memcpy", "/libc.so", 0, FRAME_INLINED),
		 k = fr(p, "do_syscall_64", NULL, 0, FRAME_KERNEL);

	profile_set_value_types(p, vt, 1);
	{
		uint32_t s1[] = { main_, run, cpy }, s2[] = { main2, run, k },
			 s3[] = { main_, cpy_inl }, s4[] = { main_ };
		add(p, s1, 3, 1, 50);
		add(p, s1, 3, 2, 10); /* same stack, other thread: merged */
		add(p, s2, 3, 1, 25);
		add(p, s3, 2, 1, 5);
		add(p, s4, 1, 1, 10);
	}

	/* CHECK evaluates its condition twice: no side effects inside. */
	rc = calltree_build(p, 0, false, 0, &t);
	CHECK(rc == 0, "build");
	{
		uint32_t m = child(t, 0, "main"), r = child(t, m, "run");

		CHECK(t->nodes[0].total == 100 && calltree_self(t, 0) == 0,
		      "root total is everything");
		CHECK(m != CALLTREE_NONE && t->nodes[m].total == 100 &&
		      calltree_self(t, m) == 10, "main at two lines is one node, self 10");
		CHECK(t->funcs[t->nodes[m].func].line == 0 &&
		      t->funcs[t->nodes[m].func].file != NULL,
		      "merged lines disagree: line dropped, file kept");
		CHECK(r != CALLTREE_NONE && t->nodes[r].total == 85 &&
		      calltree_self(t, r) == 0, "run total 85");
		CHECK(t->nodes[child(t, r, "memcpy")].total == 60,
		      "threads merged: memcpy 60");
		CHECK(calltree_self(t, child(t, r, "do_syscall_64")) == 25, "kernel leaf");
		CHECK(t->nnodes == 6, "6 nodes: root main run memcpy syscall memcpy-inlined (%zu)",
		      t->nnodes);
		/* Sorted siblings: "memcpy" (inlined) before "run". */
		CHECK(!strcmp(t->funcs[t->nodes[calltree_first_child(t, m)].func].name, "memcpy") &&
		      t->funcs[t->nodes[calltree_first_child(t, m)].func].kind == FRAME_INLINED,
		      "siblings sorted by name; inlined kept apart from library");
		CHECK(t->max_depth == 3, "max depth 3");
		CHECK(calltree_min_total(t, 0, 1200) == 1, "no minwidth: keep all");
		CHECK(calltree_min_total(t, 12, 1200) == 1, "12px of 1200 on 100 = 1");
		CHECK(calltree_min_total(t, 30, 100) == 30, "30px of 100 on 100 = 30");
	}
	calltree_free(t);

	rc = calltree_build(p, 0, true, 0, &t);
	CHECK(rc == 0, "build reversed");
	{
		uint32_t c = child(t, 0, "memcpy"), r = c != CALLTREE_NONE ? child(t, c, "run") : c;

		CHECK(t->reversed, "marked reversed");
		CHECK(c != CALLTREE_NONE && t->nodes[c].total == 60 &&
		      t->funcs[t->nodes[c].func].kind == FRAME_LIBRARY,
		      "reversed: leaf memcpy at the base");
		CHECK(r != CALLTREE_NONE && calltree_self(t, child(t, r, "main")) == 60,
		      "reversed: main is where the stack ends");
		CHECK(t->nodes[child(t, 0, "main")].total == 10, "main alone as a leaf: 10");
	}
	calltree_free(t);

	/* Bounded: with room for 3 nodes, deeper stacks are cut and counted. */
	rc = calltree_build(p, 0, false, 3, &t);
	CHECK(rc == 0, "build bounded");
	/* In name order: [main], [main memcpy(inlined)], then run's stacks
	 * find no room and count where they were cut, at main. */
	CHECK(t->nnodes == 3 && t->cut_value == 85 && t->nodes[0].total == 100 &&
	      calltree_self(t, 1) == 95,
	      "bounded tree keeps totals, counts the cut value (%lld)",
	      (long long)t->cut_value);
	calltree_free(t);
	check_sorting();

	{
		char *s = xml("a<b>&\"c'\x01\xff", 100);

		CHECK_STR(s, "a&lt;b&gt;&amp;&quot;c&#39;\xef\xbf\xbd\xef\xbf\xbd",
			  "xml escapes markup, control bytes and bad UTF-8");
		free(s);
		s = xml("a\nb\tc", 100);
		CHECK_STR(s, "a b c", "line breaks in names become spaces");
		free(s);
		s = xml("abcdef", 3);
		CHECK_STR(s, "abc...", "xml cut at max");
		free(s);
		s = xml("\xc3\xa9t\xc3\xa9", 3);
		CHECK_STR(s, "\xc3\xa9t...", "cut never splits a character");
		free(s);
		s = xml("\xe0\x80\xaf", 10);
		CHECK_STR(s, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", "overlong UTF-8 refused");
		free(s);
	}
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&buf, &len);
		const char tmpl[] = "head /*A*/sample/*/A*/ tail";

		int r1 = calltree_fill_template(tmpl, sizeof(tmpl) - 1, "/*A*/",
						"/*/A*/", fill_x, "X", out);
		int r2 = calltree_fill_template(tmpl, sizeof(tmpl) - 1, "/*B*/",
						"/*/B*/", fill_x, "X", out);

		CHECK(r1 == 0, "fill");
		CHECK(r2 == -EINVAL, "missing marker refused");
		fclose(out);
		CHECK_STR(buf, "head X tail", "placeholder replaced");
		free(buf);
	}
	profile_free(p);
	return test_done();
}
