/* nprof list: the processes with the agent loaded (docs/nprof-list.1.md). */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/agent_client.h"
#include "cli/cli.h"
#include "help/nprof-list.h"

static void read_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	buf[0] = '\0';
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

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

/* Picks "key value" lines out of a status reply. */
static const char *field(const char *reply, const char *key, char *buf, size_t len)
{
	size_t k = strlen(key);

	for (const char *l = reply; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (!strncmp(l, key, k) && l[k] == ' ') {
			size_t n = strcspn(l + k + 1, "\n");

			snprintf(buf, len, "%.*s", (int)n, l + k + 1);
			return buf;
		}
	}
	snprintf(buf, len, "?");
	return buf;
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
			return cli_usage_error("list", "unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("list", "unexpected '%s'", argv[optind]);
	err = agent_client_list(&pids, &n);
	if (err < 0) {
		cli_error("cannot read /proc/net/unix: %s", strerror(-err));
		return EXIT_FAILED;
	}
	if (!quiet)
		printf("%7s %-10s %-31s %-8s %s\n", "PID", "USER", "EVENTS", "STATE", "COMMAND");
	for (unsigned i = 0; i < n; i++) {
		char comm[64], user[64], events[64], state[256], *reply = NULL;
		size_t len;
		struct diag d;

		if (quiet) {
			printf("%d\n", (int)pids[i]);
			continue;
		}
		read_comm(pids[i], comm, sizeof(comm));
		owner(pids[i], user, sizeof(user));
		diag_clear(&d);
		err = agent_client_request(pids[i], "status", &reply, &len, &d);
		if (err < 0) {
			printf("%7d %-10s %-31s %-8s %s (%s)\n", (int)pids[i], user, "?",
			       err == -EACCES ? "refused" : "?", comm,
			       err == -EACCES ? "another user's agent" : d.msg);
			continue;
		}
		field(reply, "events", events, sizeof(events));
		field(reply, "state", state, sizeof(state));
		if (!strncmp(state, "running", 7)) {
			char ev[32] = "", eff[32] = "";
			const char *e = strstr(state, "event="), *f = strstr(state, "effective=");

			if (e)
				sscanf(e, "event=%31s", ev);
			if (f)
				sscanf(f, "effective=%31s", eff);
			printf("%7d %-10s %-31s %-8s %s (%s%s%s)\n", (int)pids[i], user, events,
			       "running", comm, ev, strcmp(ev, eff) ? ", as " : "",
			       strcmp(ev, eff) ? eff : "");
		} else {
			printf("%7d %-10s %-31s %-8s %s\n", (int)pids[i], user, events, "idle", comm);
		}
		free(reply);
	}
	free(pids);
	return EXIT_OK;
}
