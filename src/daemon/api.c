/* api: routing /api/v1 and the workers resource. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/proc.h"
#include "daemon/api.h"
#include "daemon/db.h"

#define WORKERS_MAX 65536

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *iso_time(uint64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)(ms % 1000));
	return buf;
}

bool user_may_see(const struct user *u, uid_t owner)
{
	return u->admin || u->uid == owner;
}

bool api_path(const char *path, const char *prefix, const char *suffix, char *seg, size_t len)
{
	size_t pl = strlen(prefix), n;
	const char *s, *slash;

	if (strncmp(path, prefix, pl) || path[pl] != '/')
		return false;
	s = path + pl + 1;
	slash = strchr(s, '/');
	n = slash ? (size_t)(slash - s) : strlen(s);
	if (!n || n >= len)
		return false;
	if (suffix ? !slash || strcmp(slash + 1, suffix) : slash != NULL)
		return false;
	memcpy(seg, s, n);
	seg[n] = '\0';
	return true;
}

const struct service_config *api_service(const struct daemon *d, const struct worker *w)
{
	return config_service_for(&d->cfg, w->unit, w->cgroup, w->exe, w->user);
}

bool api_perf_ok(const struct daemon *d, const struct user *u)
{
	char buf[32];

	if (!d->perf_ok)
		return false;
	if (u->admin)
		return true;
	/* Children of a non-admin run as that user: exclude_kernel only,
	 * which paranoid 2 allows and 3 (Debian's "no perf at all") does not. */
	return proc_read_small("/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf)) > 0 &&
	       atoi(buf) <= 2;
}

bool api_worker(struct daemon *d, const struct request *rq, struct reply *rp, const char *id,
		struct worker *ret, int *ret_pidfd)
{
	pid_t pid;
	uint64_t start;
	int pidfd, r;

	snprintf(rp->worker, sizeof(rp->worker), "%s", id);
	if (worker_id_parse(id, &pid, &start) < 0) {
		reply_error(rp, 400, "worker", "'%.64s' is not a worker id; ids look like PID-STARTTIME "
			    "(see GET /api/v1/workers)", id);
		return false;
	}
	pidfd = worker_pin("/proc", id);
	if (pidfd < 0) {
		reply_error(rp, 410, "worker", "worker %s has exited (pid %d is gone or is another "
			    "process now); list the workers again", id, (int)pid);
		return false;
	}
	pthread_mutex_lock(&d->scan_lock);
	r = worker_read(d->scanner, "/proc", pid, ret);
	pthread_mutex_unlock(&d->scan_lock);
	if (r < 0 || ret->start_ticks != start) {
		close(pidfd);
		reply_error(rp, 410, "worker", "worker %s has exited; list the workers again", id);
		return false;
	}
	if (!user_may_see(&rq->user, ret->uid) ||
	    !config_selects(&d->cfg, ret->unit, ret->cgroup, ret->exe, ret->user)) {
		close(pidfd);
		reply_error(rp, 404, "worker", "no worker %s that you may act on", id);
		return false;
	}
	*ret_pidfd = pidfd;
	return true;
}

static const char *service_name(const struct worker *w, const struct service_config *svc)
{
	return svc ? svc->name : w->unit[0] ? w->unit : w->cgroup;
}

static json_t *modes_json(struct daemon *d, const struct user *u, const struct worker *w,
			  const struct service_config *svc)
{
	struct worker_mode modes[EVENT_COUNT];
	json_t *a = json_array();

	worker_modes(w, api_perf_ok(d, u), d->hw_ok, modes);
	for (int m = 0; m < EVENT_COUNT; m++) {
		char key[128];
		bool on = config_mode_allowed(&d->cfg, svc, modes[m].event, key, sizeof(key));
		json_t *o = json_pack("{ss sb}", "mode", event_name(modes[m].event), "available",
				      on && modes[m].available);

		if (!on) {
			char why[200];

			snprintf(why, sizeof(why), "disabled by the operator (%s in nprofd.conf)", key);
			json_object_set_new(o, "why_not", json_string(why));
		} else if (!modes[m].available) {
			json_object_set_new(o, "why_not", json_string(modes[m].why_not));
		}
		json_array_append_new(a, o);
	}
	return a;
}

static void add_action(json_t *a, const char *name, const char *why)
{
	json_t *o = json_pack("{ss sb}", "action", name, "available", !why[0]);

	if (why[0])
		json_object_set_new(o, "why_not", json_string(why));
	json_array_append_new(a, o);
}

static json_t *actions_json(struct daemon *d, const struct worker *w,
			    const struct service_config *svc)
{
	static const struct { const char *name; enum action_kind kind; } ACTIONS[] = {
		{ "stacks", ACTION_THREAD_DUMP }, { "heapdump", ACTION_HEAP_SNAPSHOT },
		{ "heap", ACTION_HEAP_PROFILING }, { "coredump", ACTION_CORE_FILE },
		{ "restart", ACTION_RESTART },
	};
	json_t *a = json_array();
	char key[128], why[200];

	for (size_t i = 0; i < sizeof(ACTIONS) / sizeof(ACTIONS[0]); i++) {
		enum action_kind k = ACTIONS[i].kind;

		why[0] = '\0';
		if (!config_action_allowed(&d->cfg, svc, k, key, sizeof(key)))
			snprintf(why, sizeof(why), "disabled by the operator (%s in nprofd.conf)", key);
		else if ((k == ACTION_HEAP_SNAPSHOT || k == ACTION_HEAP_PROFILING) && !w->agent)
			snprintf(why, sizeof(why), "needs nprof's agent in the process: start it with "
				 "NPROF_START=1 LD_PRELOAD=libnprof.so");
		else if (k == ACTION_RESTART && !(svc && svc->restart[0]) &&
			 !(access("/run/systemd/system", F_OK) == 0 && strstr(w->unit, ".service")))
			snprintf(why, sizeof(why), "no supervisor to restart it through: not a systemd "
				 "service, and no [service] section with restart_command selects it");
		add_action(a, ACTIONS[i].name, why);
	}
	for (size_t i = 0; i < d->cfg.n_commands; i++) {
		char name[CONFIG_NAME_MAX + 16];

		why[0] = '\0';
		if (!config_action_allowed(&d->cfg, svc, ACTION_COMMANDS, key, sizeof(key)))
			snprintf(why, sizeof(why), "disabled by the operator (%s in nprofd.conf)", key);
		snprintf(name, sizeof(name), "commands/%s", d->cfg.commands[i].name);
		add_action(a, name, why);
	}
	return a;
}

static json_t *worker_json(struct daemon *d, const struct user *u, const struct worker *w)
{
	const struct service_config *svc = api_service(d, w);
	json_t *o = json_object();

	json_object_set_new(o, "id", json_string(w->id));
	json_object_set_new(o, "pid", json_integer(w->pid));
	json_object_set_new(o, "name", json_string(w->name) ?: json_string("?"));
	json_object_set_new(o, "cmdline", json_string(w->cmdline) ?: json_string("?"));
	json_object_set_new(o, "user", json_string(w->user) ?: json_string("?"));
	json_object_set_new(o, "uid", json_integer(w->uid));
	json_object_set_new(o, "service", json_string(service_name(w, svc)) ?: json_string("?"));
	json_object_set_new(o, "unit", json_string(w->unit) ?: json_string(""));
	json_object_set_new(o, "cgroup", json_string(w->cgroup) ?: json_string("?"));
	if (w->container[0])
		json_object_set_new(o, "container", json_string(w->container));
	json_object_set_new(o, "threads", json_integer(w->threads));
	json_object_set_new(o, "cpu_percent", json_real((double)(int)(w->cpu_percent * 10) / 10));
	json_object_set_new(o, "rss_bytes", json_integer((json_int_t)w->rss_bytes));
	json_object_set_new(o, "uptime", json_real((double)(w->uptime_ns / 1000000) / 1000));
	json_object_set_new(o, "agent", json_boolean(w->agent));
	json_object_set_new(o, "modes", modes_json(d, u, w, svc));
	json_object_set_new(o, "actions", actions_json(d, w, svc));
	return o;
}

static bool filter_takes(const struct request *rq, const struct worker *w, const char *service)
{
	const char *q = rq->query(rq, "q"), *user = rq->query(rq, "user"),
		   *svc = rq->query(rq, "service"), *agent = rq->query(rq, "agent"),
		   *pid = rq->query(rq, "pid");

	if (q && !strstr(w->cmdline, q) && !strstr(w->name, q) && !strstr(service, q))
		return false;
	if (user && strcmp(user, w->user))
		return false;
	if (svc && fnmatch(svc, service, 0))
		return false;
	if (agent && (!strcmp(agent, "true") || !strcmp(agent, "1")) != w->agent)
		return false;
	if (pid && atoi(pid) != w->pid)
		return false;
	return true;
}

static void workers_list(struct daemon *d, const struct request *rq, struct reply *rp)
{
	struct worker *ws = NULL;
	size_t n = 0;
	json_t *list;
	int r;
	const char *agent = rq->query(rq, "agent");

	if (agent && strcmp(agent, "true") && strcmp(agent, "false") && strcmp(agent, "1") &&
	    strcmp(agent, "0")) {
		reply_error(rp, 400, "agent", "agent=%.32s: use true or false", agent);
		return;
	}
	pthread_mutex_lock(&d->scan_lock);
	r = worker_scan(d->scanner, "/proc", WORKERS_MAX, &ws, &n);
	pthread_mutex_unlock(&d->scan_lock);
	if (r < 0) {
		reply_error(rp, 500, NULL, "cannot read /proc: %s", strerror(-r));
		return;
	}
	list = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct worker *w = &ws[i];

		if (!user_may_see(&rq->user, w->uid) ||
		    !config_selects(&d->cfg, w->unit, w->cgroup, w->exe, w->user) ||
		    !filter_takes(rq, w, service_name(w, api_service(d, w))))
			continue;
		json_array_append_new(list, worker_json(d, &rq->user, w));
	}
	free(ws);
	rp->json = json_pack("{so}", "workers", list);
}

static void worker_one(struct daemon *d, const struct request *rq, struct reply *rp,
		       const char *id)
{
	struct worker w;
	int pidfd;

	if (!api_worker(d, rq, rp, id, &w, &pidfd))
		return;
	close(pidfd);
	rp->json = worker_json(d, &rq->user, &w);
}

static void whoami(struct daemon *d, const struct request *rq, struct reply *rp)
{
	char host[256] = "";

	gethostname(host, sizeof(host) - 1);
	rp->json = json_pack("{ss si sb ss ss ss?}", "user", rq->user.name, "uid", (int)rq->user.uid,
			     "admin", rq->user.admin, "via", rq->user.via, "host", host,
			     "http", d->http_url[0] ? d->http_url : NULL);
}

/* "/api/v1/workers/ID/ACTION...": the id into seg, *ret_action past it. */
static bool worker_action(const char *path, char *seg, size_t len, const char **ret_action)
{
	const char *id = path + 16, *slash;

	if (strncmp(path, "/api/v1/workers/", 16) || !(slash = strchr(id, '/')) || slash == id ||
	    (size_t)(slash - id) >= len || !slash[1])
		return false;
	memcpy(seg, id, (size_t)(slash - id));
	seg[slash - id] = '\0';
	*ret_action = slash + 1;
	return true;
}

void api_handle(struct daemon *d, const struct request *rq, struct reply *rp)
{
	const char *p = rq->path, *action;
	char seg[128];
	bool get = !strcmp(rq->method, "GET"), post = !strcmp(rq->method, "POST");

	if (!strcmp(p, "/api/v1/workers") && get)
		workers_list(d, rq, rp);
	else if (api_path(p, "/api/v1/workers", NULL, seg, sizeof(seg)) && get)
		worker_one(d, rq, rp, seg);
	else if (post && worker_action(p, seg, sizeof(seg), &action))
		api_actions(d, rq, rp, seg, action);
	else if (!strcmp(p, "/api/v1/commands") && get)
		api_commands(d, rq, rp);
	else if (!strncmp(p, "/api/v1/instances", 17) && (p[17] == '\0' || p[17] == '/'))
		api_instances(d, rq, rp);
	else if (!strncmp(p, "/api/v1/artifacts", 17) && (p[17] == '\0' || p[17] == '/'))
		api_artifacts(d, rq, rp);
	else if (!strncmp(p, "/api/v1/tokens", 14) && (p[14] == '\0' || p[14] == '/'))
		api_tokens(d, rq, rp);
	else if (!strcmp(p, "/api/v1/audit") && get)
		api_audit(d, rq, rp);
	else if (!strcmp(p, "/api/v1/whoami") && get)
		whoami(d, rq, rp);
	else if (!strncmp(p, "/api/v1/", 8))
		reply_error(rp, 404, NULL, "no %s %.200s in the API; see docs/api.md", rq->method, p);
	else
		reply_error(rp, 404, NULL, "no %.200s here; the API is under /api/v1/", p);
}
