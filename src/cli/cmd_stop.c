/* nprof stop: ends a running instance early, keeping what it recorded
 * (docs/nprof-stop.1.md). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/daemon_cmd.h"
#include "help/nprof-stop.h"

enum long_only { OPT_NO_WAIT = 1000 };

int cmd_stop(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "no-wait", no_argument, NULL, OPT_NO_WAIT },
		{ NULL, 0, NULL, 0 },
	};
	bool wait = true;
	json_t *final = NULL;
	char path[80];
	long long id;
	struct diag d;
	int c, ret;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_NO_WAIT:
			wait = false;
			break;
		case 'h':
			fputs(nprof_stop_help, stdout);
			return EXIT_OK;
		default:
			return cli_option_error("stop", c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error("stop", "no instance id given; use nprof stop ID "
				       "(nprof instances --status running lists them)");
	if (optind + 1 < argc)
		return cli_usage_error("stop", "unexpected '%s' after the instance id",
				       argv[optind + 1]);
	if (daemon_cmd_parse_id(argv[optind], &id) < 0)
		return cli_usage_error("stop", "'%s' is not an instance id (a positive number)",
				       argv[optind]);
	snprintf(path, sizeof(path), "/api/v1/instances/%lld/stop", id);
	diag_clear(&d);
	if (daemon_call("POST", path, NULL, NULL, NULL, &d) < 0) {
		cli_error("%s", d.msg);
		return EXIT_FAILED;
	}
	if (!wait) {
		printf("instance %lld: stop asked\n", id);
		return EXIT_OK;
	}
	ret = daemon_cmd_wait(id, false, &final);
	if (ret == EXIT_OK)
		ret = daemon_cmd_print_end(final, stdout);
	json_decref(final);
	return ret;
}
