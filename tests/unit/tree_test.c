/* tree: the HTML call tree writer; the page itself is exercised in a
 * browser by tests/e2e/tree.test.js, on the file this test writes to
 * NPROF_E2E_DIR (tree.html) when that is set. */
#include <stdlib.h>
#include <string.h>

#include "output/output.h"
#include "res/calltree.js.h"
#include "res/flame.html.h"
#include "res/tree.html.h"
#include "test.h"

static uint32_t frk(struct profile *p, const char *name, const char *module,
		    const char *file, uint32_t line, enum frame_kind k)
{
	struct frame f = { .name = name, .module = module, .file = file,
			   .line = line, .kind = k };
	uint32_t id;

	profile_intern_frame(p, &f, &id);
	return id;
}

static void add(struct profile *p, const uint32_t *frames, uint32_t n,
		int64_t samples)
{
	uint32_t s, t;
	int64_t v[1] = { samples };

	profile_intern_stack(p, frames, n, false, &s);
	profile_intern_thread(p, 1, "main", &t);
	profile_add_sample(p, s, t, v);
}

static char *render(const struct profile *p, const struct output_options *o,
		    size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int r = output_write(p, OUTPUT_TREE, o, out);

	CHECK(r == 0, "output_write(tree) returns 0 (%d)", r);
	fclose(out);
	*ret_len = len;
	return buf;
}

int main(void)
{
	static const struct value_type vt[] = { { "alloc_space", "bytes" } };
	struct profile *p = profile_new();
	struct output_options o = { .title = "alloc <tree>" };
	uint32_t m = frk(p, "main", "/usr/bin/app", "main.c", 3, FRAME_USER),
		 a = frk(p, "alloc_rows", "/usr/bin/app", NULL, 0, FRAME_USER),
		 ma = frk(p, "malloc", "/lib/libc.so.6", NULL, 0, FRAME_LIBRARY),
		 k = frk(p, "mmap_region", "[kernel]", NULL, 0, FRAME_KERNEL);
	char *text;
	size_t len;

	profile_set_value_types(p, vt, 1);
	p->event = "alloc";
	{
		uint32_t s1[] = { m, a, ma }, s2[] = { m, ma, k }, s3[] = { m };
		add(p, s1, 3, 3 << 20);
		add(p, s2, 3, 1 << 20);
		add(p, s3, 1, 4096);
	}
	text = render(p, &o, &len);
	CHECK(!strncmp(text, "<!DOCTYPE html>", 15) && strstr(text, "<title>Call tree</title>"),
	      "an HTML page from the tree template");
	CHECK(strstr(text, "id=\"data\">{\"version\":1,") && !strstr(text, "Sample call tree"),
	      "sample data replaced");
	CHECK(strstr(text, "\"unit\":\"bytes\"") && strstr(text, "\"valueType\":\"alloc_space\""),
	      "value type and unit for the page to format bytes");
	CHECK(strstr(text, "\"title\":\"alloc \\u003ctree\\u003e\"") != NULL, "title escaped");
	/* names in order: alloc_rows main malloc mmap_region */
	CHECK(strstr(text, "\"nodes\":[-1,4198400,1,1,4198400,2,0,3145728,1,2,3145728,0,"
			   "2,1048576,1,3,1048576,0]") != NULL,
	      "tree with exact byte totals");
	free(text);

	/* The tree code lives once, in calltree.js, and each embedded page
	 * carries it inline: a page written must not load anything. */
	CHECK(strstr((const char *)res_flame_html, (const char *)res_calltree_js) &&
		      strstr((const char *)res_tree_html, (const char *)res_calltree_js),
	      "flame.html and tree.html embed calltree.js's tree code");
	CHECK(!strstr((const char *)res_flame_html, "<script src=") &&
		      !strstr((const char *)res_tree_html, "<script src="),
	      "no page loads a script from elsewhere");

	if (getenv("NPROF_E2E_DIR")) {
		char path[4096];
		FILE *f;
		struct profile *q = profile_new();
		static const struct value_type cnt[] = { { "samples", "count" } };
		uint32_t th = frk(q, "[worker tid=7]", NULL, NULL, 0, FRAME_THREAD),
			 mm = frk(q, "main", "/usr/bin/app", "src/main.c", 42, FRAME_USER),
			 gc = frk(q, "gc_collect", "/usr/bin/app", NULL, 0, FRAME_USER),
			 mk = frk(q, "gc_mark", "/usr/bin/app", NULL, 0, FRAME_USER),
			 hs = frk(q, "hash_bytes", "/usr/bin/app", "src/hash.c", 17, FRAME_USER),
			 cp = frk(q, "__memcpy_avx_unaligned_erms", "/lib/x86_64-linux-gnu/libc.so.6",
				  NULL, 0, FRAME_LIBRARY),
			 ev = frk(q, "evil<img src=x onerror=alert(1)>", "/usr/bin/app", NULL, 0,
				  FRAME_USER);
		uint32_t s1[] = { th, mm, gc, mk }, s2[] = { th, mm, gc, cp },
			 s3[] = { th, mm, hs }, s4[] = { th, mm, hs, cp }, s5[] = { th, mm, ev };
		bool ok;

		profile_set_value_types(q, cnt, 1);
		q->event = "cpu";
		add(q, s1, 4, 500);
		add(q, s2, 4, 100);
		add(q, s3, 3, 250);
		add(q, s4, 4, 140);
		add(q, s5, 3, 10);
		/* 300 callees of one function: the page shows 200 and "more". */
		for (unsigned i = 0; i < 300; i++) {
			char name[32];
			uint32_t fan[3] = { th, mm, 0 };

			snprintf(name, sizeof(name), "leaf_%03u", i);
			fan[2] = frk(q, name, "/usr/bin/app", NULL, 0, FRAME_USER);
			add(q, fan, 3, 1);
		}
		o = (struct output_options){ .title = "nprof test: call tree" };
		text = render(q, &o, &len);
		snprintf(path, sizeof(path), "%s/tree.html", getenv("NPROF_E2E_DIR"));
		f = fopen(path, "w");
		ok = f && fwrite(text, 1, len, f) == len;
		if (f)
			ok = fclose(f) == 0 && ok;
		CHECK(ok, "wrote %s", path);
		free(text);
		profile_free(q);
	}
	profile_free(p);
	return test_done();
}
