/* daemon_nouns: nprofd's tables of actions, formats and instance states
 * (src/daemon/core/nouns.c) are whole and agree with what they name — every
 * format nprof convert writes is a format a profile converts to and
 * back, every action that stores a file names formats that exist, every
 * profiling mode has its description — and GET /api/v1/meta serves them
 * all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/nouns.h"
#include "output/output.h"
#include "profile/events.h"
#include "test.h"

static void check_states(void)
{
	for (int s = 0; s < INSTANCE_STATE_COUNT; s++)
		CHECK_INT(instance_state_parse(instance_state_name(s)), ==, s,
			  "state %d's name %s parses back", s, instance_state_name(s));
	CHECK_INT(instance_state_parse("running"), ==, -1, "states are upper case, as stored");
	CHECK_INT(instance_state_parse(""), ==, -1, "an empty state is none");
	CHECK_STR(instance_state_list(), "RUNNING, FINISHED, STOPPED or FAILED",
		  "the list an error names");
}

/* output/output.c's formats and the daemon's conversions of a pprof
 * artifact are the same set. */
static void check_formats_match_output(void)
{
	char names[512], *save = NULL;

	snprintf(names, sizeof(names), "%s", output_format_names());
	for (char *n = strtok_r(names, " ", &save); n; n = strtok_r(NULL, " ", &save))
		CHECK(format_converts("pprof", n), "nprof writes %s: a profile artifact converts to it", n);
	for (size_t i = 0; i < format_count; i++) {
		const struct format_def *f = &format_defs[i];
		enum output_format of;

		if (f->from && !strcmp(f->from, "pprof"))
			CHECK(output_format_parse(f->name, &of) == 0,
			      "a profile converts to %s: nprof convert writes it", f->name);
		CHECK(f->description && f->description[0] && f->type && f->type[0],
		      "format %s has a description and a content type", f->name);
		CHECK(!f->from || (format_find(f->from) && !format_find(f->from)->from),
		      "format %s is made from a stored format", f->name);
		CHECK(format_find(f->name) == f, "format %s is named once", f->name);
	}
}

static void check_conversions(void)
{
	char buf[256];

	CHECK(format_converts("pprof", "pprof"), "a format is sent as itself");
	CHECK(format_converts("threads", "text") && format_converts("threads", "json"),
	      "a thread dump is sent as text or as its JSON");
	CHECK(!format_converts("threads", "flamegraph"), "a thread dump is no profile");
	CHECK(!format_converts("core", "text") && !format_converts("pprof", "text"),
	      "a core file converts to nothing; a profile not to a thread dump's text");
	CHECK(!format_converts("pprof", "nonsense"), "no such format");
	CHECK_STR(format_targets("threads", buf, sizeof(buf)), "text or json",
		  "what a thread dump converts to, for an error");
	CHECK_STR(format_targets("core", buf, sizeof(buf)), "nothing else",
		  "what a core file converts to");
	CHECK_STR(format_diff_list(buf, sizeof(buf)), "flamegraph, collapsed or flat",
		  "the formats of a diff");
	CHECK(strlen(format_targets("pprof", buf, sizeof(buf))) + 1 < sizeof(buf) &&
	      strstr(buf, "flamegraph") && strstr(buf, " or "),
	      "a profile's conversions fit the error's buffer: %s", buf);
}

static void check_actions(void)
{
	char list[256];

	snprintf(list, sizeof(list), "%s", action_list());
	CHECK(strstr(list, "commands/NAME") != NULL, "the list ends with the operator's commands: %s",
	      list);
	for (size_t i = 0; i < action_count; i++) {
		const struct action_def *a = &action_defs[i];

		CHECK(action_find(a->name) == a, "action %s is named once", a->name);
		CHECK(strstr(list, a->name) != NULL, "the list names %s", a->name);
		CHECK(strcmp(config_action_key(a->kind), "?") != 0, "action %s has its switch (%s)",
		      a->name, config_action_key(a->kind));
		CHECK(a->description && a->description[0], "action %s says what it does", a->name);
		CHECK(!(a->needs_agent && a->refuses_agent), "action %s needs and refuses the agent",
		      a->name);
		if (!a->art_format)
			continue;
		CHECK(a->instance_kind && a->art_ext && a->args[0],
		      "action %s, which stores a file, has its instance kind, extension and nprof's "
		      "arguments", a->name);
		CHECK(format_find(a->art_format) && !format_find(a->art_format)->from,
		      "action %s stores a stored format (%s)", a->name, a->art_format);
		CHECK(a->view_format && format_converts(a->art_format, a->view_format),
		      "action %s's link format %s is one its artifact converts to", a->name,
		      a->view_format ? a->view_format : "(none)");
	}
	CHECK(action_find("commands/x") == NULL && action_find("") == NULL,
	      "commands/NAME and nothing are not rows");
}

static void check_meta(void)
{
	json_t *m = nouns_json();
	json_t *modes = json_object_get(m, "modes");

	CHECK_INT(json_array_size(modes), ==, EVENT_COUNT, "meta lists every mode");
	for (size_t i = 0; i < json_array_size(modes); i++) {
		json_t *o = json_array_get(modes, i);
		const char *desc = json_string_value(json_object_get(o, "description"));

		CHECK(desc && strlen(desc) > 20, "mode %s has its description",
		      json_string_value(json_object_get(o, "name")));
	}
	CHECK_STR(json_string_value(json_object_get(json_array_get(modes, EVENT_ALLOC), "interval")),
		  "bytes", "alloc's interval is a size");
	CHECK(json_is_true(json_object_get(json_array_get(modes, EVENT_ALLOC), "agent_only")) &&
	      json_is_false(json_object_get(json_array_get(modes, EVENT_CPU), "agent_only")),
	      "alloc is the agent's alone, cpu is not");
	CHECK_INT(json_array_size(json_object_get(m, "actions")), ==, action_count, "meta lists every action");
	CHECK_INT(json_array_size(json_object_get(m, "formats")), ==, format_count, "meta lists every format");
	CHECK_INT(json_array_size(json_object_get(m, "instance_states")), ==, INSTANCE_STATE_COUNT,
		  "meta lists every instance state");
	CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(m, "actions"), 0),
						    "config_key")), "thread_dump",
		  "an action names its nprofd.conf key");
	CHECK(json_is_null(json_object_get(json_array_get(json_object_get(m, "formats"), 0), "from")),
	      "a stored format comes from nothing");
	json_decref(m);
}

/* tests/ui/meta.json, what the web UI's tests give the page for GET
 * /api/v1/meta, is this build's reply: NOUNS_WRITE=1 writes it anew. */
static void check_ui_fixture(void)
{
	const char *src = getenv("NPROF_SRC");
	char path[4096];
	json_t *m = nouns_json(), *file;
	json_error_t err;

	snprintf(path, sizeof(path), "%s/tests/ui/meta.json", src ? src : ".");
	if (getenv("NOUNS_WRITE"))
		json_dump_file(m, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	file = json_load_file(path, 0, &err);
	CHECK(file && json_equal(file, m), "%s is GET /api/v1/meta's reply (NOUNS_WRITE=1 "
	      "tests/run's daemon_nouns_test writes it): %s", path, file ? "differs" : err.text);
	json_decref(file);
	json_decref(m);
}

int main(void)
{
	check_states();
	check_formats_match_output();
	check_conversions();
	check_actions();
	check_meta();
	check_ui_fixture();
	return test_done();
}
