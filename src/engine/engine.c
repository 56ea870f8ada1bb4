/* engine_record: the recorder (raw address chains) plus symbolization
 * into a profile. See docs/engine.md. */
#include "engine/engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/proc.h"
#include "engine/events.h"
#include "engine/offcpu.h"
#include "engine/recorder.h"
#include "engine/unwinder.h"
#include "symbolize/chain_build.h"

#define MAX_DEPTH_LIMIT 65535 /* attr.sample_max_stack is 16 bits */

struct engine_run {
	const struct record_options *o;
	const struct engine_event *e;
	const struct unwinder *u;
	struct recorder *r;
	struct proc_syms *ps;
	uint64_t mapping_errors;
	uint64_t depth_cut;	/* samples whose stack -j cut here */
	char dwarf_refused[512]; /* auto fell back to fp: why */
	char threads_refused[512]; /* the threads at the start were not taken: why */
	unsigned threads_moved;	/* taken, then moved before the events ran */
	uint64_t *ticks;	/* EVENT_VALUE_TICKS of each chain */
	unsigned max_depth;	/* -j */
	struct profile *p;
	size_t prefetched; /* r->chains.ips read ahead so far (prefetch_step) */
};

/* Addresses prefetch_step reads ahead at a time: a step is short, so the
 * rings are read again soon; a module's first read is the long part. */
#define PREFETCH_STEP 4096

/* Mappings are applied as they arrive and looked up at the end, so a
 * library unmapped and replaced by another at the same addresses during
 * the recording names the earlier samples after the later library. Rare
 * (dlclose then dlopen), and documented in docs/engine.md. */
static void on_mapping(void *ctx, const struct mapping *m)
{
	struct engine_run *x = ctx;

	if (x->ps && proc_syms_add_mapping(x->ps, m) < 0)
		x->mapping_errors++;
}

/* Between reads: how far the recording has got, to the caller; and when
 * idle, the modules of the addresses sampled since the last step, read a
 * bounded number of addresses at a time, so that the end of the
 * recording has only lookups left (docs/engine.md). */
static bool between_reads(void *ctx, bool idle)
{
	struct engine_run *x = ctx;
	const struct recorder *r = x->r;
	size_t nips = r->chains.nips;
	size_t end = nips < x->prefetched + PREFETCH_STEP ? nips : x->prefetched + PREFETCH_STEP;

	if (x->o->progress) {
		struct record_progress pr = {
			.elapsed_ns = clock_ns(CLOCK_MONOTONIC) - r->start_mono_ns,
			.duration_ns = x->o->duration_ns,
			.samples = r->stats.samples,
			.threads = r->nthreads,
		};

		x->o->progress(x->o->progress_arg, &pr);
	}
	if (!idle || !x->ps)
		return false;
	for (; x->prefetched < end; x->prefetched++)
		proc_syms_prefetch(x->ps, r->chains.ips[x->prefetched], x->o->lines);
	return x->prefetched < nips;
}

/* A chain as a stack of the profile, and its values: switches say how
 * the thread left the CPU above the addresses; wall and off-CPU stacks
 * end in the thread's state, as the agent's wall stacks do, so that one
 * flame graph says where time went. Where a thread left the CPU for a
 * span that was dropped (or for good, exiting) holds no time: left out. */
static bool describe(void *ctx, uint32_t id, const struct chain *c,
		     struct chain_build_stack *s, int64_t *values)
{
	struct engine_run *x = ctx;

	if (c->kind == RAW_OFFCPU && !c->weight)
		return false;
	s->thread_name = recorder_thread_name(x->r, c->tid);
	if (c->kind == RAW_SWITCH_PREEMPT)
		s->above = "[preempted]";
	else if (c->kind == RAW_SWITCH_VOLUNTARY)
		s->above = "[voluntary switch]";
	else if (c->flags & RAW_UNKNOWN_STACK)
		s->above = "[unknown stack]";
	if (x->e->offcpu && (c->kind == RAW_SAMPLE || c->kind == RAW_OFFCPU)) {
		s->leaf = event_state_frame(c->kind == RAW_SAMPLE ? 'R' : c->state);
		s->leaf_kind = FRAME_KERNEL;
	}
	for (unsigned v = 0; v < x->e->def->nvalues; v++) {
		enum event_value_kind k = x->e->value_kinds[v];

		values[v] = (int64_t)(k == EVENT_VALUE_PERIOD    ? c->weight
				      : k == EVENT_VALUE_SAMPLES ? c->samples
								 : x->ticks[id]);
	}
	/* -j cut it (chain_build keeps the leaf-most max_depth). */
	if (c->n > x->max_depth && !c->truncated) {
		x->p->degraded.truncated_stacks += c->samples;
		x->depth_cut += c->samples;
	}
	return true;
}

/* A timeline event's share of value 0: a sample's 1, an off-CPU span's
 * ns, or in a wall profile the interval ticks the span covers. */
static uint64_t event_value(void *ctx, const struct chain_event *e)
{
	const struct engine_run *x = ctx;
	const struct recorder *r = x->r;

	if (r->chains.chains[e->chain].kind == RAW_OFFCPU &&
	    x->e->value_kinds[0] == EVENT_VALUE_TICKS)
		return (e->time_ns + e->value) / r->interval - e->time_ns / r->interval;
	return e->value;
}

/* Why stacks stopped short, in the terms a user can act on. */
static void add_truncation_notes(struct engine_run *x)
{
	const struct recorder *r = x->r;
	const uint64_t *by = r->stats.truncated_by;
	struct profile *p = x->p;
	uint64_t depth = by[UNWOUND_DEPTH] + x->depth_cut;
	uint64_t walk = r->stats.truncated - by[UNWOUND_DEPTH];
	char why[384];
	size_t used = 0;

	if (depth && x->u->own_user_walk)
		profile_add_note(p,
				 "%llu samples had stacks deeper than %u frames (-j); their "
				 "outermost frames are missing",
				 (unsigned long long)depth, r->max_stack);
	else if (depth)
		profile_add_note(p,
				 "%llu samples had stacks deeper than %u frames "
				 "(-j, kernel.perf_event_max_stack=%llu); their outermost "
				 "frames are missing",
				 (unsigned long long)depth, r->max_stack,
				 (unsigned long long)recorder_sysctl(
					 "/proc/sys/kernel/perf_event_max_stack", 127));
	if (!walk)
		return;
	why[0] = '\0';
#define WHY(k, text)                                                         \
	if (by[k] && used < sizeof(why))                                     \
		used += (size_t)snprintf(why + used, sizeof(why) - used, "%s%llu " text, \
					 used ? ", " : "", (unsigned long long)by[k])
	WHY(UNWOUND_COPY_END, "needed more than the copied stack");
	WHY(UNWOUND_NO_INFO, "reached code with neither unwind tables nor frame pointers");
	WHY(UNWOUND_FAULT, "met a pointer outside the stack");
	WHY(UNWOUND_BAD_SP, "met an inconsistent frame");
	WHY(UNWOUND_NO_REGS, "had no user registers");
#undef WHY
	profile_add_note(p,
			 "%llu samples' stacks stop before the outermost frame (%s); "
			 "their callers are missing",
			 (unsigned long long)walk, why);
}

/* Where wall and off-CPU time came from, and how far to trust it. */
static void add_offcpu_notes(struct engine_run *x)
{
	const struct recorder *r = x->r;
	const struct recorder_stats *st = &r->stats;
	struct profile *p = x->p;
	char iv[32];

	snprintf(iv, sizeof(iv), "%.3g ms", (double)r->interval / 1e6);
	if (x->e->type == PERF_TYPE_TRACEPOINT)
		profile_add_note(p, "off-CPU time recorded from outside with perf_events: "
				 "every context switch (sched:sched_switch), in ns");
	else
		profile_add_note(p, "wall time recorded from outside with perf_events: on-CPU "
				 "samples every %s of CPU, off-CPU time from every context "
				 "switch (sched:sched_switch), in samples of %s", iv, iv);
	if (r->tracefs_mounted)
		profile_add_note(p, "tracefs was not mounted: nprof mounted it at "
				 "/sys/kernel/tracing for the sched:sched_switch tracepoint, as "
				 "perf does");
	if (x->threads_refused[0])
		profile_add_note(p, "threads blocked since before the start are under "
				 "[unknown stack] until they next run: their stacks were not "
				 "taken (%s)", x->threads_refused);
	else if (x->threads_moved)
		profile_add_note(p, "%u threads moved between the stack taken at the start and "
				 "the first switch; their time until then is under [unknown stack]",
				 x->threads_moved);
	if (st->offcpu_unpaired)
		profile_add_note(p, "%llu off-CPU spans left out: the kernel lost one of their "
				 "switches (a longer recording interval does not help; fewer "
				 "threads or a faster reader does)",
				 (unsigned long long)st->offcpu_unpaired);
	if (st->offcpu_early)
		profile_add_note(p, "%llu switches accounted before every ring was read (the "
				 "queue reached %u)", (unsigned long long)st->offcpu_early,
				 OFFCPU_MAX_QUEUE);
}

static void add_notes(struct engine_run *x)
{
	const struct recorder *r = x->r;
	const struct recorder_stats *st = &r->stats;
	struct profile *p = x->p;
	long long paranoid = (long long)recorder_sysctl(
		"/proc/sys/kernel/perf_event_paranoid", 2);
	bool kernel_frames = false;

	if (x->dwarf_refused[0])
		profile_add_note(p,
				 "stacks from frame pointers: DWARF unwinding is not possible "
				 "here (%s); callers of code built without frame pointers are "
				 "missing", x->dwarf_refused);
	else if (!strcmp(x->u->name, "fp"))
		profile_add_note(p,
				 "stacks from frame pointers (--cstack fp): callers of code "
				 "built without them are missing, and that cannot be counted");
	if (st->ring_bytes && st->ring_bytes < st->ring_wanted)
		profile_add_note(p,
				 "ring buffers cut to %zu KiB per CPU (%zu KiB wanted) by the "
				 "locked-memory limits (kernel.perf_event_mlock_kb=%llu per CPU, "
				 "then ulimit -l); fast sampling may lose samples",
				 st->ring_bytes >> 10, st->ring_wanted >> 10,
				 (unsigned long long)recorder_sysctl(
					 "/proc/sys/kernel/perf_event_mlock_kb", 516));
	if (x->o->interval && x->o->interval != r->interval)
		profile_add_note(p, "%s: interval raised to %llu ns, the kernel's minimum",
				 x->e->def->name, (unsigned long long)r->interval);
	if (r->offcpu)
		add_offcpu_notes(x);
	if (r->switch_records)
		profile_add_note(p,
				 "context switches counted from switch records, without stacks: "
				 "where threads switch needs kernel sampling (run as root, or "
				 "sysctl kernel.perf_event_paranoid=1)");
	else if (!r->kernel)
		profile_add_note(p,
				 "kernel frames omitted: kernel.perf_event_paranoid=%lld lets "
				 "non-root users sample user space only (run as root, or sysctl "
				 "kernel.perf_event_paranoid=1)",
				 paranoid);
	for (size_t i = 0; i < r->chains.nchains && !kernel_frames; i++)
		kernel_frames = r->chains.chains[i].nkernel > 0;
	if (kernel_frames && proc_syms_kernel_problem(x->ps))
		profile_add_note(p, "%s", proc_syms_kernel_problem(x->ps));
	if (r->target_exited)
		profile_add_note(p, "the target exited after %.2f s; this is what was recorded",
				 (double)r->duration_ns / 1e9);
	if (!st->samples)
		profile_add_note(p, "no %s samples in %.2f s%s", x->e->def->name,
				 (double)r->duration_ns / 1e9,
				 !strcmp(x->e->def->name, "cpu") ? ": the target did not run" : "");
	if (st->lost)
		profile_add_note(p,
				 "the kernel dropped %llu samples (its ring buffer was full); "
				 "a longer interval loses fewer",
				 (unsigned long long)st->lost);
	if (st->throttled)
		profile_add_note(p,
				 "the kernel throttled sampling %llu times "
				 "(kernel.perf_event_max_sample_rate=%llu); use a longer interval",
				 (unsigned long long)st->throttled,
				 (unsigned long long)recorder_sysctl(
					 "/proc/sys/kernel/perf_event_max_sample_rate", 0));
	add_truncation_notes(x);
	if (st->table_full)
		profile_add_note(p,
				 "%llu samples dropped: the recording reached its limit of "
				 "%u distinct stacks", (unsigned long long)st->table_full,
				 RECORDER_MAX_STACKS);
	if (st->other_process)
		profile_add_note(p,
				 "%llu samples from child processes of PID %d were left out",
				 (unsigned long long)st->other_process, (int)p->pid);
	if (x->mapping_errors)
		profile_add_note(p, "%llu new mappings could not be recorded (out of memory)",
				 (unsigned long long)x->mapping_errors);
}

static int cmp_tid_of(const void *a, const void *b, void *ctx)
{
	const struct chain *st = ctx;
	pid_t x = st[*(const uint32_t *)a].tid, y = st[*(const uint32_t *)b].tid;

	return (x > y) - (x < y);
}

/* EVENT_VALUE_TICKS of every chain: a sample is one; each thread's
 * off-CPU ns are shared out in intervals among its off-CPU stacks
 * (offcpu_apportion), so that every thread adds up to its wall time. */
static int compute_ticks(struct engine_run *x)
{
	const struct recorder *r = x->r;
	struct chain *c = r->chains.chains; /* qsort_r's context is not const */
	size_t nchains = r->chains.nchains;
	uint32_t *order = NULL;
	uint64_t *ns = NULL, *got = NULL;
	size_t n = 0;
	int err = -ENOMEM;

	x->ticks = calloc(nchains + 1, sizeof(*x->ticks));
	order = malloc((nchains + 1) * sizeof(*order));
	ns = malloc((nchains + 1) * sizeof(*ns));
	got = malloc((nchains + 1) * sizeof(*got));
	if (!x->ticks || !order || !ns || !got)
		goto out;
	for (size_t i = 0; i < nchains; i++) {
		if (c[i].kind == RAW_OFFCPU)
			order[n++] = (uint32_t)i;
		else
			x->ticks[i] = c[i].samples;
	}
	qsort_r(order, n, sizeof(*order), cmp_tid_of, c);
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a; b < n && c[order[b]].tid == c[order[a]].tid; b++)
			ns[b - a] = c[order[b]].weight;
		err = offcpu_apportion(ns, b - a, r->interval, got);
		if (err < 0)
			goto out;
		for (size_t k = a; k < b; k++)
			x->ticks[order[k]] = got[k - a];
	}
	err = 0;
out:
	free(order);
	free(ns);
	free(got);
	return err;
}

static int build_profile(struct engine_run *x, struct profile **ret)
{
	const struct recorder *r = x->r;
	const struct chain_build_options bo = {
		.event = x->e->def, .command = r->comm, .unwinder = x->u->name, .pid = r->pid,
		.max_depth = x->max_depth, .per_thread = x->o->per_thread,
		.sym_flags = (x->o->simple_names ? SYM_SIMPLE : 0) | (x->o->lines ? SYM_LINES : 0),
	};
	const struct chain_look look = { describe, event_value, x };
	struct chain_build b;
	struct profile *p;
	int err = chain_build_open(&b, x->ps, &bo);

	if (err < 0)
		goto out;
	p = x->p = b.p;
	p->interval = r->interval;
	p->start_ns = r->start_ns;
	p->duration_ns = r->duration_ns;
	p->target_exited = r->target_exited;
	p->degraded.lost_samples = r->stats.lost + r->stats.table_full;
	p->degraded.truncated_stacks = r->stats.truncated;
	err = compute_ticks(x);
	if (err < 0)
		goto out;
	err = chain_build_chains(&b, &r->chains, &r->timeline, r->start_ns, r->start_mono_ns,
				 &look);
	if (err < 0)
		goto out;
	add_notes(x);
	*ret = chain_build_take(&b);
out:
	free(x->ticks);
	x->ticks = NULL;
	x->p = NULL;
	chain_build_release(&b);
	return err;
}

/* Still blocked in the same call from the same place as when taken:
 * /proc/PID/task/TID/syscall's number, sp and pc. */
static bool still_there(pid_t pid, const struct engine_thread_start *t)
{
	char path[64], buf[256];
	unsigned long long sp, pc;
	long nr;

	if (!t->in_syscall)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)t->tid);
	if (proc_read_small(path, buf, sizeof(buf)) <= 0 ||
	    sscanf(buf, "%ld %*s %*s %*s %*s %*s %*s %llx %llx", &nr, &sp, &pc) != 3)
		return false;
	return nr == t->syscall_nr && sp == t->sp && pc == t->pc;
}

/* Tells the recorder what each thread was doing at the start: taken
 * just before the events were opened, kept where the thread has not
 * moved since (docs/engine.md, "Threads that do not move"). */
static void begin_threads(struct engine_run *x, struct engine_thread_start *ts, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct engine_thread_start *t = &ts[i];
		bool on_cpu = t->state == 'R';
		bool kept = t->ips && t->n && still_there(x->r->pid, t);

		if (t->state == 'Z' || t->state == 'X')
			continue;
		if (!on_cpu && !kept && t->ips)
			x->threads_moved++;
		recorder_begin_thread(x->r, t->tid, on_cpu, t->state == '?' ? 'S' : t->state,
				      kept ? t->ips : NULL, kept ? t->n : 0, t->truncated);
	}
}

static void free_thread_starts(struct engine_thread_start *ts, size_t n)
{
	for (size_t i = 0; ts && i < n; i++)
		free(ts[i].ips);
	free(ts);
}

int engine_record(pid_t pid, const struct record_options *o,
		  struct symbolizer *s, void (*child_started)(void *arg),
		  void *arg, struct profile **ret, struct diag *d)
{
	struct engine_run x = { .o = o };
	struct recorder_config c = { 0 };
	struct profile *p = NULL;
	struct engine_thread_start *starts = NULL;
	size_t nstarts = 0;
	const char *event;
	int err;

	if (!o || !s || !ret) {
		err = diag_set(d, -EINVAL, "engine_record: missing argument");
		goto out;
	}
	event = o->event ? o->event : "cpu";
	x.e = engine_event_find(event);
	if (!x.e) {
		char avail[256];

		err = diag_set(d, -EINVAL, "unknown event '%s'; available events: %s",
			       event, engine_available_events(avail, sizeof(avail)));
		goto out;
	}
	if (x.e->type == PERF_TYPE_TRACEPOINT && o->interval > 1) {
		err = diag_set(d, -EINVAL, "-e %s takes every context switch and has no "
			       "interval; drop -i", event);
		goto out;
	}
	if (o->max_depth > MAX_DEPTH_LIMIT) {
		err = diag_set(d, -EINVAL, "-j %u: the deepest stack is %u frames",
			       o->max_depth, MAX_DEPTH_LIMIT);
		goto out;
	}
	x.max_depth = o->max_depth ? o->max_depth : RECORDER_DEFAULT_DEPTH;
	err = unwinder_select(o->cstack, &x.u, d);
	if (err < 0)
		goto out;
	c.pid = pid;
	c.event = x.e;
	c.interval = o->interval;
	c.max_depth = o->max_depth;
	c.unwinder = x.u;
	c.enable_on_exec = child_started != NULL;
	c.on_mapping = on_mapping;
	c.between_reads = between_reads;
	c.ctx = &x;
	err = recorder_new(&c, &x.r, d);
	if (err < 0 && err != -ESRCH && o->cstack == CSTACK_AUTO &&
	    x.u != &unwinder_fp) {
		/* auto: the best the target allows. DWARF was refused (no
		 * tables, registers or stack copies not allowed): frame
		 * pointers, saying why. */
		snprintf(x.dwarf_refused, sizeof(x.dwarf_refused), "%s",
			 d && d->msg[0] ? d->msg : strerror(-err));
		diag_clear(d);
		x.u = &unwinder_fp;
		c.unwinder = x.u;
		err = recorder_new(&c, &x.r, d);
	}
	if (err < 0)
		goto out;
	/* The maps, while the target surely lives (a millisecond); every
	 * mapping made later reaches us as a record. For a held child these
	 * are the pre-exec maps; the exec'd program's mappings all come as
	 * records (enable_on_exec arms the events before the kernel maps the
	 * new image). */
	err = symbolizer_open_process_maps(s, pid, x.r->kernel, &x.ps, d);
	if (err < 0)
		goto out;
	/* A command held before its exec has no threads to take: all of
	 * its threads are born during the recording, with a switch-in. */
	if (x.r->offcpu && o->take_threads && !child_started) {
		struct diag td;

		diag_clear(&td);
		if (o->take_threads(o->take_threads_arg, pid, &starts, &nstarts, &td) < 0)
			snprintf(x.threads_refused, sizeof(x.threads_refused), "%s",
				 td.msg[0] ? td.msg : "failed");
	} else if (x.r->offcpu && !child_started) {
		snprintf(x.threads_refused, sizeof(x.threads_refused), "not asked for");
	}
	err = recorder_start(x.r, d);
	if (err < 0)
		goto out;
	/* Sampling first: the symbols of the code it maps, and the kernel's,
	 * are read while the first samples arrive. */
	proc_syms_load(x.ps);
	begin_threads(&x, starts, nstarts);
	if (child_started)
		child_started(arg);
	err = recorder_run(x.r, o->duration_ns, o->stop, d);
	if (err < 0)
		goto out;
	err = build_profile(&x, &p);
	if (err < 0) {
		diag_set(d, err, "building the profile: %s", strerror(-err));
		goto out;
	}
	*ret = p;
	p = NULL;
out:
	free_thread_starts(starts, nstarts);
	profile_free(p);
	proc_syms_free(x.ps);
	recorder_free(x.r);
	return err;
}
