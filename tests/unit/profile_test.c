/* The profile model: interning shares equal things, samples merge, totals
 * add up, and limits are respected. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "test.h"

static uint32_t frame(struct profile *p, const char *name, const char *module)
{
	struct frame f = { .name = name, .module = module, .kind = FRAME_USER };
	uint32_t id = UINT32_MAX;

	if (profile_intern_frame(p, &f, &id) < 0)
		abort();
	return id;
}

int main(void)
{
	struct profile *p = profile_new();
	static const struct value_type vt[] = { { "samples", "count" },
						{ "cpu", "nanoseconds" } };
	uint32_t a, b, a2, s1, s2, s3, t1, t2, t1b, unk;
	char name[64];

	CHECK(p != NULL, "profile_new");
	CHECK(profile_set_value_types(p, vt, 2) == 0, "two value types");
	CHECK(profile_set_value_types(p, vt, PROFILE_MAX_VALUES + 1) == -EINVAL,
	      "too many value types refused");

	/* Strings: equal text, one pointer. */
	snprintf(name, sizeof(name), "%s", "main");
	CHECK(profile_intern_string(p, name) == profile_intern_string(p, "main"),
	      "equal strings share one copy");
	CHECK(profile_intern_string(p, NULL) == NULL, "NULL string stays NULL");

	/* Frames: same name and module -> same id; module matters. */
	a = frame(p, "main", "/bin/x");
	b = frame(p, "work", "/bin/x");
	a2 = frame(p, name, "/bin/x");
	CHECK(a == a2 && a != b, "frames interned by content");
	CHECK(frame(p, "main", "/lib/y") != a, "module distinguishes frames");
	CHECK(p->degraded.unsymbolized_frames == 0, "no unknown frames yet");
	{
		struct frame f = { .name = "libz.so+0x10", .kind = FRAME_UNKNOWN };

		CHECK(profile_intern_frame(p, &f, &unk) == 0 &&
			      p->degraded.unsymbolized_frames == 1,
		      "unknown frame counted once");
		CHECK(profile_intern_frame(p, &f, &unk) == 0 &&
			      p->degraded.unsymbolized_frames == 1,
		      "re-interned unknown frame not counted again");
	}

	/* Stacks. */
	uint32_t st1[] = { a, b }, st2[] = { a }, st3[] = { a, b };
	CHECK(profile_intern_stack(p, st1, 2, false, &s1) == 0, "stack 1");
	CHECK(profile_intern_stack(p, st2, 1, false, &s2) == 0, "stack 2");
	CHECK(profile_intern_stack(p, st3, 2, false, &s3) == 0 && s3 == s1,
	      "equal stacks share an id");
	CHECK(profile_intern_stack(p, st3, 2, true, &s3) == 0 && s3 != s1,
	      "a truncated stack is a different stack");
	CHECK(p->stacks[s1].depth == 2 && profile_stack_frames(p, s1)[0] == a &&
		      profile_stack_frames(p, s1)[1] == b,
	      "stack frames kept root first");

	{
		struct profile *e = profile_new();
		uint32_t s0, s0b;

		CHECK(profile_intern_stack(e, NULL, 0, false, &s0) == 0 &&
			      profile_intern_stack(e, NULL, 0, false, &s0b) == 0 &&
			      s0 == s0b && e->stacks[s0].depth == 0,
		      "an empty stack interned before any other");
		profile_free(e);
	}

	/* Modules and the timeline. */
	{
		uint32_t m1, m2, m3;

		CHECK(profile_intern_module(p, "/lib/libc.so.6", NULL, &m1) == 0 &&
			      profile_intern_module(p, "/lib/libc.so.6", "abcd", &m2) == 0 &&
			      m1 == m2 && p->modules[m1].build_id &&
			      !strcmp(p->modules[m1].build_id, "abcd"),
		      "module interned once, build-id added later");
		CHECK(profile_intern_module(p, "/bin/x", "ef", &m3) == 0 && m3 != m1,
		      "second module");
		CHECK(profile_add_event(p, 1, 0, 0, 1) == 0 && p->nevents == 0,
		      "timeline off by default");
		p->max_events = 2;
		for (int i = 0; i < 5; i++)
			profile_add_event(p, (uint64_t)i, 0, 0, 1);
		CHECK(p->nevents == 2 && p->events_dropped == 3 &&
			      p->events[1].time_ns == 1,
		      "timeline bounded, drops counted");
	}

	/* Threads: interned by tid, names updated. */
	CHECK(profile_intern_thread(p, 100, "main", &t1) == 0, "thread 100");
	CHECK(profile_intern_thread(p, 101, NULL, &t2) == 0, "thread 101");
	CHECK(profile_intern_thread(p, 100, "renamed", &t1b) == 0 && t1b == t1,
	      "same tid, same thread");
	CHECK_STR(p->threads[t1].name, "renamed", "latest name kept");
	CHECK_STR(p->threads[t2].name, "", "unknown name is empty");

	/* Samples merge by (stack, thread). */
	int64_t v[] = { 1, 10 };
	for (int i = 0; i < 5; i++)
		profile_add_sample(p, s1, t1, v);
	profile_add_sample(p, s1, t2, v);
	profile_add_sample(p, s2, t1, v);
	CHECK(p->nsamples == 3, "samples merged: %zu rows", p->nsamples);
	CHECK(profile_total(p, 0) == 7 && profile_total(p, 1) == 70,
	      "totals: %lld, %lld", (long long)profile_total(p, 0),
	      (long long)profile_total(p, 1));

	/* Notes: deduplicated and bounded. */
	profile_add_note(p, "kernel frames omitted: %s", "x");
	profile_add_note(p, "kernel frames omitted: %s", "x");
	CHECK(p->nnotes == 1, "duplicate note dropped");
	for (int i = 0; i < 40; i++)
		profile_add_note(p, "note %d", i);
	CHECK(p->nnotes == PROFILE_MAX_NOTES, "notes bounded");

	/* Many distinct stacks: the index grows and ids stay right. */
	{
		uint32_t ids[5000];
		int ok = 1;

		for (uint32_t i = 0; i < 5000; i++) {
			uint32_t fr[3] = { a, b, i };

			profile_intern_stack(p, fr, 3, false, &ids[i]);
		}
		for (uint32_t i = 0; i < 5000 && ok; i++) {
			uint32_t fr[3] = { a, b, i }, id;

			profile_intern_stack(p, fr, 3, false, &id);
			ok = id == ids[i] && profile_stack_frames(p, id)[2] == i;
		}
		CHECK(ok, "5000 stacks interned and found again");
	}
	/* Thread roots: one format for every source and the JFR files. */
	{
		char root[64];
		int n = profile_thread_root_name(NULL, 0, "worker", 42);

		profile_thread_root_name(root, sizeof(root), "worker", 42);
		CHECK_STR(root, "[worker tid=42]", "a named thread's root");
		CHECK(n == (int)strlen("[worker tid=42]"), "the length it needs, without a buffer");
		profile_thread_root_name(root, sizeof(root), "", 7);
		CHECK_STR(root, "[tid=7]", "a nameless thread's root");
		profile_thread_root_name(root, sizeof(root), NULL, 7);
		CHECK_STR(root, "[tid=7]", "a NULL name is no name");
		profile_process_root_name(root, sizeof(root), "nginx", 12);
		CHECK_STR(root, "[nginx pid=12]", "a process's root");
		profile_process_root_name(root, sizeof(root), NULL, 12);
		CHECK_STR(root, "[pid=12]", "a nameless process's root");
		profile_host_root_name(root, sizeof(root), "db1");
		CHECK_STR(root, "[host db1]", "a host's root");
	}
	/* Roots told from other frames by their names alone (collapsed text,
	 * pprof), as the three above write them. */
	{
		static const struct {
			const char *name;
			bool root;
		} cases[] = {
			{ "[worker tid=42]", true }, { "[tid=7]", true }, { "[a b tid=1]", true },
			{ "[nginx pid=12]", true }, { "[pid=3]", true }, { "[host db1]", true },
			{ "[worker tid=]", false }, { "[worker tid=4x]", false },
			{ "[workertid=4]", false }, { "worker tid=4]", false }, { "[x pid=1", false },
			{ "[host ]", false }, { "[hostess]", false }, { "[]", false },
			{ "std::vector<int>::operator[]", false }, { "[abi:cxx11]", false },
		};
		bool ok = true;

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			if (profile_is_root_name(cases[i].name, strlen(cases[i].name)) != cases[i].root) {
				ok = false;
				printf("# %s: should be %s\n", cases[i].name, cases[i].root ? "a root" : "no root");
			}
		CHECK(ok, "%zu names told as roots or not", sizeof(cases) / sizeof(cases[0]));
	}
	profile_free(p);
	profile_free(NULL);
	CHECK(1, "profile_free(NULL) is harmless");
	return test_done();
}
