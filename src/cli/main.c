/* nprof: dispatches to one file per subcommand. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "help/nprof.h"

#ifndef NPROF_VERSION
#define NPROF_VERSION "0.1.0"
#endif

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
	{ "record", cmd_record },
	{ "convert", cmd_convert },
	{ "diff", cmd_diff },
	{ "stacks", cmd_stacks },
	{ "dump", cmd_dump },
	{ "list", cmd_list },
	{ "heap", cmd_heap },
	{ "attach", cmd_attach },
	{ "detach", cmd_detach },
	{ "workers", cmd_workers },
	{ "start", cmd_start },
	{ "instances", cmd_instances },
	{ "stop", cmd_stop },
	{ "get", cmd_get },
	{ "take", cmd_take },
	{ "token", cmd_token },
	{ "schedule", cmd_schedule },
};

void cli_error(const char *fmt, ...)
{
	va_list ap;

	progress_clear();
	fflush(stdout);
	/* One line whole, even from two threads (diff reads its two
	 * profiles at once). */
	flockfile(stderr);
	fputs("nprof: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cli_error("%s (see nprof %s%s--help)", msg, cmd ? cmd : "",
		  cmd ? " " : "");
	return EXIT_USAGE;
}

int cli_option_error(const char *cmd, int c, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	char name[64];

	/* For a long option optopt is its value, not a letter: name it as
	 * it was written. */
	if (!strncmp(arg, "--", 2) || !optopt)
		snprintf(name, sizeof(name), "%s", arg);
	else
		snprintf(name, sizeof(name), "-%c", optopt);
	return c == ':' ? cli_usage_error(cmd, "option %s needs a value", name)
			: cli_usage_error(cmd, "unknown option %s", name);
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : NULL;
	/* Output to a pipe or file in large writes: nprofd reads pages of
	 * megabytes from nprof through a pipe, where stdio would write 4 KiB
	 * at a time, each a wakeup. A terminal keeps its line buffering. */
	static char out_buf[256 << 10];

	if (!isatty(STDOUT_FILENO))
		setvbuf(stdout, out_buf, _IOFBF, sizeof(out_buf));
	if (!name || !strcmp(name, "-h") || !strcmp(name, "--help") ||
	    (!strcmp(name, "help") && argc == 2)) {
		fputs(nprof_help, stdout);
		return name ? EXIT_OK : EXIT_USAGE;
	}
	if (!strcmp(name, "-V") || !strcmp(name, "--version")) {
		printf("nprof %s\n", NPROF_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(name, "help")) {
		char *help_argv[] = { argv[2], "--help", NULL };

		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (!strcmp(commands[i].name, argv[2]))
				return commands[i].run(2, help_argv);
		return cli_usage_error(NULL, "unknown command '%s'", argv[2]);
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return commands[i].run(argc - 1, argv + 1);
	return cli_usage_error(NULL, "unknown command '%s'", name);
}
