/* nprof start: a profiling instance through nprofd
 * (docs/nprof-start.1.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/daemon_cmd.h"
#include "cli/selector_args.h"
#include "help/nprof-start.h"

enum long_only { OPT_WAIT = 1000, OPT_JSON };

struct start_args {
	const char *target, *mode, *duration, *interval, *file, *format;
	struct selector_args sel;	/* or every worker it takes, at once */
	bool threads, wait, json;
};

static int parse_args(int argc, char **argv, struct start_args *a)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "wait", no_argument, NULL, OPT_WAIT },
		{ "json", no_argument, NULL, OPT_JSON },
		SELECTOR_ARGS_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int c, r;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":e:d:i:tf:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			a->mode = optarg;
			break;
		case 'd':
			a->duration = optarg;
			break;
		case 'i':
			a->interval = optarg;
			break;
		case 't':
			a->threads = true;
			break;
		case 'f':
			a->file = optarg;
			break;
		case 'o':
			a->format = optarg;
			break;
		case OPT_WAIT:
			a->wait = true;
			break;
		case OPT_JSON:
			a->json = true;
			break;
		case SELECTOR_OPT_SERVICE ... SELECTOR_OPT_END - 1:
			if ((r = selector_args_take("start", &a->sel, c, optarg)) != EXIT_OK)
				return r;
			break;
		case 'h':
			fputs(nprof_start_help, stdout);
			return -1;
		case ':':
		default:
			return cli_option_error("start", c, argv);
		}
	}
	if (optind >= argc && !a->sel.key)
		return cli_usage_error("start", "no PID or worker id given; use nprof start PID (or "
				       "a selector: %s)", selector_args_names);
	if (optind < argc && a->sel.key)
		return cli_usage_error("start", "a PID or worker id, or a selector, not both: '%s' "
				       "and --%s", argv[optind], a->sel.key);
	if (optind + 1 < argc)
		return cli_usage_error("start", "unexpected '%s' after %s", argv[optind + 1],
				       argv[optind]);
	a->target = optind < argc ? argv[optind] : NULL;
	if (a->file && !a->file[0])
		return cli_usage_error("start", "-f: empty file name");
	if (a->json && a->file && !strcmp(a->file, "-"))
		return cli_usage_error("start", "--json and -f - would both write to standard "
				       "output; give -f a file name");
	/* A profile's file: its format must be known before it is recorded. */
	if (a->file && !daemon_cmd_format("start", "pprof", NULL, a->file, a->format))
		return EXIT_USAGE;
	return EXIT_OK;
}

/* The request: for worker, or (NULL) every worker sel takes. */
static json_t *request_body(const struct start_args *a, const char *worker, json_t *sel)
{
	json_t *b = worker ? json_pack("{ss}", "worker", worker) : json_pack("{sO}", "selector", sel);

	if (!b)
		return NULL;
	if (a->mode)
		json_object_set_new(b, "mode", json_string(a->mode));
	if (a->duration)
		json_object_set_new(b, "duration", json_string(a->duration));
	if (a->interval)
		json_object_set_new(b, "interval", json_string(a->interval));
	if (a->format)
		json_object_set_new(b, "format", json_string(a->format));
	if (a->threads)
		json_object_set_new(b, "threads", json_true());
	return b;
}

int cmd_start(int argc, char **argv)
{
	struct start_args a = { 0 };
	char worker[256];
	json_t *body = NULL, *inst = NULL, *final = NULL, *art, *sel = NULL;
	FILE *info;
	char *text = NULL;
	long long id;
	struct diag d;
	int ret;

	ret = parse_args(argc, argv, &a);
	if (ret != EXIT_OK)
		return ret < 0 ? EXIT_OK : ret;
	info = a.file && !strcmp(a.file, "-") ? stderr : stdout;
	ret = a.target ? daemon_cmd_worker("start", a.target, worker, sizeof(worker))
		       : selector_args_json("start", &a.sel, &sel);
	if (ret != EXIT_OK)
		return ret;
	body = request_body(&a, a.target ? worker : NULL, sel);
	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	if (!text) {
		cli_error("out of memory");
		ret = EXIT_FAILED;
		goto out;
	}
	diag_clear(&d);
	if (daemon_call("POST", "/api/v1/instances", text, &inst, NULL, &d) < 0) {
		cli_error("%s", d.msg);
		ret = EXIT_FAILED;
		goto out;
	}
	id = (long long)json_integer_value(json_object_get(inst, "id"));
	if (a.json && !a.wait && !a.file) {
		ret = daemon_cmd_print_json(inst);
		goto out;
	}
	if (!a.json && sel) {
		fprintf(info, "instance %lld started: %s on %lld workers at once for %g s (%s)\n",
			id, daemon_cmd_str(inst, "mode", "?"),
			(long long)json_integer_value(json_object_get(inst, "members")),
			json_number_value(json_object_get(inst, "duration")),
			daemon_cmd_str(inst, "message", ""));
		fflush(info);
	} else if (!a.json) {
		fprintf(info, "instance %lld started: %s on PID %lld for %g s\n", id,
			daemon_cmd_str(inst, "mode", "?"),
			(long long)json_integer_value(json_object_get(inst, "pid")),
			json_number_value(json_object_get(inst, "duration")));
		fflush(info);
	}
	if (!a.wait && !a.file)
		goto out;
	ret = daemon_cmd_wait(id, true, &final);
	if (ret != EXIT_OK)
		goto out;
	ret = a.json ? daemon_cmd_print_json(final) : daemon_cmd_print_end(final, info);
	if (ret == EXIT_OK && !strcmp(daemon_cmd_str(final, "status", ""), "FAILED"))
		ret = EXIT_FAILED;
	if (ret != EXIT_OK || !a.file)
		goto out;
	art = daemon_cmd_artifact(final, 0);
	if (!art) {
		ret = EXIT_FAILED;
		goto out;
	}
	ret = daemon_cmd_fetch((long long)json_integer_value(json_object_get(art, "id")),
			       daemon_cmd_format("start", daemon_cmd_str(art, "format", "pprof"),
						 daemon_cmd_str(final, "format", NULL), a.file,
						 a.format),
			       a.file);
out:
	free(text);
	json_decref(body);
	json_decref(inst);
	json_decref(final);
	json_decref(sel);
	return ret;
}
