/* The JFR writer and reader: profiles built by hand go through JFR and back
 * and must come out with the same stacks, frames, threads and totals; the
 * reader must refuse damaged files without crashing.
 *
 * With NPROF_BUILD set, the files written are also left in
 * $NPROF_BUILD/jfr-test/ for tests/integration/jfr.sh to show to the JDK's
 * `jfr` tool. `jfr_test --read FILE` reads a JFR file and prints its
 * samples as collapsed stacks, for that script to check the reader against
 * recordings the JDK made. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "output/jfr.h"
#include "output/jfr_format.h"
#include "output/output.h"
#include "test.h"

static uint32_t fr(struct profile *p, const char *name, const char *module,
		   enum frame_kind k, uint32_t line)
{
	struct frame f = { .name = name, .module = module, .kind = k, .line = line };
	uint32_t id;

	profile_intern_frame(p, &f, &id);
	return id;
}

static void add(struct profile *p, const uint32_t *frames, uint32_t n, pid_t tid,
		const char *tname, int64_t v0, int64_t v1)
{
	uint32_t s, t;
	int64_t v[2] = { v0, v1 };

	profile_intern_stack(p, frames, n, false, &s);
	profile_intern_thread(p, tid, tname, &t);
	profile_add_sample(p, s, t, v);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every sample as one line, "tid:thread;frame@module#kind:line;... v0 v1",
 * sorted: two profiles with the same content give the same text. */
static char *canon(const struct profile *p)
{
	char **lines = calloc(p->nsamples + 1, sizeof(char *)), *buf = NULL;
	size_t len = 0;
	FILE *out;

	for (size_t i = 0; i < p->nsamples; i++) {
		const struct sample *s = &p->samples[i];
		const uint32_t *f = profile_stack_frames(p, s->stack);
		size_t l = 0;
		FILE *o = open_memstream(&lines[i], &l);

		fprintf(o, "%d:%s", (int)p->threads[s->thread].tid,
			p->threads[s->thread].name);
		for (uint32_t k = 0; k < p->stacks[s->stack].depth; k++) {
			const struct frame *fm = &p->frames[f[k]];

			fprintf(o, ";%s@%s#%d:%u", fm->name, fm->module ? fm->module : "-",
				(int)fm->kind, fm->line);
		}
		for (unsigned v = 0; v < p->nvalues; v++)
			fprintf(o, " %lld", (long long)s->values[v]);
		fclose(o);
	}
	qsort(lines, p->nsamples, sizeof(char *), cmp_str);
	out = open_memstream(&buf, &len);
	for (size_t i = 0; i < p->nsamples; i++) {
		fprintf(out, "%s\n", lines[i]);
		free(lines[i]);
	}
	fclose(out);
	free(lines);
	return buf;
}

static int render(const struct profile *p, char **ret, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int r = output_write(p, OUTPUT_JFR, NULL, out);

	fclose(out);
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* Leaves the file for tests/integration/jfr.sh. */
static void keep(const char *name, const char *data, size_t len)
{
	const char *build = getenv("NPROF_BUILD");
	char path[4096];
	FILE *f;

	if (!build)
		return;
	snprintf(path, sizeof(path), "%s/jfr-test", build);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/jfr-test/%s", build, name);
	f = fopen(path, "w");
	if (f) {
		fwrite(data, 1, len, f);
		fclose(f);
	}
}

static struct profile *cpu_profile(bool timeline)
{
	static const struct value_type vt[] = { { "samples", "count" },
						{ "cpu", "nanoseconds" } };
	struct profile *p = profile_new();
	const char *app = "/usr/bin/app", *libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	uint32_t main_ = fr(p, "main", app, FRAME_USER, 12),
		 run = fr(p, "worker_loop", app, FRAME_USER, 0),
		 hot = fr(p, "compute_hot", app, FRAME_INLINED, 40),
		 mv = fr(p, "__memmove_avx_unaligned_erms", libc, FRAME_LIBRARY, 0),
		 sys = fr(p, "do_syscall_64", NULL, FRAME_KERNEL, 0),
		 unk = fr(p, "libz.so.1+0x1f00", "/lib/libz.so.1", FRAME_UNKNOWN, 0),
		 op = fr(p, "std::vector<int, std::allocator<int> >::push_back(int const&)",
			 app, FRAME_USER, 0);
	uint32_t s1[] = { main_, run, hot }, s2[] = { main_, run, mv },
		 s3[] = { main_, run, mv, sys }, s4[] = { main_, unk }, s5[] = { main_, op };

	profile_set_value_types(p, vt, 2);
	p->event = "cpu";
	p->interval = 10000000;
	p->interval_unit = "nanoseconds";
	p->start_ns = 1700000000000000000ull;
	p->duration_ns = 3000000000ull;
	p->pid = 4242;
	p->command = "app";
	add(p, s1, 3, 100, "main", 7, 70000000);
	add(p, s2, 3, 101, "worker-1", 5, 50000000);
	add(p, s3, 4, 101, "worker-1", 2, 20000000);
	add(p, s4, 2, 102, "", 1, 10000000);
	add(p, s5, 2, 100, "main", 1, 10000000);
	if (timeline) {
		/* One event per sample, at known times. */
		p->max_events = 100;
		for (size_t i = 0; i < p->nsamples; i++)
			for (int64_t k = 0; k < p->samples[i].values[0]; k++)
				profile_add_event(p, p->start_ns + 1000000ull * (10 * i + k + 1),
						  p->samples[i].stack, p->samples[i].thread, 1);
	}
	return p;
}

static void test_round_trip(bool timeline)
{
	struct profile *p = cpu_profile(timeline), *q = NULL;
	char *data = NULL, *a, *b;
	size_t len = 0;
	struct diag d = { "" };
	int r;

	r = render(p, &data, &len);
	CHECK(r == 0 && len > JFR_HEADER_SIZE, "cpu profile written as JFR (%d, %zu bytes)", r, len);
	if (r < 0)
		goto out;
	CHECK(!memcmp(data, "FLR\0", 4), "starts with the chunk magic");
	keep(timeline ? "cpu-timeline.jfr" : "cpu.jfr", data, len);
	r = jfr_read(data, len, &q, &d);
	CHECK(r == 0, "read back (%d: %s)", r, d.msg);
	if (r < 0)
		goto out;
	a = canon(p);
	b = canon(q);
	CHECK_STR(b, a, "same stacks, frames, threads and values after the round trip%s",
		  timeline ? " (timeline)" : "");
	free(a);
	free(b);
	CHECK(profile_total(q, 0) == 16 && profile_total(q, 1) == 160000000,
	      "totals kept (%lld samples)", (long long)profile_total(q, 0));
	CHECK_STR(q->event, "cpu", "event kept");
	CHECK(q->interval == 10000000 && q->pid == 4242, "interval and pid kept");
	CHECK_STR(q->command, "app", "command kept");
	CHECK(q->nevents == 16, "one timeline event per sample (%zu)", q->nevents);
	CHECK(q->start_ns == p->start_ns && q->duration_ns == p->duration_ns,
	      "time range kept");
	if (timeline && q->nevents == 16) {
		bool same = true;

		for (size_t i = 0; i < q->nevents; i++)
			same &= q->events[i].time_ns == p->events[i].time_ns;
		CHECK(same, "timeline times kept to the nanosecond");
	} else if (q->nevents == 16) {
		bool inside = true;

		for (size_t i = 0; i < q->nevents; i++)
			inside &= q->events[i].time_ns > p->start_ns &&
				  q->events[i].time_ns < p->start_ns + p->duration_ns;
		CHECK(inside, "synthesized times spread inside the recording");
	}
out:
	free(data);
	profile_free(p);
	profile_free(q);
}

/* A stack's frames as "name#kind;...". */
static char *stack_str(const struct profile *p, uint32_t stack)
{
	const uint32_t *f = profile_stack_frames(p, stack);
	char *buf = NULL;
	size_t len = 0;
	FILE *o = open_memstream(&buf, &len);

	for (uint32_t k = 0; k < p->stacks[stack].depth; k++)
		fprintf(o, "%s%s#%d", k ? ";" : "", p->frames[f[k]].name,
			(int)p->frames[f[k]].kind);
	fclose(o);
	return buf;
}

/* Recorded with -t: each thread's stacks start with its pseudo-frame,
 * named as the engine names them. Samples without a thread frame (a
 * collapsed file's lines without one) are on tid 0. */
static struct profile *threads_profile(bool timeline)
{
	static const struct value_type vt[] = { { "samples", "count" },
						{ "cpu", "nanoseconds" } };
	struct profile *p = profile_new();
	const char *app = "/usr/bin/app";
	uint32_t t_main = fr(p, "[main tid=100]", NULL, FRAME_THREAD, 0),
		 t_w1 = fr(p, "[worker 1 tid=101]", NULL, FRAME_THREAD, 0),
		 t_anon = fr(p, "[tid=102]", NULL, FRAME_THREAD, 0),
		 main_ = fr(p, "main", app, FRAME_USER, 12),
		 run = fr(p, "run", app, FRAME_USER, 0),
		 hot = fr(p, "burn_a", app, FRAME_INLINED, 40),
		 sys = fr(p, "do_syscall_64", NULL, FRAME_KERNEL, 0);
	/* The same frames under two threads; a stack that is only its
	 * thread's frame; one without a thread frame. */
	uint32_t s1[] = { t_main, main_, run, hot }, s2[] = { t_w1, main_, run, hot },
		 s3[] = { t_w1, main_, run, sys }, s4[] = { t_anon, main_ },
		 s5[] = { t_anon }, s6[] = { main_, run };

	profile_set_value_types(p, vt, 2);
	p->event = "cpu";
	p->interval = 10000000;
	p->interval_unit = "nanoseconds";
	p->start_ns = 1700000000000000000ull;
	p->duration_ns = 3000000000ull;
	add(p, s1, 4, 100, "main", 7, 70000000);
	add(p, s2, 4, 101, "worker 1", 5, 50000000);
	add(p, s3, 4, 101, "worker 1", 2, 20000000);
	add(p, s4, 2, 102, "", 1, 10000000);
	add(p, s5, 1, 102, "", 1, 10000000);
	add(p, s6, 2, 0, "", 3, 30000000);
	if (timeline) {
		p->max_events = 100;
		for (size_t i = 0; i < p->nsamples; i++)
			for (int64_t k = 0; k < p->samples[i].values[0]; k++)
				profile_add_event(p, p->start_ns + 1000000ull * (10 * i + k + 1),
						  p->samples[i].stack, p->samples[i].thread, 1);
	}
	return p;
}

/* -t profiles: the writer leaves the thread frames out of the stack
 * traces (they are sampledThread) and the reader puts them back. */
static void test_thread_roots(bool timeline)
{
	struct profile *p = threads_profile(timeline), *q = NULL, *old = NULL;
	const char *tl = timeline ? " (timeline)" : "";
	char *data = NULL, *a, *b, *field;
	size_t len = 0;
	struct diag d = { "" };
	bool same = true, rootless = true;
	int r;

	r = render(p, &data, &len);
	CHECK(r == 0, "-t profile written as JFR%s (%d)", tl, r);
	if (r < 0)
		goto out;
	if (!timeline)
		keep("thread-roots.jfr", data, len);
	r = jfr_read(data, len, &q, &d);
	CHECK(r == 0, "read back%s (%d: %s)", tl, r, d.msg);
	if (r < 0)
		goto out;
	a = canon(p);
	b = canon(q);
	CHECK_STR(b, a, "same stacks (thread frames first), threads and values%s", tl);
	free(a);
	free(b);
	CHECK(q->nthreads == p->nthreads, "same threads%s (%zu)", tl, q->nthreads);
	CHECK(q->nevents == 19, "one timeline event per sample%s (%zu)", tl, q->nevents);
	for (size_t i = 0; timeline && i < q->nevents && i < p->nevents; i++) {
		a = stack_str(p, p->events[i].stack);
		b = stack_str(q, q->events[i].stack);
		same &= !strcmp(a, b) && q->events[i].time_ns == p->events[i].time_ns;
		free(a);
		free(b);
	}
	CHECK(same, "timeline events keep their thread-rooted stacks%s", tl);

	/* A file from before threadRoots: the thread frames stay out. The
	 * field's name in the metadata, changed, is a field nobody reads. */
	field = memmem(data, len, "threadRoots", 11);
	CHECK(field != NULL, "the metadata declares threadRoots%s", tl);
	if (!field)
		goto out;
	field[10] = 'z';
	r = jfr_read(data, len, &old, &d);
	CHECK(r == 0, "read without threadRoots%s (%s)", tl, d.msg);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < old->nsamples; i++) {
		const uint32_t *f = profile_stack_frames(old, old->samples[i].stack);

		for (uint32_t k = 0; k < old->stacks[old->samples[i].stack].depth; k++)
			rootless &= old->frames[f[k]].kind != FRAME_THREAD;
	}
	CHECK(rootless && profile_total(old, 0) == 19,
	      "... gives the stacks without thread frames, as before%s", tl);
out:
	free(data);
	profile_free(p);
	profile_free(q);
	profile_free(old);
}

/* A thread renamed while sampled: roots under two names, one thread and
 * one pool entry. It cannot be rebuilt, so its stacks lose the roots; the
 * other thread keeps its own. */
static void test_thread_renamed(void)
{
	static const struct value_type vt[] = { { "samples", "count" } };
	struct profile *p = profile_new(), *q = NULL;
	uint32_t t_old = fr(p, "[old tid=7]", NULL, FRAME_THREAD, 0),
		 t_new = fr(p, "[new tid=7]", NULL, FRAME_THREAD, 0),
		 t_other = fr(p, "[other tid=8]", NULL, FRAME_THREAD, 0),
		 m = fr(p, "main", "/usr/bin/app", FRAME_USER, 0);
	uint32_t s1[] = { t_old, m }, s2[] = { t_new, m }, s3[] = { t_other, m };
	char *data = NULL, *a = NULL;
	size_t len = 0;
	struct diag d = { "" };
	int r;

	profile_set_value_types(p, vt, 1);
	p->event = "cpu";
	add(p, s1, 2, 7, "old", 2, 0);
	add(p, s2, 2, 7, "new", 3, 0);
	add(p, s3, 2, 8, "other", 4, 0);
	r = render(p, &data, &len);
	r = r < 0 ? r : jfr_read(data, len, &q, &d);
	CHECK(r == 0, "renamed thread written and read (%d: %s)", r, d.msg);
	if (r < 0)
		goto out;
	a = canon(q);
	CHECK_STR(a, "7:new;main@/usr/bin/app#0:0 5\n8:other;[other tid=8]@-#5:0;main@/usr/bin/app#0:0 4\n",
		  "the renamed thread's samples merge without roots, the other keeps its root");
out:
	free(a);
	free(data);
	profile_free(p);
	profile_free(q);
}

static void test_alloc(void)
{
	static const struct value_type vt[] = { { "alloc_space", "bytes" },
						{ "alloc_objects", "count" } };
	struct profile *p = profile_new(), *q = NULL;
	uint32_t m = fr(p, "main", "/usr/bin/app", FRAME_USER, 0),
		 mk = fr(p, "make_buffer", "/usr/bin/app", FRAME_USER, 0), s[] = { m, mk };
	char *data = NULL, *a, *b;
	size_t len = 0;
	struct diag d = { "" };
	int r;

	profile_set_value_types(p, vt, 2);
	p->event = "alloc";
	p->interval = 524288;
	p->interval_unit = "bytes";
	p->duration_ns = 1000000000;
	add(p, s, 2, 7, "alloc-thread", 1048583, 3);
	add(p, s, 1, 7, "alloc-thread", 524309, 1);
	r = render(p, &data, &len);
	CHECK(r == 0, "alloc profile written");
	if (r < 0)
		goto out;
	keep("alloc.jfr", data, len);
	r = jfr_read(data, len, &q, &d);
	CHECK(r == 0, "alloc read back (%s)", d.msg);
	if (r < 0)
		goto out;
	a = canon(p);
	b = canon(q);
	CHECK_STR(b, a, "alloc samples keep both values");
	free(a);
	free(b);
	CHECK(q->nvalues == 2 && !strcmp(q->value_types[0].type, "alloc_space") &&
		      !strcmp(q->value_types[1].unit, "count"),
	      "alloc value types kept");
	CHECK_STR(q->event, "alloc", "alloc event kept");
out:
	free(data);
	profile_free(p);
	profile_free(q);
}

static void test_empty(void)
{
	struct profile *p = profile_new(), *q = NULL;
	static const struct value_type vt[] = { { "samples", "count" } };
	char *data = NULL;
	size_t len = 0;

	int r;

	profile_set_value_types(p, vt, 1);
	p->event = "cpu";
	/* CHECK evaluates its condition twice: no side effects in it. */
	r = render(p, &data, &len);
	CHECK(r == 0, "empty profile written");
	keep("empty.jfr", data, len);
	r = data ? jfr_read(data, len, &q, NULL) : -1;
	CHECK(r == 0 && q->nsamples == 0, "empty profile read back");
	free(data);
	profile_free(p);
	profile_free(q);
}

/* Cutting or flipping bytes must give an error or a profile, never a
 * crash (ASan builds check the memory side). */
static void test_damage(void)
{
	struct profile *p = cpu_profile(false), *q;
	char *data = NULL, *copy;
	size_t len = 0;
	struct diag d = { "" };
	int r, bad_ok = 1, ok_count = 0;

	render(p, &data, &len);
	r = jfr_read("GIF89a", 6, &q, &d);
	CHECK(r == -EINVAL && strstr(d.msg, "not a JFR") != NULL,
	      "not a JFR file: -EINVAL with a reason (%s)", d.msg);
	copy = malloc(len);
	memcpy(copy, data, len);
	copy[5] = 9;
	diag_clear(&d);
	r = jfr_read(copy, len, &q, &d);
	CHECK(r == -EINVAL && strstr(d.msg, "version") != NULL, "unknown version refused (%s)",
	      d.msg);
	for (size_t cut = 0; cut < len; cut++) {
		q = NULL;
		r = jfr_read(data, cut, &q, NULL);
		if (r == 0) {
			profile_free(q);
			ok_count++;
		}
		bad_ok &= r < 0 || cut >= JFR_HEADER_SIZE;
	}
	CHECK(bad_ok && ok_count == 0, "every truncation refused (%d accepted)", ok_count);
	bad_ok = 0;
	for (size_t i = 0; i < len; i++) {
		memcpy(copy, data, len);
		copy[i] ^= 0x5a;
		q = NULL;
		diag_clear(&d);
		r = jfr_read(copy, len, &q, &d);
		if (r == 0) {
			for (size_t k = 0; k < q->nsamples; k++)
				bad_ok += q->samples[k].stack >= q->nstacks ||
					  q->samples[k].thread >= q->nthreads;
			profile_free(q);
		} else {
			bad_ok += !d.msg[0]; /* a refusal always says why */
		}
	}
	CHECK(bad_ok == 0, "every single-byte corruption gives a sound profile or a reason (%d not)",
	      bad_ok);
	free(copy);
	free(data);
	profile_free(p);
}

static int read_file(const char *path)
{
	struct profile *p = NULL;
	struct diag d = { "" };
	char *data = NULL;
	size_t len = 0, n;
	char chunk[65536];
	FILE *f = fopen(path, "r"), *m;
	int r;

	if (!f) {
		perror(path);
		return 2;
	}
	m = open_memstream(&data, &len);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	fclose(m);
	r = jfr_read(data, len, &p, &d);
	free(data);
	if (r < 0) {
		fprintf(stderr, "%s: %s (%d)\n", path, d.msg, r);
		return 1;
	}
	printf("# event %s, %zu samples, %lld total, %zu threads, %zu events\n", p->event,
	       p->nsamples, (long long)profile_total(p, 0), p->nthreads, p->nevents);
	r = output_write(p, OUTPUT_COLLAPSED, NULL, stdout);
	profile_free(p);
	return r < 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--read"))
		return read_file(argv[2]);
	test_round_trip(false);
	test_round_trip(true);
	test_thread_roots(false);
	test_thread_roots(true);
	test_thread_renamed();
	test_alloc();
	test_empty();
	test_damage();
	return test_done();
}
