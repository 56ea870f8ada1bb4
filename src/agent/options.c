/* options: the "event=cpu,interval=10ms,file=..." text that NPROF_START,
 * nprof_start() and the control socket take. docs/agent.md lists the keys. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "base/units.h"

static int parse_bool(const char *v, bool *ret)
{
	if (!v || !strcmp(v, "") || !strcmp(v, "1") || !strcmp(v, "true") ||
	    !strcmp(v, "yes") || !strcmp(v, "on"))
		*ret = true;
	else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no") ||
		 !strcmp(v, "off"))
		*ret = false;
	else
		return -EINVAL;
	return 0;
}

static int parse_uint(const char *v, unsigned lo, unsigned hi, unsigned *ret)
{
	char *end;
	unsigned long x;

	if (!v || !*v)
		return -EINVAL;
	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno || *end || x < lo || x > hi)
		return -EINVAL;
	*ret = (unsigned)x;
	return 0;
}

/* interval= means bytes for alloc and heap, a time for the others (a
 * bare number: nanoseconds, as in asprof's -i). */
static int parse_interval(struct agent_options *o, struct diag *d)
{
	const struct event_def *e = &event_defs[o->event];
	const char *val = o->interval_text;

	o->interval_ns = o->interval_bytes = 0;
	if (e->interval_kind == EVENT_INTERVAL_BYTES) {
		if (units_parse_count(val, &o->interval_bytes) < 0 || !o->interval_bytes)
			return diag_set(d, -EINVAL,
					"interval=%s: not a byte count for %s; use 512k, 1m, 65536",
					val, e->name);
	} else if (!e->agent_min_interval) {
		if (units_parse_duration_ns(val, 1, &o->interval_ns) < 0)
			return diag_set(d, -EINVAL,
					"interval=%s: not a time for %s; use 10us, 1ms, 0 (every one)",
					val, e->name);
	} else if (units_parse_duration_ns(val, 1, &o->interval_ns) < 0 ||
		   o->interval_ns < e->agent_min_interval) {
		return diag_set(d, -EINVAL,
				"interval=%s: not a time of %lluus or more; use 10ms, 1000us, 1s", val,
				(unsigned long long)(e->agent_min_interval / 1000));
	}
	return 0;
}

static bool has_control(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

int agent_options_set(struct agent_options *o, const char *key, const char *val,
		      struct diag *d)
{
	bool b;

	/* Errors echo what they were given: never a control character, so
	 * that each stays one printable line wherever it is shown. */
	if (has_control(key) || has_control(val))
		return diag_set(d, -EINVAL, "an option holds a control character; use printable "
				"text (key=value, separated by commas)");

	if (!strcmp(key, "event")) {
		const struct event_def *e = event_find(val);
		char names[128];

		if (!e || !(e->runs & EVENT_IN_AGENT))
			return diag_set(d, -EINVAL, "event=%s: unknown event; the agent has %s",
					val ? val : "", event_names(EVENT_IN_AGENT, names, sizeof(names)));
		o->event = (enum event_id)(e - event_defs);
		if (o->interval_text[0])
			return parse_interval(o, d);
	} else if (!strcmp(key, "interval")) {
		if (!val || !*val || strlen(val) >= sizeof(o->interval_text))
			return diag_set(d, -EINVAL, "interval=%s: give a value", val ? val : "");
		strcpy(o->interval_text, val);
		return parse_interval(o, d);
	} else if (!strcmp(key, "duration")) {
		/* A bare number is seconds, as in asprof's -d. */
		if (!val || units_parse_duration_ns(val, 1000000000ull, &o->duration_ns) < 0)
			return diag_set(d, -EINVAL,
					"duration=%s: not a duration; use seconds (30) or a unit (500ms, 2m)",
					val ? val : "");
	} else if (!strcmp(key, "jstackdepth") || !strcmp(key, "depth")) {
		if (parse_uint(val, 1, 2048, &o->max_depth) < 0)
			return diag_set(d, -EINVAL, "%s=%s: not a stack depth; use 1 to 2048", key,
					val ? val : "");
	} else if (!strcmp(key, "wall_threads")) {
		if (parse_uint(val, 1, 4096, &o->wall_threads) < 0)
			return diag_set(d, -EINVAL,
					"wall_threads=%s: threads signalled per wall tick; use 1 to 4096",
					val ? val : "");
	} else if (!strcmp(key, "thread") || !strcmp(key, "threads") || !strcmp(key, "simple") ||
		   !strcmp(key, "reverse")) {
		if (parse_bool(val, &b) < 0)
			return diag_set(d, -EINVAL, "%s=%s: use true or false", key, val);
		if (key[0] == 't')
			o->per_thread = b;
		else if (key[0] == 's')
			o->simple = b;
		else
			o->out.reverse = b;
	} else if (!strcmp(key, "output") || !strcmp(key, "format")) {
		if (!val || output_format_parse(val, &o->format) < 0)
			return diag_set(d, -EINVAL, "%s=%s: unknown format; use one of: %s", key,
					val ? val : "", output_format_names());
		o->have_format = true;
	} else if (!strcmp(key, "file")) {
		if (!val || !*val || strlen(val) >= sizeof(o->file))
			return diag_set(d, -EINVAL, "file=%s: give a path (%%p pid, %%t time)",
					val ? val : "");
		strcpy(o->file, val);
	} else if (!strcmp(key, "title")) {
		snprintf(o->title, sizeof(o->title), "%s", val ? val : "");
		o->out.title = o->title;
	} else if (!strcmp(key, "width") || !strcmp(key, "height")) {
		unsigned v;

		if (parse_uint(val, 1, 100000, &v) < 0)
			return diag_set(d, -EINVAL, "%s=%s: pixels, 1 to 100000", key, val ? val : "");
		if (key[0] == 'w')
			o->out.width = v;
		else
			o->out.height = v;
	} else if (!strcmp(key, "minwidth")) {
		char *end;

		o->out.minwidth = val ? strtod(val, &end) : -1;
		if (!val || *end || o->out.minwidth < 0)
			return diag_set(d, -EINVAL, "minwidth=%s: pixels, 0 or more", val ? val : "");
	} else if (!strcmp(key, "quiet")) {
		if (parse_bool(val, &o->quiet) < 0)
			return diag_set(d, -EINVAL, "quiet=%s: use true or false", val);
	} else {
		return diag_set(d, -EINVAL,
				"unknown option '%s'; use event, interval, duration, file, output, "
				"jstackdepth, thread, simple, wall_threads, title, width, height, "
				"minwidth, reverse, quiet", key);
	}
	return 0;
}

int agent_options_parse(const char *text, struct agent_options *o, struct diag *d)
{
	char buf[4096];
	char *save = NULL, *tok;

	memset(o, 0, sizeof(*o));
	o->event = EVENT_CPU;
	if (!text)
		return 0;
	if (strlen(text) >= sizeof(buf))
		return diag_set(d, -EINVAL, "options longer than %zu bytes", sizeof(buf) - 1);
	strcpy(buf, text);
	/* Commas separate options; spaces and & too, so that a control line
	 * ("start event=cpu interval=10ms") and a query string read the same. */
	for (tok = strtok_r(buf, ", &\t\n", &save); tok; tok = strtok_r(NULL, ", &\t\n", &save)) {
		char *eq = strchr(tok, '=');
		int err;

		if (eq)
			*eq = '\0';
		err = agent_options_set(o, tok, eq ? eq + 1 : NULL, d);
		if (err < 0)
			return err;
	}
	return 0;
}
