/* nprof dump: a core file of a running process (docs/nprof-dump.1.md,
 * which is also where --help comes from). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "base/path_template.h"
#include "cli/cli.h"
#include "capture/coredump.h"
#include "help/nprof-dump.h"

enum long_only { OPT_ALL = 1000 };

static const char *mib(uint64_t b, char *buf, size_t len)
{
	snprintf(buf, len, "%.1f MiB", b / 1048576.0);
	return buf;
}

int cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "all", no_argument, NULL, OPT_ALL },
		{ NULL, 0, NULL, 0 },
	};
	struct coredump_options o = { 0 };
	struct coredump_result r;
	const char *file = "core.%p";
	char path[PATH_MAX], a[32], b[32], p[32];
	struct diag d;
	pid_t pid;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":f:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			file = optarg;
			break;
		case OPT_ALL:
			o.all_mappings = true;
			break;
		case 'h':
			fputs(nprof_dump_help, stdout);
			return EXIT_OK;
		case ':':
		default:
			return cli_option_error("dump", c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error("dump", "no PID given; use nprof dump PID -f FILE");
	if (optind + 1 < argc)
		return cli_usage_error("dump", "unexpected '%s' after the PID", argv[optind + 1]);
	if (cli_parse_pid(argv[optind], &pid) < 0)
		return cli_usage_error("dump", "'%s' is not a PID; give a process id",
				       argv[optind]);
	if (!*file)
		return cli_usage_error("dump", "-f: empty file name");
	if (path_template_expand(file, pid, path, sizeof(path)) < 0) {
		cli_error("-f %s: the expanded path is too long", file);
		return EXIT_FAILED;
	}
	signal(SIGPIPE, SIG_IGN);
	diag_clear(&d);
	if (coredump_write(pid, path, &o, &r, &d) < 0) {
		cli_error("%s", d.msg[0] ? d.msg : "dump failed");
		return EXIT_FAILED;
	}
	fprintf(stderr, "nprof: wrote %s (%s, %s of data; %u threads, %u of %u mappings); "
		"PID %d paused %s\n", path, mib(r.file_bytes, a, sizeof(a)),
		mib(r.data_bytes, b, sizeof(b)), r.nthreads, r.ndumped, r.nmappings,
		(int)pid, units_format_ns(r.pause_ns, p, sizeof(p)));
	if (r.threads_gone)
		fprintf(stderr, "nprof: note: %u thread%s exited before %s could be stopped\n",
			r.threads_gone, r.threads_gone == 1 ? "" : "s",
			r.threads_gone == 1 ? "it" : "they");
	if (r.unreadable_bytes)
		fprintf(stderr, "nprof: note: %s of selected memory could not be read and "
			"reads as zeros in the core\n", mib(r.unreadable_bytes, a, sizeof(a)));
	return EXIT_OK;
}
