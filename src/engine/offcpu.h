/* offcpu: off-CPU spans from a sequence of context switches, and the
 * samples they stand for. Pure: no perf, no I/O; the recorder feeds it
 * (docs/engine.md, "Wall and off-CPU time") and the unit test feeds it
 * synthetic switches.
 *
 * Switches arrive one CPU ring at a time, so out of order: offcpu_add
 * queues them, offcpu_flush(before) sorts the queue by time and accounts
 * the switches older than `before` (every ring has been read past it),
 * keeping the rest for the next flush. Per thread, an out opens a span
 * with the out's stack and state, the next in closes it and reports it
 * through on_span. A switch lost by the kernel shows as an in while the
 * thread is on a CPU, or an out while it is off one: that span is
 * dropped and counted in `unpaired`, never guessed.
 *
 * Single-threaded. */
#ifndef NPROF_ENGINE_OFFCPU_H
#define NPROF_ENGINE_OFFCPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/id_index.h"

/* Switches kept waiting at most; past it the oldest are accounted early
 * (a ring drained late may then pair wrongly, which unpaired counts). */
#define OFFCPU_MAX_QUEUE (1u << 20)

enum offcpu_kind {
	OFFCPU_OUT, /* the thread left the CPU: time, stack, state */
	OFFCPU_IN,  /* the thread is back on a CPU: time */
};

/* The state a thread left the CPU in, as /proc's letters: 'S' sleeping,
 * 'D' uninterruptible, 'R' runnable (preempted, or it yielded), 'T'
 * stopped, 'X' exiting (no span follows). */
struct offcpu_switch {
	uint64_t time_ns;
	pid_t tid;
	uint8_t kind;	/* enum offcpu_kind */
	char state;	/* OUT */
	uint32_t stack;	/* OUT: the caller's id for where it left */
	uint32_t seq;	/* set by offcpu_add: ties keep arrival order */
};

struct offcpu_span {
	pid_t tid;
	uint32_t stack;
	char state;
	uint64_t start_ns, ns;
};

typedef void (*offcpu_span_fn)(void *ctx, const struct offcpu_span *s);

struct offcpu_thread; /* private */

struct offcpu {
	uint64_t start_ns;	/* no span starts before it */
	offcpu_span_fn on_span;
	void *ctx;
	uint64_t unpaired;	/* spans dropped: a switch was lost */
	uint64_t early;		/* switches accounted early: queue full */

	struct offcpu_switch *queue;
	size_t nqueue, queue_cap;
	uint32_t seq;
	struct offcpu_thread *threads;
	size_t nthreads, threads_cap;
	struct id_index thread_index;
};

void offcpu_init(struct offcpu *o, uint64_t start_ns, offcpu_span_fn on_span, void *ctx);
void offcpu_release(struct offcpu *o);

/* A thread as it was at start_ns: off a CPU since then, in state with
 * stack, or on one (on_cpu). Threads never begun start at their first
 * switch (threads created during the recording: their first in). 0 or
 * -ENOMEM. */
int offcpu_thread_begin(struct offcpu *o, pid_t tid, bool on_cpu, char state, uint32_t stack);

/* Queues a switch. 0 or -ENOMEM (the switch is then lost, and the span
 * it belongs to counted as unpaired). */
int offcpu_add(struct offcpu *o, const struct offcpu_switch *sw);

/* Accounts every queued switch older than before_ns, in time order. */
void offcpu_flush(struct offcpu *o, uint64_t before_ns);

/* Accounts every queued switch, then closes the spans still open at
 * end_ns. */
void offcpu_finish(struct offcpu *o, uint64_t end_ns);

/* Samples for one thread's off-CPU stacks at an interval of unit ns: the
 * thread's total ns in units (rounded to the nearest) shared among its
 * stacks by largest remainder (ties to the earlier), so each stack gets
 * its own ns in units rounded up or down and the thread's sum is its
 * total's. ret_samples[i] for ns[i]. 0 or -ENOMEM. */
int offcpu_apportion(const uint64_t *ns, size_t n, uint64_t unit, uint64_t *ret_samples);

#endif
