/* api: what the handlers share — the reply cache, a worker pinned and
 * checked for the user, what the user may record — and GET
 * /api/v1/whoami. The workers resource is api_workers.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/proc.h"
#include "daemon/api/api.h"
#include "daemon/core/service_name.h"
#include "daemon/api/reply_cache.h"
#include "daemon/core/nouns.h"

/* The cache key of rq's reply: who asks (what they may see differs),
 * what and how; false when the query is too long to be one. */
static bool cache_key(const struct request *rq, char *key, size_t len)
{
	int n;

	if (!rq->args)
		return false;
	n = snprintf(key, len, "%u:%d:%s?%s", (unsigned)rq->user.uid, rq->user.admin, rq->path,
		     rq->args);
	return n > 0 && (size_t)n < len;
}

bool api_cached(struct daemon *d, const struct request *rq, struct reply *rp, uint64_t version)
{
	char key[768];

	if (!d->replies || !cache_key(rq, key, sizeof(key)))
		return false;
	rp->body = reply_cache_get(d->replies, key, version, &rp->body_len);
	return rp->body != NULL;
}

void api_keep(struct daemon *d, const struct request *rq, struct reply *rp, uint64_t version)
{
	char key[768];

	if (d->replies && rp->status == 200 && rp->json && cache_key(rq, key, sizeof(key)) &&
	    reply_render(rp))
		reply_cache_put(d->replies, key, version, rp->body, rp->body_len);
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

const char *api_service_name(const struct daemon *d, const struct worker *w)
{
	return service_name(w, api_service(d, w), NULL);
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

bool api_sched_ok(const struct daemon *d, const struct user *u)
{
	return d->sched_ok && u->admin;
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
	pthread_mutex_lock(&d->scanner_lock);
	r = worker_read(d->scanner, "/proc", pid, ret);
	pthread_mutex_unlock(&d->scanner_lock);
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

void api_whoami(struct daemon *d, struct request *rq, struct reply *rp)
{
	char host[256] = "";

	gethostname(host, sizeof(host) - 1);
	rp->json = json_pack("{ss si sb ss ss ss?}", "user", rq->user.name, "uid", (int)rq->user.uid,
			     "admin", rq->user.admin, "via", rq->user.via, "host", host,
			     "http", d->http_url[0] ? d->http_url : NULL);
}

/* GET /api/v1/meta: what this daemon's nouns are (nouns.h). */
void api_meta(struct daemon *d, struct request *rq, struct reply *rp)
{
	(void)d;
	(void)rq;
	rp->json = nouns_json();
}

bool api_known_keys(json_t *body, const char *const *keys, struct reply *rp)
{
	const char *key;
	json_t *v;

	json_object_foreach(body, key, v) {
		char names[256];
		size_t i = 0, n = 0;

		while (keys[i] && strcmp(keys[i], key))
			i++;
		if (keys[i])
			continue;
		names[0] = '\0';
		for (i = 0; keys[i] && n < sizeof(names); i++)
			n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
					      keys[i]);
		reply_error(rp, 400, key, "unknown field '%.64s'; use %s", key, names);
		return false;
	}
	return true;
}

json_t *api_time_json(uint64_t ms)
{
	char when[40];

	return ms ? json_string(iso_time(ms, when, sizeof(when))) : json_null();
}
