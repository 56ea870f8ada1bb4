/* server: the unix socket and HTTP doors — each request's body, its
 * checks in order (host_check.c, identify.c), its dispatch through the
 * route table, its reply and its line in the audit log. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/clock.h"
#include "daemon/api/api.h"
#include "daemon/api/route.h"
#include "daemon/auth/identify.h"
#include "daemon/auth/tokens.h"
#include "daemon/cluster/cluster_auth.h"
#include "daemon/core/daemon.h"
#include "daemon/core/log.h"
#include "daemon/core/peer.h"
#include "daemon/core/wall_time.h"
#include "daemon/door/door_limit.h"
#include "daemon/door/gate.h"
#include "daemon/door/host_check.h"
#include "daemon/door/listen.h"
#include "daemon/door/server.h"
#include "daemon/door/ui.h"
#include "daemon/store/audit_rows.h"

/* A connection's thread needs little: no large buffers on the stack. */
#define CONNECTION_STACK (512u << 10)

struct door {
	struct server *srv;
	bool is_unix;
	bool tls;
	struct MHD_Daemon *mhd;
	int fd;				/* the listener, which the gate accepts on */
	struct gate_door gate;		/* its limits; gate.ctx is this door */
};

struct server {
	struct daemon *d;
	struct door unix_door, http_door;
	unsigned http_port;
	char *tls_key, *tls_cert;
	unsigned open_connections;	/* atomic: of both doors */
	/* Where the other daemons reach this one, "host:port" (the
	 * listener's, [cluster] url's): what a request signed for this host
	 * names. Written before the HTTP door opens. */
	char authority[2][CLUSTER_AUTHORITY_MAX];
	const char *authorities[2];
	size_t n_authorities;
	struct gate *gate;		/* accepts on both doors */
	struct host_names host_names;	/* set at start, then read only */
};

/* Per request: its route, matched when it begins, and the body as it
 * arrives. */
struct pending {
	struct route_match match;
	size_t max_body;		/* what its route may be sent */
	char *body;
	size_t len;
	bool too_big;
};

/* ---- replies ------------------------------------------------------------ */

static const char *query_of(const struct request *rq, const char *key)
{
	return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, key);
}

struct args {
	char text[512];
	size_t len;
	bool too_long;
};

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
			       const char *value)
{
	struct args *a = cls;

	(void)kind;
	a->too_long = !request_args_add(a->text, sizeof(a->text), &a->len, key, value);
	return a->too_long ? MHD_NO : MHD_YES;
}

/* A stream (another host's download): read as it comes. One that ends
 * before the size announced ends the connection, so that a client never
 * takes a cut file for a whole one. */
struct piped {
	int fd;
	uint64_t size, got;		/* size: MHD_SIZE_UNKNOWN when not announced */
	bool (*whole)(void *ctx);	/* reply.stream_whole and the rest */
	void (*release)(void *ctx);
	void *ctx;
};

static ssize_t read_piped(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct piped *p = cls;
	ssize_t n;

	(void)pos;
	do
		n = read(p->fd, buf, max);
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		p->got += (uint64_t)n;
		return n;
	}
	return n == 0 && (p->size == MHD_SIZE_UNKNOWN || p->got == p->size) &&
			       (!p->whole || p->whole(p->ctx))
		       ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void free_piped(void *cls)
{
	struct piped *p = cls;

	close(p->fd);
	if (p->release)
		p->release(p->ctx);
	free(p);
}

static struct MHD_Response *stream_response(struct reply *rp)
{
	struct piped *p = malloc(sizeof(*p));
	struct MHD_Response *r;

	if (!p)
		return NULL;
	*p = (struct piped){ .fd = rp->fd, .size = rp->size ? rp->size : MHD_SIZE_UNKNOWN,
			     .whole = rp->stream_whole, .release = rp->stream_release,
			     .ctx = rp->stream_ctx };
	r = MHD_create_response_from_callback(p->size, 64 * 1024, read_piped, p, free_piped);
	if (!r)
		free(p); /* the fd and the writer stay the reply's, released with it */
	else
		rp->stream_release = NULL; /* the response's now */
	return r;
}

/* The reply to a request another daemon signed, signed in turn for that
 * request (its nonce): the asker checks it before it uses any of it. A
 * file sent as it is read is signed by its size (cluster_auth.h). */
static void sign_reply(struct daemon *d, const struct reply *rp, const char *cd,
		       char out[CLUSTER_HEADER_MAX])
{
	char name[256];
	bool stream = rp->fd >= 0;
	struct cluster_reply cr = {
		.status = rp->status, .content_type = rp->content_type, .disposition = cd,
		.body = stream ? NULL : rp->body ? rp->body : "", .body_len = stream ? 0 : rp->body_len,
		.size = stream ? rp->size : 0,
	};

	/* unsigned, the asker refuses it */
	if (cluster_auth_sign_reply(d->cluster_auth, &cr, api_cluster_self(d, name, sizeof(name)),
				    rp->cluster_nonce, out) < 0)
		out[0] = '\0';
}

static enum MHD_Result send_reply(struct daemon *d, struct MHD_Connection *c, struct reply *rp)
{
	struct MHD_Response *r;
	char cd[200] = "", signature[CLUSTER_HEADER_MAX] = "";
	enum MHD_Result ret;

	if (rp->fd < 0) {
		if (!rp->body && rp->json)
			reply_render(rp);
		if (!rp->content_type[0])
			snprintf(rp->content_type, sizeof(rp->content_type), "application/json");
	}
	if (rp->filename[0]) {
		/* Part of the name may come from a file a user's command made:
		 * only characters that cannot end or break the header. */
		for (char *f = rp->filename; *f; f++)
			if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+", *f))
				*f = '_';
		snprintf(cd, sizeof(cd), "%s; filename=\"%s\"",
			 rp->inline_view ? "inline" : "attachment", rp->filename);
	}
	if (rp->cluster_nonce[0] && d->cluster_auth)
		sign_reply(d, rp, cd, signature);
	if (rp->fd >= 0) {
		r = rp->fd_is_pipe ? stream_response(rp)
				   : MHD_create_response_from_fd64(rp->size, rp->fd);
		if (r)
			rp->fd = -1; /* the response closes it */
	} else {
		r = MHD_create_response_from_buffer(rp->body_len, rp->body ? rp->body : (void *)"",
						    rp->body ? MHD_RESPMEM_MUST_FREE
							     : MHD_RESPMEM_PERSISTENT);
		if (r)
			rp->body = NULL; /* the response frees it */
	}
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, rp->content_type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (cd[0])
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, cd);
	if (signature[0])
		MHD_add_response_header(r, CLUSTER_REPLY_HEADER, signature);
	/* A page shown inline (a flame graph) runs in an opaque origin of
	 * its own: its scripts cannot reach the API with the viewer's
	 * credentials, nor anything else on the network. */
	if (rp->inline_view)
		MHD_add_response_header(r, "Content-Security-Policy",
			"sandbox allow-scripts allow-downloads; default-src 'none'; "
			"script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:");
	/* The UI's own page: its scripts and styles come from nprofd's files
	 * only (no inline script, no eval), it talks to nprofd only, and no
	 * other site may frame it. */
	if (rp->ui_page) {
		MHD_add_response_header(r, "Content-Security-Policy",
			"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
			"connect-src 'self'; frame-src 'self'; font-src 'self'; base-uri 'none'; "
			"form-action 'self'; frame-ancestors 'none'");
		MHD_add_response_header(r, "X-Frame-Options", "DENY");
		MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	}
	if (rp->set_cookie[0])
		MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, rp->set_cookie);
	if (rp->allow[0])
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, rp->allow);
	if (rp->status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"nprofd\"");
	ret = MHD_queue_response(c, rp->status, r);
	MHD_destroy_response(r);
	return ret;
}

/* A large reply (the workers of a busy host: megabytes of JSON) leaves
 * its thread's malloc arena holding pages it no longer uses: they are
 * given back after it, or every pool thread keeps its own peak for good. */
static bool large(const struct reply *rp)
{
	const char *key;
	json_t *v;

	/* any list: workers, instances, audit, tokens */
	json_object_foreach(rp->json, key, v)
		if (json_array_size(v) > 200)
			return true;
	return false;
}

/* What is worth a line in the audit log: everything that acts or
 * downloads, and every refusal; not the lists a page polls. */
static bool worth_auditing(const struct request *rq, const struct reply *rp)
{
	return strcmp(rq->method, "GET") || rp->status >= 400 ||
	       !strncmp(rq->path, "/api/v1/artifacts/", 18);
}

static void audit(struct daemon *d, const struct request *rq, const struct reply *rp)
{
	struct audit_row a = {
		.time_ms = now_ms(),
		.uid = rq->user.name[0] && rq->user.uid != (uid_t)-1 ? (int64_t)rq->user.uid : -1,
		.status = rp->status,
	};

	if (!worth_auditing(rq, rp))
		return;
	snprintf(a.user, sizeof(a.user), "%s", rq->user.name[0] ? rq->user.name : "-");
	snprintf(a.via, sizeof(a.via), "%s", rq->user.via ? rq->user.via : "-");
	snprintf(a.method, sizeof(a.method), "%s", rq->method);
	snprintf(a.path, sizeof(a.path), "%s", rq->path);
	snprintf(a.worker, sizeof(a.worker), "%s", rp->worker);
	snprintf(a.result, sizeof(a.result), "%s", rp->result);
	if (audit_insert(d->db, &a) < 0)
		log_error("its line in the audit log could not be written");
}

/* ---- one request -------------------------------------------------------- */

/* Numbers the requests, for the log (log_set_request). */
static atomic_uint_fast64_t requests_received;

/* A reply of 500 or more is the server's fault: its line in the log
 * names the request, and the reply names it too ("request": N), so that
 * an operator handed the error finds what went wrong. */
static void server_fault(const struct request *rq, struct reply *rp)
{
	log_error("%s %s by %s answered %u: %s", rq->method, rq->path,
		  rq->user.name[0] ? rq->user.name : "-", rp->status, rp->result);
	if (json_is_object(rp->json))
		json_object_set_new(rp->json, "request", json_integer((json_int_t)log_request()));
}

/* The web UI's file url names, into rp; false when it names none. */
static bool ui_page(struct reply *rp, const char *url)
{
	const unsigned char *data;
	const char *type;
	size_t len;

	if (!ui_file(url, &data, &len, &type) || !(rp->body = malloc(len + 1)))
		return false;
	memcpy(rp->body, data, len + 1);
	rp->body_len = len;
	rp->ui_page = true;
	snprintf(rp->content_type, sizeof(rp->content_type), "%s", type);
	return true;
}

static const char *host_header(struct MHD_Connection *c)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
}

/* The address c's client connected to, into buf: buf, or NULL. */
static const struct sockaddr_storage *local_address(struct MHD_Connection *c,
						    struct sockaddr_storage *buf)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	socklen_t len = sizeof(*buf);

	return ci && getsockname(ci->connect_fd, (struct sockaddr *)buf, &len) == 0 ? buf : NULL;
}

/* A request another daemon of the cluster signed for one of its users
 * (docs/cluster.md): served as that user, by name in this host's
 * accounts, under this host's rules; refused (and audited) when the
 * signature does not hold or is not for this host, whatever else the
 * request carries. The reply to one that holds is signed. */
static void signed_request(struct server *s, struct MHD_Connection *c,
			   const struct route_match *m, struct request *rq, struct reply *rp,
			   const char *header)
{
	struct daemon *d = s->d;
	struct args args = { .len = 0 };
	struct cluster_request cr;
	struct cluster_claim claim;
	struct passwd pw, *p = NULL;
	char why[768], buf[4096], name[256];
	struct cluster_self self = {
		.name = api_cluster_self(d, name, sizeof(name)),
		.authorities = s->authorities,
		.n_authorities = s->n_authorities,
		.started_ms = d->started_ms,
	};
	int status;

	rq->user.via = "cluster";
	rq->user.uid = (uid_t)-1;
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &args);
	if (args.too_long) {
		reply_error(rp, 400, NULL, "the query is too long for a signed request; shorten it");
		return;
	}
	cr = (struct cluster_request){ rq->method, rq->path, args.text, rq->body, rq->body_len };
	status = cluster_auth_verify(d->cluster_auth, &cr, header, &self, now_ms(), &claim, why,
				     sizeof(why));
	if (status) {
		reply_error(rp, (unsigned)status, NULL, "%s", why);
		return;
	}
	snprintf(rp->cluster_nonce, sizeof(rp->cluster_nonce), "%s", claim.nonce);
	if (getpwnam_r(claim.user, &pw, buf, sizeof(buf), &p) != 0 || !p) {
		snprintf(rq->user.name, sizeof(rq->user.name), "%s", claim.user);
		reply_error(rp, 401, NULL, "user %s (signed by %s) has no account on this host; "
			    "nothing here is theirs", claim.user, claim.host);
		return;
	}
	rq->user.uid = p->pw_uid;
	if (!user_complete(d, &rq->user)) {
		reply_error(rp, 401, NULL, "user %s has no account on this host", claim.user);
		return;
	}
	rq->args = args.text;
	route_dispatch(d, m, rq, rp);
}

/* The connection's place in its door's limits (door_limit.h), or NULL. */
static struct door_slot *slot_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_size, void **state)
{
	struct door *door = cls;
	struct daemon *d = door->srv->d;
	struct pending *p = *state;
	struct request rq = { .method = method, .path = url, .query = query_of, .conn = c };
	struct reply rp = { .status = 200, .fd = -1 };
	enum MHD_Result ret;
	const char *signed_by;
	char addr[INET6_ADDRSTRLEN], peer[PEER_KEY_MAX]; /* the sign-in's rq.addr, rq.peer */
	struct sockaddr_storage local;
	struct door_slot *slot;
	bool trim;

	if (!p) {
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);

		p = calloc(1, sizeof(*p));
		if (!p)
			return MHD_NO;
		*state = p;
		route_match(method, url, &p->match);
		p->max_body = route_max_body(&p->match, d->cfg.max_body);
		/* Refuse an announced oversize body before reading it. */
		if (cl && strtoull(cl, NULL, 10) > p->max_body)
			p->too_big = true;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!p->too_big && p->len + *upload_size > p->max_body) {
			p->too_big = true;
			free(p->body);
			p->body = NULL;
			p->len = 0;
		}
		if (!p->too_big) {
			char *b = realloc(p->body, p->len + *upload_size + 1);

			if (!b)
				return MHD_NO;
			memcpy(b + p->len, upload_data, *upload_size);
			p->len += *upload_size;
			b[p->len] = '\0';
			p->body = b;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	/* the request is in whole: no deadline now, whatever its reply takes */
	slot = slot_of(c);
	door_limit_received(door->gate.limit, slot);
	log_set_request(atomic_fetch_add(&requests_received, 1) + 1);
	rq.body = p->body ? p->body : "";
	rq.body_len = p->len;
	if (p->too_big && p->max_body < d->cfg.max_body) {
		reply_error(&rp, 413, NULL, "the request body is larger than the %zu bytes %s %s "
			    "takes", p->max_body, method, p->match.route->pattern);
	} else if (p->too_big) {
		reply_error(&rp, 413, NULL, "the request body is larger than max_body = %llu bytes",
			    (unsigned long long)d->cfg.max_body);
	} else if (strlen(url) > 1024 || memchr(rq.body, '\0', rq.body_len)) {
		reply_error(&rp, 400, NULL, "the request's path is too long or its body holds a NUL byte");
	} else if (!door->is_unix && !host_allowed(&door->srv->host_names, host_header(c),
						   local_address(c, &local))) {
		/* a page of another site by a name that points here */
		reply_error(&rp, MHD_HTTP_MISDIRECTED_REQUEST, NULL,
			    "Host: %.100s is not a name of this nprofd; open it by its listen "
			    "address, localhost or this host's name, or add the name to "
			    "host_names in nprofd.conf", host_header(c));
	} else if (!strcmp(method, "GET") && ui_page(&rp, url)) {
		/* the page holds no data: anyone may load it, then sign in */
	} else if (!door->is_unix &&
		   !origin_allowed(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"),
				   host_header(c), door->tls)) {
		/* a page of another site making its visitor's browser ask */
		reply_error(&rp, 403, NULL, "the request came from a page of another origin (%.100s); "
			    "use nprofd's own page, or a client that sends no Origin",
			    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"));
	} else if (!door->is_unix &&
		   (signed_by = MHD_lookup_connection_value(c, MHD_HEADER_KIND, CLUSTER_HEADER))) {
		signed_request(door->srv, c, &p->match, &rq, &rp, signed_by);
	} else if (!door->is_unix && p->match.route && p->match.route->who == ROUTE_PUBLIC) {
		/* the sign-in: before anyone is known */
		identify_client_address(c, addr, sizeof(addr));
		if (slot)
			snprintf(peer, sizeof(peer), "%s", door_slot_peer(slot));
		else
			snprintf(peer, sizeof(peer), "ip:%s", addr);
		rq.addr = addr;
		rq.peer = peer;
		rq.tls = door->tls;
		route_call(d, &p->match, &rq, &rp);
	} else if (!(door->is_unix ? identify_peer(d, c, &rq.user) : identify_http(d, c, &rq.user))) {
		memset(&rq.user, 0, sizeof(rq.user));
		reply_error(&rp, 401, NULL, door->is_unix
			    ? "your uid has no account on this host"
			    : "not signed in: send Authorization: Bearer TOKEN (create one with nprof "
			      "token create), or sign in (POST /api/v1/session)");
	} else if (rq.user.session && strcmp(method, "GET") && strcmp(method, "HEAD") &&
		   !identify_csrf_ok(c, &rq.user)) {
		reply_error(&rp, 403, NULL, "a change made with a session must carry its CSRF token "
			    "in the X-CSRF-Token header (GET /api/v1/session has it)");
	} else {
		struct args args = { .len = 0 };

		MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &args);
		rq.args = args.too_long ? NULL : args.text;
		route_dispatch(d, &p->match, &rq, &rp);
	}
	if (!rp.json && !rp.body && rp.fd < 0 && !rp.content_type[0])
		rp.json = json_object();
	if (rp.status >= 500)
		server_fault(&rq, &rp);
	audit(d, &rq, &rp);
	ret = send_reply(d, c, &rp);
	log_set_request(0);
	trim = large(&rp);
	json_decref(rp.json);
	free(rp.body);
	if (trim)
		malloc_trim(0);
	if (rp.fd >= 0)
		close(rp.fd);
	if (rp.stream_release)
		rp.stream_release(rp.stream_ctx);
	return ret;
}

static void on_done(void *cls, struct MHD_Connection *c, void **state,
		    enum MHD_RequestTerminationCode toe)
{
	struct door *door = cls;
	struct pending *p = *state;

	(void)toe;
	/* its reply gone: the next request's deadline runs from now */
	door_limit_idle(door->gate.limit, slot_of(c), clock_ns(CLOCK_MONOTONIC));
	if (p) {
		free(p->body);
		free(p);
		*state = NULL;
	}
}

/* A connection the gate admitted, taken by libmicrohttpd and closed:
 * its place in the door's limits. When the last connection closes, the
 * memory its requests used goes back to the system: 64 clients at once
 * grow the malloc arenas by megabytes that an idle daemon has no use
 * for. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_state,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct door *door = cls;
	struct server *s = door->srv;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		*socket_state = ci ? door_limit_started(door->gate.limit, ci->connect_fd) : NULL;
		__atomic_add_fetch(&s->open_connections, 1, __ATOMIC_RELAXED);
		return;
	}
	door_limit_closed(door->gate.limit, *socket_state);
	*socket_state = NULL;
	if (__atomic_sub_fetch(&s->open_connections, 1, __ATOMIC_RELAXED) == 0)
		malloc_trim(0);
}

/* The gate's questions. Root and the admins on the socket, a trusted
 * proxy over HTTP: no share of their own, and the socket's reserve. */
static bool privileged(void *ctx, uid_t uid, const char *addr)
{
	struct door *door = ctx;
	const struct daemon *d = door->srv->d;
	struct user u = { .uid = uid, .via = "socket" };

	if (!door->is_unix) {
		for (size_t i = 0; i < d->cfg.n_trusted_proxies; i++)
			if (!strcmp(d->cfg.trusted_proxies[i], addr))
				return true;
		return false;
	}
	if (uid == 0)
		return true;
	if (!d->cfg.n_admin_users && !d->cfg.admin_group[0])
		return false;
	return user_complete(d, &u) && u.admin;
}

/* libmicrohttpd's messages, as lines of nprofd's log, but two kinds
 * that say nothing to the operator: on the socket it tries TCP's
 * options on each connection handed to it (it cannot tell a unix socket
 * it did not accept itself) and says they failed; and a connection that
 * ended before its request did (a client gone, or one the gate cut,
 * which the gate counts in its own lines) would be a line each. */
/* printf-like: libmicrohttpd's format and arguments (clang's
 * -Wformat-nonliteral asks for the attribute before vsnprintf). */
static void __attribute__((format(printf, 2, 0))) mhd_log(void *cls, const char *fmt, va_list ap)
{
	static const char *const gone[] = {
		"Connection socket is closed when reading request",
		"Connection was closed by remote side with incomplete request",
		"Socket has been disconnected when reading request",
	};
	struct door *door = cls;
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	if (door->is_unix && (!strncmp(msg, "Setting TCP_", 12) ||
			      !strncmp(msg, "Failed to push the data", 23)))
		return;
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
		if (!strncmp(msg, gone[i], strlen(gone[i])))
			return;
	log_info("%s: libmicrohttpd: %s", door->gate.name, msg);
}

static int hand(void *ctx, int fd, const struct sockaddr *sa, socklen_t len)
{
	struct door *door = ctx;

	return MHD_add_connection(door->mhd, fd, sa, len) == MHD_YES ? 0 : -1;
}

static void *read_pem(const char *path, char *err, size_t errlen, const char *key)
{
	char *buf = malloc(1 << 20);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, (1 << 20) - 1);

	if (fd >= 0)
		close(fd);
	if (!buf || n <= 0) {
		snprintf(err, errlen, "%s = %s: cannot read it: %s", key, path,
			 n == 0 ? "empty" : strerror(errno));
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

/* Where the other daemons reach this one: the listener's address (unless
 * it is every address) and [cluster] url's. */
static void note_authorities(struct server *s)
{
	const struct daemon_config *cfg = &s->d->cfg;
	const char *colon = strrchr(cfg->listen, ':');
	char url[CONFIG_VALUE_MAX + 16];

	if (strncmp(cfg->listen, "0.0.0.0:", 8) && strncmp(cfg->listen, "[::]:", 5)) {
		snprintf(url, sizeof(url), "http://%.*s:%u/", (int)(colon - cfg->listen), cfg->listen,
			 s->http_port);
		if (cluster_auth_authority(url, s->authority[s->n_authorities],
					   CLUSTER_AUTHORITY_MAX) == 0)
			s->n_authorities++;
	}
	if (cfg->cluster_url[0] &&
	    cluster_auth_authority(cfg->cluster_url, s->authority[s->n_authorities],
				   CLUSTER_AUTHORITY_MAX) == 0)
		s->n_authorities++;
	for (size_t i = 0; i < s->n_authorities; i++)
		s->authorities[i] = s->authority[i];
}

static int open_door(struct server *s, struct door *door, int fd, bool tls,
		     char *err, size_t errlen)
{
	struct daemon *d = s->d;
	/* A thread per connection (at most max_connections): a request that
	 * takes a while (a conversion of a large profile, a list of a busy
	 * host's processes) then holds up no one else's, as it did behind a
	 * pool of four threads. And poll, not epoll: libmicrohttpd 0.9.75's
	 * epoll loop loses events (tests/integration/daemon_fuzz.sh): a
	 * client's close seen with its request leaves the connection in
	 * CLOSE_WAIT, and a request too big for the connection's memory
	 * pool gets no answer, each until request_timeout. */
	/* The gate accepts (gate.h): libmicrohttpd is handed the connections
	 * the door's limits admit, and told of them through its ITC. */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;

	door->srv = s;
	door->fd = fd;
	door->tls = tls;
	door->gate = (struct gate_door){
		.name = door->is_unix ? "the socket" : "the HTTP listener",
		.is_unix = door->is_unix,
		.listen_fd = fd,
		.plain = !tls,
		.lim = { .max = d->cfg.max_connections, .per_peer = d->cfg.peer_connections,
			 .reserved = door->is_unix ? d->cfg.reserved_connections : 0,
			 .evict_own = !door->is_unix, .deadline_ns = d->cfg.request_timeout_ns },
		.privileged = privileged,
		.hand = hand,
		.ctx = door,
	};
	if (gate_door_init(&door->gate) < 0) {
		snprintf(err, errlen, "out of memory");
		close(fd);
		door->fd = -1;
		return -ENOMEM;
	}
	if (tls)
		flags |= MHD_USE_TLS;
	/* The idle timeout (no traffic at all, a reply the client does not
	 * read included) is request_timeout too; receiving a request whole
	 * is held to it by the gate, however the client trickles it. */
	door->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, door,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, door, /* first: for every message */
		MHD_OPTION_THREAD_STACK_SIZE, (size_t)CONNECTION_STACK,
		MHD_OPTION_CONNECTION_LIMIT, d->cfg.max_connections + DOOR_SLACK,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)((d->cfg.request_timeout_ns + 999999999ull) /
							  1000000000ull),
		MHD_OPTION_NOTIFY_COMPLETED, on_done, door,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, door,
		/* Without TLS the list ends here, before the key and cert. */
		tls ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, s->tls_key,
		MHD_OPTION_HTTPS_MEM_CERT, s->tls_cert,
		MHD_OPTION_END);
	if (!door->mhd) {
		snprintf(err, errlen, "libmicrohttpd would not start on the %s%s",
			 door->is_unix ? "unix socket" : "HTTP listener",
			 tls ? " (are tls_cert and tls_key a matching PEM pair?)" : "");
		close(fd);
		door->fd = -1;
		return -EIO;
	}
	return 0;
}

/* d->http_url from listen = ADDR:PORT, with the port the kernel gave. */
static void set_http_url(struct daemon *d, unsigned port, bool tls)
{
	int host_len = (int)(strrchr(d->cfg.listen, ':') - d->cfg.listen);

	snprintf(d->http_url, sizeof(d->http_url), "%s://%.*s:%u/", tls ? "https" : "http",
		 host_len, d->cfg.listen, port);
}

struct server *server_start(struct daemon *d, char *err, size_t errlen)
{
	struct server *s = calloc(1, sizeof(*s));
	bool loopback = true, tls;
	int fd;

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->d = d;
	s->unix_door.fd = s->http_door.fd = -1;
	host_names_init(&s->host_names, &d->cfg);
	tls = d->cfg.tls_cert[0] && d->cfg.tls_key[0];
	if (d->cfg.listen[0]) {
		if (listen_parse(d->cfg.listen, &loopback) < 0) {
			snprintf(err, errlen, "listen = %s: not ADDR:PORT; use for example 127.0.0.1:9700",
				 d->cfg.listen);
			goto fail;
		}
		if (!loopback && !tls) {
			snprintf(err, errlen, "listen = %s is not a loopback address and TLS is off: set "
				 "tls_cert and tls_key in nprofd.conf, or listen on 127.0.0.1",
				 d->cfg.listen);
			goto fail;
		}
		if (tls && (!(s->tls_key = read_pem(d->cfg.tls_key, err, errlen, "tls_key")) ||
			    !(s->tls_cert = read_pem(d->cfg.tls_cert, err, errlen, "tls_cert"))))
			goto fail;
	}
	if (d->cfg.socket_path[0]) {
		fd = listen_unix(d->cfg.socket_path, err, errlen);
		s->unix_door.is_unix = true;
		if (fd < 0 || open_door(s, &s->unix_door, fd, false, err, errlen) < 0)
			goto fail;
	}
	if (d->cfg.listen[0]) {
		fd = listen_tcp(d->cfg.listen, err, errlen, &s->http_port);
		if (fd >= 0)
			note_authorities(s);
		if (fd < 0 || open_door(s, &s->http_door, fd, tls, err, errlen) < 0)
			goto fail;
		/* Here, before the gate accepts the first connection: request
		 * threads read it (whoami, the cluster's listing), and once
		 * main wrote it after start they raced with the write. */
		set_http_url(d, s->http_port, tls);
	}
	{
		struct gate_door *doors[2];
		size_t n = 0;

		if (s->unix_door.mhd)
			doors[n++] = &s->unix_door.gate;
		if (s->http_door.mhd)
			doors[n++] = &s->http_door.gate;
		if (n && !(s->gate = gate_start(doors, n, err, errlen)))
			goto fail;
	}
	return s;
fail:
	server_stop(s);
	return NULL;
}

unsigned server_http_port(const struct server *s)
{
	return s->http_door.mhd ? s->http_port : 0;
}

static void close_door(struct door *door)
{
	if (door->mhd)
		MHD_stop_daemon(door->mhd);
	if (door->fd >= 0)
		close(door->fd);
	gate_door_release(&door->gate);
}

void server_stop(struct server *s)
{
	if (!s)
		return;
	gate_stop(s->gate); /* nothing more is accepted, nor cut */
	close_door(&s->unix_door);
	close_door(&s->http_door);
	if (s->d->cfg.socket_path[0] && s->unix_door.mhd)
		unlink(s->d->cfg.socket_path);
	free(s->tls_key);
	free(s->tls_cert);
	free(s);
}
