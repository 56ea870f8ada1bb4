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
#include "symbolize/frame_cache.h"

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
	uint64_t *ticks;	/* EVENT_VALUE_TICKS of each raw stack */
	struct profile *p;
	struct frame_cache names; /* each address named once */
	uint32_t *frames; /* one stack being built, root first */
	size_t prefetched; /* r->ips read ahead so far (prefetch_step) */
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
	size_t end = r->nips < x->prefetched + PREFETCH_STEP ? r->nips : x->prefetched + PREFETCH_STEP;

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
		proc_syms_prefetch(x->ps, r->ips[x->prefetched], x->o->lines);
	return x->prefetched < r->nips;
}

static int frame_for(struct engine_run *x, uint64_t addr, bool kernel,
		     uint32_t *out, unsigned *ret_n)
{
	unsigned flags = (x->o->simple_names ? SYM_SIMPLE : 0) |
			 (x->o->lines ? SYM_LINES : 0);

	return frame_cache_get(&x->names, x->ps, x->p, addr, kernel, flags, out,
			       ret_n);
}

static int pseudo_frame(struct profile *p, const char *name,
			enum frame_kind kind, uint32_t *ret_id)
{
	struct frame f = { .name = name, .kind = kind };

	return profile_intern_frame(p, &f, ret_id);
}

/* One raw stack into the profile: root first, that is the user frames
 * from the outermost caller to the leaf, then the kernel frames the leaf
 * was in; at most max_depth of them, the leaf-most. */
static int add_stack(struct engine_run *x, const struct raw_stack *s,
		     unsigned max_depth, uint32_t *ret_stack, uint32_t *ret_thread)
{
	const uint64_t *ips = s->n ? x->r->ips + s->first : NULL;
	const char *tname = recorder_thread_name(x->r, s->tid);
	bool truncated = s->truncated;
	uint32_t depth = 0, thread, stack;
	int64_t values[PROFILE_MAX_VALUES] = { 0 };
	unsigned skip = s->n > max_depth ? s->n - max_depth : 0;
	int err;

	if (x->o->per_thread) {
		char name[64];

		profile_thread_root_name(name, sizeof(name), tname, s->tid);
		err = pseudo_frame(x->p, name, FRAME_THREAD, &x->frames[depth++]);
		if (err < 0)
			return err;
	}
	if (s->kind == RAW_SWITCH_PREEMPT || s->kind == RAW_SWITCH_VOLUNTARY) {
		err = pseudo_frame(x->p,
				   s->kind == RAW_SWITCH_PREEMPT ? "[preempted]"
								 : "[voluntary switch]",
				   FRAME_KERNEL, &x->frames[depth++]);
		if (err < 0)
			return err;
	}
	if (s->unknown) {
		err = pseudo_frame(x->p, "[unknown stack]", FRAME_KERNEL, &x->frames[depth++]);
		if (err < 0)
			return err;
	}
	if (skip)
		truncated = true;
	/* ips are leaf first: kernel [0, nkernel), user [nkernel, n). Walk
	 * from the root (ips[n-1]) to the leaf, skipping the outermost. */
	for (unsigned i = s->n - skip; i-- > 0;) {
		bool kernel = i < s->nkernel;
		bool exact = i == 0 || i == s->nkernel;
		/* A return address points after its call; the call may be a
		 * function's last instruction, so name the byte before. */
		uint64_t addr = exact ? ips[i] : ips[i] - 1;
		unsigned n;

		err = frame_for(x, addr, kernel, &x->frames[depth], &n);
		if (err < 0)
			return err;
		depth += n;
	}
	/* Wall and off-CPU stacks end in the thread's state, as the
	 * agent's wall stacks do: one flame graph says where time went. */
	if (x->e->offcpu && (s->kind == RAW_SAMPLE || s->kind == RAW_OFFCPU)) {
		err = pseudo_frame(x->p, event_state_frame(s->kind == RAW_SAMPLE ? 'R' : s->state),
				   FRAME_KERNEL, &x->frames[depth++]);
		if (err < 0)
			return err;
	}
	err = profile_intern_stack(x->p, x->frames, depth, truncated, &stack);
	if (err < 0)
		return err;
	err = profile_intern_thread(x->p, s->tid, tname, &thread);
	if (err < 0)
		return err;
	for (unsigned v = 0; v < x->e->def->nvalues; v++) {
		enum event_value_kind k = x->e->value_kinds[v];

		values[v] = (int64_t)(k == EVENT_VALUE_PERIOD    ? s->period
				      : k == EVENT_VALUE_SAMPLES ? s->samples
								 : x->ticks[s - x->r->stacks]);
	}
	if (truncated && !s->truncated) {
		x->p->degraded.truncated_stacks += s->samples;
		x->depth_cut += s->samples;
	}
	err = profile_add_sample(x->p, stack, thread, values);
	if (err < 0)
		return err;
	*ret_stack = stack;
	*ret_thread = thread;
	return 0;
}

/* The timeline: each sample's time, moved from CLOCK_MONOTONIC to wall
 * time with the offset taken when recording started. ids maps a raw
 * stack to its profile (stack, thread). */
static int add_timeline(struct engine_run *x, const uint32_t (*ids)[2])
{
	const struct recorder *r = x->r;
	struct profile *p = x->p;

	p->max_events = RECORDER_MAX_EVENTS;
	p->events_dropped = r->stats.events_dropped;
	for (size_t i = 0; i < r->nevents; i++) {
		const struct raw_event *e = &r->events[i];
		uint64_t t = r->start_ns + (e->time_ns - r->start_mono_ns);
		uint64_t value = e->value;
		int err;

		/* An off-CPU span's share of value 0: its ns, or in a wall
		 * profile the interval ticks it covers. */
		if (r->stacks[e->stack].kind == RAW_OFFCPU &&
		    x->e->value_kinds[0] == EVENT_VALUE_TICKS)
			value = (e->time_ns + e->value) / r->interval - e->time_ns / r->interval;
		if (!value)
			continue;
		err = profile_add_event(p, t, ids[e->stack][0], ids[e->stack][1], (int64_t)value);
		if (err < 0)
			return err;
	}
	return 0;
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
	for (size_t i = 0; i < r->nstacks && !kernel_frames; i++)
		kernel_frames = r->stacks[i].nkernel > 0;
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
	const struct raw_stack *st = ctx;
	pid_t x = st[*(const uint32_t *)a].tid, y = st[*(const uint32_t *)b].tid;

	return (x > y) - (x < y);
}

/* EVENT_VALUE_TICKS of every raw stack: a sample is one; each thread's
 * off-CPU ns are shared out in intervals among its off-CPU stacks
 * (offcpu_apportion), so that every thread adds up to its wall time. */
static int compute_ticks(struct engine_run *x)
{
	const struct recorder *r = x->r;
	uint32_t *order = NULL;
	uint64_t *ns = NULL, *got = NULL;
	size_t n = 0;
	int err = -ENOMEM;

	x->ticks = calloc(r->nstacks + 1, sizeof(*x->ticks));
	order = malloc((r->nstacks + 1) * sizeof(*order));
	ns = malloc((r->nstacks + 1) * sizeof(*ns));
	got = malloc((r->nstacks + 1) * sizeof(*got));
	if (!x->ticks || !order || !ns || !got)
		goto out;
	for (size_t i = 0; i < r->nstacks; i++) {
		if (r->stacks[i].kind == RAW_OFFCPU)
			order[n++] = (uint32_t)i;
		else
			x->ticks[i] = r->stacks[i].samples;
	}
	qsort_r(order, n, sizeof(*order), cmp_tid_of, r->stacks);
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a; b < n && r->stacks[order[b]].tid == r->stacks[order[a]].tid; b++)
			ns[b - a] = r->stacks[order[b]].period;
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
	struct profile *p = profile_new();
	unsigned max_depth = x->o->max_depth ? x->o->max_depth
					     : RECORDER_DEFAULT_DEPTH;
	uint32_t (*ids)[2] = NULL; /* raw stack -> profile stack, thread */
	int err = -ENOMEM;

	if (!p)
		goto out;
	x->p = p;
	/* -j counts real frames; each may bring its inlined callees. */
	x->frames = calloc((size_t)max_depth * (x->o->lines ? SYM_MAX_FRAMES_PER_ADDR : 1) + 4,
			   sizeof(*x->frames));
	if (!x->frames)
		goto out;
	err = profile_set_value_types(p, x->e->def->values, x->e->def->nvalues);
	if (err < 0)
		goto out;
	err = -ENOMEM;
	p->event = profile_intern_string(p, x->e->def->name);
	p->interval_unit = profile_intern_string(p, x->e->def->interval_unit);
	p->command = r->comm[0] ? profile_intern_string(p, r->comm) : NULL;
	p->unwinder = profile_intern_string(p, x->u->name);
	if (!p->event || !p->interval_unit || !p->unwinder ||
	    (r->comm[0] && !p->command))
		goto out;
	p->interval = r->interval;
	p->start_ns = r->start_ns;
	p->duration_ns = r->duration_ns;
	p->pid = r->pid;
	p->target_exited = r->target_exited;
	p->degraded.lost_samples = r->stats.lost + r->stats.table_full;
	p->degraded.truncated_stacks = r->stats.truncated;
	ids = malloc((r->nstacks ? r->nstacks : 1) * sizeof(*ids));
	if (!ids)
		goto out;
	err = compute_ticks(x);
	if (err < 0)
		goto out;
	for (size_t i = 0; i < r->nstacks; i++) {
		/* Where a thread left the CPU for a span that was dropped
		 * (or for good, exiting) holds no time. */
		if (r->stacks[i].kind == RAW_OFFCPU && !r->stacks[i].period) {
			ids[i][0] = ids[i][1] = 0;
			continue;
		}
		err = add_stack(x, &r->stacks[i], max_depth, &ids[i][0],
				&ids[i][1]);
		if (err < 0)
			goto out;
	}
	err = add_timeline(x, (const uint32_t(*)[2])ids);
	if (err < 0)
		goto out;
	add_notes(x);
	*ret = p;
	p = NULL;
	err = 0;
out:
	free(ids);
	free(x->ticks);
	x->ticks = NULL;
	x->p = NULL;
	profile_free(p);
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

	frame_cache_init(&x.names);
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
	frame_cache_release(&x.names);
	free(x.frames);
	proc_syms_free(x.ps);
	recorder_free(x.r);
	return err;
}
