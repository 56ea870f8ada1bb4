/* The event table, and the probes behind engine_available_events. */
#include "engine/events.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/engine.h"

#define HW_INTERVAL 1000003 /* prime, like perf's default, to avoid aliasing */

#define HW_EVENT(n, c)                                                     \
	{                                                                  \
		.name = n, .type = PERF_TYPE_HARDWARE, .config = c,        \
		.default_interval = HW_INTERVAL, .interval_unit = "events",\
		.values = { { n, "count" } },                              \
		.value_kinds = { EVENT_VALUE_PERIOD }, .nvalues = 1,       \
	}

static const struct engine_event events[] = {
	{
		.name = "cpu",
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.default_interval = 10000000,
		/* The hrtimer behind cpu-clock never fires faster than
		 * 10 us, whatever period is asked for. */
		.min_interval = 10000,
		.interval_unit = "nanoseconds",
		.values = { { "samples", "count" }, { "cpu", "nanoseconds" } },
		.value_kinds = { EVENT_VALUE_SAMPLES, EVENT_VALUE_PERIOD },
		.nvalues = 2,
	},
	{
		.name = "page-faults",
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_PAGE_FAULTS,
		.default_interval = 1,
		.interval_unit = "events",
		.values = { { "page-faults", "count" } },
		.value_kinds = { EVENT_VALUE_PERIOD },
		.nvalues = 1,
	},
	{
		.name = "context-switches",
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CONTEXT_SWITCHES,
		.default_interval = 1,
		.interval_unit = "events",
		.values = { { "context-switches", "count" } },
		.value_kinds = { EVENT_VALUE_PERIOD },
		.nvalues = 1,
		.context_switches = true,
	},
	HW_EVENT("cycles", PERF_COUNT_HW_CPU_CYCLES),
	HW_EVENT("instructions", PERF_COUNT_HW_INSTRUCTIONS),
	HW_EVENT("cache-misses", PERF_COUNT_HW_CACHE_MISSES),
	HW_EVENT("branch-misses", PERF_COUNT_HW_BRANCH_MISSES),
};

const struct engine_event *engine_event_find(const char *name)
{
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (!strcmp(events[i].name, name))
			return &events[i];
	return NULL;
}

bool engine_event_known(const char *name)
{
	return name && engine_event_find(name) != NULL;
}

int engine_perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu,
			   int group_fd, unsigned long flags)
{
	long fd = syscall(SYS_perf_event_open, a, pid, cpu, group_fd, flags);

	return fd < 0 ? -errno : (int)fd;
}

void engine_event_attr(const struct engine_event *e, uint64_t interval,
		       struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = e->type;
	a->config = e->config;
	a->sample_period = interval ? interval : e->default_interval;
	if (e->min_interval && a->sample_period < e->min_interval)
		a->sample_period = e->min_interval;
	a->disabled = 1;
}

int engine_event_probe(const struct engine_event *e)
{
	struct perf_event_attr a;
	int fd;

	engine_event_attr(e, 0, &a);
	a.sample_type = PERF_SAMPLE_IP;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = engine_perf_event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

const char *engine_available_events(char *buf, unsigned len)
{
	size_t used = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		int n;

		if (engine_event_probe(&events[i]) < 0)
			continue;
		n = snprintf(buf + used, len - used, "%s%s", used ? " " : "",
			     events[i].name);
		if (n < 0 || (size_t)n >= len - used)
			break; /* keep whole names only */
		used += (size_t)n;
	}
	buf[used] = '\0';
	return buf;
}
