#include "profile/events.h"

#include <stdio.h>
#include <string.h>

#define TIME_VALUES(v) { { "samples", "count" }, { v, "nanoseconds" } }, .nvalues = 2
#define HW_INTERVAL 1000003 /* prime, like perf's default, to avoid aliasing */
#define HW_EVENT(id, n)                                                        \
	[id] = { .name = n, .runs = EVENT_IN_ENGINE,                           \
		 .interval_kind = EVENT_INTERVAL_COUNT,                        \
		 .default_interval = HW_INTERVAL, .interval_unit = "events",   \
		 .values = { { n, "count" } }, .nvalues = 1,                   \
		 .what = "hardware " n ", every INTERVAL of them (needs a PMU)" }

const struct event_def event_defs[EVENT_COUNT] = {
	[EVENT_CPU] = {
		.name = "cpu", .runs = EVENT_IN_ENGINE | EVENT_IN_AGENT,
		.interval_kind = EVENT_INTERVAL_TIME, .default_interval = 10000000,
		/* The hrtimer behind cpu-clock never fires faster than 10 us;
		 * the agent's signal per sample costs more below 100 us. */
		.min_interval = 10000, .agent_min_interval = 100000,
		.interval_unit = "nanoseconds", .values = TIME_VALUES("cpu"),
		.execution_sample = true,
		.what = "on-CPU time, per thread (perf cpu-clock)",
	},
	[EVENT_ITIMER] = {
		.name = "itimer", .runs = EVENT_IN_AGENT,
		.interval_kind = EVENT_INTERVAL_TIME, .default_interval = 10000000,
		.agent_min_interval = 100000,
		.interval_unit = "nanoseconds", .values = TIME_VALUES("cpu"),
		.execution_sample = true,
		.what = "on-CPU time from per-thread CPU timers, where perf events are denied",
	},
	[EVENT_WALL] = {
		/* The engine's on-CPU period is cpu's 10 ms default
		 * (src/engine/events.c); off-CPU time comes from every switch. */
		.name = "wall", .runs = EVENT_IN_ENGINE | EVENT_IN_AGENT, .scheduler = true,
		.interval_kind = EVENT_INTERVAL_TIME, .default_interval = 50000000,
		.agent_min_interval = 100000,
		.interval_unit = "nanoseconds", .values = TIME_VALUES("wall"),
		.execution_sample = true,
		.min_interval = 10000,
		.what = "wall-clock time of every thread, running or not",
	},
	[EVENT_OFFCPU] = {
		.name = "offcpu", .runs = EVENT_IN_ENGINE, .scheduler = true,
		.interval_kind = EVENT_INTERVAL_COUNT, .default_interval = 1,
		.interval_unit = "events",
		.values = { { "offcpu", "nanoseconds" }, { "switches", "count" } }, .nvalues = 2,
		.what = "time off a CPU (blocked, sleeping, waiting for a CPU), from every context switch",
	},
	[EVENT_ALLOC] = {
		.name = "alloc", .runs = EVENT_IN_AGENT, .interposed = true,
		.interval_kind = EVENT_INTERVAL_BYTES,
		.default_interval = EVENT_ALLOC_DEFAULT_BYTES, .interval_unit = "bytes",
		.values = { { "alloc_space", "bytes" }, { "alloc_objects", "count" } },
		.nvalues = 2,
		.what = "bytes and objects allocated (sampled by bytes, unbiased)",
	},
	[EVENT_HEAP] = {
		.name = "heap", .runs = EVENT_IN_AGENT, .interposed = true,
		.interval_kind = EVENT_INTERVAL_BYTES,
		.default_interval = EVENT_ALLOC_DEFAULT_BYTES, .interval_unit = "bytes",
		/* In use first: text outputs, flame graphs and dot show value 0. */
		.values = { { "inuse_space", "bytes" }, { "inuse_objects", "count" },
			    { "alloc_space", "bytes" }, { "alloc_objects", "count" } },
		.nvalues = 4,
		.what = "bytes and objects in use now, and allocated since enable",
	},
	[EVENT_LOCK] = {
		.name = "lock", .runs = EVENT_IN_AGENT, .interposed = true,
		.interval_kind = EVENT_INTERVAL_TIME,
		.default_interval = EVENT_LOCK_DEFAULT_NS, .interval_unit = "nanoseconds",
		.values = { { "delay", "nanoseconds" }, { "contentions", "count" } },
		.nvalues = 2,
		.what = "time waited on contended pthread mutexes and rwlocks",
	},
	[EVENT_PAGE_FAULTS] = {
		.name = "page-faults", .runs = EVENT_IN_ENGINE,
		.interval_kind = EVENT_INTERVAL_COUNT, .default_interval = 1,
		.interval_unit = "events", .values = { { "page-faults", "count" } },
		.nvalues = 1, .what = "page faults",
	},
	[EVENT_CONTEXT_SWITCHES] = {
		.name = "context-switches", .runs = EVENT_IN_ENGINE,
		.interval_kind = EVENT_INTERVAL_COUNT, .default_interval = 1,
		.interval_unit = "events", .values = { { "context-switches", "count" } },
		.nvalues = 1, .what = "context switches: where threads block",
	},
	HW_EVENT(EVENT_CYCLES, "cycles"),
	HW_EVENT(EVENT_INSTRUCTIONS, "instructions"),
	HW_EVENT(EVENT_CACHE_MISSES, "cache-misses"),
	HW_EVENT(EVENT_BRANCH_MISSES, "branch-misses"),
};

const char *event_state_frame(char state)
{
	switch (state) {
	case 'R': return "[running]";
	case EVENT_STATE_RUNNABLE: return "[runnable]";
	case 'S': return "[sleeping]";
	case 'D': return "[uninterruptible]";
	case 'T': case 't': return "[stopped]";
	case 'Z': return "[zombie]";
	default: return "[unknown state]";
	}
}

const struct event_def *event_find(const char *name)
{
	for (unsigned i = 0; name && i < EVENT_COUNT; i++)
		if (!strcmp(event_defs[i].name, name))
			return &event_defs[i];
	return NULL;
}

const char *event_names(unsigned where, char *buf, unsigned len)
{
	size_t used = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	for (unsigned i = 0; i < EVENT_COUNT; i++) {
		int n;

		if (!(event_defs[i].runs & where))
			continue;
		n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", event_defs[i].name);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	return buf;
}
