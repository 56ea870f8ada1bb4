/* hot: the agent's signal path, and the contract between it and the cold
 * side (the files of src/agent/) that arms timers, drains samples and builds
 * profiles.
 *
 * One handler serves every engine. The kernel (a perf_event overflow, a
 * POSIX CPU timer) or the wall sampler thread (rt_tgsigqueueinfo) signals
 * the thread to sample; the handler walks its stack with src/unwind's
 * walker and appends one record to one of HOT_STRIPES preallocated
 * buffers, taken with a try-lock (async-profiler's model). It never
 * waits: a busy or full stripe is a counted drop. No malloc, stdio, locks
 * or errno changes; nm -u on the hot objects is checked by
 * scripts/check-hot in `make check`.
 *
 * Concurrency contract, per field of struct hot_state below:
 *   - "control": written by the agent's control side with no sampling
 *     signal possible (before `active` is set, or after it is cleared and
 *     `inflight` has drained to 0); read in signal context.
 *   - "atomic": read and written by both sides with atomics.
 *   - A stripe's used/buf are touched only by whoever holds its lock: a
 *     handler (try-lock), the wall sampler (try-lock), the drainer (spins,
 *     outside signal context, with the sampling signal blocked). */
#ifndef NPROF_AGENT_HOT_HOT_H
#define NPROF_AGENT_HOT_HOT_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "unwind/modules.h"
#include "unwind/row_cache.h"

#define HOT_STRIPES 8
#define HOT_MAX_DEPTH 2048		/* frames per sample, whatever asked */
#define HOT_STRIPE_BYTES (1u << 20)	/* per stripe: ~3000 30-frame samples */
#define HOT_SIGNAL SIGPROF

/* How a sample's signal was sent: si_code tells them apart. */
enum hot_kind {
	HOT_KIND_CPU = 1,	/* perf_event overflow (si_code POLL_HUP) */
	HOT_KIND_ITIMER = 2,	/* timer_create on the thread CPU clock (SI_TIMER) */
	HOT_KIND_WALL = 3,	/* the wall sampler (SI_QUEUE, our pid, magic) */
	HOT_KIND_DUMP = 4,	/* a thread dump (SI_QUEUE, our pid, dump magic) */
};

enum hot_flags {
	HOT_TRUNCATED = 1,	/* the walk stopped before the outermost frame */
	HOT_REPEAT = 2,		/* wall: same stack as this tid's previous wall
				   sample (the thread has not run since); n = 0 */
};

/* One sample in a stripe; records are 8-aligned and back to back. */
struct hot_record {
	uint32_t size;		/* bytes of the whole record */
	int32_t tid;
	uint64_t time_ns;	/* CLOCK_MONOTONIC */
	uint64_t weight;	/* ns of CPU or wall time the sample stands for */
	uint16_t n;		/* ips that follow, leaf first */
	uint8_t kind;		/* enum hot_kind */
	uint8_t state;		/* wall: the thread's state letter (R, S, D...) */
	uint8_t flags;		/* enum hot_flags */
	uint8_t pad[3];
	uint64_t ips[];
};

struct hot_stripe {
	atomic_int lock;	/* 0 free, 1 held */
	size_t used;		/* bytes of buf holding records; under lock */
	uint8_t *buf;		/* HOT_STRIPE_BYTES, mapped once; under lock */
} __attribute__((aligned(64)));

struct hot_stats {
	atomic_ulong samples;	   /* records written */
	atomic_ulong weight_ns;	   /* what they stand for: itimer's merged
				      expirations and wall's ticks included */
	atomic_ulong drop_busy;	   /* every stripe was locked */
	atomic_ulong drop_full;	   /* the stripe had no room */
	atomic_ulong truncated;	   /* walks that stopped early */
	atomic_ulong foreign;	   /* signals not ours, passed to the old handler */
	atomic_ulong late;	   /* ours, but no session active: ignored */
	atomic_ulong rearm_failed; /* perf refresh ioctl failed */
	atomic_ulong sample_ns;	   /* time taking samples in the program's
				      threads: the handler of each (from its
				      session check to its end) and each
				      sampled call's walk (mem_stack_here) */
};

/* clock c now in ns (clock_gettime: async-signal-safe, the vDSO's for
 * CLOCK_MONOTONIC); 0 when it fails. */
static inline uint64_t hot_clock_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The wall sampler's word in si_value: magic, state letter, the slot the
 * handler writes the thread's CPU time to, and the weight in ticks. */
#define HOT_WALL_MAGIC 0x4e50ull /* "NP" */
static inline uint64_t hot_wall_word(unsigned slot, char state, unsigned ticks)
{
	return HOT_WALL_MAGIC << 48 | (uint64_t)(ticks & 0xffff) << 32 |
	       (uint64_t)(slot & 0xffffff) << 8 | (uint8_t)state;
}

/* Thread dumps (/stacks, src/agent/stacks.c): the thread taking the
 * thread dump signals each thread with a word naming a slot and a
 * request number; the handler walks the thread's stack into that slot
 * (see hot/dump.c). A slot's tag is seq << 2 |
 * HOT_DUMP_{ARMED,WRITING,DONE} (0: free): the handler moves it ARMED ->
 * WRITING -> DONE with compare-and-swap, so a signal that arrives after
 * the thread taking the thread dump gave up on the slot (tag changed)
 * writes nothing. Slots are mapped once and never unmapped. */
#define HOT_DUMP_MAGIC 0x4e44ull /* "ND" */
#define HOT_DUMP_SLOTS 64
#define HOT_DUMP_DEPTH 512
enum { HOT_DUMP_ARMED = 1, HOT_DUMP_WRITING = 2, HOT_DUMP_DONE = 3 };

struct hot_dump_slot {
	atomic_uint tag;	/* atomic */
	int32_t tid;		/* written by the handler between WRITING and DONE */
	uint16_t n;
	uint8_t truncated;
	uint64_t ips[HOT_DUMP_DEPTH];
};

static inline uint64_t hot_dump_word(unsigned slot, unsigned seq)
{
	return HOT_DUMP_MAGIC << 48 | (uint64_t)(seq & 0x3fffffff) << 16 | (slot & 0xffff);
}

struct hot_state {
	atomic_int active;		/* atomic: 1 while a session samples */
	atomic_uint inflight;		/* atomic: handlers between entry and exit */
	/* atomic: the module list handlers walk with. The control side
	 * publishes a new one after dlopen and frees an old one only when
	 * inflight has been 0 since the swap (see agent_modules_refresh). */
	_Atomic(const struct unwind_modules *) mods;
	unsigned max_depth;		/* control */
	uint64_t weight_ns;		/* control: interval of cpu/itimer */
	uint64_t wall_interval_ns;	/* control: wall tick */
	pid_t pid;			/* control: getpid() at start */
	uint64_t *wall_cpu_ns;		/* control: wall_slots entries; a handler
					   writes its slot (thread CPU time after
					   the sample), the sampler reads it */
	unsigned wall_slots;		/* control */
	struct sigaction old;		/* control: the handler we replaced */
	struct hot_stripe stripes[HOT_STRIPES];
	struct hot_stats stats;		/* atomic */
	/* atomic: HOT_DUMP_SLOTS slots, published once (never freed) */
	_Atomic(struct hot_dump_slot *) dump;
};

/* Per-thread: what the handler knows of the thread it runs on. Written
 * by that thread (pthread_create's wrapper) outside signal context, before
 * any sample of it; zero for threads the agent found by scanning. */
struct hot_thread {
	pid_t tid;
	uint64_t stack_lo, stack_hi;	/* the thread's stack, 0 when unknown */
	int blocked;			/* an agent thread: never sampled */
};

extern struct hot_state hot;
/* atomic (each entry a seqlock, unwind/row_cache.h): the CFI rows every
 * walk of the agent's has found, by pc and module list generation; one
 * for the process, shared by the signal handler, the allocation samples
 * and thread dumps. Entries of a retired module list are never served for
 * the new one, so agent_modules_refresh need not clear it. */
extern struct unwind_row_cache hot_rows;
extern __thread struct hot_thread hot_self __attribute__((tls_model("initial-exec")));

/* The SA_SIGINFO handler for HOT_SIGNAL. */
void hot_on_signal(int sig, siginfo_t *si, void *ucontext);

/* A thread dump's part of the handler (hot/dump.c): fills the slot the
 * signal names, if it is still armed. */
void hot_dump_on_signal(const siginfo_t *si, const void *ucontext);

/* Appends a HOT_REPEAT wall record for tid (the wall sampler, outside
 * signal context, for a thread that has not run since its last sample).
 * Never blocks; false when it had to drop. */
bool hot_push_repeat(pid_t tid, char state, uint64_t weight);

static inline bool hot_stripe_trylock(struct hot_stripe *s)
{
	int expect = 0;

	return atomic_compare_exchange_strong_explicit(&s->lock, &expect, 1,
						       memory_order_acquire,
						       memory_order_relaxed);
}

static inline void hot_stripe_unlock(struct hot_stripe *s)
{
	atomic_store_explicit(&s->lock, 0, memory_order_release);
}

#endif
