/* route: the API's table, matched once per request, and the dispatch
 * that follows from a row. */
#include <stdio.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/api/route.h"

#define ANYONE ROUTE_PUBLIC
#define USER ROUTE_USER
#define ADMIN ROUTE_ADMIN
#define FORWARD ROUTE_FORWARD
#define FANOUT ROUTE_FANOUT
#define HERE ROUTE_HERE
#define GATHER ROUTE_GATHER

/* Every endpoint of docs/api.md, and nothing else: tests/unit/
 * daemon_route_test.c holds the two to each other. Body limits of 0 take
 * max_body. */
const struct route route_table[] = {
	/* method  pattern                                   handler               who     ?host=   body */
	{ "GET",    "/api/v1/whoami",                        api_whoami,           USER,   FORWARD, 0, NULL },
	{ "GET",    "/api/v1/meta",                          api_meta,             USER,   FORWARD, 0, NULL },
	{ "GET",    "/api/v1/host",                          api_host,             USER,   FORWARD, 0, NULL },
	{ "GET",    "/api/v1/hosts",                         api_hosts,            USER,   HERE,    0, NULL },
	{ "GET",    "/api/v1/workers",                       api_workers_list,     USER,   FANOUT,  0, NULL },
	{ "GET",    "/api/v1/workers/{id}",                  api_worker_get,       USER,   FORWARD, 0, NULL },
	{ "POST",   "/api/v1/workers/{id}/{action}",         api_worker_act,       USER,   FORWARD, 0, NULL },
	{ "POST",   "/api/v1/workers/{id}/commands/{name}",  api_worker_command,   USER,   FORWARD, 0, NULL },
	{ "GET",    "/api/v1/commands",                      api_commands,         USER,   FORWARD, 0, NULL },
	{ "GET",    "/api/v1/instances",                     api_instances_list,   USER,   FANOUT,  0, NULL },
	{ "POST",   "/api/v1/instances",                     api_instance_create,  USER,   FORWARD, 0, NULL },
	{ "GET",    "/api/v1/instances/{id}",                api_instance_get,     USER,   FORWARD, 0, NULL },
	{ "POST",   "/api/v1/instances/{id}/stop",           api_instance_stop,    USER,   FORWARD, 0, NULL },
	{ "GET",    "/api/v1/schedules",                     api_schedules_list,   USER,   FANOUT,  0, NULL },
	{ "POST",   "/api/v1/schedules",                     api_schedule_create,  USER,   GATHER,  0, NULL },
	{ "GET",    "/api/v1/schedules/{id}",                api_schedule_get,     USER,   FORWARD, 0, NULL },
	{ "PATCH",  "/api/v1/schedules/{id}",                api_schedule_update,  USER,   FORWARD, 0, NULL },
	{ "DELETE", "/api/v1/schedules/{id}",                api_schedule_delete,  USER,   FORWARD, 0, NULL },
	{ "GET",    "/api/v1/profiles",                      api_profiles,         USER,   GATHER,  0, NULL },
	{ "GET",    "/api/v1/profiles/series",               api_profiles_series,  USER,   GATHER,  0, NULL },
	{ "GET",    "/api/v1/profiles/diff",                 api_profiles_diff,    USER,   FORWARD, 0, NULL },
	{ "GET",    "/api/v1/artifacts",                     api_artifacts_list,   USER,   FANOUT,  0, NULL },
	{ "GET",    "/api/v1/artifacts/{id}",                api_artifact_get,     USER,   FORWARD, 0, NULL },
	{ "DELETE", "/api/v1/artifacts/{id}",                api_artifact_delete,  USER,   FORWARD, 0, NULL },
	{ "GET",    "/api/v1/diff",                          api_diff,             USER,   FORWARD, 0, NULL },
	{ "POST",   "/api/v1/tokens",                        api_token_create,     USER,   FORWARD, 0, NULL },
	{ "GET",    "/api/v1/tokens",                        api_tokens_list,      USER,   FORWARD, 0, NULL },
	{ "DELETE", "/api/v1/tokens/{id}",                   api_token_revoke,     USER,   FORWARD, 0, NULL },
	{ "POST",   "/api/v1/session",                       api_signin,           ANYONE, FORWARD, 0, NULL },
	{ "GET",    "/api/v1/session",                       api_session_get,      USER,   FORWARD, 0, NULL },
	{ "DELETE", "/api/v1/session",                       api_session_end,      USER,   FORWARD, 0, NULL },
	{ "GET",    "/api/v1/audit",                         api_audit,            ADMIN,  FORWARD, 0, "the audit log" },
};
const size_t route_count = sizeof(route_table) / sizeof(route_table[0]);

bool route_fits(const char *pattern, const char *path, char (*param)[ROUTE_PARAM_MAX])
{
	size_t n = 0;

	while (*pattern == '/' && *path == '/') {
		size_t pl = strcspn(pattern + 1, "/") + 1, sl = strcspn(path + 1, "/") + 1;

		if (pattern[1] == '{') {
			/* one segment, not empty, that fits */
			if (sl == 1 || sl > ROUTE_PARAM_MAX || n == REQUEST_PARAMS)
				return false;
			if (param)
				snprintf(param[n], ROUTE_PARAM_MAX, "%.*s", (int)(sl - 1), path + 1);
			n++;
		} else if (pl != sl || strncmp(pattern, path, pl)) {
			return false;
		}
		pattern += pl;
		path += sl;
	}
	if (*pattern || *path)
		return false;
	while (param && n < REQUEST_PARAMS)
		param[n++][0] = '\0';
	return true;
}

void route_match(const char *method, const char *path, struct route_match *ret)
{
	char param[REQUEST_PARAMS][ROUTE_PARAM_MAX];
	size_t len;

	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < route_count; i++) {
		const struct route *r = &route_table[i];

		if (!route_fits(r->pattern, path, param))
			continue;
		if (!ret->route && !strcmp(r->method, method)) {
			ret->route = r;
			memcpy(ret->param, param, sizeof(param));
		}
		if (!ret->path)
			ret->path = r;
		len = strlen(ret->allow);
		snprintf(ret->allow + len, sizeof(ret->allow) - len, "%s%s", len ? ", " : "",
			 r->method);
	}
	if (ret->route)
		ret->path = ret->route;
}

size_t route_max_body(const struct route_match *m, size_t max)
{
	size_t mine = m->route ? m->route->max_body : 0;

	return mine && mine < max ? mine : max;
}

void route_reply_missing(const struct route_match *m, const struct request *rq,
			 struct reply *rp)
{
	char words[64];
	const char *last;

	if (m->path) {
		/* "GET, POST, DELETE" as "GET, POST or DELETE" */
		last = strrchr(m->allow, ',');
		snprintf(words, sizeof(words), "%.*s%s%s", (int)(last ? last - m->allow : 0),
			 m->allow, last ? " or" : "", last ? last + 1 : m->allow);
		snprintf(rp->allow, sizeof(rp->allow), "%s", m->allow);
		reply_error(rp, 405, NULL, "use %s on %.200s", words, rq->path);
	} else if (!strncmp(rq->path, "/api/v1/", 8)) {
		reply_error(rp, 404, NULL, "no %s %.200s in the API; see docs/api.md", rq->method,
			    rq->path);
	} else {
		reply_error(rp, 404, NULL, "no %.200s here; the API is under /api/v1/", rq->path);
	}
}

void route_call(struct daemon *d, const struct route_match *m, struct request *rq,
		struct reply *rp)
{
	for (size_t i = 0; i < REQUEST_PARAMS; i++)
		rq->param[i] = m->param[i][0] ? m->param[i] : NULL;
	m->route->handler(d, rq, rp);
}

void route_dispatch(struct daemon *d, const struct route_match *m, struct request *rq,
		    struct reply *rp)
{
	const char *host = rq->query(rq, "host");

	if (host && m->route && m->route->hosts == ROUTE_FANOUT)
		api_cluster_list(d, rq, rp, host, m->route->handler);
	else if (host && m->path && m->path->hosts != ROUTE_HERE && !api_cluster_is_self(d, host) &&
		 !(m->route && m->route->hosts == ROUTE_GATHER && !strcmp(host, "*")))
		api_cluster_forward(d, rq, rp, host);
	else if (!m->route)
		route_reply_missing(m, rq, rp);
	else if (m->route->who == ROUTE_ADMIN && !rq->user.admin)
		reply_error(rp, 403, NULL, "%s is for admins (admin_users or admin_group in "
			    "nprofd.conf)", m->route->what);
	else
		route_call(d, m, rq, rp);
}

void api_handle(struct daemon *d, const struct request *rq, struct reply *rp)
{
	struct route_match m;
	struct request mine = *rq;

	route_match(rq->method, rq->path, &m);
	route_dispatch(d, &m, &mine, rp);
}
