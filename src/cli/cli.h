/* cli: what the subcommands share: how they report, and their entry points.
 *
 * The CLI is the edge: it is the only place that prints errors. Each
 * message is one line, "nprof: " then the cause and the fix. */
#ifndef NPROF_CLI_CLI_H
#define NPROF_CLI_CLI_H

#include <stddef.h>
#include <sys/types.h>

enum cli_exit {
	EXIT_OK = 0,
	EXIT_FAILED = 1, /* the operation ran and failed */
	EXIT_USAGE = 2,	 /* the command line was wrong */
};

void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints the error and a pointer to --help; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* getopt_long gave ':' (an option without its value) or '?' (an
 * unknown option) as c: the usage error naming the option as it was
 * written (-x, --name). Returns EXIT_USAGE. */
int cli_option_error(const char *cmd, int c, char **argv);

int cmd_record(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_stacks(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_heap(int argc, char **argv);
int cmd_attach(int argc, char **argv);
/* Loads (or wakes) the agent in pid as nprof attach does, saying how on
 * stderr; EXIT_OK, or EXIT_FAILED after printing why. */
int cli_attach_agent(pid_t pid);
int cmd_detach(int argc, char **argv);
/* Through nprofd, the host daemon (daemon_cmd.h). */
int cmd_workers(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_instances(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_take(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_schedule(int argc, char **argv);

/* pid_arg.c: a PID argument; -EINVAL unless 1..INT_MAX. (-f templates
 * are base/path_template.h.) */
int cli_parse_pid(const char *arg, pid_t *ret);

#endif
