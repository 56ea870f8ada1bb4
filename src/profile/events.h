/* events: every event nprof records, in one table — its name, where it
 * runs (the engine's perf events, the agent inside the process), what
 * its interval counts and its default, the values each sample carries,
 * and how JFR names it. The CLI, the agent, the engine and the writers
 * read this table; docs/design.md's events table is this one, and
 * tests/unit/events_test.c holds the two together.
 *
 * Adding an event is adding a row here (and, for the engine, its perf
 * type in src/engine/events.c; for the agent, the code that samples it). */
#ifndef NPROF_PROFILE_EVENTS_H
#define NPROF_PROFILE_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/profile.h"

enum event_id {
	EVENT_CPU, EVENT_ITIMER, EVENT_WALL, EVENT_OFFCPU, EVENT_ALLOC, EVENT_HEAP, EVENT_LOCK,
	EVENT_PAGE_FAULTS, EVENT_CONTEXT_SWITCHES,
	EVENT_CYCLES, EVENT_INSTRUCTIONS, EVENT_CACHE_MISSES, EVENT_BRANCH_MISSES,
	EVENT_COUNT
};

/* Where an event runs: bits. */
#define EVENT_IN_ENGINE 1u /* nprof record PID, by perf_event_open */
#define EVENT_IN_AGENT 2u  /* libnprof.so, inside the process */

enum event_interval {
	EVENT_INTERVAL_TIME,  /* nanoseconds */
	EVENT_INTERVAL_BYTES, /* mean bytes between samples */
	EVENT_INTERVAL_COUNT, /* events between samples */
};

/* Defaults the agent's signal path needs as constants. */
#define EVENT_ALLOC_DEFAULT_BYTES (512u << 10)
#define EVENT_LOCK_DEFAULT_NS 10000ull

struct event_def {
	const char *name;
	unsigned runs;		    /* EVENT_IN_ENGINE | EVENT_IN_AGENT */
	bool interposed;	    /* agent: sampled by interposing libc calls */
	bool scheduler;		    /* engine: needs the scheduler's tracepoint
				       (root or CAP_PERFMON) */
	enum event_interval interval_kind;
	uint64_t default_interval;  /* in the interval's unit */
	uint64_t min_interval;	    /* the engine's floor (the kernel's); 0: none */
	uint64_t agent_min_interval;/* the agent's floor (signal cost); 0: none */
	const char *interval_unit;  /* profile.interval_unit: nanoseconds, bytes, events */
	struct value_type values[PROFILE_MAX_VALUES];
	unsigned nvalues;
	bool execution_sample;	    /* JFR: jdk.ExecutionSample, not nprof.Sample */
	const char *what;	    /* one line: what a sample stands for */
};

extern const struct event_def event_defs[EVENT_COUNT];

static inline const char *event_name(enum event_id e)
{
	return (unsigned)e < EVENT_COUNT ? event_defs[e].name : "?";
}

/* alloc, heap, lock: the agent samples them in its interposers. */
static inline bool event_interposed(enum event_id e)
{
	return (unsigned)e < EVENT_COUNT && event_defs[e].interposed;
}

/* The state frame that ends a wall or off-CPU stack, for a state as
 * /proc's letter ('R' running, 'S', 'D', 'T', 't', 'Z') or
 * EVENT_STATE_RUNNABLE: ready to run, waiting for a CPU (preempted). The
 * agent and the engine both end their stacks with these. */
#define EVENT_STATE_RUNNABLE 'r'
const char *event_state_frame(char state);

/* The row named name, or NULL. */
const struct event_def *event_find(const char *name);

/* The names of the events that run in where (EVENT_IN_*), separated
 * by ", ", into buf (len bytes); buf. */
const char *event_names(unsigned where, char *buf, unsigned len);

#endif
