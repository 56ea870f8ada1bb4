/* The engine's events, and the probes behind engine_available_events. */
#include "engine/events.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/sched_switch.h"

#define HW_EVENT(id, c)                                                      \
	{ .def = &event_defs[id], .type = PERF_TYPE_HARDWARE, .config = c,   \
	  .value_kinds = { EVENT_VALUE_PERIOD } }

static const struct engine_event events[] = {
	{ .def = &event_defs[EVENT_CPU], .type = PERF_TYPE_SOFTWARE,
	  .config = PERF_COUNT_SW_CPU_CLOCK,
	  .value_kinds = { EVENT_VALUE_SAMPLES, EVENT_VALUE_PERIOD } },
	{ .def = &event_defs[EVENT_PAGE_FAULTS], .type = PERF_TYPE_SOFTWARE,
	  .config = PERF_COUNT_SW_PAGE_FAULTS, .value_kinds = { EVENT_VALUE_PERIOD } },
	{ .def = &event_defs[EVENT_CONTEXT_SWITCHES], .type = PERF_TYPE_SOFTWARE,
	  .config = PERF_COUNT_SW_CONTEXT_SWITCHES, .value_kinds = { EVENT_VALUE_PERIOD },
	  .context_switches = true },
	/* On-CPU samples every 10 ms of CPU, as cpu; off-CPU time from the
	 * scheduler, exact, whatever the interval. */
	{ .def = &event_defs[EVENT_WALL], .type = PERF_TYPE_SOFTWARE,
	  .config = PERF_COUNT_SW_CPU_CLOCK, .offcpu = true, .default_interval = 10000000,
	  .value_kinds = { EVENT_VALUE_TICKS, EVENT_VALUE_PERIOD } },
	{ .def = &event_defs[EVENT_OFFCPU], .type = PERF_TYPE_TRACEPOINT, .offcpu = true,
	  .value_kinds = { EVENT_VALUE_PERIOD, EVENT_VALUE_SAMPLES } },
	HW_EVENT(EVENT_CYCLES, PERF_COUNT_HW_CPU_CYCLES),
	HW_EVENT(EVENT_INSTRUCTIONS, PERF_COUNT_HW_INSTRUCTIONS),
	HW_EVENT(EVENT_CACHE_MISSES, PERF_COUNT_HW_CACHE_MISSES),
	HW_EVENT(EVENT_BRANCH_MISSES, PERF_COUNT_HW_BRANCH_MISSES),
};

const struct engine_event *engine_event_find(const char *name)
{
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (!strcmp(events[i].def->name, name))
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

uint64_t engine_event_interval(const struct engine_event *e, uint64_t interval)
{
	uint64_t v = interval ? interval
		     : e->default_interval ? e->default_interval : e->def->default_interval;

	return e->def->min_interval && v < e->def->min_interval ? e->def->min_interval : v;
}

void engine_event_attr(const struct engine_event *e, uint64_t interval,
		       struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = e->type;
	a->config = e->config;
	a->sample_period = engine_event_interval(e, interval);
	a->disabled = 1;
}

int engine_event_probe(const struct engine_event *e)
{
	struct sched_switch_format sf;
	struct perf_event_attr a;
	int fd;

	if (e->offcpu) {
		/* Off-CPU time needs the tracepoint, and the kernel's side. */
		int err = sched_switch_load(&sf, NULL);

		if (err < 0)
			return err;
		engine_event_attr(e, 0, &a);
		a.type = PERF_TYPE_TRACEPOINT;
		a.config = sf.id;
		a.sample_type = PERF_SAMPLE_RAW;
		fd = engine_perf_event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			return fd;
		close(fd);
		return 0;
	}
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
		n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
			     events[i].def->name);
		if (n < 0 || (size_t)n >= len - used)
			break; /* keep whole names only */
		used += (size_t)n;
	}
	buf[used] = '\0';
	return buf;
}
