/* api_host: GET /api/v1/host — what this host is and allows, and what
 * that means for the user asking, in words (the web UI's host page). */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/proc.h"
#include "daemon/api/api.h"

/* A small /proc/sys value as a number, or -1 when it cannot be read. */
static long sysctl_number(const char *path)
{
	char buf[32];

	return proc_read_small(path, buf, sizeof(buf)) > 0 ? atol(buf) : -1;
}

static const char *perf_words(long paranoid, bool admin, bool perf_ok)
{
	if (!perf_ok)
		return "perf events are not available here (no perf_event_open): cpu, page-faults "
		       "and context-switches fall back to itimer, the agent's own timer";
	if (admin)
		return "you are an admin: profiles of any process, with kernel frames";
	if (paranoid <= 1)
		return "you may profile your own processes, with kernel frames";
	if (paranoid == 2)
		return "you may profile your own processes' user-space code; kernel frames need an "
		       "admin (kernel.perf_event_paranoid = 2)";
	return "perf events are for admins only here (kernel.perf_event_paranoid > 2): your "
	       "processes are profiled with itimer, through the agent";
}

static const char *ptrace_words(long scope, bool admin)
{
	if (admin || scope == 0)
		return "thread dumps and core files of your processes work";
	if (scope == 1)
		return "thread dumps and core files work: nprofd reads them for you (Yama "
		       "ptrace_scope 1 keeps other users' tools out, not nprofd)";
	if (scope == 2)
		return "thread dumps and core files need an admin (Yama ptrace_scope 2)";
	return "no process can be traced on this host (Yama ptrace_scope 3): no thread dumps "
	       "without the agent, no core files";
}

void api_host(struct daemon *d, struct request *rq, struct reply *rp)
{
	struct utsname u;
	char host[256] = "", lib[PATH_MAX], dir[PATH_MAX], agent_means[PATH_MAX + 256];
	long paranoid = sysctl_number("/proc/sys/kernel/perf_event_paranoid");
	long scope = sysctl_number("/proc/sys/kernel/yama/ptrace_scope");
	long uptime = sysctl_number("/proc/uptime");
	bool agent;

	gethostname(host, sizeof(host) - 1);
	uname(&u);
	snprintf(dir, sizeof(dir), "%s", d->nprof);
	snprintf(lib, sizeof(lib), "%.4000s/libnprof.so", dirname(dir));
	agent = access(lib, R_OK) == 0;
	if (agent)
		snprintf(agent_means, sizeof(agent_means), "alloc, heap and lock profiles, heap "
			 "snapshots and the agent's wall need it in the process: start it with "
			 "NPROF_START=1 LD_PRELOAD=%s", lib);
	else
		snprintf(agent_means, sizeof(agent_means), "the agent (libnprof.so) is not installed "
			 "beside nprof: no alloc, heap or lock profiles, no heap snapshots");
	rp->json = json_pack(
		"{ss ss ss sI sI s{sI sb sb ss} s{sI ss} s{sb ss? ss}}",
		"name", host, "kernel", u.release, "machine", u.machine,
		"cpus", (json_int_t)sysconf(_SC_NPROCESSORS_ONLN),
		"uptime_seconds", (json_int_t)(uptime > 0 ? uptime : 0),
		"perf",
		"paranoid", (json_int_t)paranoid, "available", d->perf_ok, "hardware_events", d->hw_ok,
		"means", perf_words(paranoid, rq->user.admin, api_perf_ok(d, &rq->user)),
		"ptrace",
		"yama_scope", (json_int_t)scope, "means", ptrace_words(scope, rq->user.admin),
		"agent",
		"installed", agent, "library", agent ? lib : NULL, "means", agent_means);
}
