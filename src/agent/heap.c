/* heap: the cold half of the alloc, heap and lock engines — mapping the
 * tables the interposers fill (hot/alloc.h), turning their gate bits on
 * and off, heap profiling's enable/disable/status/dump (control socket,
 * HTTP /heap, C API), and building profiles from the table of sampled
 * stacks and the live set. See docs/memory.md.
 *
 * Concurrency: H.lock serializes everything here. session.c calls
 * agent_mem_session_* with its own lock held (session lock, then H.lock);
 * nothing here takes the session lock while holding H.lock. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/engine.h"
#include "agent/hot/alloc.h"
#include "agent/hot/hot.h"
#include "agent/mem_hook.h"
#include "base/clock.h"
#include "base/hash.h"
#include "base/id_index.h"
#include "symbolize/frame_cache.h"
#include "symbolize/symbolize.h"

#define NAMES_NS 200000000ull /* agent_mem_tick: thread names, for roots */

static struct {
	pthread_mutex_t lock;
	bool mapped;
	uint64_t heap_since_real_ns, heap_since_mono_ns;
	uint64_t heap_samples0;		/* mem.stats.samples at heap enable */
	bool session_enabled_heap;	/* a heap session turned it on */
	bool session_stopped;		/* agent_mem_session_stop ran: the next
					   profile is the session's last */
	uint64_t session_samples0;	/* mem.stats.samples at session start */
	bool session_per_thread;	/* asked for thread roots; under the session's lock */
	/* heap enable asked for them: set under lock, read by the control
	 * thread's tick without it */
	atomic_bool heap_per_thread;
	struct symbolizer *syms;
	uint8_t seen[MEM_STACKS / 8];	/* stack_next: ids visited */
	/* mem_hook: what came before the agent, GOT slots redirected */
	char hook_first[64];
	unsigned hook_slots, hook_failed;
} H = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The agent's own allocations (building a profile on a program thread,
 * through the C API) are not the program's: not sampled. */
static void quiet_begin(void)
{
	mem_quiet_begin();
}

static void quiet_end(void)
{
	mem_quiet_end();
}

static void *map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Maps the tables once (never unmapped: see hot/alloc.h). Pages are
 * touched only as samples arrive. */
static int map_tables(struct diag *d)
{
	if (H.mapped)
		return 0;
	mem.stacks = map(MEM_STACKS * sizeof(struct mem_stack));
	mem.ips = map(MEM_STACK_IPS * sizeof(uint64_t));
	mem.live = map(MEM_LIVE * sizeof(struct mem_live));
	mem.used = map(MEM_STACKS * sizeof(*mem.used));
	if (!mem.stacks || !mem.ips || !mem.live || !mem.used)
		return diag_set(d, -ENOMEM, "cannot map the allocation sample tables: %s",
				strerror(errno));
	H.mapped = true;
	return 0;
}

/* Waits until no interposer walks a stack (they count in hot.inflight),
 * so tables can be reset under no sampler. Bounded: 100 ms. */
static void quiesce(void)
{
	for (int i = 0; i < 1000 && atomic_load(&hot.inflight); i++)
		usleep(100);
}

/* Zero pages again, and the memory given back. */
static void zero(void *p, size_t bytes)
{
	if (madvise(p, bytes, MADV_DONTNEED) < 0)
		memset(p, 0, bytes);
}

static void reset_stacks(void)
{
	zero(mem.stacks, MEM_STACKS * sizeof(struct mem_stack));
	zero(mem.ips, MEM_STACK_IPS * sizeof(uint64_t));
	zero(mem.used, MEM_STACKS * sizeof(*mem.used));
	atomic_store(&mem.nips, 0);
	atomic_store(&mem.nused, 0);
	atomic_store(&mem.stats.stack_full, 0);
}

static void reset_live(void)
{
	zero(mem.live, MEM_LIVE * sizeof(struct mem_live));
	memset(mem_filter, 0, sizeof(mem_filter)); /* .bss: not madvise's */
	atomic_store(&mem.stats.live_blocks, 0);
	atomic_store(&mem.stats.live_bytes, 0);
	atomic_store(&mem.stats.live_full, 0);
	atomic_store(&mem.stats.frees_matched, 0);
}

/* The stacks in use, without a walk of the whole table: slot 0 (the
 * overflow stack), then the slots mem.used lists, each once (a walker
 * that outlived quiesce() may list a slot again after a reset). Under
 * H.lock. */
struct stack_iter {
	uint32_t i, n;
};

static void stack_first(struct stack_iter *it)
{
	uint32_t n = atomic_load(&mem.nused);

	memset(H.seen, 0, sizeof(H.seen));
	it->i = 0;
	it->n = 1 + (n < MEM_STACKS ? n : MEM_STACKS);
}

static bool stack_next(struct stack_iter *it, uint32_t *ret_id)
{
	while (it->i < it->n) {
		uint32_t id = it->i++ ? atomic_load_explicit(&mem.used[it->i - 2],
							     memory_order_acquire) : 0;

		/* Seen: listed twice, or 0 (slot 0 comes first) for an index
		 * taken whose id is not written yet. */
		if (id >= MEM_STACKS || (H.seen[id / 8] & (1u << (id % 8))))
			continue;
		H.seen[id / 8] |= (uint8_t)(1u << (id % 8));
		*ret_id = id;
		return true;
	}
	return false;
}

enum counters { C_ALLOC, C_HEAP, C_LOCK };

/* Zeroes one engine's counters in every stack (the stacks themselves are
 * kept: another engine's live blocks point at them). */
static void zero_counters(enum counters c)
{
	struct stack_iter it;
	uint32_t i;

	for (stack_first(&it); stack_next(&it, &i);) {
		struct mem_stack *s = &mem.stacks[i];

		if (c == C_ALLOC) {
			atomic_store_explicit(&s->alloc_bytes, 0, memory_order_relaxed);
			atomic_store_explicit(&s->alloc_objects, 0, memory_order_relaxed);
		} else if (c == C_HEAP) {
			atomic_store_explicit(&s->heap_bytes, 0, memory_order_relaxed);
			atomic_store_explicit(&s->heap_objects, 0, memory_order_relaxed);
		} else {
			atomic_store_explicit(&s->lock_ns, 0, memory_order_relaxed);
			atomic_store_explicit(&s->lock_count, 0, memory_order_relaxed);
		}
	}
}

static unsigned gate(void)
{
	return atomic_load(&mem.gate);
}

/* Points callers bound to an allocator that comes before the agent at
 * the agent (mem_hook.c): when an engine is turned on, and when a profile
 * is built (modules loaded since). Under H.lock. */
static void hook(void)
{
	struct mem_hook_result r;

	if (mem_hook_install(&r) < 0)
		return;
	if (r.first[0])
		snprintf(H.hook_first, sizeof(H.hook_first), "%s", r.first);
	H.hook_slots += r.slots;
	H.hook_failed += r.failed;
}

/* The gate's bits set and cleared, with the program's calls routed to the
 * agent before it must see them and past it once it need not
 * (mem_hook_route). Under H.lock. */
static void gate_change(unsigned set, unsigned clear)
{
	if (set)
		mem_hook_route(gate() | set);
	mem_gate_change(set, clear);
	if (clear)
		mem_hook_route(gate());
}

void agent_mem_route(void)
{
	pthread_mutex_lock(&H.lock);
	mem_boot();
	mem_hook_route(gate());
	pthread_mutex_unlock(&H.lock);
}

/* Before a gate bit goes on: fresh stacks when no other engine holds
 * any, else only this engine's counters. Under H.lock. */
static void fresh(enum counters c)
{
	if (!(gate() & (MEM_GATE_ALLOC | MEM_GATE_HEAP | MEM_GATE_LOCK))) {
		quiesce();
		reset_stacks();
	} else {
		zero_counters(c);
	}
}

bool agent_heap_active(void)
{
	return gate() & MEM_GATE_HEAP;
}

bool agent_heap_per_thread(void)
{
	return (gate() & MEM_GATE_HEAP) && atomic_load(&H.heap_per_thread);
}

/* Stacks are kept per thread while heap profiling or a session asked. */
static void set_per_thread(void)
{
	mem.per_thread = atomic_load(&H.heap_per_thread) || H.session_per_thread;
}

static int heap_enable_locked(uint64_t interval, bool per_thread, struct diag *d)
{
	int err;

	if (gate() & MEM_GATE_HEAP)
		return diag_set(d, -EALREADY, "heap profiling is already on");
	err = map_tables(d);
	if (err < 0)
		return err;
	mem_boot();
	hook();
	fresh(C_HEAP);
	quiesce();
	reset_live();
	/* alloc and heap share one sampler: a running alloc session keeps
	 * its interval. */
	if (!(gate() & MEM_GATE_ALLOC))
		mem.interval = interval ? interval : MEM_DEFAULT_INTERVAL;
	if (!mem.max_depth)
		mem.max_depth = MEM_DEFAULT_DEPTH;
	H.heap_since_real_ns = clock_ns(CLOCK_REALTIME);
	H.heap_since_mono_ns = clock_ns(CLOCK_MONOTONIC);
	H.heap_samples0 = atomic_load(&mem.stats.samples);
	atomic_store(&H.heap_per_thread, per_thread);
	set_per_thread();
	gate_change(MEM_GATE_HEAP, 0);
	agent_control_wake(); /* it ticks while heap is on (modules) */
	return 0;
}

int agent_heap_enable(uint64_t interval, bool per_thread, struct diag *d)
{
	int err = agent_modules_update(false, d);

	if (err < 0)
		return err;
	pthread_mutex_lock(&H.lock);
	err = heap_enable_locked(interval, per_thread, d);
	pthread_mutex_unlock(&H.lock);
	return err;
}

static int heap_disable_locked(struct diag *d)
{
	if (!(gate() & MEM_GATE_HEAP))
		return diag_set(d, -EALREADY, "heap profiling is already off");
	gate_change(0, MEM_GATE_HEAP);
	quiesce();
	return 0;
}

int agent_heap_disable(struct diag *d)
{
	int err;

	pthread_mutex_lock(&H.lock);
	err = heap_disable_locked(d);
	pthread_mutex_unlock(&H.lock);
	return err;
}

unsigned agent_mem_unhook(void)
{
	unsigned n = 0;

	pthread_mutex_lock(&H.lock);
	if (!(gate() & (MEM_GATE_ALLOC | MEM_GATE_HEAP | MEM_GATE_LOCK))) {
		n = mem_hook_uninstall();
		H.hook_first[0] = '\0';
		H.hook_slots = H.hook_failed = 0;
	}
	pthread_mutex_unlock(&H.lock);
	return n;
}

void agent_heap_status(char *buf, size_t len)
{
	char since[64];
	time_t t;
	struct tm tm;
	/* A free that took its block out just before an enable reset the
	 * counters subtracts just after: never shown below zero. */
	long blocks = atomic_load(&mem.stats.live_blocks);
	long bytes = atomic_load(&mem.stats.live_bytes);

	pthread_mutex_lock(&H.lock);
	if (!(gate() & MEM_GATE_HEAP)) {
		snprintf(buf, len, "heap profiling off");
		goto out;
	}
	t = (time_t)(H.heap_since_real_ns / 1000000000ull);
	gmtime_r(&t, &tm);
	strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(buf, len,
		 "heap profiling on since %s (%.1f s), interval %" PRIu64 " bytes, %ld live sampled "
		 "blocks, %.1f MB estimated in use, %lu samples, %lu dropped",
		 since, (clock_ns(CLOCK_MONOTONIC) - H.heap_since_mono_ns) / 1e9, mem.interval,
		 blocks > 0 ? blocks : 0, (bytes > 0 ? bytes : 0) / 1048576.0,
		 atomic_load(&mem.stats.samples) - H.heap_samples0,
		 atomic_load(&mem.stats.live_full) + atomic_load(&mem.stats.stack_full));
out:
	pthread_mutex_unlock(&H.lock);
}

/* --- building profiles ---------------------------------------------------- */

/* Stack id of the table into the profile. Thread roots need the stacks
 * kept per thread (mem.per_thread when they were sampled); the others
 * are under one root saying so. */
static int add_stack(struct agent_build *b, uint32_t id, const int64_t *values)
{
	const struct mem_stack *s = &mem.stacks[id];
	struct chain_build_stack bs = { .tid = getpid() };

	if (id == 0 || !atomic_load(&s->ready)) {
		bs.leaf = "[stack table full]";
		bs.leaf_kind = FRAME_UNKNOWN;
	} else {
		/* ips[0] is already the call instruction (return address - 1),
		 * as the builder takes a sampled pc. */
		bs.ips = mem.ips + s->first;
		bs.n = s->n;
		bs.truncated = s->truncated;
		if (s->tid)
			bs.tid = s->tid;
		else
			bs.root = "[threads not kept apart]";
	}
	return chain_build_add(&b->build, &bs, values, NULL, NULL);
}

static int64_t fixed(uint64_t v)
{
	return (int64_t)((v + MEM_ONE / 2) / MEM_ONE);
}

static void add_notes(struct profile *p, enum event_id e)
{
	uint64_t full = atomic_load(&mem.stats.stack_full);
	uint64_t live_full = atomic_load(&mem.stats.live_full);
	uint64_t pool_failed = atomic_load(&mem.stats.pool_failed);

	if (e == EVENT_LOCK)
		profile_add_note(p, "lock: contended pthread mutex and rwlock acquisitions, by "
				 "nanoseconds waited; waits under %" PRIu64 " ns sampled with "
				 "probability wait/interval and scaled", mem.lock_interval_ns);
	else
		profile_add_note(p, "%s: allocations sampled every %" PRIu64 " bytes on average "
				 "(geometric); values are estimates, unbiased: a sample of S bytes "
				 "stands for S/(1-exp(-S/%" PRIu64 ")) bytes",
				 e == EVENT_HEAP ? "heap" : "alloc", mem.interval, mem.interval);
	if (full)
		profile_add_note(p, "%" PRIu64 " samples went to [stack table full] (%u stacks, "
				 "%u addresses at most)", full, MEM_STACKS, MEM_STACK_IPS);
	if (live_full && e == EVENT_HEAP)
		profile_add_note(p, "%" PRIu64 " sampled blocks could not be tracked as live (the "
				 "live set holds %u); in-use values are low by that much",
				 live_full, MEM_LIVE);
	if (pool_failed)
		profile_add_note(p, "%" PRIu64 " allocations before the real allocator was found "
				 "failed: the bootstrap pool was exhausted", pool_failed);
	if (H.hook_first[0])
		profile_add_note(p, "%s comes before the agent in the search order: %u call sites "
				 "bound to it were pointed at the agent (%u could not be); calls "
				 "from inside %s itself are not seen", H.hook_first, H.hook_slots,
				 H.hook_failed, H.hook_first);
}

static int build(enum event_id e, const struct agent_options *o, uint64_t start_real_ns,
		 uint64_t duration_ns, const char *ended, struct profile **ret, struct diag *d)
{
	struct agent_build b;
	double *inuse = NULL;
	struct stack_iter it;
	uint32_t id;
	int err;

	quiet_begin();
	hook();
	err = -ENOMEM;
	if (!H.syms)
		H.syms = symbolizer_new();
	if (!H.syms) {
		memset(&b, 0, sizeof(b));
		goto out;
	}
	err = agent_build_open(&b, H.syms, e, o, d);
	if (err < 0)
		goto out;
	if (o && o->per_thread)
		agent_build_note_threads();
	b.build.p->interval = e == EVENT_LOCK ? mem.lock_interval_ns : mem.interval;
	b.build.p->start_ns = start_real_ns;
	b.build.p->duration_ns = duration_ns;
	b.build.p->degraded.lost_samples = atomic_load(&mem.stats.stack_full) +
					   (e == EVENT_HEAP ? atomic_load(&mem.stats.live_full) : 0);
	if (e == EVENT_HEAP) {
		/* In use: the live set, summed by stack; objects = bytes / size
		 * per block (each block stands for bytes/size blocks like it). */
		err = -ENOMEM;
		inuse = calloc(2 * (size_t)MEM_STACKS, sizeof(*inuse));
		if (!inuse)
			goto out;
		for (size_t i = 0; i < MEM_LIVE; i++) {
			const struct mem_live *l = &mem.live[i];
			uint64_t a = atomic_load_explicit(&l->addr, memory_order_acquire);

			if (a <= MEM_LIVE_TOMB || l->stack >= MEM_STACKS || !l->size)
				continue;
			inuse[2 * l->stack] += (double)l->bytes;
			inuse[2 * l->stack + 1] += (double)l->bytes / (double)l->size;
		}
	}
	for (stack_first(&it); stack_next(&it, &id);) {
		const struct mem_stack *s = &mem.stacks[id];
		int64_t v[PROFILE_MAX_VALUES] = { 0 };

		if (e == EVENT_ALLOC) {
			v[0] = (int64_t)atomic_load(&s->alloc_bytes);
			v[1] = fixed(atomic_load(&s->alloc_objects));
		} else if (e == EVENT_LOCK) {
			v[0] = (int64_t)atomic_load(&s->lock_ns);
			v[1] = fixed(atomic_load(&s->lock_count));
		} else {
			v[0] = (int64_t)(inuse[2 * id] + 0.5);
			v[1] = (int64_t)(inuse[2 * id + 1] + 0.5);
			v[2] = (int64_t)atomic_load(&s->heap_bytes);
			v[3] = fixed(atomic_load(&s->heap_objects));
		}
		if (!v[0] && !v[1] && !v[2] && !v[3])
			continue;
		err = add_stack(&b, id, v);
		if (err < 0)
			goto out;
	}
	add_notes(b.build.p, e);
	if (o && o->per_thread && e == EVENT_HEAP && !atomic_load(&H.heap_per_thread))
		profile_add_note(b.build.p, "thread roots: heap profiling was enabled without "
				 "thread (nprof heap PID enable -t), so its stacks were not kept "
				 "apart per thread");
	if (ended)
		profile_add_note(b.build.p, "%s", ended);
	*ret = chain_build_take(&b.build);
	err = 0;
out:
	if (err < 0 && !d->msg[0])
		diag_set(d, err, "building the %s profile: %s", event_name(e), strerror(-err));
	agent_build_close(&b);
	free(inuse);
	quiet_end();
	return err;
}

int agent_heap_profile(const struct agent_options *o, struct profile **ret, struct diag *d)
{
	int err;

	pthread_mutex_lock(&H.lock);
	if (!(gate() & MEM_GATE_HEAP))
		err = diag_set(d, -ENOENT, "heap profiling is off; enable it first "
			       "(nprof heap PID enable)");
	else
		err = build(EVENT_HEAP, o, H.heap_since_real_ns,
			    clock_ns(CLOCK_MONOTONIC) - H.heap_since_mono_ns, NULL, ret, d);
	pthread_mutex_unlock(&H.lock);
	return err;
}

/* --- sessions: alloc, heap, lock ------------------------------------------ */

int agent_mem_session_start(const struct agent_options *o, struct diag *d)
{
	int err;

	pthread_mutex_lock(&H.lock);
	err = map_tables(d);
	if (err < 0)
		goto out;
	mem_boot();
	hook();
	if (o->max_depth)
		mem.max_depth = o->max_depth < MEM_MAX_DEPTH ? o->max_depth : MEM_MAX_DEPTH;
	H.session_samples0 = atomic_load(&mem.stats.samples);
	H.session_stopped = false;
	H.session_per_thread = o->per_thread;
	set_per_thread();
	switch (o->event) {
	case EVENT_ALLOC:
		fresh(C_ALLOC);
		if (!(gate() & MEM_GATE_HEAP))
			mem.interval = o->interval_bytes ? o->interval_bytes : MEM_DEFAULT_INTERVAL;
		gate_change(MEM_GATE_ALLOC, 0);
		break;
	case EVENT_LOCK:
		fresh(C_LOCK);
		mem.lock_interval_ns = o->interval_text[0] ? o->interval_ns : MEM_DEFAULT_LOCK_NS;
		gate_change(MEM_GATE_LOCK, 0);
		break;
	case EVENT_HEAP:
		/* A heap session: heap profiling on for its length (unless it
		 * was on already), its profile the in-use snapshot at the end. */
		H.session_enabled_heap = !(gate() & MEM_GATE_HEAP);
		if (H.session_enabled_heap)
			err = heap_enable_locked(o->interval_bytes, false, d);
		break;
	default:
		err = diag_set(d, -EINVAL, "%s is not an allocation or lock event",
			       event_name(o->event));
	}
out:
	pthread_mutex_unlock(&H.lock);
	return err;
}

/* The profile is built afterwards (agent_mem_session_profile), so a heap
 * session's heap profiling is turned off there, not here. */
void agent_mem_session_stop(void)
{
	pthread_mutex_lock(&H.lock);
	gate_change(0, MEM_GATE_ALLOC | MEM_GATE_LOCK);
	quiesce();
	H.session_stopped = true;
	H.session_per_thread = false;
	set_per_thread();
	pthread_mutex_unlock(&H.lock);
}

int agent_mem_session_profile(enum event_id e, const struct agent_options *o,
			      uint64_t start_real_ns, uint64_t duration_ns, const char *ended,
			      struct profile **ret, struct diag *d)
{
	struct diag ignored;
	int err;

	pthread_mutex_lock(&H.lock);
	if (e == EVENT_HEAP && !(gate() & MEM_GATE_HEAP)) {
		err = diag_set(d, -ENOENT, "heap profiling was turned off during the heap session");
		goto out;
	}
	err = build(e, o, start_real_ns, duration_ns, ended, ret, d);
	/* The session's end, not a snapshot of it: heap off again. */
	if (e == EVENT_HEAP && H.session_enabled_heap && H.session_stopped) {
		diag_clear(&ignored);
		heap_disable_locked(&ignored);
		H.session_enabled_heap = false;
	}
out:
	pthread_mutex_unlock(&H.lock);
	return err;
}

/* --- requests: control socket, HTTP ---------------------------------------- */

int agent_heap_request(const char *action, const char *options, char *text, size_t len,
		       struct profile **ret, struct agent_options *ret_o, struct diag *d)
{
	struct agent_options o;
	char text2[4096];
	int err;

	*ret = NULL;
	/* interval= is bytes here, whatever event= says (or does not). */
	snprintf(text2, sizeof(text2), "event=heap,%s", options ? options : "");
	err = agent_options_parse(text2, &o, d);
	if (err < 0)
		return err;
	if (o.interval_text[0] && o.event != EVENT_HEAP && o.event != EVENT_ALLOC) {
		o.event = EVENT_HEAP;
		err = agent_options_set(&o, "interval", o.interval_text, d);
		if (err < 0)
			return err;
	}
	if (!strcmp(action, "enable")) {
		err = agent_heap_enable(o.interval_bytes, o.per_thread, d);
		if (err == 0)
			agent_heap_status(text, len);
	} else if (!strcmp(action, "disable")) {
		err = agent_heap_disable(d);
		if (err == 0)
			snprintf(text, len, "heap profiling off");
	} else if (!strcmp(action, "status")) {
		agent_heap_status(text, len);
	} else if (!strcmp(action, "dump")) {
		err = agent_heap_profile(&o, ret, d);
		if (err == 0 && o.file[0]) {
			err = agent_write_profile(*ret, &o, d);
			if (err < 0) {
				profile_free(*ret);
				*ret = NULL;
			}
		}
		if (!o.have_format) {
			o.have_format = true;
			o.format = OUTPUT_PPROF;
		}
		*ret_o = o;
	} else {
		err = diag_set(d, -EINVAL, "heap: unknown action '%s'; use enable, disable, status "
			       "or dump", action);
	}
	return err;
}

int agent_heap_http(const char *action, const char *output, const char *interval,
		    struct agent_http_reply *r)
{
	char opts[192] = "", text[1024];
	struct agent_options o;
	struct profile *p = NULL;
	struct diag d;
	FILE *m;
	int err;

	diag_clear(&d);
	r->content_type = "text/plain; charset=utf-8";
	r->body = NULL;
	r->len = 0;
	if (!action)
		action = "status";
	/* The query's values become an option text; a ',' in one would
	 * smuggle in another option, so it is refused. */
	if ((output && strchr(output, ',')) || (interval && strchr(interval, ','))) {
		r->status = 400;
		r->len = (size_t)asprintf(&r->body, "output= and interval= take one value each: remove the ','\n");
		return 0;
	}
	snprintf(opts, sizeof(opts), "%s%s%s%s%s", output ? "output=" : "", output ? output : "",
		 output && interval ? "," : "", interval ? "interval=" : "", interval ? interval : "");
	err = agent_heap_request(action, opts, text, sizeof(text), &p, &o, &d);
	if (err < 0) {
		r->status = err == -EINVAL ? 400 : err == -EALREADY ? 409 : err == -ENOENT ? 404 : 500;
		r->len = (size_t)asprintf(&r->body, "%s\n", d.msg);
		return 0;
	}
	r->status = 200;
	if (!p) {
		r->len = (size_t)asprintf(&r->body, "%s\n", text);
		return 0;
	}
	m = open_memstream(&r->body, &r->len);
	if (!m) {
		profile_free(p);
		return -ENOMEM;
	}
	err = output_write(p, o.format, &o.out, m);
	if (fclose(m) != 0 && err == 0)
		err = -EIO;
	profile_free(p);
	if (err < 0) {
		free(r->body);
		r->status = 500;
		r->len = (size_t)asprintf(&r->body, "cannot format the heap profile: %s\n",
					  strerror(-err));
		return 0;
	}
	if (o.format == OUTPUT_PPROF)
		r->content_type = "application/octet-stream";
	else if (o.format == OUTPUT_FLAMEGRAPH || o.format == OUTPUT_TREE)
		r->content_type = "text/html; charset=utf-8";
	else if (o.format == OUTPUT_SVG)
		r->content_type = "image/svg+xml";
	return 0;
}

/* --- the engine of a session (engine.h) ---------------------------------- */

static int engine_start(const struct agent_options *o, uint64_t interval,
			enum event_id *effective, struct diag *d)
{
	(void)interval; /* o's interval is bytes or ns as the event says */
	(void)effective;
	return agent_mem_session_start(o, d);
}

/* Thread roots name threads by what they were called while alive: the
 * live ones are noted every NAMES_NS while roots are asked (a session's
 * thread option, or heap profiling enabled with it). */
void agent_mem_tick(uint64_t now_mono_ns)
{
	static uint64_t last;

	if ((H.session_per_thread && !H.session_stopped) || agent_heap_per_thread()) {
		if (now_mono_ns - last >= NAMES_NS) {
			last = now_mono_ns;
			agent_build_note_threads();
		}
	}
}

const struct agent_engine agent_engine_mem = {
	.start = engine_start,
	.stop = agent_mem_session_stop,
	.profile = agent_mem_session_profile,
};
