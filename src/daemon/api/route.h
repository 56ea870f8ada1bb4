/* route: the API's one table (docs/api.md) — for each endpoint its
 * method, path pattern, handler, who may call it, where ?host= takes it
 * and the body it may have. The server matches a request once, when it
 * begins (the body limit is known before the body comes); then the
 * sign-in runs before anyone is known, every other route as the user the
 * door named, and what the table lacks gets the one 404 or 405. */
#ifndef NPROF_DAEMON_ROUTE_H
#define NPROF_DAEMON_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/core/daemon.h"

#define ROUTE_PARAM_MAX 128	/* bytes of one {parameter}, its NUL included */

/* A route's handler. rq->param holds the path's parameters; only the
 * sign-in writes rq->user (whom it signed in, or who tried: the audit
 * log's line). */
typedef void route_fn(struct daemon *d, struct request *rq, struct reply *rp);

/* Who may call a route. A request another daemon signed
 * (docs/cluster.md) is its user's, by name in this host's accounts: it
 * reaches what that user may, never more, and never fans out again. */
enum route_who {
	ROUTE_PUBLIC,	/* anyone: over HTTP before the door asks who (rq->user.via
			   NULL); a user the door knows reaches it as any route */
	ROUTE_USER,	/* a user the door named: the socket's peer, a token, a
			   session, a trusted proxy, another daemon's signature */
	ROUTE_ADMIN,	/* an admin of this host (403 otherwise, naming what) */
};

/* Where ?host=NAME takes a route (docs/api.md, Workers). */
enum route_hosts {
	ROUTE_FORWARD,	/* another host's: passed to its daemon, signed for the user */
	ROUTE_FANOUT,	/* a list: NAME's, or with * every host's, merged */
	ROUTE_HERE,	/* this host answers, whatever host= says */
	ROUTE_GATHER,	/* NAME's passed on; with * the handler's own, which asks
			   every host (api_cluster_gather) and combines their
			   answers: a service's profile merged, a schedule made */
};

struct route {
	const char *method;		/* "GET", "POST", "DELETE" */
	const char *pattern;		/* "/api/v1/instances/{id}/stop": a {name} is one
					   path segment, at most ROUTE_PARAM_MAX - 1 bytes */
	route_fn *handler;
	enum route_who who;
	enum route_hosts hosts;
	size_t max_body;		/* bytes; 0: max_body of nprofd.conf */
	const char *what;		/* what it serves, for a refusal: "the audit log" */
};

/* The table, in the order of docs/api.md. */
extern const struct route route_table[];
extern const size_t route_count;

/* A request's place in the table. */
struct route_match {
	const struct route *route;	/* the method's route of the path; NULL: none */
	const struct route *path;	/* a route of the path by any method (route, when
					   that is set); NULL: the table has no such path */
	char allow[32];			/* the methods the path has: "GET, POST" */
	char param[REQUEST_PARAMS][ROUTE_PARAM_MAX];
};

/* Whether path fits pattern; its parameters into param (NULL: not kept). */
bool route_fits(const char *pattern, const char *path, char (*param)[ROUTE_PARAM_MAX]);

/* Looks up method and path into *ret. */
void route_match(const char *method, const char *path, struct route_match *ret);

/* The most bytes of body a request matched as m may send: its route's
 * limit, or max (max_body), whichever is smaller. */
size_t route_max_body(const struct route_match *m, size_t max);

/* Runs the request matched as m for rq's user: ?host= where the route
 * says (api_cluster_list, api_cluster_forward), else the 404 or 405 when
 * the table has no route for it, 403 for a route of admins, or its
 * handler. */
void route_dispatch(struct daemon *d, const struct route_match *m, struct request *rq,
		    struct reply *rp);

/* m's handler, its parameters into rq. */
void route_call(struct daemon *d, const struct route_match *m, struct request *rq,
		struct reply *rp);

/* The one reply for a request the table has no route for: 405 with
 * Allow when its path has others, else 404. */
void route_reply_missing(const struct route_match *m, const struct request *rq,
			 struct reply *rp);

#endif
