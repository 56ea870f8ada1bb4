/* nouns: the tables of nouns.h, and GET /api/v1/meta's reply. */
#include <stdio.h>
#include <string.h>

#include "daemon/core/nouns.h"
#include "profile/events.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- instances ---------------------------------------------------------------- */

static const char *const state_names[INSTANCE_STATE_COUNT] = {
	[INSTANCE_RUNNING] = "RUNNING",
	[INSTANCE_FINISHED] = "FINISHED",
	[INSTANCE_STOPPED] = "STOPPED",
	[INSTANCE_FAILED] = "FAILED",
};

static const char *const state_descriptions[INSTANCE_STATE_COUNT] = {
	[INSTANCE_RUNNING] = "running now",
	[INSTANCE_FINISHED] = "ended as asked; its files are complete",
	[INSTANCE_STOPPED] = "ended early by a user; what it recorded is kept",
	[INSTANCE_FAILED] = "ended in error; its message says why",
};

const char *instance_state_name(enum instance_state s)
{
	return (unsigned)s < INSTANCE_STATE_COUNT ? state_names[s] : "?";
}

int instance_state_parse(const char *name)
{
	for (int s = 0; s < INSTANCE_STATE_COUNT; s++)
		if (!strcmp(state_names[s], name))
			return s;
	return -1;
}

/* "A, B, C or D" of n names, into buf. */
static const char *name_list(const char *const *names, size_t n, const char *last,
			     char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 i == 0 ? "" : i + 1 == n && !last ? " or " : ", ", names[i]);
	if (last && used < len)
		snprintf(buf + used, len - used, "%s%s", n ? " or " : "", last);
	return buf;
}

const char *instance_state_list(void)
{
	static char buf[64];

	if (!buf[0])
		name_list(state_names, INSTANCE_STATE_COUNT, NULL, buf, sizeof(buf));
	return buf;
}

/* ---- actions ---------------------------------------------------------------------- */

const struct action_def action_defs[] = {
	{ .name = "stacks", .label = "Thread dump", .kind = ACTION_THREAD_DUMP, .instance_kind = "stacks",
	  .description = "the stack of every thread now (nprof stacks)",
	  .art_format = "threads", .art_ext = "json", .view_format = "text",
	  .args = { "stacks", "--json", "PID" } },
	{ .name = "heapdump", .label = "Heap snapshot", .kind = ACTION_HEAP_SNAPSHOT,
	  .instance_kind = "heapdump",
	  .needs_agent = true, .description = "the live heap through the agent, as a profile",
	  .art_format = "pprof", .art_ext = "pb.gz", .view_format = "flamegraph",
	  .args = { "heap", "PID", "dump", "-o", "pprof" } },
	{ .name = "heap", .label = "Heap profiling", .kind = ACTION_HEAP_PROFILING, .needs_agent = true,
	  .description = "switch the agent's heap profiling on or off, or ask whether it is on" },
	{ .name = "coredump", .label = "Core file", .kind = ACTION_CORE_FILE, .instance_kind = "coredump",
	  .description = "a core file of the running process, for gdb (it keeps running)",
	  .art_format = "core", .art_ext = "core", .view_format = "core",
	  .args = { "dump", "-f", "/proc/self/fd/1", "PID" } },
	{ .name = "restart", .label = "Restart", .danger = true, .kind = ACTION_RESTART,
	  .instance_kind = "restart",
	  .description = "restart through its supervisor" },
	{ .name = "attach", .label = "Attach agent", .kind = ACTION_ATTACH, .refuses_agent = true,
	  .description = "load nprof's agent into the running process (nprof attach): itimer, "
			 "wall, alloc, heap and lock then work on it, without a restart" },
	{ .name = "detach", .label = "Detach agent", .kind = ACTION_ATTACH, .needs_agent = true,
	  .without_agent = "no agent answers in the process to detach",
	  .description = "end the agent's sessions and hooks in the process (nprof detach)" },
};
const size_t action_count = ARRAY_LEN(action_defs);

const struct action_def *action_find(const char *name)
{
	for (size_t i = 0; i < action_count; i++)
		if (!strcmp(action_defs[i].name, name))
			return &action_defs[i];
	return NULL;
}

const char *action_list(void)
{
	static char buf[128];

	if (!buf[0]) {
		const char *names[ARRAY_LEN(action_defs)];

		for (size_t i = 0; i < action_count; i++)
			names[i] = action_defs[i].name;
		name_list(names, action_count, "commands/NAME", buf, sizeof(buf));
	}
	return buf;
}

/* ---- formats ---------------------------------------------------------------------- */

#define TEXT "text/plain; charset=utf-8"
#define HTML "text/html; charset=utf-8"
#define BINARY "application/octet-stream"

/* A profile's conversions in the order the page offers them; nprof's
 * own table (output/output.c) has the same names, which
 * daemon_nouns_test holds. */
const struct format_def format_defs[] = {
	{ "pprof", "pb.gz", BINARY, NULL, false, false,
	  "the profile as recorded: go tool pprof, Pyroscope, nprof convert" },
	{ "threads", "json", "application/json", NULL, true, false,
	  "a thread dump as recorded: every thread's state and stack" },
	{ "core", "core", BINARY, NULL, false, false, "a core file, for gdb" },
	{ "file", "", BINARY, NULL, false, false, "what an operator's command wrote" },
	{ "flamegraph", "html", HTML, "pprof", true, true, "an interactive flame graph" },
	{ "tree", "html", HTML, "pprof", true, false, "an interactive call tree" },
	{ "svg", "svg", "image/svg+xml", "pprof", false, false, "a flame graph as an image" },
	{ "speedscope", "speedscope.json", "application/json", "pprof", false, false,
	  "for speedscope.app" },
	{ "collapsed", "collapsed", TEXT, "pprof", false, true,
	  "one line per stack (Brendan Gregg's flamegraph.pl)" },
	{ "jfr", "jfr", BINARY, "pprof", false, false, "Java Flight Recorder (JDK Mission Control)" },
	{ "dot", "dot", "text/vnd.graphviz; charset=utf-8", "pprof", false, false,
	  "a call graph for graphviz" },
	{ "summary", "txt", TEXT, "pprof", false, false, "the top functions and threads, as text" },
	{ "traces", "txt", TEXT, "pprof", false, false, "the heaviest stacks, as text" },
	{ "flat", "txt", TEXT, "pprof", false, true, "functions by self and total, as text" },
	{ "text", "txt", TEXT, "threads", false, false, "a thread dump as text, like jstack" },
	{ "json", "json", "application/json", "threads", false, false, "a thread dump as recorded" },
};
const size_t format_count = ARRAY_LEN(format_defs);

const struct format_def *format_find(const char *name)
{
	for (size_t i = 0; i < format_count; i++)
		if (!strcmp(format_defs[i].name, name))
			return &format_defs[i];
	return NULL;
}

bool format_converts(const char *have, const char *want)
{
	const struct format_def *f = format_find(want);

	return !strcmp(have, want) || (f && f->from && !strcmp(f->from, have));
}

/* The names of the rows keep says yes to, ", "-separated, into buf. */
static const char *format_names(bool (*keep)(const struct format_def *, const char *),
				const char *arg, char *buf, size_t len)
{
	const char *names[ARRAY_LEN(format_defs)];
	size_t n = 0;

	for (size_t i = 0; i < format_count; i++)
		if (keep(&format_defs[i], arg))
			names[n++] = format_defs[i].name;
	return name_list(names, n, n ? NULL : "nothing else", buf, len);
}

static bool made_from(const struct format_def *f, const char *have)
{
	return f->from && !strcmp(f->from, have);
}

static bool in_diff(const struct format_def *f, const char *unused)
{
	(void)unused;
	return f->diff;
}

const char *format_targets(const char *have, char *buf, size_t len)
{
	return format_names(made_from, have, buf, len);
}

const char *format_diff_list(char *buf, size_t len)
{
	return format_names(in_diff, NULL, buf, len);
}

/* ---- the profiling modes, as a user picks one ----------------------------------- */

/* What each mode records and what it needs, shown beside the mode menu.
 * (events.c's `what` says what one sample stands for; this says what
 * the mode is for.) */
static const char *const mode_descriptions[EVENT_COUNT] = {
	[EVENT_CPU] = "CPU time: samples threads while they run on a CPU (perf_events cpu-clock). "
		      "Where the CPU goes.",
	[EVENT_ITIMER] = "CPU time through setitimer signals (ITIMER_PROF), for hosts where "
			 "perf_events is denied. Coarser; needs no perf access.",
	[EVENT_WALL] = "Wall-clock time of every thread, running, waiting for a CPU or blocked "
		       "(sleeping, waiting on I/O or locks), each stack ending in its state. Through "
		       "the agent when loaded; without it, from the scheduler (admins: it needs root).",
	[EVENT_OFFCPU] = "Off-CPU time: where threads wait (blocked, sleeping, preempted), in "
			 "nanoseconds, from every context switch. Needs root: admins only.",
	[EVENT_ALLOC] = "Allocations: samples malloc and friends every N bytes allocated, with their "
			"stacks. Where memory is allocated. Needs the agent.",
	[EVENT_HEAP] = "Live heap: sampled allocations still not freed at the end; what holds memory "
		       "now (leaks, growth). Needs the agent.",
	[EVENT_LOCK] = "Lock contention: time threads spend waiting for pthread mutexes, by the stack "
		       "that waited. Needs the agent.",
	[EVENT_PAGE_FAULTS] = "Page faults (software event): where the process touches memory that "
			      "is not mapped in yet.",
	[EVENT_CONTEXT_SWITCHES] = "Context switches (software event): where threads leave the CPU, "
				   "blocking or preempted.",
	[EVENT_CYCLES] = "CPU cycles (hardware event): needs a PMU.",
	[EVENT_INSTRUCTIONS] = "Instructions retired (hardware event): needs a PMU.",
	[EVENT_CACHE_MISSES] = "Cache misses (hardware event): needs a PMU.",
	[EVENT_BRANCH_MISSES] = "Branch mispredictions (hardware event): needs a PMU.",
};

/* The hardware events are the last of events.h's: they need a PMU. */
_Static_assert(EVENT_CYCLES + 4 == EVENT_COUNT, "a new event goes before the hardware ones");

static const char *const interval_kinds[] = {
	[EVENT_INTERVAL_TIME] = "time", [EVENT_INTERVAL_BYTES] = "bytes",
	[EVENT_INTERVAL_COUNT] = "count",
};

/* ---- GET /api/v1/meta ---------------------------------------------------------- */

static json_t *modes_json(void)
{
	json_t *a = json_array();

	for (int e = 0; e < EVENT_COUNT; e++) {
		const struct event_def *ev = &event_defs[e];

		json_array_append_new(a, json_pack("{ss ss ss sI sb sb sb sb}", "name", ev->name,
			"description", mode_descriptions[e] ? mode_descriptions[e] : ev->what,
			"interval", interval_kinds[ev->interval_kind],
			"default_interval", (json_int_t)ev->default_interval,
			"agent", (ev->runs & EVENT_IN_AGENT) != 0,
			"outside", (ev->runs & EVENT_IN_ENGINE) != 0,
			"agent_only", ev->runs == EVENT_IN_AGENT,
			"needs_pmu", e >= EVENT_CYCLES));
	}
	return a;
}

static json_t *actions_json(void)
{
	json_t *a = json_array();

	for (size_t i = 0; i < action_count; i++) {
		const struct action_def *ad = &action_defs[i];
		json_t *o = json_pack("{ss ss ss sb sb sb ss}", "name", ad->name, "label", ad->label,
				      "config_key", config_action_key(ad->kind),
				      "needs_agent", ad->needs_agent, "refuses_agent", ad->refuses_agent,
				      "danger", ad->danger, "description", ad->description);

		if (ad->instance_kind)
			json_object_set_new(o, "instance_kind", json_string(ad->instance_kind));
		if (ad->art_format)
			json_object_set_new(o, "stores", json_string(ad->art_format));
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *formats_json(void)
{
	json_t *a = json_array();

	for (size_t i = 0; i < format_count; i++) {
		const struct format_def *f = &format_defs[i];
		json_t *o = json_pack("{ss ss ss sb sb ss}", "name", f->name, "extension", f->ext,
				      "content_type", f->type, "view", f->view, "diff", f->diff,
				      "description", f->description);

		json_object_set_new(o, "from", f->from ? json_string(f->from) : json_null());
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *states_json(void)
{
	json_t *a = json_array();

	for (int s = 0; s < INSTANCE_STATE_COUNT; s++)
		json_array_append_new(a, json_pack("{ss ss}", "name", state_names[s],
						   "description", state_descriptions[s]));
	return a;
}

json_t *nouns_json(void)
{
	return json_pack("{so so so so}", "modes", modes_json(), "actions", actions_json(),
			 "formats", formats_json(), "instance_states", states_json());
}
