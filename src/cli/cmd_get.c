/* nprof get: downloads what an instance produced, converted on the way
 * (docs/nprof-get.1.md). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/daemon_cmd.h"
#include "help/nprof-get.h"

int cmd_get(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *file = NULL, *format = NULL, *want;
	long long id, art_id = 0;
	json_t *inst = NULL, *art;
	char path[64];
	struct diag d;
	int c, ret;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":a:f:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			if (daemon_cmd_parse_id(optarg, &art_id) < 0)
				return cli_usage_error("get", "-a %s: not an artifact id (a positive "
						       "number)", optarg);
			break;
		case 'f':
			file = optarg;
			break;
		case 'o':
			format = optarg;
			break;
		case 'h':
			fputs(nprof_get_help, stdout);
			return EXIT_OK;
		case ':':
		default:
			return cli_option_error("get", c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error("get", "no instance id given; use nprof get ID "
				       "(nprof instances lists them)");
	if (optind + 1 < argc)
		return cli_usage_error("get", "unexpected '%s' after the instance id",
				       argv[optind + 1]);
	if (daemon_cmd_parse_id(argv[optind], &id) < 0)
		return cli_usage_error("get", "'%s' is not an instance id (a positive number)",
				       argv[optind]);
	if (file && !file[0])
		return cli_usage_error("get", "-f: empty file name");
	snprintf(path, sizeof(path), "/api/v1/instances/%lld", id);
	diag_clear(&d);
	if (daemon_call("GET", path, NULL, &inst, NULL, &d) < 0) {
		cli_error("%s", d.msg);
		return EXIT_FAILED;
	}
	art = daemon_cmd_artifact(inst, art_id);
	if (!art) {
		ret = EXIT_FAILED;
		goto out;
	}
	want = daemon_cmd_format("get", daemon_cmd_str(art, "format", "pprof"),
				 daemon_cmd_str(inst, "format", NULL), file, format);
	if (!want) {
		ret = EXIT_USAGE;
		goto out;
	}
	ret = daemon_cmd_fetch((long long)json_integer_value(json_object_get(art, "id")), want,
			       file);
out:
	json_decref(inst);
	return ret;
}
