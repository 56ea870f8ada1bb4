/* events: how the engine counts the events of profile/events.h that run
 * in it (perf type and config, what a sample adds to each value), and
 * probing which of them this host can count. Nothing else in the engine
 * switches on names. */
#ifndef NPROF_ENGINE_EVENTS_H
#define NPROF_ENGINE_EVENTS_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>

#include "profile/events.h"

#define ENGINE_EVENT_MAX_VALUES 2

/* What one sample adds to a value. */
enum event_value_kind {
	EVENT_VALUE_SAMPLES, /* 1 per sample */
	EVENT_VALUE_PERIOD,  /* the sample's period (ns for cpu, count else);
				off-CPU: the span's ns */
	EVENT_VALUE_TICKS,   /* 1 per sample; off-CPU: the span in intervals
				(docs/engine.md, "Units, as the agent's wall") */
};

/* An event of the table in profile/events.h, as perf_event_open counts it. */
struct engine_event {
	const struct event_def *def; /* name, intervals, values */
	uint32_t type;		  /* PERF_TYPE_* */
	uint64_t config;	  /* PERF_COUNT_* */
	enum event_value_kind value_kinds[ENGINE_EVENT_MAX_VALUES];
	bool context_switches;	  /* may fall back to switch records */
	/* Off-CPU spans from sched:sched_switch (sched_switch.h) too; with
	 * type PERF_TYPE_TRACEPOINT, only those (config found at run time). */
	bool offcpu;
	uint64_t default_interval; /* the engine's, when not the table's; 0: the table's */
};

/* The row named name, or NULL. */
const struct engine_event *engine_event_find(const char *name);

/* Opens e on the calling process with exclude_kernel=1 and closes it.
 * 0 when this host can count it, else -errno from perf_event_open. */
int engine_event_probe(const struct engine_event *e);

/* The interval e samples at: interval, else its default, at least its floor. */
uint64_t engine_event_interval(const struct engine_event *e, uint64_t interval);

/* Fills a with e's sampling attr: type, config, the period, disabled.
 * The recorder adds sample_type, the side-band bits and exclusions. */
void engine_event_attr(const struct engine_event *e, uint64_t interval,
		       struct perf_event_attr *a);

/* perf_event_open(2); glibc has no wrapper. */
int engine_perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu,
			   int group_fd, unsigned long flags);

#endif
