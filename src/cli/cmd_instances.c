/* nprof instances: profiling instances and actions nprofd ran or runs
 * (docs/nprof-instances.1.md). */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/daemon_cmd.h"
#include "help/nprof-instances.h"

enum long_only { OPT_WORKER = 1000, OPT_STATUS, OPT_SCHEDULE, OPT_JSON };

#define LIMIT_MAX 10000
/* The narrowest message column; narrower, it goes on a line of its own. */
#define MESSAGE_MIN 24

static const char *what(const json_t *inst)
{
	const char *mode = daemon_cmd_str(inst, "mode", NULL);

	return mode ? mode : daemon_cmd_str(inst, "kind", "?");
}

/* "12,13": the ids of an instance's artifacts; "-" for none. */
static void artifact_ids(const json_t *inst, char *buf, size_t len)
{
	const json_t *arts = json_object_get(inst, "artifacts");
	size_t i, n = 0;
	json_t *a;

	buf[0] = '\0';
	json_array_foreach(arts, i, a) {
		int k = snprintf(buf + n, len - n, "%s%lld", n ? "," : "",
				 (long long)json_integer_value(json_object_get(a, "id")));

		if (k < 0 || (size_t)k >= len - n)
			break;
		n += (size_t)k;
	}
	if (!buf[0])
		snprintf(buf, len, "-");
}

static void print_table(const json_t *list)
{
	unsigned wmode = 4, wuser = 4, warts = 9, cols = daemon_cmd_columns(), used;
	bool below;
	char arts[128], when[40], dur[32];
	size_t i;
	json_t *o;

	json_array_foreach(list, i, o) {
		size_t m = strlen(what(o)), u = strlen(daemon_cmd_str(o, "user", "?"));

		artifact_ids(o, arts, sizeof(arts));
		wmode = m > wmode ? (m > 12 ? 12 : (unsigned)m) : wmode;
		wuser = u > wuser ? (u > 12 ? 12 : (unsigned)u) : wuser;
		warts = strlen(arts) > warts ? (strlen(arts) > 24 ? 24 : (unsigned)strlen(arts)) : warts;
	}
	used = 6 + 1 + 8 + 1 + wmode + 1 + 7 + 1 + wuser + 1 + 19 + 1 + 8 + 1 + warts + 1;
	/* Too narrow for the message as a column: it gets a line below. */
	below = cols < used + MESSAGE_MIN;
	printf("%6s %-8s %-*s %7s %-*s %-19s %8s ", "ID", "STATUS", (int)wmode, "MODE", "PID",
	       (int)wuser, "USER", "CREATED", "DURATION");
	if (below)
		printf("ARTIFACTS\n");
	else
		printf("%-*s MESSAGE\n", (int)warts, "ARTIFACTS");
	json_array_foreach(list, i, o) {
		const json_t *dv = json_object_get(o, "duration");
		const char *msg = daemon_cmd_str(o, "message", "");

		printf("%6lld ", (long long)json_integer_value(json_object_get(o, "id")));
		daemon_cmd_cell(stdout, daemon_cmd_str(o, "status", "?"), 8, true);
		daemon_cmd_cell(stdout, what(o), wmode, true);
		printf("%7lld ", (long long)json_integer_value(json_object_get(o, "pid")));
		daemon_cmd_cell(stdout, daemon_cmd_str(o, "user", "?"), wuser, true);
		printf("%-19s ", daemon_cmd_time(daemon_cmd_str(o, "created", NULL), when, sizeof(when)));
		if (json_is_number(dv) && json_number_value(dv) > 0)
			snprintf(dur, sizeof(dur), "%g s", json_number_value(dv));
		else
			snprintf(dur, sizeof(dur), "-");
		printf("%8s ", dur);
		artifact_ids(o, arts, sizeof(arts));
		if (below) {
			daemon_cmd_cell(stdout, arts, warts, false);
			if (msg[0]) {
				printf("\n%7s", "");
				daemon_cmd_cell(stdout, msg, cols > 8 ? cols - 7 : 1, false);
			}
		} else {
			daemon_cmd_cell(stdout, arts, warts, true);
			daemon_cmd_cell(stdout, msg, cols - used, false);
		}
		putchar('\n');
	}
}

/* Keeps the instances of pid, at most limit of them. */
static void keep_pid(json_t *list, long long pid, long limit)
{
	size_t i = 0;
	long kept = 0;

	while (i < json_array_size(list)) {
		if (json_integer_value(json_object_get(json_array_get(list, i), "pid")) == pid &&
		    kept < limit) {
			kept++;
			i++;
		} else {
			json_array_remove(list, i);
		}
	}
}

int cmd_instances(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "worker", required_argument, NULL, OPT_WORKER },
		{ "status", required_argument, NULL, OPT_STATUS },
		{ "schedule", required_argument, NULL, OPT_SCHEDULE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	const char *worker = NULL, *status = NULL;
	char path[512], esc_worker[256] = "", esc_status[64] = "", upper[32];
	long long pid = 0, schedule = 0;
	long limit = 100;
	bool json = false;
	json_t *reply = NULL;
	struct diag d;
	char *end;
	int c, ret;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":n:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_WORKER:
			worker = optarg;
			break;
		case OPT_STATUS:
			status = optarg;
			break;
		case OPT_SCHEDULE:
			if (daemon_cmd_parse_id(optarg, &schedule) < 0)
				return cli_usage_error("instances", "--schedule %s: give a schedule's id "
						       "(nprof schedule list)", optarg);
			break;
		case 'n':
			limit = strtol(optarg, &end, 10);
			if (end == optarg || *end || limit < 1 || limit > LIMIT_MAX)
				return cli_usage_error("instances", "-n %s: give a number from 1 to %d",
						       optarg, LIMIT_MAX);
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'h':
			fputs(nprof_instances_help, stdout);
			return EXIT_OK;
		case ':':
		default:
			return cli_option_error("instances", c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("instances", "unexpected '%s'", argv[optind]);
	/* A PID names the instances of every process that had it, gone or
	 * not: filtered here, since the API filters by worker id. */
	if (worker && strspn(worker, "0123456789") == strlen(worker)) {
		pid_t p;

		if (cli_parse_pid(worker, &p) < 0)
			return cli_usage_error("instances", "--worker %s: not a PID or a worker id",
					       worker);
		pid = p;
		worker = NULL;
	}
	if (status) {
		/* running, RUNNING: the API takes the capitals */
		snprintf(upper, sizeof(upper), "%s", status);
		for (char *s = upper; *s; s++)
			*s = (char)toupper((unsigned char)*s);
		status = upper;
	}
	if ((worker && daemon_escape(worker, esc_worker, sizeof(esc_worker)) < 0) ||
	    (status && daemon_escape(status, esc_status, sizeof(esc_status)) < 0))
		return cli_usage_error("instances", "--worker or --status is too long");
	snprintf(path, sizeof(path), "/api/v1/instances?limit=%ld%s%s%s%s", pid ? LIMIT_MAX : limit,
		 worker ? "&worker=" : "", esc_worker, status ? "&status=" : "", esc_status);
	if (schedule)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&schedule=%lld", schedule);
	diag_clear(&d);
	if (daemon_call("GET", path, NULL, &reply, NULL, &d) < 0) {
		cli_error("%s", d.msg);
		return EXIT_FAILED;
	}
	if (pid)
		keep_pid(json_object_get(reply, "instances"), pid, limit);
	ret = EXIT_OK;
	if (json)
		ret = daemon_cmd_print_json(reply);
	else
		print_table(json_object_get(reply, "instances"));
	json_decref(reply);
	return ret;
}
