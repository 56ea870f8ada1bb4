/* flamegraph: the HTML writer on hand-built profiles with a known tree,
 * names that try to break out of the page, and 100,000 distinct stacks
 * against the clock.
 *
 * With NPROF_E2E_DIR set, also writes flame.html, flame-reverse.html and
 * flame-big.html there for the browser tests (tests/e2e). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "output/output.h"
#include "res/flame.html.h"
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

static uint32_t fr(struct profile *p, const char *name)
{
	return frk(p, name, "/usr/bin/app", NULL, 0, FRAME_USER);
}

static void add(struct profile *p, const uint32_t *frames, uint32_t n,
		int64_t samples)
{
	uint32_t s, t;
	int64_t v[2] = { samples, samples * 10000000 };

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
	int r = output_write_flamegraph(p, o, out);

	CHECK(r == 0, "output_write_flamegraph returns 0 (%d)", r);
	fclose(out);
	if (ret_len)
		*ret_len = len;
	return buf;
}

static void save(const char *name, const char *text, size_t len)
{
	const char *dir = getenv("NPROF_E2E_DIR");
	char path[4096];
	FILE *f;
	bool ok;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ok = f && fwrite(text, 1, len, f) == len;
	if (f)
		ok = fclose(f) == 0 && ok;
	CHECK(ok, "wrote %s", path);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *s = hay; (s = strstr(s, needle)); s++)
		n++;
	return n;
}

static struct profile *new_profile(void)
{
	static const struct value_type vt[] = { { "samples", "count" },
						{ "cpu", "nanoseconds" } };
	struct profile *p = profile_new();

	profile_set_value_types(p, vt, 2);
	p->event = "cpu";
	p->pid = 42;
	p->command = "app";
	p->duration_ns = 5000000000ull;
	return p;
}

/* A small profile with every frame kind, file:line, long and hostile
 * names: what the browser tests look at. */
static struct profile *rich_profile(void)
{
	struct profile *p = new_profile();
	uint32_t th = frk(p, "[worker-1 tid=43]", NULL, NULL, 0, FRAME_THREAD),
		 m = frk(p, "main", "/usr/bin/app", "src/main.c", 42, FRAME_USER),
		 serve = frk(p, "server::Connection::serve(std::unique_ptr<Request, std::default_delete<Request>>)",
			     "/usr/bin/app", "src/server.cc", 310, FRAME_USER),
		 parse = frk(p, "http::parse_headers(std::string_view)", "/usr/bin/app",
			     "src/http.cc", 88, FRAME_INLINED),
		 hash = frk(p, "hash_bytes", "/usr/bin/app", "src/hash.c", 17, FRAME_USER),
		 cpy = frk(p, "__memcpy_avx_unaligned_erms", "/lib/x86_64-linux-gnu/libc.so.6",
			   NULL, 0, FRAME_LIBRARY),
		 rd = frk(p, "read", "/lib/x86_64-linux-gnu/libc.so.6", NULL, 0, FRAME_LIBRARY),
		 sys = frk(p, "entry_SYSCALL_64_after_hwframe", "[kernel]", NULL, 0, FRAME_KERNEL),
		 ksys = frk(p, "ksys_read", "[kernel]", NULL, 0, FRAME_KERNEL),
		 jit = frk(p, "LazyCompile:*handle /srv/app.js:10", "/tmp/perf-42.map", NULL, 0, FRAME_JIT),
		 unk = frk(p, "libfoo.so+0x1f2e", "/opt/libfoo.so", NULL, 0, FRAME_UNKNOWN),
		 evil = frk(p, "evil</script><script>document.title='pwned'</script>", "/usr/bin/app",
			    NULL, 0, FRAME_USER),
		 gc = fr(p, "gc_collect"), mark = fr(p, "gc_mark"), sweep = fr(p, "gc_sweep");
	struct {
		uint32_t f[8];
		uint32_t n;
		int64_t v;
	} st[] = {
		{ { th, m, serve, parse, hash }, 5, 180 },
		{ { th, m, serve, parse, cpy }, 5, 70 },
		{ { th, m, serve, rd, sys, ksys }, 6, 120 },
		{ { th, m, serve }, 3, 30 },
		{ { th, m, jit }, 3, 60 },
		{ { th, m, unk }, 3, 20 },
		{ { th, m, evil }, 3, 10 },
		{ { th, m, gc, mark }, 4, 250 },
		{ { th, m, gc, sweep, cpy }, 5, 90 },
		{ { th, m, gc, sweep }, 4, 60 },
		{ { th, m, hash }, 3, 110 },
	};

	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++)
		add(p, st[i].f, st[i].n, st[i].v);
	profile_add_note(p, "kernel frames may be incomplete: kernel.perf_event_paranoid=2");
	p->degraded.lost_samples = 3;
	return p;
}

static uint64_t rng_state = 88172645463325252ull;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

/* n distinct stacks, 8 to 40 deep over a pool of realistic names: few
 * entry points near the root, ever more branching below, as in a server
 * where many requests share their first frames. */
static struct profile *synthetic_profile(size_t n)
{
	struct profile *p = new_profile();
	enum { POOL = 6000 };
	uint32_t *pool = malloc(POOL * sizeof(*pool));
	static const char *const ns[] = { "db", "net", "storage", "query", "std", "util" };
	static const enum frame_kind kinds[] = { FRAME_USER, FRAME_USER, FRAME_USER,
		FRAME_LIBRARY, FRAME_INLINED, FRAME_KERNEL, FRAME_JIT };
	char name[160];
	size_t made = 0;

	for (uint32_t i = 0; i < POOL; i++) {
		enum frame_kind k = kinds[i % 7];

		snprintf(name, sizeof(name), "%s::Component%u::method_%u(int, std::string const&)",
			 ns[i % 6], i / 37, i);
		pool[i] = frk(p, name, k == FRAME_LIBRARY ? "/usr/lib/libx.so" : "/usr/bin/app",
			      NULL, 0, k);
	}
	while (made < n) {
		uint32_t f[40], depth = 8 + rnd() % 33, s, t;
		int64_t v[2];
		size_t before = p->nstacks;

		for (uint32_t d = 0; d < depth; d++) {
			uint32_t branch = d < 3 ? 2 + d : POOL;

			f[d] = pool[(rnd() % branch + d * 131) % POOL];
		}
		v[0] = 1 + rnd() % 100 * (rnd() % 10 == 0 ? 50 : 1);
		v[1] = v[0] * 10000000;
		profile_intern_stack(p, f, depth, false, &s);
		profile_intern_thread(p, 1, "main", &t);
		profile_add_sample(p, s, t, v);
		made += p->nstacks > before;
	}
	free(pool);
	return p;
}

/* CPU time of this process: the machine running the tests may be busy. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	struct profile *p = new_profile();
	struct output_options o = { 0 };
	uint32_t main_ = fr(p, "main"), run = fr(p, "run"), a = fr(p, "burn_a"),
		 b = fr(p, "burn_b"), rec = fr(p, "recurse");
	char *text;
	size_t len;

	{
		uint32_t s1[] = { main_, run, a }, s2[] = { main_, run, b },
			 s3[] = { main_, rec, rec, rec };
		add(p, s1, 3, 60);
		add(p, s2, 3, 30);
		add(p, s3, 4, 10);
	}
	profile_add_note(p, "kernel frames omitted: test");

	text = render(p, &o, &len);
	CHECK(!strncmp(text, "<!DOCTYPE html>", 15), "starts as HTML");
	CHECK(strstr(text, "id=\"data\">{\"version\":1,") && !strstr(text, "Sample flame graph"),
	      "template sample replaced by the profile");
	CHECK(strstr(text, "\"names\":[\"burn_a\",\"burn_b\",\"main\",\"recurse\",\"run\"]") != NULL,
	      "name table, in name order");
	CHECK(strstr(text, "\"nodes\":[-1,100,1,2,100,2,3,10,1,3,10,1,3,10,0,"
			   "4,90,2,0,60,0,1,30,0]") != NULL,
	      "pre-merged tree, pre-order, siblings by name");
	CHECK(strstr(text, "\"total\":100,\"reverse\":false") != NULL, "total");
	CHECK(strstr(text, "\"notes\":[\"kernel frames omitted: test\"]") != NULL,
	      "notes carried");
	CHECK(strstr(text, "\"event\":\"cpu\"") && strstr(text, "\"unit\":\"count\""),
	      "event and unit");
	CHECK(!strstr(text, "http:") && !strstr(text, "https:") &&
	      !strstr(text, "<script src") && !strstr(text, "<link"),
	      "self-contained: nothing loaded from elsewhere");
	free(text);

	o.reverse = true;
	text = render(p, &o, NULL);
	CHECK(strstr(text, "\"nodes\":[-1,100,3,0,60,1,4,60,1,2,60,0,"
			   "1,30,1,4,30,1,2,30,0,3,10,1,3,10,1,3,10,1,2,10,0]") != NULL,
	      "--reverse: tree of leaf-first stacks");
	CHECK(strstr(text, "\"reverse\":true") != NULL, "reverse flagged for the page");
	free(text);

	o = (struct output_options){ .width = 100, .minwidth = 15,
				     .title = "<b>\"T\"</b> & \xe2\x80\xa8 </script>" };
	text = render(p, &o, NULL);
	CHECK(strstr(text, "\"nodes\":[-1,100,1,2,100,-2,10,3,90,2,0,60,0,1,30,0]") != NULL,
	      "--minwidth 15 of 100px: the 10%% recursion is left out");
	CHECK(strstr(text, "frames below 15 (minwidth) left out: 1") != NULL,
	      "and a note says so");
	CHECK(strstr(text, "\"title\":\"\\u003cb\\u003e\\\"T\\\"\\u003c/b\\u003e \\u0026 \\u2028 \\u003c/script\\u003e\"") != NULL,
	      "title escaped for JSON inside <script>");
	CHECK(count(text, "</script>") == count((const char *)res_flame_html, "</script>"), "only the template's </script>");
	CHECK(!strstr(text, "\xe2\x80\xa8"), "no raw U+2028");
	free(text);
	profile_free(p);

	/* Hostile names: nothing they contain may end the script element. */
	p = rich_profile();
	o = (struct output_options){ .title = "nprof test: rich profile" };
	text = render(p, &o, &len);
	CHECK(count(text, "</script>") == count((const char *)res_flame_html, "</script>") && !strstr(text, "pwned'</"),
	      "a name with </script> stays inside the data");
	CHECK(strstr(text, "evil\\u003c/script\\u003e\\u003cscript\\u003edocument.title='pwned'") != NULL,
	      "and is kept, escaped");
	CHECK(strstr(text, "\"samples lost: 3\"") != NULL,
	      "degradations become notes");
	save("flame.html", text, len);
	free(text);
	o.reverse = true;
	text = render(p, &o, &len);
	save("flame-reverse.html", text, len);
	free(text);
	profile_free(p);

	{
		double t0 = now_s(), t1, t2;
		size_t nstacks;

		p = synthetic_profile(100000);
		nstacks = p->nstacks;
		o = (struct output_options){ .title = "100,000 distinct stacks" };
		/* Timed into a real file: what `nprof record -f x.html` does. */
		{
			FILE *f = tmpfile();
			int r;

			t1 = now_s();
			r = output_write_flamegraph(p, &o, f);
			fflush(f);
			t2 = now_s();
			CHECK(r == 0, "100k stacks written");
			len = (size_t)ftell(f);
			fclose(f);
		}
		CHECK(nstacks == 100000, "synthetic profile has 100000 distinct stacks");
		printf("# 100k stacks (%zu frames deep in all): profile %.3f s, "
		       "flamegraph write %.3f s CPU, %zu bytes\n",
		       p->nstack_frames, t1 - t0, t2 - t1, len);
		CHECK(t2 - t1 < 1.0, "writing 100k stacks takes under a second (%.3f s)",
		      t2 - t1);
		CHECK(len < 40u << 20, "and under 40 MB (%zu bytes)", len);
		if (getenv("NPROF_E2E_DIR")) {
			text = render(p, &o, &len);
			save("flame-big.html", text, len);
			free(text);
		}
		profile_free(p);
	}
	return test_done();
}
