/* engine: how a session samples. One engine per kind of event, each in a
 * file of its own — per-thread timers for cpu and itimer (timers.c), the
 * wall-clock sampler thread (wall.c), the malloc and lock interposers
 * (heap.c) — chosen from one table (agent_engine_for), so that session.c
 * (arming, draining, building, the lifecycle) switches on no event.
 *
 * Every hook runs under the session's lock, except thread_started and
 * thread_exiting (on the program's threads, as they come and go) and the
 * fork hooks (pthread_atfork). A NULL hook is one the engine needs not. */
#ifndef NPROF_AGENT_ENGINE_H
#define NPROF_AGENT_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/agent.h"

struct agent_engine {
	/* Starts sampling o->event every interval (ns or bytes, the
	 * session's choice from o); *effective may become another event
	 * (cpu without perf_events: itimer), the engine then running that
	 * one. 0, or -errno with d saying why. */
	int (*start)(const struct agent_options *o, uint64_t interval,
		     enum event_id *effective, struct diag *d);
	/* Stops its signals; the session then waits until no handler runs. */
	void (*stop)(void);
	/* After that wait: closes what the handlers used (fds, timers). */
	void (*release)(void);
	/* The profile, when the engine keeps its own samples (the
	 * interposers' table) rather than the session's stripes. */
	int (*profile)(enum event_id e, const struct agent_options *o, uint64_t start_real_ns,
		       uint64_t duration_ns, const char *ended, struct profile **ret,
		       struct diag *d);
	/* The control thread, every tick while the session runs. */
	void (*tick)(uint64_t now_mono_ns);
	/* What the engine has to say in the profile (fallbacks, failures). */
	void (*notes)(struct profile *p);
	/* A thread of the program started or is ending. */
	void (*thread_started)(pid_t tid);
	void (*thread_exiting)(pid_t tid);
	/* fork(): before (locks taken), after in the parent, in the child
	 * (the parent's engine forgotten); after an exec that failed. */
	void (*before_fork)(void);
	void (*after_fork_parent)(void);
	void (*after_fork_child)(void);
	void (*after_failed_exec)(void);
	/* It samples with SIGPROF (an exec then ignores it across). */
	bool signals;
};

extern const struct agent_engine agent_engine_timers; /* cpu, itimer: timers.c */
extern const struct agent_engine agent_engine_wall;   /* wall.c */
extern const struct agent_engine agent_engine_mem;    /* alloc, heap, lock: heap.c */

/* The engine of event e (never NULL for an agent event). */
const struct agent_engine *agent_engine_for(enum event_id e);

/* Every engine, once each, for hooks that concern all (fork). */
extern const struct agent_engine *const agent_engines[3];

#endif
