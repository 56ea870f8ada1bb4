/* nprof take: a thread dump, heap snapshot or core file of a process,
 * taken by nprofd (docs/nprof-take.1.md). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/daemon_cmd.h"
#include "help/nprof-take.h"

int cmd_take(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *file = NULL, *format = NULL, *action, *want, *art_format;
	char worker[256], esc[800], path[1024];
	json_t *inst = NULL, *final = NULL, *art;
	long long id;
	struct diag d;
	int c, ret;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":f:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			file = optarg;
			break;
		case 'o':
			format = optarg;
			break;
		case 'h':
			fputs(nprof_take_help, stdout);
			return EXIT_OK;
		case ':':
		default:
			return cli_option_error("take", c, argv);
		}
	}
	if (optind + 2 > argc)
		return cli_usage_error("take", "use nprof take stacks|heapdump|coredump PID");
	if (optind + 2 < argc)
		return cli_usage_error("take", "unexpected '%s' after the PID", argv[optind + 2]);
	action = argv[optind];
	if (!strcmp(action, "stacks"))
		art_format = "threads";
	else if (!strcmp(action, "heapdump"))
		art_format = "pprof";
	else if (!strcmp(action, "coredump"))
		art_format = "core";
	else
		return cli_usage_error("take", "'%s' is not something nprofd takes; use stacks, "
				       "heapdump or coredump", action);
	if (file && !file[0])
		return cli_usage_error("take", "-f: empty file name");
	/* A thread dump goes to the terminal when no file is named. */
	if (!file && !strcmp(action, "stacks"))
		file = "-";
	if (file && !daemon_cmd_format("take", art_format, NULL, file, format))
		return EXIT_USAGE;
	ret = daemon_cmd_worker("take", argv[optind + 1], worker, sizeof(worker));
	if (ret != EXIT_OK)
		return ret;
	if (daemon_escape(worker, esc, sizeof(esc)) < 0)
		return cli_usage_error("take", "the worker id is too long");
	snprintf(path, sizeof(path), "/api/v1/workers/%s/%s", esc, action);
	diag_clear(&d);
	if (daemon_call("POST", path, NULL, &inst, NULL, &d) < 0) {
		cli_error("%s", d.msg);
		return EXIT_FAILED;
	}
	id = (long long)json_integer_value(json_object_get(inst, "id"));
	ret = daemon_cmd_wait(id, true, &final);
	if (ret != EXIT_OK)
		goto out;
	if (!strcmp(daemon_cmd_str(final, "status", "?"), "FAILED")) {
		daemon_cmd_print_end(final, stderr);
		ret = EXIT_FAILED;
		goto out;
	}
	art = daemon_cmd_artifact(final, 0);
	if (!art) {
		ret = EXIT_FAILED;
		goto out;
	}
	want = daemon_cmd_format("take", daemon_cmd_str(art, "format", art_format),
				 daemon_cmd_str(final, "format", NULL), file, format);
	ret = want ? daemon_cmd_fetch((long long)json_integer_value(json_object_get(art, "id")),
				      want, file)
		   : EXIT_USAGE;
out:
	json_decref(inst);
	json_decref(final);
	return ret;
}
