/* recorder: the raw half of the engine — perf events in, aggregated
 * address chains out, no symbols.
 *
 * recorder_new checks the target and what we may sample (kernel frames
 * or user space only, or nothing, with the reason), recorder_start opens
 * one event per (thread, CPU) with inherit and one ring per CPU, and
 * recorder_run reads the rings until the duration, *stop or the target's
 * exit, aggregating samples by (thread, kind, address chain). The engine
 * (engine.c) turns the result into a profile; tests read it directly.
 *
 * Single-threaded: one thread calls everything, in order. */
#ifndef NPROF_ENGINE_RECORDER_H
#define NPROF_ENGINE_RECORDER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"
#include "engine/events.h"
#include "engine/unwinder.h"
#include "profile/chain_table.h"
#include "profile/chain_timeline.h"
#include "symbolize/symbolize.h" /* struct mapping only */

/* Bounds on what one recording may hold; past them samples are counted
 * in stats.table_full and dropped. */
#define RECORDER_MAX_STACKS (1u << 20)
#define RECORDER_MAX_IPS (1u << 25)
#define RECORDER_MAX_THREADS (1u << 20)
#define RECORDER_DEFAULT_DEPTH 2048
/* The timeline keeps the first this many samples' times (24 bytes each). */
#define RECORDER_MAX_EVENTS (1u << 21)

/* A chain's kind (struct chain's kind). Its samples and weight: */
enum raw_kind {
	RAW_SAMPLE,		/* a sampled address chain: samples, the sum
				   of their periods */
	RAW_SWITCH_VOLUNTARY,	/* switch record: the thread blocked */
	RAW_SWITCH_PREEMPT,	/* switch record: the thread was preempted */
	RAW_OFFCPU,		/* off-CPU spans from where the thread left the
				   CPU (sched_switch): switches, ns off CPU;
				   state says why: the state letter (offcpu.h),
				   or EVENT_STATE_RUNNABLE */
};

/* struct chain's flags: RAW_OFFCPU, where the thread was is unknown. */
#define RAW_UNKNOWN_STACK 1

struct raw_thread {
	pid_t tid;
	char name[16]; /* TASK_COMM_LEN; "" when never learnt */
};

struct recorder_stats {
	uint64_t samples;	/* samples and switches aggregated */
	uint64_t lost;		/* records the kernel dropped (ring full) */
	uint64_t throttled;	/* times the kernel throttled the event */
	uint64_t truncated;	/* samples whose stack stopped before the root */
	uint64_t truncated_by[UNWOUND_NEND]; /* the same, by enum unwound_end */
	uint64_t unwind_failed; /* samples without any address */
	uint64_t table_full;	/* samples dropped: a RECORDER_MAX_* hit */
	uint64_t other_process; /* samples of child processes, not kept */
	uint64_t duplicates;	/* same sample seen by two of our events */
	uint64_t mappings;	/* MMAP2 records passed on */
	uint64_t offcpu_unpaired;/* off-CPU spans dropped: a switch was lost */
	uint64_t offcpu_early;	/* switches accounted before every ring was read */
	unsigned begun_unknown; /* threads off CPU at the start, stack unknown */
	unsigned threads_opened;/* threads we opened events on directly */
	unsigned events_opened; /* perf event fds */
	unsigned cpus;
	unsigned rescans;	/* /proc/PID/task passes until stable */
	size_t ring_bytes;	/* data bytes per CPU ring */
	size_t ring_wanted;	/* what we asked for before the mlock limits */
};

/* An idle step is taken only while this much of the duration is left, so
 * that it never makes the recording end late. */
#define RECORDER_IDLE_MIN_NS (200ull * 1000000)

struct recorder_config {
	pid_t pid;
	const struct engine_event *event;
	uint64_t interval;	/* 0: the event's default */
	unsigned max_depth;	/* 0: RECORDER_DEFAULT_DEPTH */
	const struct unwinder *unwinder; /* NULL: fp */
	/* The target is our child, held before exec: arm the events with
	 * enable_on_exec so only the new program is recorded. */
	bool enable_on_exec;
	/* Every executable mapping the target makes, in arrival order.
	 * Called from recorder_run. */
	void (*on_mapping)(void *ctx, const struct mapping *m);
	/* Called from recorder_run after every read (at least every 100
	 * ms): for a progress line, and for work to overlap with the
	 * recording (reading symbol tables) when idle is true -- while more
	 * than RECORDER_IDLE_MIN_NS of the duration is left -- one bounded
	 * step at a time. Returns whether there is more such work. */
	bool (*between_reads)(void *ctx, bool idle);
	void *ctx;
	/* Testing: pretend kernel sampling was refused, as for a
	 * non-root user with kernel.perf_event_paranoid=2. */
	bool force_user_only;
};

struct recorder {
	/* Set by recorder_new. */
	pid_t pid;
	bool kernel;		/* kernel frames are sampled */
	bool offcpu;		/* off-CPU spans from sched_switch */
	bool tracefs_mounted;	/* ... for which nprof mounted tracefs */
	bool switch_records;	/* context-switches from switch records */
	uint64_t interval;	/* the effective sampling period */
	unsigned max_stack;	/* frames per sample: max_depth, and for fp
				   also kernel.perf_event_max_stack */
	unsigned kernel_max_stack; /* min(max_depth, kernel.perf_event_max_stack) */
	char comm[16];		/* the target's name; updated on exec */

	/* Results, valid after recorder_run. */
	struct chain_table chains; /* by (thread, kind, state, chain) */
	struct raw_thread *threads;
	size_t nthreads;
	/* Each sample's time (value 1), each off-CPU span's (its ns), in
	 * arrival order, per ring roughly sorted. */
	struct chain_timeline timeline;
	bool target_exited;
	uint64_t start_ns;	/* CLOCK_REALTIME when the events were enabled */
	uint64_t start_mono_ns;	/* CLOCK_MONOTONIC at the same moment */
	uint64_t duration_ns;	/* recorded time actually covered */
	struct recorder_stats stats;

	struct recorder_private *priv;
};

/* Checks the target exists and probes the event on it: kernel frames
 * if allowed, else user space only; fails with -ESRCH, -EACCES/-EPERM,
 * -ENOENT (event not countable here) or -EINVAL, d naming cause and fix.
 * Raises RLIMIT_NOFILE's soft limit to the hard one. */
int recorder_new(const struct recorder_config *c, struct recorder **ret,
		 struct diag *d);

/* Opens the events on every thread and maps the rings; enables them
 * (or arms enable_on_exec). 0 or -errno with d set. */
int recorder_start(struct recorder *r, struct diag *d);

/* Reads until duration_ns passes (0: no limit), *stop becomes nonzero
 * (checked at least every 100 ms) or the target exits. 0 or -errno. */
int recorder_run(struct recorder *r, uint64_t duration_ns,
		 volatile sig_atomic_t *stop, struct diag *d);

void recorder_free(struct recorder *r);

/* Off-CPU recordings: what thread tid was doing when the recording
 * started (after recorder_start, before recorder_run). on_cpu: running;
 * else off CPU since the start in state ('S', 'D', ... or
 * EVENT_STATE_RUNNABLE) at ips (leaf first, user frames; n 0: unknown),
 * until its first switch-in. 0 or -errno. */
int recorder_begin_thread(struct recorder *r, pid_t tid, bool on_cpu, char state,
			  const uint64_t *ips, unsigned n, bool truncated);

/* The latest name of tid, "" when unknown. */
const char *recorder_thread_name(const struct recorder *r, pid_t tid);

/* The next lines are shared by engine.c and the tests. */
uint64_t recorder_sysctl(const char *path, uint64_t dflt);

#endif
