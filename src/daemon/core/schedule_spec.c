/* schedule_spec: a schedule's fields and their one check
 * (schedule_spec.h). */
#include "daemon/core/schedule_spec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/units.h"
#include "daemon/core/config.h"
#include "profile/events.h"

/* The selector's keys, as docs/api.md lists them; the config's kinds by
 * their nprofd.conf names. */
static const struct {
	const char *key;
	int by;			/* BY_... */
	enum selector_kind config;	/* BY_CONFIG's kind */
} KEYS[] = {
	{ "service", BY_SERVICE, 0 }, { "workers", BY_WORKERS, 0 },
	{ "container", BY_CONTAINER, 0 }, { "pod", BY_POD, 0 },
	{ "unit", BY_CONFIG, SELECT_UNIT }, { "cgroup", BY_CONFIG, SELECT_CGROUP },
	{ "exe", BY_CONFIG, SELECT_EXE }, { "user", BY_CONFIG, SELECT_USER },
};
#define N_KEYS (sizeof(KEYS) / sizeof(KEYS[0]))

static const char *const FIELDS[SF_COUNT] = {
	[SF_SELECTOR] = "selector", [SF_MODES] = "modes", [SF_DURATION] = "duration",
	[SF_EVERY] = "every", [SF_KEEP] = "keep", [SF_BUDGET] = "budget",
};

const char *schedule_field_name(enum schedule_field f)
{
	return (unsigned)f < SF_COUNT ? FIELDS[f] : "?";
}

const char *schedule_selector_key(size_t i)
{
	return i < N_KEYS ? KEYS[i].key : NULL;
}

const char *schedule_selector_kind_key(const struct schedule_selector *s)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (KEYS[i].by == (int)s->kind && (s->kind != BY_CONFIG || KEYS[i].config == s->config.kind))
			return KEYS[i].key;
	return "";
}

__attribute__((format(printf, 3, 4)))
static int fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int schedule_selector_set(struct schedule_selector *s, const char *key, const char *value,
			  char *why, size_t len)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		if (strcmp(key, KEYS[i].key) || KEYS[i].by == BY_WORKERS)
			continue;
		if (!value[0] || strlen(value) >= sizeof(s->service))
			return fail(why, len, "selector: %s must be a non-empty string of at most %zu "
				    "bytes; give a name or a glob as GET /api/v1/workers shows them",
				    key, sizeof(s->service) - 1);
		if (KEYS[i].config == SELECT_CGROUP && KEYS[i].by == BY_CONFIG && value[0] != '/')
			return fail(why, len, "selector: cgroup must be an absolute cgroup path; give "
				    "one such as /system.slice/nginx.service");
		if (KEYS[i].by == BY_CONFIG) {
			s->config.kind = KEYS[i].config;
			snprintf(s->config.value, sizeof(s->config.value), "%s", value);
		} else {
			snprintf(s->service, sizeof(s->service), "%s", value);
		}
		s->kind = KEYS[i].by;
		return 0;
	}
	return fail(why, len, "selector: unknown key '%.32s'; use " SCHEDULE_SELECTOR_KEYS, key);
}

int schedule_selector_add_worker(struct schedule_selector *s, const char *id, char *why,
				 size_t len)
{
	if (s->n_workers == SELECTOR_WORKERS_MAX)
		return fail(why, len, "selector: workers must be a list of 1 to %d worker ids; "
			    "give fewer (GET /api/v1/workers lists them)", SELECTOR_WORKERS_MAX);
	if (!id[0] || strlen(id) >= WORKER_ID_MAX)
		return fail(why, len, "selector: each of workers must be a worker id, "
			    "\"PID-STARTTIME\"; give them as GET /api/v1/workers lists them");
	snprintf(s->workers[s->n_workers++], WORKER_ID_MAX, "%s", id);
	s->kind = BY_WORKERS;
	return 0;
}

int schedule_spec_add_mode(struct schedule_spec *s, const char *name, char *why, size_t len)
{
	const struct event_def *ev = event_find(name);
	char names[256], buf[SCHEDULE_SPEC_MODES_MAX], *save = NULL;
	size_t n = strlen(s->modes);

	if (!ev)
		return fail(why, len, "mode '%.32s' is not one nprof has; use one of: %s", name,
			    event_names(EVENT_IN_ENGINE | EVENT_IN_AGENT, names, sizeof(names)));
	snprintf(buf, sizeof(buf), "%s", s->modes);
	for (char *m = strtok_r(buf, ",", &save); m; m = strtok_r(NULL, ",", &save))
		if (event_find(m) == ev)
			return fail(why, len, "mode %s is listed twice; list it once", ev->name);
	/* (every mode once fits: SCHEDULE_SPEC_MODES_MAX holds them all) */
	snprintf(s->modes + n, sizeof(s->modes) - n, "%s%s", n ? "," : "", ev->name);
	return 0;
}

/* Whether ns is in [lo, hi]; if not, why says so for field f. */
static bool span_ok(enum schedule_field f, uint64_t ns, uint64_t lo, uint64_t hi,
		    const char *hi_is, char *why, size_t len)
{
	char a[32], b[32];

	if (ns >= lo && ns <= hi)
		return true;
	fail(why, len, "%s must be a duration from %s to %s%s; give one such as \"10s\" or "
	     "\"5m\"", FIELDS[f],
	     units_format_duration(lo, a, sizeof(a)), units_format_duration(hi, b, sizeof(b)),
	     hi_is);
	return false;
}

/* The first field of s at fault, with why; SF_COUNT when none is. */
static enum schedule_field first_fault(const struct daemon_config *c,
				       const struct schedule_spec *s, char *why, size_t len)
{
	char buf[SCHEDULE_SPEC_MODES_MAX], key[128], names[256], *save = NULL;

	if (s->selector.kind == BY_NONE)
		return fail(why, len, "a schedule needs a selector; give one of "
			    SCHEDULE_SELECTOR_KEYS),
		       SF_SELECTOR;
	if (!s->modes[0])
		return fail(why, len, "modes must list the modes to record; give some, such as "
			    "cpu, alloc"),
		       SF_MODES;
	snprintf(buf, sizeof(buf), "%s", s->modes);
	for (char *m = strtok_r(buf, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
		const struct event_def *ev = event_find(m);

		if (!ev)
			return fail(why, len, "mode '%.32s' is not one nprof has; use one of: %s", m,
				    event_names(EVENT_IN_ENGINE | EVENT_IN_AGENT, names,
						sizeof(names))), SF_MODES;
		if (!config_mode_allowed(c, NULL, (enum event_id)(ev - event_defs), key,
					 sizeof(key)))
			return fail(why, len, "mode %s is switched off by the operator (%s in "
				    "nprofd.conf); record another, or ask an admin to switch it on",
				    ev->name, key), SF_MODES;
	}
	if (!span_ok(SF_DURATION, s->duration_ns, SCHEDULE_SPAN_MIN_NS, c->duration_max_ns,
		     " ([instances] duration_max)", why, len))
		return SF_DURATION;
	if (!s->every_ns)
		return fail(why, len, "every is required; give a duration such as \"60s\""),
		       SF_EVERY;
	if (!span_ok(SF_EVERY, s->every_ns, SCHEDULE_SPAN_MIN_NS, SCHEDULE_EVERY_MAX_NS, "", why,
		     len))
		return SF_EVERY;
	if (!span_ok(SF_KEEP, s->keep_ns, SCHEDULE_SPAN_MIN_NS, SCHEDULE_KEEP_MAX_NS, "", why, len))
		return SF_KEEP;
	if (!(s->budget > 0 && s->budget <= 1))
		return fail(why, len, "budget must be a share of one CPU above 0%% and at most "
			    "100%%; give one such as \"1%%\" or \"0.5%%\""), SF_BUDGET;
	/* (between fields last: each one's own fault is named first) */
	if (s->every_ns < s->duration_ns)
		return fail(why, len, "every (the period) must be at least duration (each "
			    "recording's length); give a longer every or a shorter duration"),
		       SF_EVERY;
	return SF_COUNT;
}

int schedule_spec_check(const struct daemon_config *c, const struct schedule_spec *s,
			enum schedule_field *ret_field, char *why, size_t len)
{
	enum schedule_field f = first_fault(c, s, why, len);

	if (f == SF_COUNT)
		return 0;
	*ret_field = f;
	return -EINVAL;
}
