/* session: one profile being recorded in this process — arming the
 * engines on every thread, draining the hot stripes into an aggregation
 * by stack, and building the profile at the end. See agent.h and
 * docs/agent.md. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/engine.h"
#include "agent/hot/hot.h"
#include "agent/hot/cpu_fds.h"
#include "agent/hot/signals.h"
#include "agent/process.h"
#include "agent/wall.h"
#include "base/array.h"
#include "base/clock.h"
#include "base/hash.h"
#include "base/id_index.h"
#include "base/path_template.h"
#include "base/proc.h"
#include "base/units.h"
#include "profile/chain_table.h"
#include "profile/chain_timeline.h"
#include "symbolize/symbolize.h"
#include "unwind/modules.h"

/* Every engine's hook, for what concerns all of them (threads, fork). */
#define EACH_ENGINE(hook, ...)                                                       \
	for (unsigned i_ = 0; i_ < sizeof(agent_engines) / sizeof(agent_engines[0]); i_++) \
		if (agent_engines[i_]->hook)                                              \
			agent_engines[i_]->hook(__VA_ARGS__)

#define MAX_RETIRED 64
#define MAX_EVENTS (1u << 20) /* timeline entries kept per session */

struct agg_thread {
	pid_t tid;
	char name[16];
	uint32_t last_wall; /* stack of its last signalled wall sample */
};

static struct session {
	pthread_mutex_t lock;	/* everything below but the arm_* fields */
	bool running;
	struct agent_options o;
	enum event_id effective;
	const struct agent_engine *engine; /* the running session's */
	uint64_t start_real_ns, start_mono_ns, deadline_mono_ns;
	uint64_t own_cpu_start_ns;	/* the agent's threads' CPU at its start */

	/* The aggregation: chains of kind HOT_KIND_*, state the wall
	 * state's letter. */
	struct chain_table chains;
	struct agg_thread *threads;
	size_t nthreads, threads_cap;
	struct id_index thread_index;
	uint64_t table_full, repeat_orphans;
	struct chain_timeline timeline; /* each aggregated sample's time */
	uint8_t *scratch;	/* one stripe's bytes, copied out */
	uint64_t *repeat_ips;

	/* Unwind tables of this process, kept current across dlopen. */
	struct unwind_cache *cache;
	struct unwind_modules *mods;
	struct unwind_modules *retired[MAX_RETIRED];
	unsigned nretired;
	unsigned long long dl_adds, dl_subs;
	unsigned module_refreshes;

	struct symbolizer *syms;
	struct profile *last;	/* the latest finished session's profile */
	bool hot_ready;
	uint64_t id, last_id;	/* the running session's id (agent_session_begin) */
} S = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static uint64_t default_interval(enum event_id e)
{
	return event_defs[e].default_interval;
}

/* --- unwind tables -------------------------------------------------------- */

static int dl_counts(struct dl_phdr_info *info, size_t size, void *ctx)
{
	unsigned long long *c = ctx;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	}
	return 1;
}

/* Frees module lists no handler can still hold: one swapped out before a
 * moment when no handler was running. */
static void free_retired(void)
{
	if (!S.nretired || atomic_load(&hot.inflight))
		return;
	for (unsigned i = 0; i < S.nretired; i++) {
		unwind_modules_release(S.retired[i]);
		free(S.retired[i]);
	}
	S.nretired = 0;
}

/* Rebuilds the module list when the set of loaded objects changed
 * (dlopen, dlclose), or always with force. */
static int modules_refresh(bool force)
{
	unsigned long long c[2] = { 0, 0 };
	struct unwind_modules *m;
	int err;

	dl_iterate_phdr(dl_counts, c);
	if (!force && S.mods && c[0] == S.dl_adds && c[1] == S.dl_subs)
		return 0;
	if (S.nretired == MAX_RETIRED) {
		free_retired();
		if (S.nretired == MAX_RETIRED)
			return -EBUSY; /* try again next tick */
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	unwind_modules_init(m);
	err = unwind_modules_from_maps(m, S.cache, 0);
	if (err < 0) {
		unwind_modules_release(m);
		free(m);
		return err;
	}
	S.dl_adds = c[0];
	S.dl_subs = c[1];
	atomic_store(&hot.mods, m);
	if (S.mods)
		S.retired[S.nretired++] = S.mods;
	S.mods = m;
	S.module_refreshes++;
	free_retired();
	return 0;
}

/* --- aggregation ---------------------------------------------------------- */

static int thread_match(const void *ctx, uint32_t id, const void *key)
{
	(void)ctx;
	return S.threads[id].tid == *(const pid_t *)key;
}

static struct agg_thread *thread_get(pid_t tid)
{
	uint64_t h = hash_u64((uint64_t)tid);
	uint32_t id = id_index_find(&S.thread_index, h, thread_match, NULL, &tid);
	struct agg_thread *t;

	if (id != ID_NONE)
		return &S.threads[id];
	if (array_reserve(&S.threads, &S.threads_cap, S.nthreads + 1, sizeof(*S.threads)) < 0)
		return NULL;
	if (id_index_insert(&S.thread_index, h, (uint32_t)S.nthreads) < 0)
		return NULL;
	t = &S.threads[S.nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->last_wall = ID_NONE;
	proc_comm(0, tid, t->name, sizeof(t->name));
	return t;
}

static void aggregate(const struct hot_record *r)
{
	struct agg_thread *t = thread_get(r->tid);
	struct chain_key k = {
		.ips = r->ips, .n = r->n, .tid = r->tid, .kind = r->kind,
		.state = (char)r->state, .truncated = r->flags & HOT_TRUNCATED,
	};
	uint32_t id;

	if (!t) {
		S.table_full++;
		return;
	}
	if (r->flags & HOT_REPEAT) {
		const struct chain *base;

		if (t->last_wall == ID_NONE) {
			S.repeat_orphans++;
			return;
		}
		/* Copied: adding a chain may move S.chains.ips. */
		base = &S.chains.chains[t->last_wall];
		memcpy(S.repeat_ips, S.chains.ips + base->first, base->n * sizeof(uint64_t));
		k.n = base->n;
		k.ips = S.repeat_ips;
		k.truncated = base->truncated;
	}
	if (chain_table_add(&S.chains, &k, 1, r->weight, &id) < 0) {
		S.table_full++;
		return;
	}
	chain_timeline_add(&S.timeline, r->time_ns, id, 1);
	if (r->kind == HOT_KIND_WALL && !(r->flags & HOT_REPEAT))
		t->last_wall = id;
}

/* Moves every stripe's records into the aggregation. The stripe is held
 * only for the copy; a handler meanwhile uses another stripe. */
static void drain_locked(void)
{
	for (unsigned i = 0; i < HOT_STRIPES; i++) {
		struct hot_stripe *s = &hot.stripes[i];
		size_t n;

		while (!hot_stripe_trylock(s))
			sched_yield();
		n = s->used;
		if (n)
			memcpy(S.scratch, s->buf, n);
		s->used = 0;
		hot_stripe_unlock(s);
		for (size_t off = 0; off + sizeof(struct hot_record) <= n;) {
			const struct hot_record *r = (const void *)(S.scratch + off);

			if (r->size < sizeof(*r) || off + r->size > n)
				break;
			aggregate(r);
			off += r->size;
		}
	}
}

static void aggregation_reset(void)
{
	chain_table_reset(&S.chains);
	chain_timeline_reset(&S.timeline);
	S.nthreads = 0;
	id_index_release(&S.thread_index);
	id_index_init(&S.thread_index);
	S.table_full = S.repeat_orphans = 0;
}

/* --- building the profile ------------------------------------------------- */

/* A chain as a stack: named after its thread as the session knew it;
 * wall stacks end in the thread's state. Values: samples, their weight. */
static bool describe(void *ctx, uint32_t id, const struct chain *c,
		     struct chain_build_stack *s, int64_t *values)
{
	pid_t tid = c->tid;
	uint32_t t = id_index_find(&S.thread_index, hash_u64((uint64_t)tid), thread_match, NULL,
				   &tid);

	(void)ctx;
	(void)id;
	s->thread_name = t == ID_NONE ? NULL : S.threads[t].name;
	if (c->kind == HOT_KIND_WALL) {
		s->leaf = event_state_frame(c->state);
		s->leaf_kind = FRAME_KERNEL;
	}
	values[0] = (int64_t)c->samples;
	values[1] = (int64_t)c->weight;
	return true;
}

static void add_notes(struct profile *p, const char *ended)
{
	uint64_t busy = atomic_load(&hot.stats.drop_busy);
	uint64_t full = atomic_load(&hot.stats.drop_full);
	uint64_t truncated = atomic_load(&hot.stats.truncated);
	uint64_t rearm = atomic_load(&hot.stats.rearm_failed);

	if (S.engine->notes)
		S.engine->notes(p);
	if (busy || full || S.table_full || S.repeat_orphans)
		profile_add_note(p,
				 "%llu samples dropped (%llu: every sample buffer busy, %llu: buffers "
				 "full, %llu: the distinct-stack limit, %llu: wall repeats without a "
				 "first sample)",
				 (unsigned long long)(busy + full + S.table_full + S.repeat_orphans),
				 (unsigned long long)busy, (unsigned long long)full,
				 (unsigned long long)S.table_full,
				 (unsigned long long)S.repeat_orphans);
	if (truncated)
		profile_add_note(p,
				 "%llu samples' stacks stop before the outermost frame (code with "
				 "neither unwind tables nor frame pointers, or an unreadable frame)",
				 (unsigned long long)truncated);
	if (rearm)
		profile_add_note(p, "%llu perf_event re-arms failed", (unsigned long long)rearm);
	if (ended)
		profile_add_note(p, "%s", ended);
}

/* What the agent spent in this process while it recorded: a note a
 * reader of the profile (and, next, the schedules' governor) can weigh
 * against the time recorded. The samples' time in the program's
 * threads, and the CPU of the agent's own threads (draining,
 * aggregating, and this build up to the note). Not counted: the
 * kernel's signal delivery, and the malloc interposers' common call (a
 * compare and a subtraction). */
static void add_cost_note(struct profile *p)
{
	uint64_t samples = atomic_load(&hot.stats.sample_ns);
	uint64_t own = agent_own_threads_cpu_ns() - S.own_cpu_start_ns;
	uint64_t took = clock_ns(CLOCK_MONOTONIC) - S.start_mono_ns;

	profile_add_note(p, "agent_cpu=%.3fms: the agent's CPU in this process while it recorded "
			 "(%.3f ms taking samples in the program's threads, %.3f ms in its own "
			 "threads), %.3f%% of one CPU over %.1f s", (double)(samples + own) / 1e6,
			 (double)samples / 1e6, (double)own / 1e6,
			 took ? (double)(samples + own) * 100 / (double)took : 0.0, (double)took / 1e9);
}

static int build_profile(const char *ended, struct profile **ret, struct diag *d)
{
	const struct chain_look look = { .describe = describe };
	struct agent_build b;
	struct profile *p;
	int err;

	if (S.engine->profile) { /* samples the engine keeps itself */
		err = S.engine->profile(S.effective, &S.o, S.start_real_ns,
					clock_ns(CLOCK_MONOTONIC) - S.start_mono_ns, ended, ret, d);
		if (err >= 0)
			add_cost_note(*ret);
		return err;
	}
	err = agent_build_open(&b, S.syms, S.effective, &S.o, d);
	if (err < 0)
		goto out;
	p = b.build.p;
	p->interval = hot.weight_ns;
	p->start_ns = S.start_real_ns;
	p->duration_ns = clock_ns(CLOCK_MONOTONIC) - S.start_mono_ns;
	p->degraded.lost_samples = atomic_load(&hot.stats.drop_busy) +
				   atomic_load(&hot.stats.drop_full) + S.table_full;
	p->degraded.truncated_stacks = atomic_load(&hot.stats.truncated);
	for (size_t i = 0; i < S.nthreads; i++)
		proc_comm(0, S.threads[i].tid, S.threads[i].name, sizeof(S.threads[i].name));
	/* The stripes drain one after another: their events in time order. */
	chain_timeline_sort(&S.timeline);
	err = chain_build_chains(&b.build, &S.chains, &S.timeline, S.start_real_ns,
				 S.start_mono_ns, &look);
	if (err < 0)
		goto out;
	add_notes(p, ended);
	add_cost_note(p);
	*ret = chain_build_take(&b.build);
out:
	if (err < 0 && !d->msg[0])
		diag_set(d, err, "building the profile: %s", strerror(-err));
	agent_build_close(&b);
	return err;
}

/* --- sessions ------------------------------------------------------------- */

static int hot_setup(struct diag *d)
{
	int err;

	if (S.hot_ready)
		return 0;
	for (unsigned i = 0; i < HOT_STRIPES; i++) {
		void *m = mmap(NULL, HOT_STRIPE_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return diag_set(d, -ENOMEM, "cannot map sample buffers: %s", strerror(errno));
		hot.stripes[i].buf = m;
	}
	S.scratch = malloc(HOT_STRIPE_BYTES);
	S.repeat_ips = malloc(HOT_MAX_DEPTH * sizeof(uint64_t));
	S.cache = unwind_cache_new();
	S.syms = symbolizer_new();
	if (!S.scratch || !S.repeat_ips || !S.cache || !S.syms)
		return diag_set(d, -ENOMEM, "out of memory setting up the agent");
	chain_table_init(&S.chains, AGENT_MAX_STACKS, AGENT_MAX_IPS);
	chain_timeline_init(&S.timeline, MAX_EVENTS);
	id_index_init(&S.thread_index);
	hot.wall_slots = AGENT_MAX_THREADS;
	hot.wall_cpu_ns = calloc(AGENT_MAX_THREADS, sizeof(uint64_t));
	if (!hot.wall_cpu_ns)
		return diag_set(d, -ENOMEM, "out of memory setting up the agent");
	/* Installed once and kept: a signal still queued after a session
	 * must not meet SIGPROF's default action, which ends the process.
	 * The program's own SIGPROF handler, then or later, is chained. */
	err = hot_signals_install(hot_on_signal);
	if (err < 0)
		return diag_set(d, err, "cannot install the SIGPROF handler: %s", strerror(-err));
	S.hot_ready = true;
	return 0;
}

static void stats_reset(void)
{
	atomic_store(&hot.stats.samples, 0);
	atomic_store(&hot.stats.weight_ns, 0);
	atomic_store(&hot.stats.drop_busy, 0);
	atomic_store(&hot.stats.drop_full, 0);
	atomic_store(&hot.stats.truncated, 0);
	atomic_store(&hot.stats.late, 0);
	atomic_store(&hot.stats.rearm_failed, 0);
	atomic_store(&hot.stats.sample_ns, 0);
}

int agent_session_start(const struct agent_options *o, struct diag *d)
{
	return agent_session_begin(o, NULL, d);
}

int agent_session_begin(const struct agent_options *o, uint64_t *ret_id, struct diag *d)
{
	int err;

	pthread_mutex_lock(&S.lock);
	if (S.running) {
		err = diag_set(d, -EBUSY, "the %s profile already running must be stopped first",
			       event_name(S.effective));
		goto out;
	}
	err = hot_setup(d);
	if (err < 0)
		goto out;
	S.o = *o;
	if (S.o.title[0])
		S.o.out.title = S.o.title;
	S.effective = o->event;
	S.engine = agent_engine_for(o->event);
	aggregation_reset();
	stats_reset();
	err = modules_refresh(true);
	if (err < 0) {
		diag_set(d, err, "cannot read this process's modules: %s", strerror(-err));
		goto out;
	}
	hot.pid = getpid();
	hot.max_depth = o->max_depth ? o->max_depth : HOT_MAX_DEPTH;
	hot.weight_ns = o->interval_ns ? o->interval_ns : default_interval(o->event);
	hot.wall_interval_ns = hot.weight_ns;
	S.start_real_ns = clock_ns(CLOCK_REALTIME);
	S.start_mono_ns = clock_ns(CLOCK_MONOTONIC);
	S.own_cpu_start_ns = agent_own_threads_cpu_ns();
	S.deadline_mono_ns = o->duration_ns ? S.start_mono_ns + o->duration_ns : 0;
	if (S.engine->signals)
		hot_signals_expect(true); /* an exec now ignores SIGPROF across it */
	atomic_store(&hot.active, 1);
	err = S.engine->start(o, hot.weight_ns, &S.effective, d);
	if (err < 0) {
		atomic_store(&hot.active, 0);
		if (S.engine->release)
			S.engine->release();
		if (S.engine->signals)
			hot_signals_expect(false);
		goto out;
	}
	S.running = true;
	S.id = ++S.last_id;
	if (ret_id)
		*ret_id = S.id;
	err = 0;
out:
	pthread_mutex_unlock(&S.lock);
	if (err == 0)
		agent_control_wake();
	return err;
}

/* Stops sampling and waits until no handler runs. The perf events and
 * timers are closed only after that: a handler that saw the session
 * active refreshes its perf event by fd number, which must not have
 * been closed (and reused by the program) under it. */
static void stop_engines(void)
{
	atomic_store(&hot.active, 0);
	if (S.engine->stop)
		S.engine->stop();
	for (int i = 0; i < 10000 && atomic_load(&hot.inflight); i++)
		usleep(100);
	if (S.engine->release)
		S.engine->release();
	hot_signals_expect(false);
}

/* After an exec that failed (exec.c): the engines re-arm what the
 * ignored SIGPROF left waiting. */
void agent_session_after_failed_exec(void)
{
	EACH_ENGINE(after_failed_exec, );
}

/* A thread of the program started or is ending (threads.c). */
void agent_session_thread_started(pid_t tid)
{
	EACH_ENGINE(thread_started, tid);
}

void agent_session_thread_exiting(pid_t tid)
{
	EACH_ENGINE(thread_exiting, tid);
}

static int stop_locked(const char *ended, struct profile **ret, struct diag *d)
{
	int err;

	stop_engines();
	drain_locked();
	S.running = false;
	err = build_profile(ended, ret, d);
	aggregation_reset();
	free_retired();
	return err;
}

/* Keeps p as the latest finished profile (for a later dump), and writes
 * it when the session was given a file. */
static void finished(struct profile *p)
{
	agent_profile_file_finish(p, &S.o);
	profile_free(S.last);
	S.last = p;
}

int agent_session_stop(struct profile **ret, struct diag *d)
{
	struct profile *p = NULL;
	int err;

	pthread_mutex_lock(&S.lock);
	if (!S.running) {
		err = diag_set(d, -ENOENT, "no profile is running");
		goto out;
	}
	err = stop_locked(NULL, &p, d);
	if (err < 0)
		goto out;
	if (ret) {
		*ret = p;
	} else {
		finished(p);
	}
out:
	pthread_mutex_unlock(&S.lock);
	return err;
}

int agent_session_end(uint64_t id, struct profile **ret, struct diag *d)
{
	int err;

	pthread_mutex_lock(&S.lock);
	if (!S.running || S.id != id) {
		err = diag_set(d, -ESTALE, "the profile was stopped by another client "
			       "(nprof_stop, the control socket, or the process exiting)");
		goto out;
	}
	err = stop_locked(NULL, ret, d);
out:
	pthread_mutex_unlock(&S.lock);
	return err;
}

int agent_modules_update(bool force, struct diag *d)
{
	int err;

	pthread_mutex_lock(&S.lock);
	err = hot_setup(d);
	if (err == 0) {
		err = modules_refresh(force);
		if (err < 0)
			diag_set(d, err, "cannot read this process's modules: %s", strerror(-err));
	}
	pthread_mutex_unlock(&S.lock);
	return err;
}

int agent_session_prepare_dump(struct diag *d)
{
	int err;

	pthread_mutex_lock(&S.lock);
	err = hot_setup(d);
	if (err == 0 && hot.pid != getpid())
		hot.pid = getpid(); /* the same value when a session set it */
	if (err == 0) {
		err = modules_refresh(false);
		if (err < 0)
			diag_set(d, err, "cannot read this process's modules: %s", strerror(-err));
	}
	pthread_mutex_unlock(&S.lock);
	return err;
}

int agent_session_snapshot(struct profile **ret, struct diag *d)
{
	int err;

	pthread_mutex_lock(&S.lock);
	if (!S.running) {
		err = diag_set(d, -ENOENT, "no profile is running");
		goto out;
	}
	drain_locked();
	err = build_profile(NULL, ret, d);
out:
	pthread_mutex_unlock(&S.lock);
	return err;
}

int agent_session_last(struct profile **ret, struct diag *d);
int agent_session_last(struct profile **ret, struct diag *d)
{
	pthread_mutex_lock(&S.lock);
	if (!S.last) {
		pthread_mutex_unlock(&S.lock);
		return diag_set(d, -ENOENT, "no profile has been recorded");
	}
	*ret = S.last;
	S.last = NULL;
	pthread_mutex_unlock(&S.lock);
	return 0;
}

void agent_session_tick(void)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	struct profile *p = NULL;
	struct diag d;

	pthread_mutex_lock(&S.lock);
	agent_mem_tick(now); /* heap profiling outlives sessions */
	if (!S.running) {
		/* Heap profiling outlives sessions: its walks need the modules. */
		if (S.mods && agent_heap_active()) {
			modules_refresh(false);
			free_retired();
		}
		goto out;
	}
	drain_locked();
	modules_refresh(false);
	free_retired();
	if (S.engine->tick)
		S.engine->tick(now);
	if (S.deadline_mono_ns && now >= S.deadline_mono_ns) {
		diag_clear(&d);
		if (stop_locked(NULL, &p, &d) < 0)
			agent_log("%s", d.msg);
		else
			finished(p);
	}
out:
	pthread_mutex_unlock(&S.lock);
}

uint64_t agent_session_weight_ns(void)
{
	return atomic_load(&hot.stats.weight_ns);
}

bool agent_session_info(struct agent_options *ret_o, enum event_id *ret_effective,
			uint64_t *ret_samples)
{
	bool running;

	pthread_mutex_lock(&S.lock);
	running = S.running;
	if (running) {
		if (ret_o)
			*ret_o = S.o;
		if (ret_effective)
			*ret_effective = S.effective;
		if (ret_samples)
			*ret_samples = atomic_load(&hot.stats.samples);
	}
	pthread_mutex_unlock(&S.lock);
	return running;
}

void agent_session_finish(const char *why)
{
	struct profile *p = NULL;
	struct diag d;

	struct timespec until;

	/* Bounded: at a fatal signal the lock may be held by the very
	 * thread that crashed. */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	if (pthread_mutex_timedlock(&S.lock, &until) != 0)
		return;
	if (S.running) {
		diag_clear(&d);
		if (stop_locked(why, &p, &d) < 0)
			agent_log("%s", d.msg);
		else
			finished(p);
	}
	pthread_mutex_unlock(&S.lock);
}

/* fork(): the parent holds the session's locks across it, so that the
 * child gets the session's state whole (no other thread was half-way
 * through it) and its locks free. */
void agent_session_before_fork(void)
{
	pthread_mutex_lock(&S.lock);
	EACH_ENGINE(before_fork, );
}

void agent_session_after_fork_parent(void)
{
	agent_profile_file_forked();
	EACH_ENGINE(after_fork_parent, );
	pthread_mutex_unlock(&S.lock);
}

/* In a child after fork: only the forking thread; no control or wall
 * thread, no timers (they are not inherited), and perf events that count
 * the parent's threads. The parent's session is forgotten (its fds
 * closed here, the events themselves left to the parent); the child may
 * start its own. Samples the parent's threads were writing are dropped.
 * True when the parent's session came from NPROF_START, its options in
 * *ret_env: the child records itself too (api.c). */
bool agent_session_after_fork(struct agent_options *ret_env)
{
	bool again = S.running && S.o.from_start_env;

	if (again)
		*ret_env = S.o;
	atomic_store(&hot.active, 0);
	atomic_store(&hot.inflight, 0); /* handlers of threads the child lacks */
	for (unsigned i = 0; i < HOT_STRIPES; i++) {
		hot.stripes[i].used = 0;
		atomic_store(&hot.stripes[i].lock, 0);
	}
	S.running = false;
	hot_signals_after_fork();
	/* Each forgets the parent's: timers' fds closed, the wall thread
	 * (the parent's) never joined; their locks, taken in before_fork
	 * by this very thread, let go. */
	EACH_ENGINE(after_fork_child, );
	pthread_mutex_unlock(&S.lock);
	return again;
}
