/* daemon_route: nprofd's route table (src/daemon/api/route.c) is well formed
 * and matches as the API says — parameters, 404 against 405, the one
 * public route, the admin's — and docs/api.md's endpoints are its rows,
 * both ways: every route is documented, every documented endpoint is a
 * route. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/api/route.h"
#include "test.h"

static const char *no_query(const struct request *rq, const char *key)
{
	(void)rq;
	(void)key;
	return NULL;
}

/* A path the pattern takes: each {name} as "NAME" (docs/api.md's way of
 * writing it), or as sample when that is set. */
static void path_of(const char *pattern, const char *sample, char *buf, size_t len)
{
	size_t n = 0;

	for (const char *p = pattern; *p && n + 1 < len; p++) {
		if (*p != '{') {
			buf[n++] = *p;
			continue;
		}
		for (p++; *p && *p != '}'; p++)
			if (!sample && n + 1 < len)
				buf[n++] = (char)toupper((unsigned char)*p);
		if (sample)
			n += (size_t)snprintf(buf + n, len - n, "%s", sample);
	}
	buf[n < len ? n : len - 1] = '\0';
}

/* Whether a pattern is /api/v1/ and segments, each a literal of
 * [a-z] or a {name} of [a-z_], at most REQUEST_PARAMS of those. */
static bool well_formed(const char *pattern)
{
	unsigned params = 0;
	const char *p;

	if (strncmp(pattern, "/api/v1/", 8))
		return false;
	for (p = pattern + 8; *p;) {
		size_t n = strcspn(p, "/");

		if (n == 0)
			return false;
		if (p[0] == '{') {
			if (p[n - 1] != '}' || n < 3 || strspn(p + 1, "abcdefghijklmnopqrstuvwxyz_") != n - 2)
				return false;
			params++;
		} else if (strspn(p, "abcdefghijklmnopqrstuvwxyz") != n) {
			return false;
		}
		p += n;
		if (*p == '/' && !*++p)
			return false; /* a trailing slash */
	}
	return params <= REQUEST_PARAMS;
}

static void check_table(void)
{
	unsigned public = 0;

	CHECK_UINT(route_count, >=, 20, "the table has every route (%zu)", route_count);
	for (size_t i = 0; i < route_count; i++) {
		const struct route *r = &route_table[i];
		char path[256];
		struct route_match m;

		CHECK(!strcmp(r->method, "GET") || !strcmp(r->method, "POST") ||
		      !strcmp(r->method, "PATCH") || !strcmp(r->method, "DELETE"),
		      "%s %s: a method of the API", r->method, r->pattern);
		CHECK(well_formed(r->pattern), "%s %s: a well-formed pattern", r->method, r->pattern);
		CHECK(r->handler != NULL, "%s %s: a handler", r->method, r->pattern);
		CHECK(r->who != ROUTE_ADMIN || (r->what && r->what[0]),
		      "%s %s: for admins, names what it serves for the 403", r->method, r->pattern);
		CHECK(r->hosts != ROUTE_FANOUT || (!strcmp(r->method, "GET") && !strchr(r->pattern, '{')),
		      "%s %s: only a list fans out", r->method, r->pattern);
		CHECK(r->max_body == 0 || r->max_body >= 1024, "%s %s: a body limit of 0 or >= 1k",
		      r->method, r->pattern);
		public += r->who == ROUTE_PUBLIC;
		/* no row hides another: a path of its own reaches it */
		path_of(r->pattern, "x1", path, sizeof(path));
		route_match(r->method, path, &m);
		CHECK(m.route == r, "%s %s: %s reaches it, not an earlier row", r->method, r->pattern,
		      path);
		/* the Allow of its path names every method its path has, uncut */
		{
			unsigned methods = 0, listed = 1;

			for (size_t j = 0; j < route_count; j++)
				methods += route_fits(route_table[j].pattern, path, NULL);
			for (const char *c = m.allow; (c = strchr(c, ',')); c++)
				listed++;
			CHECK(listed == methods && strstr(m.allow, r->method),
			      "%s: Allow names its %u methods (%s)", path, methods, m.allow);
		}
	}
	CHECK_UINT(public, ==, 1, "one route is public, the sign-in");
}

static void check_matching(void)
{
	struct route_match m;
	char long_id[200];

	route_match("GET", "/api/v1/workers", &m);
	CHECK(m.route && m.route->handler == api_workers_list && m.route->hosts == ROUTE_FANOUT,
	      "GET /api/v1/workers: the list, which fans out");
	route_match("GET", "/api/v1/workers/4242-9876", &m);
	CHECK(m.route && m.route->handler == api_worker_get, "GET /api/v1/workers/ID: one worker");
	CHECK_STR(m.param[0], "4242-9876", "its id");
	CHECK_STR(m.param[1], "", "and no second parameter");
	route_match("POST", "/api/v1/workers/4242-9876/stacks", &m);
	CHECK(m.route && m.route->handler == api_worker_act, "POST .../stacks: an action");
	CHECK(!strcmp(m.param[0], "4242-9876") && !strcmp(m.param[1], "stacks"),
	      "its worker and action (%s, %s)", m.param[0], m.param[1]);
	route_match("POST", "/api/v1/workers/4242-9876/commands/flush", &m);
	CHECK(m.route && m.route->handler == api_worker_command &&
	      !strcmp(m.param[0], "4242-9876") && !strcmp(m.param[1], "flush"),
	      "POST .../commands/NAME: a command, and its name");
	route_match("POST", "/api/v1/workers/4242-9876/commands", &m);
	CHECK(m.route && m.route->handler == api_worker_act && !strcmp(m.param[1], "commands"),
	      "POST .../commands without a name: an action the handler refuses");
	route_match("POST", "/api/v1/instances/17/stop", &m);
	CHECK(m.route && m.route->handler == api_instance_stop && !strcmp(m.param[0], "17"),
	      "POST /api/v1/instances/ID/stop");
	route_match("POST", "/api/v1/session", &m);
	CHECK(m.route && m.route->who == ROUTE_PUBLIC && m.route->handler == api_signin,
	      "POST /api/v1/session: the sign-in, public");
	route_match("GET", "/api/v1/session", &m);
	CHECK(m.route && m.route->who == ROUTE_USER, "GET /api/v1/session: a known user's");
	route_match("GET", "/api/v1/audit", &m);
	CHECK(m.route && m.route->who == ROUTE_ADMIN, "GET /api/v1/audit: admins'");
	route_match("GET", "/api/v1/hosts", &m);
	CHECK(m.route && m.route->hosts == ROUTE_HERE, "GET /api/v1/hosts: answered here");
	route_match("GET", "/api/v1/profiles", &m);
	CHECK(m.route && m.route->hosts == ROUTE_GATHER,
	      "GET /api/v1/profiles: host=* gathered and merged by its handler");

	/* what fits no pattern */
	static const char *const none[] = {
		"/api/v1/workers/", "/api/v1//workers", "/api/v1/workers//stacks",
		"/api/v1/workersx", "/api/v1", "/api/v1/", "/", "", "/api/v2/workers",
		"/api/v1/workers/1-2/stacks/more", "/api/v1/instances/1/stop/",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		route_match("GET", none[i], &m);
		CHECK(!m.route && !m.path, "'%s': no route", none[i]);
	}
	snprintf(long_id, sizeof(long_id), "/api/v1/workers/");
	memset(long_id + 16, 'a', ROUTE_PARAM_MAX - 1);
	long_id[16 + ROUTE_PARAM_MAX - 1] = '\0';
	route_match("GET", long_id, &m);
	CHECK(m.route && strlen(m.param[0]) == ROUTE_PARAM_MAX - 1, "a parameter of %d bytes fits",
	      ROUTE_PARAM_MAX - 1);
	strcat(long_id, "a");
	route_match("GET", long_id, &m);
	CHECK(!m.route && !m.path, "one of %d bytes does not", ROUTE_PARAM_MAX);
}

/* The reply route_dispatch makes for method and path, by a non-admin
 * user on the socket, without ?host=. */
static void dispatch(const char *method, const char *path, struct reply *rp)
{
	static struct daemon d;
	struct request rq = { .method = method, .path = path, .query = no_query,
			      .user = { .uid = 1000, .name = "alice", .via = "socket" } };
	struct route_match m;

	json_decref(rp->json);
	*rp = (struct reply){ .status = 200, .fd = -1 };
	route_match(method, path, &m);
	route_dispatch(&d, &m, &rq, rp);
}

static const char *error_of(const struct reply *rp)
{
	return json_string_value(json_object_get(rp->json, "error"));
}

static void check_replies(void)
{
	struct reply rp = { .fd = -1 };
	struct route_match m = { 0 };
	struct route limited = { .method = "POST", .pattern = "/api/v1/x", .max_body = 4096 };

	dispatch("PUT", "/api/v1/instances", &rp);
	CHECK_UINT(rp.status, ==, 405, "PUT /api/v1/instances: 405");
	CHECK_STR(rp.allow, "GET, POST", "with Allow");
	CHECK_STR(error_of(&rp), "use GET or POST on /api/v1/instances", "saying what to use");
	dispatch("GET", "/api/v1/workers/4242-9876/stacks", &rp);
	CHECK(rp.status == 405 && !strcmp(rp.allow, "POST"), "GET of an action: 405, Allow: POST");
	dispatch("HEAD", "/api/v1/workers", &rp);
	CHECK(rp.status == 405 && !strcmp(rp.allow, "GET"), "HEAD of the workers: 405, Allow: GET");
	dispatch("PUT", "/api/v1/session", &rp);
	CHECK(rp.status == 405 && strstr(rp.allow, "POST") && strstr(rp.allow, "DELETE"),
	      "PUT /api/v1/session: 405 naming the sign-in too (%s)", rp.allow);
	dispatch("GET", "/api/v1/nothing", &rp);
	CHECK_UINT(rp.status, ==, 404, "an unknown path of the API: 404");
	CHECK_STR(error_of(&rp), "no GET /api/v1/nothing in the API; see docs/api.md", "its text");
	CHECK_STR(rp.allow, "", "no Allow");
	dispatch("GET", "/favicon.ico", &rp);
	CHECK_UINT(rp.status, ==, 404, "a path outside the API: 404");
	CHECK_STR(error_of(&rp), "no /favicon.ico here; the API is under /api/v1/", "its text");
	dispatch("GET", "/api/v1/audit", &rp);
	CHECK_UINT(rp.status, ==, 403, "the audit log for a user who is no admin: 403");
	CHECK_STR(error_of(&rp), "the audit log is for admins (admin_users or admin_group in "
		  "nprofd.conf)", "its text");
	json_decref(rp.json);

	CHECK_UINT(route_max_body(&m, 65536), ==, 65536, "no route: max_body");
	route_match("POST", "/api/v1/instances", &m);
	CHECK_UINT(route_max_body(&m, 65536), ==, 65536, "a route without a limit: max_body");
	m.route = &limited;
	CHECK_UINT(route_max_body(&m, 65536), ==, 4096, "a route's limit under max_body");
	CHECK_UINT(route_max_body(&m, 1024), ==, 1024, "max_body under a route's limit");
}

/* ---- docs/api.md ---------------------------------------------------------- */

#define DOC_MAX 128

struct doc_endpoint {
	char method[8];
	char path[256];
};

/* The endpoints docs/api.md names in inline code: "`GET /api/v1/x`",
 * "`POST /api/v1/workers/ID/ACTION`", "`GET /api/v1/diff?before=...`",
 * a line break within one as a space; not what fenced blocks hold. */
static size_t doc_endpoints(const char *text, struct doc_endpoint *out, size_t max)
{
	size_t n = 0;
	bool fenced = false;

	for (const char *p = text; *p; p++) {
		char span[512], *s;
		const char *close;
		size_t len;

		if ((p == text || p[-1] == '\n') && !strncmp(p, "```", 3)) {
			fenced = !fenced;
			p += strcspn(p, "\n");
			if (!*p)
				break;
			continue;
		}
		if (fenced || *p != '`')
			continue;
		close = strchr(p + 1, '`');
		if (!close)
			break;
		len = (size_t)(close - p - 1);
		snprintf(span, sizeof(span), "%.*s", (int)(len < sizeof(span) ? len : 0), p + 1);
		p = close;
		for (s = span; *s; s++)
			if (*s == '\n')
				*s = ' ';
		s = span + strcspn(span, " ");
		if (!*s || strncmp(s + 1, "/api/", 5) || n == max)
			continue;
		snprintf(out[n].method, sizeof(out[n].method), "%.*s", (int)(s - span), span);
		snprintf(out[n].path, sizeof(out[n].path), "%.*s", (int)strcspn(s + 1, "?[ "), s + 1);
		n++;
	}
	return n;
}

static void check_docs(void)
{
	const char *src = getenv("NPROF_SRC");
	char path[4096], *text;
	static struct doc_endpoint doc[DOC_MAX];
	size_t n = 0, got;
	FILE *f;

	snprintf(path, sizeof(path), "%s/docs/api.md", src ? src : ".");
	f = fopen(path, "r");
	CHECK(f != NULL, "reads %s", path);
	if (!f)
		return;
	text = malloc(1 << 20);
	got = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	if (!text)
		return;
	text[got] = '\0';
	n = doc_endpoints(text, doc, DOC_MAX);
	free(text);
	CHECK_UINT(n, >=, route_count, "docs/api.md names %zu endpoints", n);

	/* every route, written as the docs write it ({id} as ID) */
	for (size_t i = 0; i < route_count; i++) {
		const struct route *r = &route_table[i];
		char want[256];
		bool found = false;

		path_of(r->pattern, NULL, want, sizeof(want));
		for (size_t j = 0; j < n; j++) {
			found |= !strcmp(doc[j].method, r->method) && !strcmp(doc[j].path, want);
		}
		CHECK(found, "docs/api.md documents `%s %s`", r->method, want);
	}
	/* every documented endpoint, a route of its method */
	for (size_t j = 0; j < n; j++) {
		struct route_match m;

		route_match(doc[j].method, doc[j].path, &m);
		CHECK(m.route != NULL, "`%s %s` of docs/api.md is a route", doc[j].method, doc[j].path);
	}
}

int main(void)
{
	check_table();
	check_matching();
	check_replies();
	check_docs();
	return test_done();
}
