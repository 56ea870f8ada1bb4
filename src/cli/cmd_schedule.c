/* nprof schedule: continuous profiling through nprofd
 * (docs/nprof-schedule.1.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "cli/cli.h"
#include "cli/daemon_cmd.h"
#include "cli/selector_args.h"
#include "help/nprof-schedule.h"

enum long_only { OPT_EVERY = 1000, OPT_KEEP, OPT_BUDGET, OPT_JSON };

struct schedule_args {
	const char *verb, *arg;
	struct selector_args sel;
	json_t *modes;
	const char *duration, *every, *keep, *budget;
	bool json;
};

static int parse_args(int argc, char **argv, struct schedule_args *a)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "event", required_argument, NULL, 'e' },
		{ "duration", required_argument, NULL, 'd' },
		SELECTOR_ARGS_LONGOPTS,
		{ "every", required_argument, NULL, OPT_EVERY },
		{ "keep", required_argument, NULL, OPT_KEEP },
		{ "budget", required_argument, NULL, OPT_BUDGET },
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	int c, r;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":e:d:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			json_array_append_new(a->modes, json_string(optarg));
			break;
		case 'd':
			a->duration = optarg;
			break;
		case OPT_EVERY:
			a->every = optarg;
			break;
		case OPT_KEEP:
			a->keep = optarg;
			break;
		case OPT_BUDGET:
			a->budget = optarg;
			break;
		case OPT_JSON:
			a->json = true;
			break;
		case SELECTOR_OPT_SERVICE ... SELECTOR_OPT_END - 1:
			if ((r = selector_args_take("schedule", &a->sel, c, optarg)) != EXIT_OK)
				return r;
			break;
		case 'h':
			fputs(nprof_schedule_help, stdout);
			return -1;
		case ':':
		default:
			return cli_option_error("schedule", c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error("schedule", "use nprof schedule create|list|show|pause|resume|"
				       "delete");
	a->verb = argv[optind++];
	if (optind < argc)
		a->arg = argv[optind++];
	if (optind < argc)
		return cli_usage_error("schedule", "unexpected '%s'", argv[optind]);
	if (!strcmp(a->verb, "create")) {
		if (a->arg)
			return cli_usage_error("schedule", "unexpected '%s' after create", a->arg);
		if (!a->sel.key)
			return cli_usage_error("schedule", "no selector: give %s", selector_args_names);
		if (!json_array_size(a->modes))
			return cli_usage_error("schedule", "no mode: give -e MODE (cpu, wall, alloc, "
					       "...)");
		if (!a->every)
			return cli_usage_error("schedule", "no period: give --every (60s, 5m)");
		return EXIT_OK;
	}
	if (a->sel.key || json_array_size(a->modes) || a->duration || a->every || a->keep ||
	    a->budget)
		return cli_usage_error("schedule", "selectors, -e, -d, --every, --keep and --budget go "
				       "with create");
	if (!strcmp(a->verb, "list"))
		return a->arg ? cli_usage_error("schedule", "unexpected '%s' after list", a->arg)
			      : EXIT_OK;
	if (!strcmp(a->verb, "show") || !strcmp(a->verb, "pause") || !strcmp(a->verb, "resume") ||
	    !strcmp(a->verb, "delete"))
		return a->arg ? EXIT_OK
			      : cli_usage_error("schedule", "no schedule id given; use nprof schedule "
						"%s ID (nprof schedule list shows them)", a->verb);
	return cli_usage_error("schedule", "'%s' is not a schedule command; use create, list, "
			       "show, pause, resume or delete", a->verb);
}

/* "10s", "1m", "1.5s": a number of seconds from the API, short. */
static const char *span(const json_t *o, const char *key, char *buf, size_t len)
{
	double s = json_number_value(json_object_get(o, key));

	return units_format_duration((uint64_t)(s * 1e9 + 0.5), buf, (unsigned)len);
}

/* The selector as a line says it: "service nginx*", "workers 12-34,...". */
static void selector_text(const json_t *sel, char *buf, size_t len)
{
	const char *key;
	json_t *v;

	snprintf(buf, len, "?");
	json_object_foreach((json_t *)sel, key, v) {
		size_t n = (size_t)snprintf(buf, len, "%s ", key), i;
		json_t *id;

		if (json_is_string(v)) {
			snprintf(buf + n, len - n, "%s", json_string_value(v));
			continue;
		}
		json_array_foreach(v, i, id) {
			if (n >= len)
				break;
			n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : "",
					      json_string_value(id) ?: "?");
		}
	}
}

static void modes_text(const json_t *modes, char *buf, size_t len)
{
	size_t i, n = 0;
	json_t *m;

	buf[0] = '\0';
	json_array_foreach(modes, i, m)
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : "",
					      json_string_value(m) ?: "?");
}

static void print_list(const json_t *list)
{
	unsigned cols = daemon_cmd_columns();
	char sel[256], modes[64], dur[32], every[32], period[80];
	size_t i;
	json_t *s;

	printf("%5s %-6s %-12s %-24s %-16s %-14s %-12s %s\n", "ID", "STATE", "USER", "SELECTOR",
	       "MODES", "DURATION/EVERY", "NAME", "LAST PERIOD");
	json_array_foreach(list, i, s) {
		selector_text(json_object_get(s, "selector"), sel, sizeof(sel));
		modes_text(json_object_get(s, "modes"), modes, sizeof(modes));
		snprintf(period, sizeof(period), "%s/%s", span(s, "duration", dur, sizeof(dur)),
			 span(s, "every", every, sizeof(every)));
		printf("%5lld %-6s ", (long long)json_integer_value(json_object_get(s, "id")),
		       daemon_cmd_str(s, "status", "?"));
		daemon_cmd_cell(stdout, daemon_cmd_str(s, "user", "?"), 12, true);
		daemon_cmd_cell(stdout, sel, 24, true);
		daemon_cmd_cell(stdout, modes, 16, true);
		daemon_cmd_cell(stdout, period, 14, true);
		/* nprofd.conf's [schedule NAME]; one made through the API has none */
		daemon_cmd_cell(stdout, daemon_cmd_str(s, "name", "-"), 12, true);
		daemon_cmd_cell(stdout, daemon_cmd_str(s, "message", ""),
				cols > 103 ? cols - 103 : 20, false);
		putchar('\n');
	}
}

static void print_one(const json_t *s)
{
	char sel[256], modes[64], dur[32], every[32], keep[32], last[40], next[40];

	selector_text(json_object_get(s, "selector"), sel, sizeof(sel));
	modes_text(json_object_get(s, "modes"), modes, sizeof(modes));
	printf("schedule %lld (%s, %s): %s of %s for %s every %s, kept %s\n",
	       (long long)json_integer_value(json_object_get(s, "id")),
	       daemon_cmd_str(s, "status", "?"), daemon_cmd_str(s, "user", "?"), modes, sel,
	       span(s, "duration", dur, sizeof(dur)), span(s, "every", every, sizeof(every)),
	       span(s, "keep", keep, sizeof(keep)));
	if (json_string_value(json_object_get(s, "name")))
		printf("declared in nprofd.conf [schedule %s]: changed or removed there, when "
		       "nprofd starts\n", daemon_cmd_str(s, "name", "?"));
	printf("budget %.2f%% of a CPU, interval %s, last measured cost %.3f%%\n",
	       json_number_value(json_object_get(s, "budget")),
	       span(s, "interval", every, sizeof(every)),
	       json_number_value(json_object_get(s, "cost")));
	printf("last period %s, next %s%s%s\n",
	       daemon_cmd_time(daemon_cmd_str(s, "last_run", NULL), last, sizeof(last)),
	       daemon_cmd_time(daemon_cmd_str(s, "next_run", NULL), next, sizeof(next)),
	       daemon_cmd_str(s, "message", "")[0] ? ": " : "", daemon_cmd_str(s, "message", ""));
}

static int create(struct schedule_args *a)
{
	json_t *body = json_object(), *reply = NULL, *sel = NULL;
	char *text = NULL;
	struct diag d;
	int ret = selector_args_json("schedule", &a->sel, &sel);

	if (ret != EXIT_OK)
		goto out;
	ret = EXIT_FAILED;
	json_object_set(body, "selector", sel);
	json_object_set(body, "modes", a->modes);
	if (a->duration)
		json_object_set_new(body, "duration", json_string(a->duration));
	json_object_set_new(body, "every", json_string(a->every));
	if (a->keep)
		json_object_set_new(body, "keep", json_string(a->keep));
	if (a->budget)
		json_object_set_new(body, "budget", json_string(a->budget));
	text = json_dumps(body, JSON_COMPACT);
	diag_clear(&d);
	if (!text) {
		cli_error("out of memory");
	} else if (daemon_call("POST", "/api/v1/schedules", text, &reply, NULL, &d) < 0) {
		cli_error("%s", d.msg);
	} else if (a->json) {
		ret = daemon_cmd_print_json(reply);
	} else {
		long long matches = json_integer_value(json_object_get(reply, "matches"));

		print_one(reply);
		printf("it takes %lld of your workers now%s\n", matches,
		       matches ? "" : "; it records those that appear, from their next period");
		ret = EXIT_OK;
	}
out:
	free(text);
	json_decref(sel);
	json_decref(body);
	json_decref(reply);
	return ret;
}

/* show, pause, resume, delete: one schedule. */
static int one(const struct schedule_args *a)
{
	const char *method = !strcmp(a->verb, "show") ? "GET"
			     : !strcmp(a->verb, "delete") ? "DELETE" : "PATCH";
	const char *body = !strcmp(a->verb, "pause") ? "{\"status\": \"PAUSED\"}"
			   : !strcmp(a->verb, "resume") ? "{\"status\": \"ACTIVE\"}" : NULL;
	json_t *reply = NULL;
	char path[64];
	long long id;
	struct diag d;
	int ret = EXIT_OK;

	if (daemon_cmd_parse_id(a->arg, &id) < 0)
		return cli_usage_error("schedule", "'%s' is not a schedule id (a positive number)",
				       a->arg);
	snprintf(path, sizeof(path), "/api/v1/schedules/%lld", id);
	diag_clear(&d);
	if (daemon_call(method, path, body, &reply, NULL, &d) < 0) {
		cli_error("%s", d.msg);
		return EXIT_FAILED;
	}
	if (a->json)
		ret = daemon_cmd_print_json(reply);
	else if (!strcmp(a->verb, "delete"))
		printf("schedule %lld deleted; what it recorded stays (nprof instances --schedule "
		       "%lld)\n", id, id);
	else
		print_one(reply);
	json_decref(reply);
	return ret;
}

int cmd_schedule(int argc, char **argv)
{
	struct schedule_args a = { .modes = json_array() };
	json_t *reply = NULL;
	struct diag d;
	int ret = parse_args(argc, argv, &a);

	if (ret != EXIT_OK) {
		ret = ret < 0 ? EXIT_OK : ret;
	} else if (!strcmp(a.verb, "create")) {
		ret = create(&a);
	} else if (strcmp(a.verb, "list")) {
		ret = one(&a);
	} else {
		diag_clear(&d);
		if (daemon_call("GET", "/api/v1/schedules", NULL, &reply, NULL, &d) < 0) {
			cli_error("%s", d.msg);
			ret = EXIT_FAILED;
		} else if (a.json) {
			ret = daemon_cmd_print_json(reply);
		} else {
			print_list(json_object_get(reply, "schedules"));
		}
		json_decref(reply);
	}
	json_decref(a.modes);
	return ret;
}
