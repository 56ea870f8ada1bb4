/* chain_build_test: chains of addresses into a profile, the one builder
 * of the engine and the agent.
 *
 * Addresses of this very process: the profile is described from the
 * options (event, value types, interval unit, command, unwinder, pid); a
 * stack is root first — the thread root ([name tid=N], or the source's
 * own root), the pseudo-frame above, the addresses from the outermost to
 * the leaf, the pseudo-frame below — with the sampled pc named as it is
 * and a return address by the byte before; a thread without a name is
 * named by name_thread, once; without thread roots there is no root;
 * past max_depth the outermost addresses are cut and the stack is
 * truncated; equal stacks merge their values; a table of chains goes in
 * with its timeline, on wall time, a chain left out taking its events
 * with it. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/chain_build.h"
#include "test.h"

__attribute__((noinline)) int chain_build_test_leaf(int x);
__attribute__((noinline)) int chain_build_test_leaf(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 5 + 2;
}

__attribute__((noinline)) int chain_build_test_caller(int x);
__attribute__((noinline)) int chain_build_test_caller(int x)
{
	__asm__ volatile("" ::: "memory");
	return chain_build_test_leaf(x) + 1;
}

static int (*volatile keep[])(int) = { chain_build_test_leaf, chain_build_test_caller };

static int asked;

static void name_thread(pid_t tid, char *name, size_t len)
{
	asked++;
	snprintf(name, len, "asked-%d", (int)tid);
}

/* The stack's frame names, joined by ';'. */
static const char *stack_str(const struct profile *p, uint32_t stack)
{
	static char buf[1024];
	const uint32_t *f = profile_stack_frames(p, stack);
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < p->stacks[stack].depth && used < sizeof(buf); i++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s", i ? ";" : "",
					 p->frames[f[i]].name);
	return buf;
}

static const struct chain_build_options defaults = {
	.command = "chain_build_test", .unwinder = "fp", .pid = 4321, .max_depth = 8,
	.per_thread = true, .name_thread = name_thread,
};

static void test_stacks(struct proc_syms *ps)
{
	uint64_t leaf = (uint64_t)(uintptr_t)keep[0], caller = (uint64_t)(uintptr_t)keep[1];
	/* The pc at the leaf's first byte; the return address one past the
	 * caller's first byte, whose byte before is the caller's. */
	uint64_t ips[2] = { leaf, caller + 1 };
	struct chain_build_options o = defaults;
	struct chain_build b;
	uint32_t stack = 0, thread = 0, again = 0;
	int64_t one[2] = { 1, 10 };
	const struct profile *p;

	o.event = event_find("cpu");
	CHECK(chain_build_open(&b, ps, &o) == 0, "opened");
	p = b.p;
	CHECK_STR(p->event, "cpu", "the event's name");
	CHECK(p->nvalues == o.event->nvalues &&
	      !strcmp(p->value_types[0].type, o.event->values[0].type),
	      "the event's value types");
	CHECK_STR(p->interval_unit, o.event->interval_unit, "its interval unit");
	CHECK_STR(p->command, "chain_build_test", "the command");
	CHECK_STR(p->unwinder, "fp", "the unwinder");
	CHECK(p->pid == 4321, "the pid");

	{
		struct chain_build_stack s = { .ips = ips, .n = 2, .tid = 7, .thread_name = "worker" };

		CHECK(chain_build_add(&b, &s, one, &stack, &thread) == 0, "a stack added");
		CHECK_STR(stack_str(p, stack),
			  "[worker tid=7];chain_build_test_caller;chain_build_test_leaf",
			  "root first: the thread, the caller by the byte before, the leaf's pc");
		CHECK(p->frames[profile_stack_frames(p, stack)[0]].kind == FRAME_THREAD,
		      "the root is a thread frame");
		CHECK_STR(p->threads[thread].name, "worker", "the thread as named");
		CHECK(chain_build_add(&b, &s, one, &again, NULL) == 0 && again == stack &&
		      p->nsamples == 1 && p->samples[0].values[1] == 20,
		      "the same stack again merges its values");
		CHECK(!p->stacks[stack].truncated, "a whole walk is not truncated");
	}
	{
		uint64_t at_start[2] = { leaf, caller };
		struct chain_build_stack s = { .ips = at_start, .n = 2, .tid = 7 };

		CHECK(chain_build_add(&b, &s, one, &stack, NULL) == 0 &&
		      !strstr(stack_str(p, stack), "chain_build_test_caller"),
		      "a return address at a function's first byte is not that function's (%s)",
		      stack_str(p, stack));
		CHECK(asked == 0, "a thread the profile names is not asked about");
	}
	{
		struct chain_build_stack s = {
			.ips = ips, .n = 2, .tid = 8, .above = "[unknown stack]",
			.leaf = "[sleeping]", .leaf_kind = FRAME_KERNEL, .truncated = true,
		};
		const uint32_t *f;

		CHECK(chain_build_add(&b, &s, one, &stack, &thread) == 0, "a stack with pseudo-frames");
		CHECK_STR(stack_str(p, stack),
			  "[asked-8 tid=8];[unknown stack];chain_build_test_caller;"
			  "chain_build_test_leaf;[sleeping]",
			  "the root named as asked, the pseudo-frames above and below");
		f = profile_stack_frames(p, stack);
		CHECK(p->frames[f[1]].kind == FRAME_KERNEL && p->frames[f[4]].kind == FRAME_KERNEL,
		      "of the kinds asked");
		CHECK(asked == 1 && p->stacks[stack].truncated, "asked once; truncated kept");
		s.root = "[threads not kept apart]";
		s.above = s.leaf = NULL;
		CHECK(chain_build_add(&b, &s, one, &stack, NULL) == 0 && asked == 1,
		      "the thread named since is not asked again");
		CHECK_STR(stack_str(p, stack),
			  "[threads not kept apart];chain_build_test_caller;chain_build_test_leaf",
			  "the source's own root");
	}
	chain_build_release(&b);

	o.per_thread = false;
	o.max_depth = 1;
	o.name_thread = NULL;
	CHECK(chain_build_open(&b, ps, &o) == 0, "opened without thread roots, -j 1");
	{
		struct chain_build_stack s = { .ips = ips, .n = 2, .tid = 9 };
		struct profile *q;

		CHECK(chain_build_add(&b, &s, one, &stack, &thread) == 0, "added");
		CHECK_STR(stack_str(b.p, stack), "chain_build_test_leaf",
			  "no root; past max_depth the outermost address cut");
		CHECK(b.p->stacks[stack].truncated, "and the stack is truncated");
		CHECK(b.p->threads[thread].name[0] == '\0', "without name_thread, no name");
		q = chain_build_take(&b);
		CHECK(q && !b.p, "the profile taken");
		chain_build_release(&b);
		CHECK(q->nstacks == 1, "and still whole after the builder is gone");
		profile_free(q);
	}
}

/* Chains 0 and 2 in, chain 1 left out; values from the chains. */
static bool describe(void *ctx, uint32_t id, const struct chain *c,
		     struct chain_build_stack *s, int64_t *values)
{
	(*(int *)ctx)++;
	if (id == 1)
		return false;
	s->thread_name = "t";
	values[0] = (int64_t)c->samples;
	values[1] = (int64_t)c->weight;
	return true;
}

static uint64_t triple(void *ctx, const struct chain_event *e)
{
	(void)ctx;
	return e->value * 3;
}

static void test_chains(struct proc_syms *ps)
{
	uint64_t leaf = (uint64_t)(uintptr_t)keep[0], caller = (uint64_t)(uintptr_t)keep[1];
	uint64_t ips[2] = { leaf, caller + 1 };
	struct chain_build_options o = defaults;
	struct chain_table t;
	struct chain_timeline tl;
	struct chain_build b;
	int described = 0;
	struct chain_look look = { describe, triple, &described };
	uint32_t id;

	o.event = event_find("cpu");
	chain_table_init(&t, 16, 64);
	chain_timeline_init(&tl, 16);
	for (int i = 0; i < 3; i++) {
		struct chain_key k = { .ips = ips, .n = (uint32_t)(i == 2 ? 1 : 2), .tid = 20 + i };

		chain_table_add(&t, &k, 2, 100, &id);
		chain_timeline_add(&tl, 5000 + (uint64_t)i, id, 1);
	}
	CHECK(chain_build_open(&b, ps, &o) == 0, "opened");
	CHECK(chain_build_chains(&b, &t, &tl, 1000000, 4000, &look) == 0, "the table in");
	CHECK(described == 3 && b.p->nstacks == 2 && b.p->nsamples == 2,
	      "every chain described, the one left out not in the profile");
	CHECK(b.p->samples[0].values[0] == 2 && b.p->samples[0].values[1] == 100,
	      "values as described");
	CHECK_STR(stack_str(b.p, b.p->samples[1].stack), "[t tid=22];chain_build_test_leaf",
		  "each chain's addresses, tid and thread name");
	CHECK(b.p->nevents == 2 && b.p->events[0].time_ns == 1001000 &&
	      b.p->events[1].time_ns == 1001002 && b.p->events[1].thread == b.p->samples[1].thread &&
	      b.p->events[1].stack == b.p->samples[1].stack && b.p->events[0].value == 3,
	      "the timeline on wall time, as each chain's stack and thread, event_value's "
	      "values, the left-out chain's event left out");
	chain_build_release(&b);
	chain_timeline_release(&tl);
	chain_table_release(&t);
}

int main(void)
{
	struct symbolizer *syms = symbolizer_new();
	struct proc_syms *ps = NULL;

	CHECK(syms && symbolizer_open_process(syms, getpid(), false, &ps, NULL) == 0,
	      "this process opened");
	if (ps) {
		test_stacks(ps);
		test_chains(ps);
	}
	proc_syms_free(ps);
	symbolizer_free(syms);
	return test_done();
}
