/* schedule_spec: what a schedule (continuous profiling) is asked to do —
 * its selector, modes, duration, period, keep and budget — and the one
 * check of it against the host's limits. A schedule comes from two
 * places, the API's body (api/api_schedules.c) and nprofd.conf's
 * [schedule NAME] sections (core/config.c); both fill a struct
 * schedule_spec their own way (JSON, key = value) and hand it to
 * schedule_spec_check, so a bound holds the same wherever it is written. */
#ifndef NPROF_DAEMON_SCHEDULE_SPEC_H
#define NPROF_DAEMON_SCHEDULE_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/core/selector.h"
#include "daemon/core/workers.h"

struct daemon_config;

#define SELECTOR_WORKERS_MAX 64
#define SCHEDULE_SPEC_MODES_MAX 128	/* "cpu,alloc": every mode fits */

/* The bounds no host setting moves (docs/api.md, "Schedules"). */
#define SCHEDULE_SPAN_MIN_NS 1000000000ull		/* duration, every, keep: 1 s */
#define SCHEDULE_EVERY_MAX_NS (24ull * 3600 * 1000000000ull)	/* a day */
#define SCHEDULE_KEEP_MAX_NS (366 * SCHEDULE_EVERY_MAX_NS)
#define SCHEDULE_KEEP_DEFAULT_NS SCHEDULE_EVERY_MAX_NS

/* Which workers a schedule records: one of a service (a glob on the
 * workers' service), worker ids, a container or a Kubernetes pod (the
 * start of its id), or one of nprofd.conf's unit, cgroup, exe and user
 * selectors. Which of them a user may see is decided elsewhere. */
struct schedule_selector {
	enum { BY_NONE, BY_SERVICE, BY_WORKERS, BY_CONTAINER, BY_POD, BY_CONFIG } kind;
	char service[CONFIG_VALUE_MAX];			/* BY_SERVICE: a glob; BY_CONTAINER,
							   BY_POD: the id's start */
	char workers[SELECTOR_WORKERS_MAX][WORKER_ID_MAX]; /* BY_WORKERS */
	size_t n_workers;
	struct selector config;				/* BY_CONFIG: unit, cgroup, exe, user */
};

/* The selector's kinds by the names the API's object and nprofd.conf's
 * keys give them, in the docs' order: "service", "workers", ... ; NULL
 * past the last. */
const char *schedule_selector_key(size_t i);
#define SCHEDULE_SELECTOR_KEYS "service, workers, container, pod, unit, cgroup, exe or user"

/* The key of s's kind ("service", "unit", ...); "" when it has none. */
const char *schedule_selector_kind_key(const struct schedule_selector *s);

/* value as the selector of kind key (a name above but "workers"): 0, or
 * -EINVAL with one line in why naming what is wrong and what to write. */
int schedule_selector_set(struct schedule_selector *s, const char *key, const char *value,
			  char *why, size_t len);

/* One more worker id for a "workers" selector (at most
 * SELECTOR_WORKERS_MAX): 0, or -EINVAL with why. */
int schedule_selector_add_worker(struct schedule_selector *s, const char *id, char *why,
				 size_t len);

/* The fields of a schedule, each named as the API's body and
 * nprofd.conf's [schedule NAME] name it. */
enum schedule_field {
	SF_SELECTOR, SF_MODES, SF_DURATION, SF_EVERY, SF_KEEP, SF_BUDGET, SF_COUNT
};
const char *schedule_field_name(enum schedule_field f);

struct schedule_spec {
	struct schedule_selector selector;
	char modes[SCHEDULE_SPEC_MODES_MAX];	/* known event names, comma-separated */
	uint64_t duration_ns, every_ns, keep_ns;
	double budget;				/* a share of one CPU: 0.01 for 1 % */
};

/* One more mode, by its name, into s->modes: 0, or -EINVAL with why
 * (a mode nprof does not have, one listed twice). */
int schedule_spec_add_mode(struct schedule_spec *s, const char *name, char *why, size_t len);

/* Whether s is one the host c allows: a selector, modes each switched
 * on in c ([instances] modes), duration from 1 s to [instances]
 * duration_max, every from duration to a day, keep from 1 s to 366 days,
 * budget above 0 and at most 100 %. 0, or -EINVAL with the field at
 * fault in *ret_field and one line in why saying what to write (the
 * caller adds where: a 400 naming the field, or FILE:LINE). */
int schedule_spec_check(const struct daemon_config *c, const struct schedule_spec *s,
			enum schedule_field *ret_field, char *why, size_t len);

#endif
