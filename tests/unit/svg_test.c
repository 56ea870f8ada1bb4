/* svg: the SVG flame graph writer on a profile with a known tree. With
 * NPROF_E2E_DIR set, also writes flame.svg there for tests/e2e/svg.test.js. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/output.h"
#include "test.h"

static uint32_t frk(struct profile *p, const char *name, const char *module,
		    enum frame_kind k)
{
	struct frame f = { .name = name, .module = module, .kind = k };
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
		    int *ret, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	*ret = output_write(p, OUTPUT_SVG, o, out);
	fclose(out);
	if (ret_len)
		*ret_len = len;
	return buf;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *s = hay; (s = strstr(s, needle)); s++)
		n++;
	return n;
}

int main(void)
{
	static const struct value_type vt[] = { { "samples", "count" } };
	struct profile *p = profile_new();
	struct output_options o = { .title = "svg <test> & \"more\"" };
	uint32_t m = frk(p, "main", "/usr/bin/app", FRAME_USER),
		 gc = frk(p, "gc_collect", "/usr/bin/app", FRAME_USER),
		 mk = frk(p, "gc_mark", "/usr/bin/app", FRAME_USER),
		 hs = frk(p, "hash_bytes", "/usr/bin/app", FRAME_USER),
		 cp = frk(p, "memcpy", "/lib/libc.so.6", FRAME_LIBRARY),
		 ks = frk(p, "ksys_read", "[kernel]", FRAME_KERNEL),
		 tiny = frk(p, "tiny", "/usr/bin/app", FRAME_USER),
		 ev = frk(p, "std::vector<int>::operator[]</title><script>alert(1)</script>",
			  "/usr/bin/app", FRAME_INLINED);
	enum output_format f;
	char *text;
	size_t len;
	int r;

	profile_set_value_types(p, vt, 1);
	p->event = "cpu";
	{
		uint32_t s1[] = { m, gc, mk }, s2[] = { m, gc, cp }, s3[] = { m, hs },
			 s4[] = { m, hs, cp, ks }, s5[] = { m, ev }, s6[] = { m, tiny };
		add(p, s1, 3, 5000);
		add(p, s2, 3, 1000);
		add(p, s3, 2, 2500);
		add(p, s4, 4, 1400);
		add(p, s5, 2, 99);
		add(p, s6, 2, 1);
	}
	profile_add_note(p, "kernel frames may be incomplete");

	text = render(p, &o, &r, &len);
	CHECK(r == 0, "write svg");
	CHECK(!strncmp(text, "<?xml", 5) && strstr(text, "<svg version=\"1.1\" width=\"1200\""),
	      "an SVG 1200 px wide by default");
	CHECK(!strstr(text, "{{") && !strstr(text, "<!--FRAME") && !strstr(text, "<!--ROOT"),
	      "every placeholder and pattern consumed");
	CHECK(!strstr(text, "template preview"), "sample frames replaced");
	/* all main gc_collect gc_mark memcpy hash_bytes memcpy ksys_read
	 * vector tiny: 10 frames; tiny is 1/10000 of 1180 px, over 0.1 px. */
	CHECK(count(text, "<g class=\"frame\">") == 10, "one <g> per frame (%zu)",
	      count(text, "<g class=\"frame\">"));
	CHECK(strstr(text, "<title>gc_collect\n/usr/bin/app (user code)\n6000 samples, 60.00%</title>") != NULL,
	      "tooltip: name, module and kind, value and share");
	CHECK(strstr(text, "<rect x=\"10.00\" y=\"70.0\" width=\"70.80\" height=\"15\"") ||
	      strstr(text, "y=\"70.0\""), "deepest level at the top");
	CHECK(strstr(text, "operator[]&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;") != NULL &&
	      count(text, "<script") == 1, "names escaped for XML");
	CHECK(strstr(text, ">svg &lt;test&gt; &amp; &quot;more&quot;</text>") != NULL, "title escaped");
	CHECK(strstr(text, ">kernel frames may be incomplete</text>") != NULL, "notes shown");
	CHECK(strstr(text, "height=\"184\"") != NULL, "height: 5 levels of 16 px + header and footer");
	free(text);

	o = (struct output_options){ .width = 600, .height = 20, .minwidth = 6 };
	text = render(p, &o, &r, NULL);
	CHECK(r == 0 && strstr(text, "width=\"600\"") && strstr(text, "height=\"19\""),
	      "--width and --height (frame height)");
	CHECK(count(text, "<g class=\"frame\">") == 8 && !strstr(text, ">tiny") &&
	      !strstr(text, "alert(1)"),
	      "--minwidth 6 px leaves out the 1%% and 0.01%% frames");
	free(text);

	o = (struct output_options){ .reverse = true };
	text = render(p, &o, &r, NULL);
	CHECK(r == 0 && strstr(text, "<title>memcpy\n/lib/libc.so.6 (library)\n1000 samples, 10.00%</title>") &&
	      strstr(text, "reversed stacks"),
	      "--reverse: leaf functions at the base");
	free(text);

	o = (struct output_options){ .width = 5 };
	text = render(p, &o, &r, NULL);
	CHECK(r == -EINVAL, "absurd width refused");
	free(text);
	CHECK(output_format_from_path("x.svg", &f) == 0 && f == OUTPUT_SVG, ".svg means svg");
	CHECK(output_format_from_path("x.html", &f) == 0 && f == OUTPUT_FLAMEGRAPH,
	      ".html means flamegraph");
	CHECK(output_format_parse("tree", &f) == 0 && f == OUTPUT_TREE, "tree by name");

	if (getenv("NPROF_E2E_DIR")) {
		char path[4096];
		FILE *out;
		bool ok;

		o = (struct output_options){ .title = "nprof test: svg" };
		text = render(p, &o, &r, &len);
		snprintf(path, sizeof(path), "%s/flame.svg", getenv("NPROF_E2E_DIR"));
		out = fopen(path, "w");
		ok = out && fwrite(text, 1, len, out) == len;
		if (out)
			ok = fclose(out) == 0 && ok;
		CHECK(ok, "wrote %s", path);
		free(text);
	}
	profile_free(p);
	return test_done();
}
