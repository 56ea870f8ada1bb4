/* sample: the signal handler. Runs on the sampled thread, in signal
 * context: every call here must be async-signal-safe (scripts/check-hot
 * holds the list). See hot.h for the contract. */
#include "agent/hot/hot.h"
#include "agent/hot/cpu_fds.h"
#include "agent/hot/signals.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "unwind/walker.h"

struct hot_state hot;
struct unwind_row_cache hot_rows;
__thread struct hot_thread hot_self __attribute__((tls_model("initial-exec")));
_Atomic uint64_t hot_cpu_fds[HOT_CPU_SLOTS];

/* Takes a stripe with room for need bytes, starting at the tid's own so
 * that one thread's records usually stay in order. NULL (the drop
 * counted) when every stripe is busy or full. */
static struct hot_stripe *stripe_take(pid_t tid, size_t need)
{
	unsigned first = (unsigned)tid % HOT_STRIPES;
	bool saw_full = false;

	for (unsigned i = 0; i < HOT_STRIPES; i++) {
		struct hot_stripe *s = &hot.stripes[(first + i) % HOT_STRIPES];

		if (!hot_stripe_trylock(s))
			continue;
		if (s->buf && HOT_STRIPE_BYTES - s->used >= need)
			return s;
		saw_full = true;
		hot_stripe_unlock(s);
	}
	atomic_fetch_add_explicit(saw_full ? &hot.stats.drop_full : &hot.stats.drop_busy, 1,
				  memory_order_relaxed);
	return NULL;
}

static void stripe_commit(struct hot_stripe *s, struct hot_record *rec)
{
	rec->size = (uint32_t)((sizeof(*rec) + rec->n * sizeof(uint64_t) + 7) & ~(size_t)7);
	s->used += rec->size;
	hot_stripe_unlock(s);
	atomic_fetch_add_explicit(&hot.stats.samples, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&hot.stats.weight_ns, rec->weight, memory_order_relaxed);
}

static enum hot_kind classify(const siginfo_t *si)
{
	if (si->si_code == POLL_HUP || si->si_code == POLL_IN)
		return HOT_KIND_CPU;
	if (si->si_code == SI_TIMER && si->si_value.sival_ptr == (void *)&hot)
		return HOT_KIND_ITIMER;
	if (si->si_code == SI_QUEUE && si->si_pid == hot.pid &&
	    (uint64_t)(uintptr_t)si->si_value.sival_ptr >> 48 == HOT_WALL_MAGIC)
		return HOT_KIND_WALL;
	if (si->si_code == SI_QUEUE && si->si_pid == hot.pid &&
	    (uint64_t)(uintptr_t)si->si_value.sival_ptr >> 48 == HOT_DUMP_MAGIC)
		return HOT_KIND_DUMP;
	return 0;
}

/* A SIGPROF that is not a cpu sample may have taken the place of one
 * (cpu_fds.h): re-arms this thread's perf event, if a cpu session runs.
 * Called counted in `inflight`. */
static void cpu_revive(void)
{
	int fd;

	if (!atomic_load_explicit(&hot.active, memory_order_acquire) || hot_self.blocked)
		return;
	fd = hot_cpu_fd_get(hot_self.tid ? hot_self.tid : gettid());
	if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) < 0)
		atomic_fetch_add_explicit(&hot.stats.rearm_failed, 1, memory_order_relaxed);
}

void hot_on_signal(int sig, siginfo_t *si, void *ucv)
{
	const ucontext_t *uc = ucv;
	enum hot_kind kind = classify(si);
	int saved = errno;
	const struct unwind_modules *mods;
	struct unwind_self_reader reader;
	struct unwind_regs regs;
	struct unwind_info info;
	struct hot_stripe *s;
	struct hot_record *rec;
	uint64_t word = 0, weight, began;
	unsigned max;
	pid_t tid;

	if (!kind) { /* the program's own SIGPROF (hot/signals.c) */
		atomic_fetch_add_explicit(&hot.stats.foreign, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&hot.inflight, 1, memory_order_acq_rel);
		cpu_revive();
		atomic_fetch_sub_explicit(&hot.inflight, 1, memory_order_acq_rel);
		hot_signals_chain(sig, si, ucv);
		goto out_errno;
	}
	/* Counted in before `active` is read: the control side clears
	 * active, then waits for inflight to reach 0 before it frees or
	 * reuses anything a handler reads. */
	atomic_fetch_add_explicit(&hot.inflight, 1, memory_order_acq_rel);
	if (kind == HOT_KIND_DUMP) { /* with or without a session */
		if (!hot_self.blocked)
			hot_dump_on_signal(si, ucv);
		cpu_revive();
		goto out;
	}
	if (!atomic_load_explicit(&hot.active, memory_order_acquire) || hot_self.blocked) {
		atomic_fetch_add_explicit(&hot.stats.late, 1, memory_order_relaxed);
		goto out;
	}
	began = hot_clock_ns(CLOCK_MONOTONIC);
	weight = hot.weight_ns;
	if (kind == HOT_KIND_ITIMER && si->si_overrun > 0)
		weight *= 1 + (uint64_t)si->si_overrun; /* expirations merged */
	if (kind == HOT_KIND_WALL) {
		word = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
		weight = hot.wall_interval_ns * ((word >> 32) & 0xffff);
	}
	tid = hot_self.tid ? hot_self.tid : gettid();
	max = hot.max_depth ? hot.max_depth : 1;
	if (max > HOT_MAX_DEPTH)
		max = HOT_MAX_DEPTH;
	s = stripe_take(tid, sizeof(*rec) + (size_t)max * sizeof(uint64_t) + 8);
	if (!s)
		goto rearm;
	rec = (struct hot_record *)(void *)(s->buf + s->used);
	regs.rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	regs.rsp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
	regs.rbp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
	/* Plain loads from [sp, top of the thread's stack) when we know the
	 * stack and sp is in it; the fault-tolerant syscall otherwise. */
	if (hot_self.stack_hi && regs.rsp >= hot_self.stack_lo && regs.rsp < hot_self.stack_hi)
		unwind_self_reader_init(&reader, regs.rsp, hot_self.stack_hi);
	else
		unwind_self_reader_init(&reader, 0, 0);
	mods = atomic_load_explicit(&hot.mods, memory_order_acquire);
	rec->n = (uint16_t)unwind_walk_cached(&regs, mods, &hot_rows, unwind_read_self, &reader,
					      rec->ips, max, &info);
	rec->tid = tid;
	rec->time_ns = hot_clock_ns(CLOCK_MONOTONIC);
	rec->weight = weight;
	rec->kind = (uint8_t)kind;
	rec->state = kind == HOT_KIND_WALL ? (uint8_t)(word & 0xff) : 'R';
	rec->flags = info.stop != UNWIND_STOP_END ? HOT_TRUNCATED : 0;
	if (rec->flags & HOT_TRUNCATED)
		atomic_fetch_add_explicit(&hot.stats.truncated, 1, memory_order_relaxed);
	stripe_commit(s, rec);
rearm:
	if (kind == HOT_KIND_WALL) {
		unsigned slot = (unsigned)(word >> 8) & 0xffffff;

		/* The sampler compares this with the thread's CPU clock next
		 * tick: unchanged means it has not run, its stack neither. */
		if (slot < hot.wall_slots && hot.wall_cpu_ns)
			hot.wall_cpu_ns[slot] = hot_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	}
	if (kind == HOT_KIND_CPU && ioctl(si->si_fd, PERF_EVENT_IOC_REFRESH, 1) < 0)
		atomic_fetch_add_explicit(&hot.stats.rearm_failed, 1, memory_order_relaxed);
	/* (the handler does not block: the time it took is CPU) */
	atomic_fetch_add_explicit(&hot.stats.sample_ns, hot_clock_ns(CLOCK_MONOTONIC) - began,
				  memory_order_relaxed);
out:
	atomic_fetch_sub_explicit(&hot.inflight, 1, memory_order_acq_rel);
out_errno:
	errno = saved;
}

bool hot_push_repeat(pid_t tid, char state, uint64_t weight)
{
	struct hot_stripe *s = stripe_take(tid, sizeof(struct hot_record) + 8);
	struct hot_record *rec;

	if (!s)
		return false;
	rec = (struct hot_record *)(void *)(s->buf + s->used);
	rec->n = 0;
	rec->tid = tid;
	rec->time_ns = hot_clock_ns(CLOCK_MONOTONIC);
	rec->weight = weight;
	rec->kind = HOT_KIND_WALL;
	rec->state = (uint8_t)state;
	rec->flags = HOT_REPEAT;
	stripe_commit(s, rec);
	return true;
}
