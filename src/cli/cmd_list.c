/* nprof list: the processes with the agent loaded (docs/nprof-list.1.md). */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
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

/* Agents asked at once: each answer may take up to the client's
 * timeouts (a busy or stalled agent), so the list takes about as long as
 * the slowest of them, not their sum. */
#define LIST_ASKERS 16

/* One agent's answer. */
struct answer {
	pid_t pid;
	int err;
	struct agent_status st;
	struct diag d;
};

struct asking {
	struct answer *answers;
	unsigned n;
	bool quiet;
	atomic_uint next;
};

static void *ask_agents(void *arg)
{
	struct asking *a = arg;
	unsigned i;

	/* The name alone proves nothing (anyone may bind it): each is
	 * verified to be the process's own agent. */
	while ((i = atomic_fetch_add(&a->next, 1)) < a->n) {
		struct answer *x = &a->answers[i];

		diag_clear(&x->d);
		x->err = a->quiet ? agent_client_probe(x->pid, &x->d)
				  : agent_client_status(x->pid, &x->st, &x->d);
	}
	return NULL;
}

/* Fills answers[0..n) (pids set), with up to LIST_ASKERS threads; asks in
 * this thread what cannot get one. */
static void ask_all(struct answer *answers, unsigned n, bool quiet)
{
	struct asking a = { .answers = answers, .n = n, .quiet = quiet };
	pthread_t t[LIST_ASKERS];
	unsigned started = 0;

	atomic_init(&a.next, 0);
	while (started < LIST_ASKERS && started + 1 < n &&
	       pthread_create(&t[started], NULL, ask_agents, &a) == 0)
		started++;
	ask_agents(&a);
	for (unsigned k = 0; k < started; k++)
		pthread_join(t[k], NULL);
}

int cmd_list(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool quiet = false;
	struct answer *answers;
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
	answers = calloc(n ? n : 1, sizeof(*answers));
	if (!answers) {
		free(pids);
		cli_error("out of memory for %u agents' answers", n);
		return EXIT_FAILED;
	}
	for (unsigned i = 0; i < n; i++)
		answers[i].pid = pids[i];
	ask_all(answers, n, quiet);
	if (!quiet)
		printf("%7s %-10s %-31s %-8s %s\n", "PID", "USER", "EVENTS", "STATE", "COMMAND");
	for (unsigned i = 0; i < n; i++) {
		const struct answer *x = &answers[i];
		const struct agent_status *st = &x->st;
		char comm[64], user[64];

		if (quiet) {
			if (x->err > 0)
				printf("%d\n", (int)x->pid);
			continue;
		}
		if (x->err == -ENOENT || x->err == -ESRCH)
			continue; /* gone since /proc/net/unix was read */
		proc_comm(x->pid, 0, comm, sizeof(comm));
		owner(x->pid, user, sizeof(user));
		if (x->err < 0) {
			printf("%7d %-10s %-31s %-8s %s (%s)\n", (int)x->pid, user, "?",
			       x->err == -EACCES || x->err == -ENOTUNIQ ? "refused" : "?", comm,
			       x->err == -EACCES ? "another user's agent" : x->d.msg);
			continue;
		}
		if (st->running)
			printf("%7d %-10s %-31s %-8s %s (%s%s%s)\n", (int)x->pid, user, st->events,
			       "running", comm, st->event, strcmp(st->event, st->effective) ? ", as " : "",
			       strcmp(st->event, st->effective) ? st->effective : "");
		else
			printf("%7d %-10s %-31s %-8s %s\n", (int)x->pid, user, st->events, "idle", comm);
		if (st->http[0])
			print_http(st);
	}
	free(answers);
	free(pids);
	return EXIT_OK;
}
