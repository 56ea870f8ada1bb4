/* nprof stacks: a thread dump of a running process (docs/nprof-stacks.1.md,
 * which is also where --help comes from). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/path_template.h"
#include "cli/cli.h"
#include "client/agent_client.h"
#include "capture/threads_dump.h"
#include "help/nprof-stacks.h"
#include "symbolize/symbolize.h"

struct stacks_args {
	pid_t pid;
	unsigned text_flags;
	bool json;
	bool lines;
	bool ptrace;		/* --ptrace: never through the agent */
	const char *file;
	struct thread_dump_options o;
};

enum long_only { OPT_JSON = 1000, OPT_LINES, OPT_PTRACE };

static int parse_args(int argc, char **argv, struct stacks_args *a)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "group", no_argument, NULL, 'g' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "lines", no_argument, NULL, OPT_LINES },
		{ "ptrace", no_argument, NULL, OPT_PTRACE },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":gf:sj:ah", longopts, NULL)) != -1) {
		switch (c) {
		case 'g':
			a->text_flags |= THREAD_DUMP_GROUP;
			break;
		case 'a':
			a->text_flags |= THREAD_DUMP_ADDRS;
			break;
		case OPT_JSON:
			a->json = true;
			break;
		case OPT_LINES:
			a->lines = true;
			break;
		case OPT_PTRACE:
			a->ptrace = true;
			break;
		case 'f':
			a->file = optarg;
			break;
		case 's':
			a->o.sym_flags |= SYM_SIMPLE;
			break;
		case 'j': {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (end == optarg || *end || v < 1 || v > THREAD_DUMP_MAX_DEPTH)
				return cli_usage_error("stacks",
					"-j %s: not a stack depth; use a number from 1 to %d",
					optarg, THREAD_DUMP_MAX_DEPTH);
			a->o.max_depth = (unsigned)v;
			break;
		}
		case 'h':
			fputs(nprof_stacks_help, stdout);
			exit(EXIT_OK);
		case ':':
		default:
			return cli_option_error("stacks", c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error("stacks", "no PID given; use nprof stacks PID");
	if (optind + 1 < argc)
		return cli_usage_error("stacks", "unexpected '%s' after the PID",
				       argv[optind + 1]);
	if (cli_parse_pid(argv[optind], &a->pid) < 0)
		return cli_usage_error("stacks", "'%s' is not a PID; give a process id",
				       argv[optind]);
	if (a->lines)
		a->o.sym_flags |= SYM_LINES;
	return EXIT_OK;
}

/* thread_dump_take_agent's capture: the agent's JSON thread dump. */
static int agent_capture(pid_t pid, void *arg, char **ret_json, size_t *ret_len,
			 struct diag *d)
{
	(void)arg;
	return agent_client_request(pid, "stacks json", ret_json, ret_len, d);
}

int cmd_stacks(int argc, char **argv)
{
	struct stacks_args a = { 0 };
	struct thread_dump *td = NULL;
	char path[PATH_MAX];
	FILE *out = stdout;
	struct diag d;
	int ret, r;

	ret = parse_args(argc, argv, &a);
	if (ret != EXIT_OK)
		return ret;
	signal(SIGPIPE, SIG_IGN);
	diag_clear(&d);
	if (a.file && path_template_expand(a.file, a.pid, path, sizeof(path)) < 0) {
		cli_error("-f %s: the expanded path is too long", a.file);
		return EXIT_FAILED;
	}
	r = a.ptrace ? 0 : agent_client_probe(a.pid, &d);
	if (r > 0) {
		/* The process has the agent: each thread walks its own stack
		 * in its signal handler; nothing is traced or stopped. */
		r = thread_dump_take_agent(a.pid, &a.o, agent_capture, NULL, &td, &d);
		if (r < 0 && r != -ESRCH) {
			/* An older agent without "stacks", or one that failed:
			 * say so and take the thread dump the usual way. */
			fprintf(stderr, "nprof: PID %d's agent gave no thread dump (%s); "
				"using ptrace\n", (int)a.pid, d.msg[0] ? d.msg : strerror(-r));
			diag_clear(&d);
			r = thread_dump_take(a.pid, &a.o, &td, &d);
		}
	} else {
		if (r < 0 && r != -ESRCH) {
			/* Something else holds the agent's name (never trusted),
			 * or it cannot be reached: the thread dump from
			 * outside. */
			fprintf(stderr, "nprof: %s; %staking the dump with ptrace instead\n",
				d.msg, r == -ENOTUNIQ ? "not trusting it, " : "");
		}
		diag_clear(&d);
		r = thread_dump_take(a.pid, &a.o, &td, &d);
	}
	if (r < 0) {
		cli_error("%s", d.msg[0] ? d.msg : strerror(-r));
		return EXIT_FAILED;
	}
	ret = EXIT_FAILED;
	if (a.file) {
		out = fopen(path, "w");
		if (!out) {
			cli_error("cannot write %s: %s; choose another -f", path, strerror(errno));
			goto out;
		}
	}
	r = a.json ? thread_dump_write_json(td, out) :
		     thread_dump_write_text(td, a.text_flags, out);
	if (fflush(out) != 0 && r == 0)
		r = -errno;
	if (out != stdout && fclose(out) != 0 && r == 0)
		r = -errno;
	if (r < 0) {
		cli_error("cannot write %s: %s", a.file ? path : "standard output",
			  strerror(-r));
		goto out;
	}
	if (a.file)
		fprintf(stderr, "nprof: wrote %s (%zu threads)\n", path, td->nthreads);
	ret = EXIT_OK;
out:
	thread_dump_free(td);
	return ret;
}
