/* nprof attach / nprof detach: the agent into a running process that was
 * not started with it, and out again (docs/nprof-attach.1.md, which is
 * also where --help comes from). The loading is src/inject/. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/proc.h"
#include "cli/agent_preload.h"
#include "cli/cli.h"
#include "client/agent_client.h"
#include "help/nprof-attach.h"
#include "inject/agent_load.h"
#include "threaddump/threaddump.h"

/* How long the agent's control socket may take to answer once loaded. */
#define ANSWER_TIMEOUT_NS (5ull * 1000000000ull)

static bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	return false;
}

/* Waits for pid's agent to answer on its socket: 1, or 0 at the deadline. */
static int wait_answer(pid_t pid, struct diag *d)
{
	uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + ANSWER_TIMEOUT_NS;

	for (;;) {
		int r = agent_client_probe(pid, d);

		if (r != 0)
			return r;
		if (clock_ns(CLOCK_MONOTONIC) > deadline)
			return 0;
		nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
	}
}

static int answers(void *ctx, pid_t pid)
{
	(void)ctx;
	return agent_client_probe(pid, NULL);
}

int cli_attach_agent(pid_t pid)
{
	char lib[4096], comm[64] = "?";
	struct agent_load r;
	struct diag d;
	int err;

	diag_clear(&d);
	err = agent_client_probe(pid, &d);
	if (err > 0) {
		fprintf(stderr, "nprof: the agent already runs in process %d: used as it is\n",
			(int)pid);
		return 0;
	}
	if (err < 0 && err != -ENOENT) {
		cli_error("%s", d.msg[0] ? d.msg : strerror(-err));
		return EXIT_FAILED;
	}
	diag_clear(&d);
	if (agent_library_path(lib, sizeof(lib), &d) < 0 || agent_load(pid, lib, answers, &r, &d) < 0) {
		cli_error("%s", d.msg);
		return EXIT_FAILED;
	}
	proc_comm(pid, 0, comm, sizeof(comm));
	diag_clear(&d);
	err = wait_answer(pid, &d);
	if (err <= 0) {
		cli_error("%s", err < 0 && d.msg[0] ? d.msg :
			  "the agent was loaded but its control socket does not answer; "
			  "is NPROF_CONTROL=0 in the process's environment?");
		return EXIT_FAILED;
	}
	fprintf(stderr,
		"nprof: agent %s in process %d (%s)%s%s by thread %d (%s%s): stopped %.2f ms, then "
		"busy %.2f ms %s; no other thread stopped\n",
		r.resumed ? "woken" : "loaded", (int)pid, comm, r.copied ? " from a copy at " : "",
		r.copied ? r.path : "", (int)r.call.tid,
		r.call.syscall >= 0 ? "waiting in " : "running",
		r.call.syscall >= 0 ? thread_syscall_name(r.call.syscall) : "",
		(double)r.call.setup_ns / 1e6, (double)r.call.call_ns / 1e6,
		r.resumed ? "restarting its control" : "in dlopen");
	return 0;
}

int cmd_attach(int argc, char **argv)
{
	pid_t pid;
	int r;

	if (wants_help(argc, argv)) {
		fputs(nprof_attach_help, stdout);
		return EXIT_OK;
	}
	if (argc < 2)
		return cli_usage_error("attach", "no PID given; use nprof attach [RECORD OPTIONS] PID");
	if (cli_parse_pid(argv[argc - 1], &pid) < 0)
		return cli_usage_error("attach", "'%s' is not a PID; the PID comes last",
				       argv[argc - 1]);
	if (argc == 2)
		return cli_attach_agent(pid);
	/* Options: nprof record --attach OPTIONS PID, which checks them
	 * before it attaches. */
	{
		char **rargv = calloc((size_t)argc + 2, sizeof(*rargv));

		if (!rargv) {
			cli_error("out of memory");
			return EXIT_FAILED;
		}
		rargv[0] = "record";
		rargv[1] = "--attach";
		memcpy(rargv + 2, argv + 1, (size_t)(argc - 1) * sizeof(*rargv));
		r = cmd_record(argc + 1, rargv);
		free(rargv);
		return r;
	}
}

int cmd_detach(int argc, char **argv)
{
	char *text = NULL;
	size_t len = 0;
	struct diag d;
	pid_t pid;
	int r;

	if (wants_help(argc, argv)) {
		fputs(nprof_attach_help, stdout);
		return EXIT_OK;
	}
	if (argc != 2)
		return cli_usage_error("detach", "use nprof detach PID");
	if (cli_parse_pid(argv[1], &pid) < 0)
		return cli_usage_error("detach", "'%s' is not a PID; give a process id", argv[1]);
	diag_clear(&d);
	r = agent_client_request(pid, "detach", &text, &len, &d);
	if (r < 0) {
		if (r == -ENOENT)
			cli_error("process %d has no agent answering (never attached, or already "
				  "detached)", (int)pid);
		else
			cli_error("%s", d.msg);
		return EXIT_FAILED;
	}
	fprintf(stderr, "nprof: process %d: %s", (int)pid, len ? text : "detached\n");
	free(text);
	return 0;
}
