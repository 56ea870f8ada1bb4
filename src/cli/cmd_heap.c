/* nprof heap: heap profiling of a running process through its agent
 * (docs/nprof-heap.1.md, which is also where --help comes from). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/path_template.h"
#include "base/units.h"
#include "cli/cli.h"
#include "client/agent_client.h"
#include "help/nprof-heap.h"
#include "output/output.h"

static int write_data(const char *path, const char *data, size_t len)
{
	char tmp[PATH_MAX + 16];
	FILE *f;
	int err = 0;

	if (!path)
		return fwrite(data, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : -EIO;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	if (fwrite(data, 1, len, f) != len)
		err = -EIO;
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int cmd_heap(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *interval = NULL, *format_name = NULL, *file = NULL, *action;
	char path[PATH_MAX], line[256], *data = NULL;
	enum output_format format = OUTPUT_COLLAPSED;
	uint64_t bytes = 0;
	bool per_thread = false, simple = false;
	size_t len = 0;
	struct diag d;
	pid_t pid;
	int c, r;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":i:o:f:tsh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			interval = optarg;
			break;
		case 'o':
			format_name = optarg;
			break;
		case 'f':
			file = optarg;
			break;
		case 't':
			per_thread = true;
			break;
		case 's':
			simple = true;
			break;
		case 'h':
			fputs(nprof_heap_help, stdout);
			return EXIT_OK;
		case ':':
		default:
			return cli_option_error("heap", c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error("heap", "no PID given; use nprof heap PID enable|disable|status|dump");
	if (cli_parse_pid(argv[optind], &pid) < 0)
		return cli_usage_error("heap", "'%s' is not a PID; give a process id", argv[optind]);
	if (optind + 1 >= argc)
		return cli_usage_error("heap", "no action; use enable, disable, status or dump");
	action = argv[optind + 1];
	if (optind + 2 < argc)
		return cli_usage_error("heap", "unexpected '%s' after the action", argv[optind + 2]);
	if (strcmp(action, "enable") && strcmp(action, "disable") && strcmp(action, "status") &&
	    strcmp(action, "dump"))
		return cli_usage_error("heap", "unknown action '%s'; use enable, disable, status or dump",
				       action);
	if (interval && strcmp(action, "enable"))
		return cli_usage_error("heap", "-i goes with enable");
	if ((format_name || file || simple) && strcmp(action, "dump"))
		return cli_usage_error("heap", "-o, -f and -s go with dump");
	if (per_thread && strcmp(action, "dump") && strcmp(action, "enable"))
		return cli_usage_error("heap", "-t goes with enable and dump");
	if (interval && (units_parse_count(interval, &bytes) < 0 || !bytes))
		return cli_usage_error("heap", "-i %s: not a byte count; use 512k, 1m, 65536",
				       interval);
	if (file) {
		if (!*file)
			return cli_usage_error("heap", "-f: empty file name");
		if (path_template_expand(file, pid, path, sizeof(path)) < 0) {
			cli_error("-f %s: the expanded path is too long", file);
			return EXIT_FAILED;
		}
	}
	if (format_name) {
		if (output_format_parse(format_name, &format) < 0)
			return cli_usage_error("heap", "-o %s: unknown format; use one of: %s",
					       format_name, output_format_names());
	} else if (file && output_format_from_path(path, &format) < 0) {
		return cli_usage_error("heap", "-f %s: cannot tell the format from the extension; "
				       "add -o FORMAT", file);
	}
	if (!strcmp(action, "enable")) {
		char every[48] = "";

		if (bytes)
			snprintf(every, sizeof(every), " interval=%llu", (unsigned long long)bytes);
		snprintf(line, sizeof(line), "heap enable%s%s", every, per_thread ? " thread" : "");
	} else if (!strcmp(action, "dump")) {
		const char *names = output_format_names(), *s;
		char name[32] = "";

		/* the format's name as the agent reads it: the parse's inverse */
		for (s = names; *s;) {
			size_t n = strcspn(s, " ");
			enum output_format f;

			snprintf(name, sizeof(name), "%.*s", (int)n, s);
			if (output_format_parse(name, &f) == 0 && f == format)
				break;
			s += n + (s[n] == ' ');
			name[0] = '\0';
		}
		snprintf(line, sizeof(line), "heap dump output=%s%s%s", name,
			 per_thread ? " thread" : "", simple ? " simple" : "");
	} else
		snprintf(line, sizeof(line), "heap %s", action);
	signal(SIGPIPE, SIG_IGN);
	diag_clear(&d);
	r = agent_client_request(pid, line, &data, &len, &d);
	if (r == -ENOTUNIQ) {
		cli_error("%s; heap profiling needs nprof's agent in PID %d, so there is "
			  "nothing to fall back to", d.msg, (int)pid);
		return EXIT_FAILED;
	}
	if (r < 0) {
		cli_error("%s", d.msg[0] ? d.msg : strerror(-r));
		free(data);
		return EXIT_FAILED;
	}
	if (strcmp(action, "dump")) {
		/* "ok\nTEXT\n": the text after ok, shown to a terminal */
		agent_reply_clean_text(data, len);
		fputs(data, stdout);
		free(data);
		return EXIT_OK;
	}
	/* The client took off the "ok LEN" line: the profile itself. */
	r = write_data(file ? path : NULL, data, len);
	free(data);
	if (r < 0) {
		cli_error("cannot write %s: %s", file ? path : "the dump", strerror(-r));
		return EXIT_FAILED;
	}
	if (file)
		fprintf(stderr, "nprof: wrote %s\n", path);
	return EXIT_OK;
}
