/* nprof workers: the processes nprofd lets you profile
 * (docs/nprof-workers.1.md). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/daemon_cmd.h"
#include "help/nprof-workers.h"

enum long_only { OPT_AGENT = 1000, OPT_JSON, OPT_SERVICE, OPT_CONTAINER, OPT_POD, OPT_UNIT };

/* Appends "&key=VALUE" (escaped) to a query; false when it does not fit. */
static bool add_query(char *q, size_t len, const char *key, const char *value)
{
	char esc[512];
	size_t n = strlen(q);

	if (daemon_escape(value, esc, sizeof(esc)) < 0)
		return false;
	return (size_t)snprintf(q + n, len - n, "%c%s=%s", n ? '&' : '?', key, esc) < len - n;
}

static unsigned widest(const json_t *list, const char *key, unsigned min, unsigned max)
{
	unsigned w = min;
	size_t i;
	json_t *o;

	json_array_foreach(list, i, o) {
		size_t n = strlen(daemon_cmd_str(o, key, ""));

		if (n > w)
			w = n > max ? max : (unsigned)n;
	}
	return w;
}

/* Whether any worker of the list is in a container: the CONTAINER
 * column is shown only then, so a host without containers keeps its
 * columns for the command. */
static bool any_container(const json_t *list)
{
	size_t i;
	json_t *o;

	json_array_foreach(list, i, o)
		if (daemon_cmd_str(o, "container", "")[0])
			return true;
	return false;
}

static void print_table(const json_t *list)
{
	unsigned wid = widest(list, "id", 2, 24), wuser = widest(list, "user", 4, 12);
	unsigned wsvc = widest(list, "service", 7, 24), cols = daemon_cmd_columns(), used;
	/* the short id, as docker ps and crictl ps print it */
	unsigned wcont = any_container(list) ? 12 : 0;
	/* a list of several hosts' (NPROF_HOST) says each one's host */
	unsigned whost = json_object_get(json_array_get(list, 0), "host") ?
		widest(list, "host", 4, 24) : 0;
	size_t i;
	json_t *w;

	/* [HOST] ID PID USER CPU% RSS THREADS AGENT SERVICE [CONTAINER],
	 * then the command in what is left of the line. */
	used = (whost ? whost + 1 : 0) + wid + 1 + 7 + 1 + wuser + 1 + 6 + 1 + 9 + 1 + 7 + 1 + 5 +
	       1 + wsvc + 1 + (wcont ? wcont + 1 : 0);
	/* The command keeps 12 columns at least: the service and the user
	 * give way first (never the id, which the other commands take, nor
	 * the container's id, which is a prefix to type). */
	for (; used + 12 > cols && wsvc > 7; used--)
		wsvc--;
	for (; used + 12 > cols && wuser > 6; used--)
		wuser--;
	if (whost)
		printf("%-*s ", (int)whost, "HOST");
	printf("%-*s %7s %-*s %6s %9s %7s %-5s %-*s ", (int)wid, "ID", "PID", (int)wuser, "USER",
	       "CPU%", "RSS", "THREADS", "AGENT", (int)wsvc, "SERVICE");
	if (wcont)
		printf("%-*s ", (int)wcont, "CONTAINER");
	printf("COMMAND\n");
	json_array_foreach(list, i, w) {
		char rss[32];
		const char *cmdline = daemon_cmd_str(w, "cmdline", "");

		if (whost)
			daemon_cmd_cell(stdout, daemon_cmd_str(w, "host", "?"), whost, true);
		daemon_cmd_cell(stdout, daemon_cmd_str(w, "id", "?"), wid, true);
		printf("%7lld ", (long long)json_integer_value(json_object_get(w, "pid")));
		daemon_cmd_cell(stdout, daemon_cmd_str(w, "user", "?"), wuser, true);
		printf("%6.1f %9s %7lld %-5s ", json_number_value(json_object_get(w, "cpu_percent")),
		       daemon_cmd_bytes((double)json_integer_value(json_object_get(w, "rss_bytes")),
					rss, sizeof(rss)),
		       (long long)json_integer_value(json_object_get(w, "threads")),
		       json_is_true(json_object_get(w, "agent")) ? "yes" : "no");
		daemon_cmd_cell(stdout, daemon_cmd_str(w, "service", "?"), wsvc, true);
		if (wcont)
			daemon_cmd_cell(stdout, daemon_cmd_str(w, "container", "-"), wcont, true);
		daemon_cmd_cell(stdout, cmdline[0] ? cmdline : daemon_cmd_str(w, "name", "?"),
				cols > used ? cols - used : 1, false);
		putchar('\n');
	}
}

int cmd_workers(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "agent", no_argument, NULL, OPT_AGENT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "service", required_argument, NULL, OPT_SERVICE },
		{ "container", required_argument, NULL, OPT_CONTAINER },
		{ "pod", required_argument, NULL, OPT_POD },
		{ "unit", required_argument, NULL, OPT_UNIT },
		{ NULL, 0, NULL, 0 },
	};
	const char *text = NULL, *user = NULL, *service = NULL, *container = NULL, *pod = NULL,
		   *unit = NULL;
	bool agent = false, json = false;
	char path[3200] = "/api/v1/workers", query[3100] = "";
	json_t *reply = NULL;
	struct diag d;
	int c, ret;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":q:u:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			text = optarg;
			break;
		case 'u':
			user = optarg;
			break;
		case OPT_AGENT:
			agent = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_SERVICE:
			service = optarg;
			break;
		case OPT_CONTAINER:
			container = optarg;
			break;
		case OPT_POD:
			pod = optarg;
			break;
		case OPT_UNIT:
			unit = optarg;
			break;
		case 'h':
			fputs(nprof_workers_help, stdout);
			return EXIT_OK;
		case ':':
		default:
			return cli_option_error("workers", c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("workers", "unexpected '%s'", argv[optind]);
	if ((text && !add_query(query, sizeof(query), "q", text)) ||
	    (user && !add_query(query, sizeof(query), "user", user)) ||
	    (agent && !add_query(query, sizeof(query), "agent", "true")) ||
	    (service && !add_query(query, sizeof(query), "service", service)) ||
	    (container && !add_query(query, sizeof(query), "container", container)) ||
	    (pod && !add_query(query, sizeof(query), "pod", pod)) ||
	    (unit && !add_query(query, sizeof(query), "unit", unit)))
		return cli_usage_error("workers", "the filters are too long together: give fewer, "
				       "or shorter ones");
	strcat(path, query);
	diag_clear(&d);
	if (daemon_call("GET", path, NULL, &reply, NULL, &d) < 0) {
		cli_error("%s", d.msg);
		return EXIT_FAILED;
	}
	ret = EXIT_OK;
	if (json)
		ret = daemon_cmd_print_json(reply);
	else
		print_table(json_object_get(reply, "workers"));
	json_decref(reply);
	return ret;
}
