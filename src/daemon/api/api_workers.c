/* api_workers: GET /api/v1/workers and /api/v1/workers/ID — one scan
 * of /proc shared by the requests of a second, each worker shown with the
 * modes and actions its user may take on it and why not the others. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/proc.h"
#include "daemon/api/api.h"
#include "daemon/core/nouns.h"
#include "daemon/core/service_name.h"

#define WORKERS_MAX 65536
/* A list of the host's processes is reused for this long: a page that
 * polls, or many clients at once, cost one scan of /proc a second. */
#define SCAN_REUSE_NS 1000000000ull

/* One scan of /proc, shared by the requests that read it. */
struct worker_list {
	unsigned refs;		/* under list_lock */
	uint64_t taken_ns;	/* CLOCK_MONOTONIC */
	uint64_t number;	/* d->scans when it was made; 0: not shared */
	struct worker *ws;
	size_t n;
};

static void worker_list_put(struct daemon *d, struct worker_list *l)
{
	bool last;

	if (!l)
		return;
	pthread_mutex_lock(&d->list_lock);
	last = --l->refs == 0;
	pthread_mutex_unlock(&d->list_lock);
	if (last) {
		free(l->ws);
		free(l);
	}
}

/* A new scan of /proc made the shared list (with the cache's reference
 * and the caller's), or NULL with -errno in *ret_err. */
static struct worker_list *worker_list_refresh(struct daemon *d, int *ret_err)
{
	struct worker_list *fresh = calloc(1, sizeof(*fresh)), *old;
	int r = -ENOMEM;

	if (fresh) {
		pthread_mutex_lock(&d->scanner_lock);
		r = worker_scan(d->scanner, "/proc", WORKERS_MAX, &fresh->ws, &fresh->n);
		pthread_mutex_unlock(&d->scanner_lock);
	}
	pthread_mutex_lock(&d->list_lock);
	d->refreshing = false;
	if (r < 0) {
		free(fresh);
		fresh = NULL;
		old = NULL;
	} else {
		fresh->refs = 2;
		fresh->taken_ns = clock_ns(CLOCK_MONOTONIC);
		fresh->number = ++d->scans;
		old = d->last_scan;
		d->last_scan = fresh;
	}
	pthread_mutex_unlock(&d->list_lock);
	worker_list_put(d, old);
	*ret_err = r;
	return fresh;
}

/* The host's processes: put the list back with worker_list_put. A list
 * older than SCAN_REUSE_NS is renewed by the request that finds it so;
 * the others meanwhile take the old one rather than queue behind the
 * scan (on a busy host, many clients at once would all wait for it).
 * Only when there is no list at all does a request wait for a scan.
 * NULL with -errno in *ret_err. */
static struct worker_list *worker_list_get(struct daemon *d, int *ret_err)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	struct worker_list *l;
	bool renew;

	pthread_mutex_lock(&d->list_lock);
	l = d->last_scan;
	renew = (!l || now - l->taken_ns > SCAN_REUSE_NS) && !d->refreshing;
	if (renew)
		d->refreshing = true;
	else if (l)
		l->refs++;
	pthread_mutex_unlock(&d->list_lock);
	*ret_err = 0;
	/* No list yet (the first request, or the last scan failed) and
	 * another request is making one: make one too, after it. */
	return l && !renew ? l : worker_list_refresh(d, ret_err);
}

/* A list of the one process pid_text names (none when it is gone, not a
 * worker, or not a number), not kept for others. */
static struct worker_list *worker_list_one(struct daemon *d, const char *pid_text, int *ret_err)
{
	struct worker_list *l = calloc(1, sizeof(*l));
	char *end;
	long pid = strtol(pid_text, &end, 10);

	*ret_err = -ENOMEM;
	if (!l || !(l->ws = calloc(1, sizeof(*l->ws)))) {
		free(l);
		return NULL;
	}
	l->refs = 1;
	*ret_err = 0;
	if (*end || end == pid_text || pid <= 0 || pid > INT32_MAX)
		return l;
	pthread_mutex_lock(&d->scanner_lock);
	if (worker_read(d->scanner, "/proc", (pid_t)pid, l->ws) == 0)
		l->n = 1;
	pthread_mutex_unlock(&d->scanner_lock);
	return l;
}

void api_workers_changed(struct daemon *d)
{
	pthread_mutex_lock(&d->list_lock);
	if (d->last_scan)
		d->last_scan->taken_ns = 0; /* the next request renews it */
	pthread_mutex_unlock(&d->list_lock);
}

void api_release(struct daemon *d)
{
	worker_list_put(d, d->last_scan);
	d->last_scan = NULL;
}

/* Why a worker without the agent cannot do what needs it, and what would
 * let it: attaching it, where the operator allows that. */
static const char *no_agent_why(struct daemon *d, const struct service_config *svc)
{
	char key[128];

	return config_action_allowed(&d->cfg, svc, ACTION_ATTACH, key, sizeof(key))
		       ? "needs nprof's agent in the process: load it with Attach agent (nprof "
			 "attach PID), or start it with NPROF_START=1 LD_PRELOAD=libnprof.so"
		       : "needs nprof's agent in the process: start it with NPROF_START=1 "
			 "LD_PRELOAD=libnprof.so";
}

/* The modes w can be recorded in into avail (names), the others with
 * why into unavail (name: reason). */
static void modes_json(struct daemon *d, bool perf_ok, bool sched_ok, const struct worker *w,
		       const struct service_config *svc, json_t *avail, json_t *unavail)
{
	struct worker_mode modes[EVENT_COUNT];

	worker_modes(w, perf_ok, sched_ok, d->hw_ok, modes);
	for (int m = 0; m < EVENT_COUNT; m++) {
		const char *name = event_name(modes[m].event);
		char key[128], why[512];

		if (!config_mode_allowed(&d->cfg, svc, modes[m].event, key, sizeof(key))) {
			snprintf(why, sizeof(why), "disabled by the operator (%s in nprofd.conf)", key);
			json_object_set_new(unavail, name, json_string(why));
		} else if (!modes[m].available && modes[m].needs_agent &&
			   event_defs[modes[m].event].scheduler) {
			/* wall: from outside for an admin, else through the agent. */
			snprintf(why, sizeof(why), "%s, or %s", modes[m].why_not, no_agent_why(d, svc));
			json_object_set_new(unavail, name, json_string(why));
		} else if (!modes[m].available) {
			json_object_set_new(unavail, name,
					    json_string(modes[m].needs_agent ? no_agent_why(d, svc)
									     : modes[m].why_not));
		} else {
			json_array_append_new(avail, json_string(name));
		}
	}
}

static void add_action(json_t *avail, json_t *unavail, const char *name, const char *why)
{
	if (why[0])
		json_object_set_new(unavail, name, json_string(why));
	else
		json_array_append_new(avail, json_string(name));
}

static void actions_json(struct daemon *d, const struct worker *w, bool admin,
			 const struct service_config *svc, bool program_held, json_t *avail,
			 json_t *unavail)
{
	char key[128], why[320];

	for (size_t i = 0; i < action_count; i++) {
		const struct action_def *a = &action_defs[i];
		enum action_kind k = a->kind;

		why[0] = '\0';
		if (!config_action_allowed(&d->cfg, svc, k, key, sizeof(key)))
			snprintf(why, sizeof(why), "disabled by the operator (%s in nprofd.conf)", key);
		else if (a->needs_agent && !w->agent)
			snprintf(why, sizeof(why), "%s", a->without_agent ? a->without_agent
									   : no_agent_why(d, svc));
		else if (a->refuses_agent && w->agent)
			snprintf(why, sizeof(why), "nprof's agent is already loaded in the process");
		else if (k == ACTION_RESTART && !(svc && svc->restart[0]) &&
			 !(access("/run/systemd/system", F_OK) == 0 && strstr(w->unit, ".service")))
			snprintf(why, sizeof(why), "no supervisor to restart it through: not a systemd "
				 "service, and no [service] section with restart_command selects it");
		else if (k == ACTION_RESTART && !admin && svc && svc->restart[0] &&
			 !svc->pid_file[0] && svc->match.kind == SELECT_UNIT)
			snprintf(why, sizeof(why), "only an admin may: [service %s]'s match is a unit "
				 "name any user's own systemd can give, so it does not say whose the "
				 "service is (the operator can name its main process with pid_file)",
				 svc->name);
		else if (k == ACTION_RESTART && !admin && svc && svc->restart[0] &&
			 !svc->pid_file[0] && svc->match.kind == SELECT_EXE && !program_held)
			snprintf(why, sizeof(why), "only an admin may: this process is in [service %s] "
				 "by its program's path alone, a program another user could have put "
				 "there (the operator can install it where only root can change it, or "
				 "name the service's main process with pid_file)", svc->name);
		add_action(avail, unavail, a->name, why);
	}
	for (size_t i = 0; i < d->cfg.n_commands; i++) {
		char name[CONFIG_NAME_MAX + 16];

		why[0] = '\0';
		if (!config_action_allowed(&d->cfg, svc, ACTION_COMMANDS, key, sizeof(key)))
			snprintf(why, sizeof(why), "disabled by the operator (%s in nprofd.conf)", key);
		snprintf(name, sizeof(name), "commands/%s", d->cfg.commands[i].name);
		add_action(avail, unavail, name, why);
	}
}

/* A worker's modes and actions depend on its service, whether it has
 * the agent, and whether it is a systemd service: workers alike share
 * one JSON value (a list of thousands is mostly these). */
struct capabilities {
	bool perf_ok;		/* api_perf_ok for the request's user, asked once */
	bool sched_ok;		/* api_sched_ok, likewise */
	bool admin;		/* the request's user is an admin */
	bool detail;		/* with the reasons for what is not available */
	size_t n;
	struct {
		const struct service_config *svc;
		bool agent, unit_service, program_held;
		json_t *modes, *actions, *unavailable;
	} e[32];
};

static void capabilities_release(struct capabilities *c)
{
	for (size_t i = 0; i < c->n; i++) {
		json_decref(c->e[i].modes);
		json_decref(c->e[i].actions);
		json_decref(c->e[i].unavailable);
	}
	c->n = 0;
}

/* Sets w's modes, actions and (with detail) unavailable in o. */
static void capabilities_set(struct daemon *d, struct capabilities *c, const struct worker *w,
			     const struct service_config *svc, json_t *o)
{
	bool unit_service = strstr(w->unit, ".service") != NULL, program_held = true;
	char why[PATH_MAX + 256];
	size_t i;

	/* Whether its program makes it its service's in earnest: asked only
	 * where that decides a restart (a non-admin, exe:, restart_command). */
	if (!c->admin && svc && svc->restart[0] && !svc->pid_file[0] &&
	    svc->match.kind == SELECT_EXE)
		program_held = api_service_program_held(svc, w, why, sizeof(why)) == 0;
	for (i = 0; i < c->n; i++)
		if (c->e[i].svc == svc && c->e[i].agent == w->agent &&
		    c->e[i].unit_service == unit_service && c->e[i].program_held == program_held)
			break;
	if (i == c->n) {
		json_t *modes = json_array(), *actions = json_array();
		json_t *um = json_object(), *ua = json_object();

		modes_json(d, c->perf_ok, c->sched_ok, w, svc, modes, um);
		actions_json(d, w, c->admin, svc, program_held, actions, ua);
		if (c->n == sizeof(c->e) / sizeof(c->e[0]))
			i = 0, capabilities_release(c);
		c->e[i].svc = svc;
		c->e[i].agent = w->agent;
		c->e[i].unit_service = unit_service;
		c->e[i].program_held = program_held;
		c->e[i].modes = modes;
		c->e[i].actions = actions;
		c->e[i].unavailable = json_pack("{so so}", "modes", um, "actions", ua);
		c->n = i + 1;
	}
	json_object_set(o, "modes", c->e[i].modes);
	json_object_set(o, "actions", c->e[i].actions);
	if (c->detail)
		json_object_set(o, "unavailable", c->e[i].unavailable);
}

static json_t *worker_json(struct daemon *d, struct capabilities *caps, const struct worker *w)
{
	const struct service_config *svc = api_service(d, w);
	enum service_source source;
	const char *service = service_name(w, svc, &source);
	json_t *o = json_object();

	json_object_set_new(o, "id", json_string(w->id));
	json_object_set_new(o, "pid", json_integer(w->pid));
	json_object_set_new(o, "name", json_string(w->name) ?: json_string("?"));
	json_object_set_new(o, "cmdline", json_string(w->cmdline) ?: json_string("?"));
	json_object_set_new(o, "user", json_string(w->user) ?: json_string("?"));
	json_object_set_new(o, "uid", json_integer(w->uid));
	json_object_set_new(o, "service", json_string(service) ?: json_string("?"));
	json_object_set_new(o, "service_source", json_string(service_source_name(source)));
	json_object_set_new(o, "unit", json_string(w->unit) ?: json_string(""));
	json_object_set_new(o, "slice", json_string(w->slice) ?: json_string(""));
	json_object_set_new(o, "cgroup", json_string(w->cgroup) ?: json_string("?"));
	if (w->container[0])
		json_object_set_new(o, "container", json_string(w->container));
	/* hex digits and names identity.c chose: always valid JSON strings */
	json_object_set_new(o, "container_id", json_string(w->container_id));
	json_object_set_new(o, "container_runtime", json_string(w->runtime));
	json_object_set_new(o, "pod_uid", json_string(w->pod_uid));
	json_object_set_new(o, "qos_class", json_string(w->qos));
	json_object_set_new(o, "threads", json_integer(w->threads));
	json_object_set_new(o, "cpu_percent", json_real((double)(int)(w->cpu_percent * 10) / 10));
	json_object_set_new(o, "rss_bytes", json_integer((json_int_t)w->rss_bytes));
	json_object_set_new(o, "uptime", json_real((double)(w->uptime_ns / 1000000) / 1000));
	json_object_set_new(o, "agent", json_boolean(w->agent));
	capabilities_set(d, caps, w, svc, o);
	return o;
}

/* Whether prefix begins s, which must not be empty: ?container= lists
 * the workers in any container, never those in none. */
static bool has_prefix(const char *s, const char *prefix)
{
	return s[0] && !strncmp(s, prefix, strlen(prefix));
}

static bool filter_takes(const struct request *rq, const struct worker *w, const char *service)
{
	const char *q = rq->query(rq, "q"), *user = rq->query(rq, "user"),
		   *svc = rq->query(rq, "service"), *agent = rq->query(rq, "agent"),
		   *pid = rq->query(rq, "pid"), *container = rq->query(rq, "container"),
		   *pod = rq->query(rq, "pod"), *unit = rq->query(rq, "unit"),
		   *qos = rq->query(rq, "qos");

	if (q && !strstr(w->cmdline, q) && !strstr(w->name, q) && !strstr(service, q))
		return false;
	if (container && !has_prefix(w->container_id, container))
		return false;
	if (pod && !has_prefix(w->pod_uid, pod))
		return false;
	if (unit && fnmatch(unit, w->unit, 0))
		return false;
	if (qos && strcmp(qos, w->qos))
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

/* The rendered reply is kept, and taken from the cache, under rq's user
 * and query; asked by api_cluster_list for this host's share, rq->args
 * is NULL: neither from nor into the cache. */
void api_workers_list(struct daemon *d, struct request *rq, struct reply *rp)
{
	struct worker_list *all;
	struct capabilities caps = { .n = 0 };
	json_t *list;
	int r;
	const char *agent = rq->query(rq, "agent"), *detail = rq->query(rq, "detail"),
		   *pid_text = rq->query(rq, "pid"), *qos = rq->query(rq, "qos");

	if (agent && strcmp(agent, "true") && strcmp(agent, "false") && strcmp(agent, "1") &&
	    strcmp(agent, "0")) {
		reply_error(rp, 400, "agent", "agent=%.32s: use true or false", agent);
		return;
	}
	if (qos && strcmp(qos, "guaranteed") && strcmp(qos, "burstable") && strcmp(qos, "besteffort")) {
		reply_error(rp, 400, "qos", "qos=%.32s is not a QoS class; use guaranteed, burstable "
			    "or besteffort", qos);
		return;
	}
	caps.perf_ok = api_perf_ok(d, &rq->user);
	caps.sched_ok = api_sched_ok(d, &rq->user);
	caps.admin = rq->user.admin;
	caps.detail = detail && (!strcmp(detail, "1") || !strcmp(detail, "true"));
	/* One pid: read it now, not from a list a second old that a
	 * process started since is missing from. */
	all = pid_text ? worker_list_one(d, pid_text, &r) : worker_list_get(d, &r);
	if (!all) {
		reply_error(rp, 500, NULL, "cannot read /proc: %s", strerror(-r));
		return;
	}
	if (all->number && api_cached(d, rq, rp, all->number)) {
		worker_list_put(d, all);
		return;
	}
	list = json_array();
	for (size_t i = 0; i < all->n; i++) {
		const struct worker *w = &all->ws[i];

		if (!user_may_see(&rq->user, w->uid) ||
		    !config_selects(&d->cfg, w->unit, w->cgroup, w->exe, w->user) ||
		    !filter_takes(rq, w, api_service_name(d, w)))
			continue;
		json_array_append_new(list, worker_json(d, &caps, w));
	}
	capabilities_release(&caps);
	rp->json = json_pack("{so}", "workers", list);
	if (all->number)
		api_keep(d, rq, rp, all->number);
	worker_list_put(d, all);
}

void api_worker_get(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *id = rq->param[0];
	struct capabilities caps = { .n = 0 };
	struct worker w;
	int pidfd;

	if (!api_worker(d, rq, rp, id, &w, &pidfd))
		return;
	close(pidfd);
	caps.perf_ok = api_perf_ok(d, &rq->user);
	caps.sched_ok = api_sched_ok(d, &rq->user);
	caps.admin = rq->user.admin;
	caps.detail = true;
	rp->json = worker_json(d, &caps, &w);
	capabilities_release(&caps);
}

