/* nprof list: the processes with the agent loaded (docs/nprof-list.1.md). */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "base/proc.h"
#include "client/agent_client.h"
#include "help/nprof-list.h"

static void owner(pid_t pid, char *buf, size_t len)
{
	char path[64];
	struct stat st;
	struct passwd *pw;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st) < 0) {
		snprintf(buf, len, "?");
		return;
	}
	pw = getpwuid(st.st_uid);
	if (pw)
		snprintf(buf, len, "%s", pw->pw_name);
	else
		snprintf(buf, len, "%u", (unsigned)st.st_uid);
}

/* The agent's HTTP endpoint, and where its token is: the user sends it as
 * "Authorization: Bearer" (only a user who may read the file can). */
static void print_http(const struct agent_status *st)
{
	if (!st->http_token[0])
		printf("%7s http://%s/ (no token: open to every local user)\n", "", st->http);
	else
		printf("%7s http://%s/ (token in %s%s)\n", "", st->http, st->http_token,
		       access(st->http_token, R_OK) == 0 ? "" : ", which you cannot read");
}

int cmd_list(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool quiet = false;
	pid_t *pids = NULL;
	unsigned n = 0;
	int c, err;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			quiet = true;
			break;
		case 'h':
			fputs(nprof_list_help, stdout);
			return EXIT_OK;
		default:
			return cli_option_error("list", c, argv);
		}
	}
	for (int i = optind; i < argc; i++) {
		pid_t pid;

		if (cli_parse_pid(argv[i], &pid) < 0)
			return cli_usage_error("list", "'%s' is not a PID", argv[i]);
	}
	err = agent_client_list(&pids, &n);
	if (err < 0) {
		cli_error("cannot read /proc/net/unix: %s", strerror(-err));
		return EXIT_FAILED;
	}
	/* PIDs given: only those (asking every agent takes a while on a
	 * host where some are busy). */
	if (optind < argc) {
		unsigned kept = 0;

		for (unsigned i = 0; i < n; i++)
			for (int k = optind; k < argc; k++)
				if (atoi(argv[k]) == (int)pids[i]) {
					pids[kept++] = pids[i];
					break;
				}
		n = kept;
	}
	if (!quiet)
		printf("%7s %-10s %-31s %-8s %s\n", "PID", "USER", "EVENTS", "STATE", "COMMAND");
	for (unsigned i = 0; i < n; i++) {
		char comm[64], user[64];
		struct agent_status st;
		struct diag d;

		/* The name alone proves nothing (anyone may bind it): each
		 * is verified to be the process's own agent. */
		diag_clear(&d);
		if (quiet) {
			err = agent_client_probe(pids[i], &d);
			if (err > 0)
				printf("%d\n", (int)pids[i]);
			continue;
		}
		proc_comm(pids[i], 0, comm, sizeof(comm));
		owner(pids[i], user, sizeof(user));
		err = agent_client_status(pids[i], &st, &d);
		if (err == -ENOENT || err == -ESRCH)
			continue; /* gone since /proc/net/unix was read */
		if (err < 0) {
			printf("%7d %-10s %-31s %-8s %s (%s)\n", (int)pids[i], user, "?",
			       err == -EACCES || err == -ENOTUNIQ ? "refused" : "?", comm,
			       err == -EACCES ? "another user's agent" : d.msg);
			continue;
		}
		if (st.running)
			printf("%7d %-10s %-31s %-8s %s (%s%s%s)\n", (int)pids[i], user, st.events,
			       "running", comm, st.event, strcmp(st.event, st.effective) ? ", as " : "",
			       strcmp(st.event, st.effective) ? st.effective : "");
		else
			printf("%7d %-10s %-31s %-8s %s\n", (int)pids[i], user, st.events, "idle", comm);
		if (st.http[0])
			print_http(&st);
	}
	free(pids);
	return EXIT_OK;
}
