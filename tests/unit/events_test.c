/* events: the one table of events (src/profile/events.c) is whole, and
 * docs/design.md's events table says what it says: every event, where it
 * runs and its default interval. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/events.h"
#include "test.h"

static const char *where_text(unsigned runs)
{
	return runs == (EVENT_IN_ENGINE | EVENT_IN_AGENT) ? "engine, agent"
	       : runs == EVENT_IN_AGENT			   ? "agent"
							   : "engine";
}

/* "10 ms", "50 ms", "512 KiB (...)", "10 µs" in the interval's unit; 0
 * when the cell says something else ("as `perf`"). */
static unsigned long long interval_of(const char *cell)
{
	char *end;
	double v = strtod(cell, &end);

	if (end == cell)
		return 0;
	while (*end == ' ')
		end++;
	if (!strncmp(end, "ms", 2))
		return (unsigned long long)(v * 1e6);
	if (!strncmp(end, "µs", strlen("µs")))
		return (unsigned long long)(v * 1e3);
	if (!strncmp(end, "KiB", 3))
		return (unsigned long long)(v * 1024);
	return 0;
}

/* One row of the docs' table: "| `name` | where | values | interval |". */
static void doc_row(char *line, int *seen)
{
	char *cells[5] = { 0 }, *save = NULL, *c;
	unsigned n = 0;

	for (c = strtok_r(line, "|", &save); c && n < 5; c = strtok_r(NULL, "|", &save)) {
		while (*c == ' ')
			c++;
		for (char *e = c + strlen(c); e > c && (e[-1] == ' ' || e[-1] == '\n'); e--)
			e[-1] = '\0';
		cells[n++] = c;
	}
	if (n < 4)
		return;
	for (char *tick = strchr(cells[0], '`'); tick; tick = strchr(tick + 1, '`')) {
		char name[64];
		char *close = strchr(tick + 1, '`');
		const struct event_def *e;

		if (!close || close - tick - 1 >= (long)sizeof(name))
			break;
		snprintf(name, sizeof(name), "%.*s", (int)(close - tick - 1), tick + 1);
		tick = close;
		e = event_find(name);
		CHECK(e != NULL, "docs/design.md names %s, which the table has", name);
		if (!e)
			continue;
		seen[e - event_defs] = 1;
		CHECK_STR(cells[1], where_text(e->runs), "%s: where it runs", name);
		if (interval_of(cells[3]))
			CHECK_UINT(interval_of(cells[3]), ==, e->default_interval,
				   "%s: the default interval the docs give", name);
	}
	if (strstr(cells[0], "hardware events"))
		for (unsigned i = 0; i < EVENT_COUNT; i++)
			if (strstr(event_defs[i].what, "hardware"))
				seen[i] = 1;
}

int main(void)
{
	const char *src = getenv("NPROF_SRC");
	char path[4096], line[1024];
	int seen[EVENT_COUNT] = { 0 }, in_table = 0;
	FILE *f;

	for (unsigned i = 0; i < EVENT_COUNT; i++) {
		const struct event_def *e = &event_defs[i];

		CHECK(e->name && e->what && e->interval_unit, "row %u is filled", i);
		if (!e->name)
			continue;
		CHECK(event_find(e->name) == e, "%s: found by its name, once", e->name);
		CHECK(e->runs && e->nvalues >= 1 && e->nvalues <= PROFILE_MAX_VALUES,
		      "%s: runs somewhere, 1 to %d values", e->name, PROFILE_MAX_VALUES);
		CHECK(e->default_interval >= e->min_interval &&
		      e->default_interval >= e->agent_min_interval,
		      "%s: its default is not under its floor", e->name);
		CHECK(!e->interposed || e->runs == EVENT_IN_AGENT, "%s: interposed only in the agent",
		      e->name);
	}
	CHECK(event_find("bogus") == NULL && event_find(NULL) == NULL, "unknown: NULL");
	CHECK_STR(event_name(EVENT_WALL), "wall", "event_name");
	CHECK_STR(event_name((enum event_id)99), "?", "event_name out of range");
	CHECK(event_interposed(EVENT_HEAP) && !event_interposed(EVENT_CPU), "event_interposed");
	event_names(EVENT_IN_AGENT, path, sizeof(path));
	CHECK_STR(path, "cpu, itimer, wall, alloc, heap, lock", "the agent's events");
	event_names(EVENT_IN_AGENT, path, 12);
	CHECK_STR(path, "cpu, itimer", "event_names keeps whole names");

	snprintf(path, sizeof(path), "%s/docs/design.md", src ? src : ".");
	f = fopen(path, "r");
	CHECK(f != NULL, "reads %s", path);
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "### Events", 10))
			in_table = 1;
		else if (in_table && !strncmp(line, "###", 3))
			break;
		else if (in_table && !strncmp(line, "| `", 3))
			doc_row(line, seen);
	}
	if (f)
		fclose(f);
	for (unsigned i = 0; i < EVENT_COUNT; i++)
		CHECK(seen[i], "docs/design.md's events table has %s", event_defs[i].name);
	return test_done();
}
