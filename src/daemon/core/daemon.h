/* daemon: what every part of nprofd shares — the configuration, the
 * index, the running jobs and the worker scanner — and the request and
 * reply every API handler sees, whichever door (unix socket, HTTP) the
 * request came in by. */
#ifndef NPROF_DAEMON_DAEMON_H
#define NPROF_DAEMON_DAEMON_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/core/config.h"
#include "daemon/core/workers.h"

struct db;
struct jobs;
struct worker_list;
struct reply_cache;
struct signin_limit;
struct cluster;
struct cluster_auth;

struct daemon {
	struct daemon_config cfg;
	char config_path[PATH_MAX];	/* "" when none was read */
	char artifacts_dir[PATH_MAX];	/* state_dir/artifacts, root-only */
	char work_dir[PATH_MAX];	/* state_dir/work: a command's own directory, by id */
	char nprof[PATH_MAX];		/* the nprof binary children run */
	struct db *db;
	struct jobs *jobs;
	pthread_mutex_t start_lock;	/* checking limits and starting a job: one at a time */
	pthread_mutex_t scanner_lock;	/* the scanner keeps state between scans */
	struct worker_scanner *scanner;
	pthread_mutex_t list_lock;	/* last_scan, its references, refreshing */
	struct worker_list *last_scan;	/* reused for a second, then while a new one is made */
	bool refreshing;		/* a request is scanning for the next last_scan */
	uint64_t scans;			/* under list_lock: the number of the last scan */
	struct reply_cache *replies;	/* rendered lists, by user and query */
	struct signin_limit *signin_limit; /* failed sign-ins, by user and address */
	bool perf_ok, hw_ok;		/* perf_event_open, probed at start */
	bool sched_ok;			/* the scheduler's tracepoint (wall without
					   the agent, offcpu), probed at start */
	char http_url[128];		/* "http://127.0.0.1:9700/", "" without HTTP;
					   written by server_start before the gate
					   accepts, read-only after */
	uint64_t started_ms;
	struct cluster *cluster;	/* the registry; NULL: this host alone */
	struct cluster_auth *cluster_auth; /* the shared key; NULL without [cluster] key_file */
};

/* Who sent a request: the kernel's word for the unix socket (peer
 * credentials), a token's owner for HTTP. */
struct user {
	uid_t uid;
	gid_t gid;
	char name[64];
	bool admin;
	const char *via;		/* "socket", "token", "session", "proxy", "cluster" */
	int64_t session;		/* a browser's sign-in: its token id; else 0 */
	uint64_t session_expires_ms;
	char csrf[64];			/* the session's CSRF token */
};

/* The most {parameters} a route's path has (route.h). */
#define REQUEST_PARAMS 2

struct request {
	const char *method;		/* "GET", "POST", "DELETE" */
	const char *path;		/* without the query */
	const char *body;		/* NUL-terminated; "" when none */
	size_t body_len;
	const char *(*query)(const struct request *rq, const char *key); /* NULL if absent */
	const char *args;		/* every query argument, unambiguously; NULL: too many */
	void *conn;			/* the connection, for query() */
	struct user user;
	/* The path's {parameters} (route.h), in its pattern's order; NULL
	 * past them. */
	const char *param[REQUEST_PARAMS];
	/* For the sign-in, by the HTTP door: the client's address, its
	 * peer key (peer.h) and whether over TLS; NULL, false otherwise. */
	const char *addr, *peer;
	bool tls;
};

struct reply {
	unsigned status;
	json_t *json;			/* the body, owned by the reply */
	char *body;			/* or that body rendered already (owned); NULL */
	size_t body_len;
	int fd;				/* or a file to send (owned); -1 */
	bool fd_is_pipe;		/* fd is a stream: size bytes (0: unknown) as they come */
	/* With fd_is_pipe, its writer when it may fail meanwhile: asked at the
	 * end of the stream whether it wrote all of it (false: the connection
	 * is cut rather than ended as if the file were whole), then released
	 * once, the reply sent or not. NULL: the end of the stream is its end. */
	bool (*stream_whole)(void *ctx);
	void (*stream_release)(void *ctx);
	void *stream_ctx;
	uint64_t size;
	char content_type[64];
	char filename[128];		/* Content-Disposition: attachment; filename= */
	bool inline_view;		/* shown in the browser, not saved: sandboxed */
	bool ui_page;			/* a file of the web UI: its Content-Security-Policy */
	char set_cookie[256];		/* a Set-Cookie header; "" none */
	char allow[32];			/* a 405's Allow header, "GET, POST"; "" none */
	char cluster_nonce[33];		/* a request another daemon signed: its nonce, which
					   the reply's signature names; "" otherwise */
	char worker[WORKER_ID_MAX];	/* the worker acted on, for the audit log */
	char result[256];		/* a short result for the audit log */
};

/* The reply's functions (reply.c), below every handler and door. */

/* 400 etc.: {"error": MESSAGE, "field": FIELD} (field NULL: none). */
__attribute__((format(printf, 4, 5)))
void reply_error(struct reply *rp, unsigned status, const char *field, const char *fmt, ...);

/* Appends a query argument to args (its length in *len) as
 * "LEN:KEY=LEN:VALUE;" ("LEN:KEY;" for one without '=', value NULL),
 * which no two different queries share: what request.args holds. false
 * when it does not fit in size. */
bool request_args_add(char *args, size_t size, size_t *len, const char *key, const char *value);

/* Renders rp->json into rp->body (JSON text and a newline): false when
 * out of memory. */
bool reply_render(struct reply *rp);

/* The user's (user.c). */

/* Fills name, gid and admin for u->uid (u->via set: root is an admin on
 * the socket only); false when the uid has no account. */
bool user_complete(const struct daemon *d, struct user *u);

/* The request's user and the worker's owner: may they see it? */
bool user_may_see(const struct user *u, uid_t owner);

/* The primary group of uid: what a child running as uid runs with
 * (nobody's, 65534, when uid has no account). */
gid_t user_primary_gid(uid_t uid);

/* Who reads files stored for owner's workers (nprof converting,
 * merging, comparing them): the owner, who could have written anything
 * into them, or nobody (65534) for root's and several users' (owner 0):
 * reading needs no privilege, and root reads nothing a child wrote. */
uid_t user_reader_uid(uid_t owner);

/* Runs the API for a request of a known user (route.c): matches it in
 * the route table and dispatches it as route_dispatch does; fills rp. */
void api_handle(struct daemon *d, const struct request *rq, struct reply *rp);

#endif
