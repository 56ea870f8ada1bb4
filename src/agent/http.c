/* http: the agent's HTTP endpoint, like Hadoop's /prof servlet
 * (docs/agent.md "HTTP endpoint"). Off unless asked for (NPROF_HTTP or
 * nprof_http_start). libmicrohttpd serves it, one thread per connection
 * (at most HTTP_MAX_CONNECTIONS), every one of them an agent thread:
 * never sampled, every signal blocked.
 *
 *   GET /prof?event=cpu&duration=10&output=flamegraph...  a profile, after
 *       `duration` seconds, in the body (200); 409 while another runs;
 *       400 naming a bad parameter and what it accepts
 *   GET /stacks[?output=json]   a thread dump
 *   GET /heap?action=...        the heap engine's (agent_heap_http), or 501
 *
 * Secure by default: loopback only (a non-loopback address needs
 * NPROF_HTTP_ALLOW_REMOTE=1); on loopback, a Host header that is not a
 * loopback name is refused (a web page cannot reach it through DNS
 * rebinding); and, unless NPROF_HTTP_AUTH=none, every request carries a
 * token only the process's owner can read (http_auth.c), since loopback
 * keeps out other hosts, not other users of this one. */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/http_mhd.h"
#include "agent/http_auth.h"
#include "base/proc.h"
#include "base/units.h"

#define HTTP_MAX_CONNECTIONS 8
#define HTTP_IDLE_TIMEOUT_S 10	   /* a connection that sends nothing for this long */
#define HTTP_DEFAULT_DURATION_S 10 /* Hadoop's */
#define HTTP_MAX_DURATION_S 3600

static struct {
	pthread_mutex_t lock;
	struct MHD_Daemon *daemon;	/* under lock */
	struct http_auth *auth;		/* under lock: the daemon's (its callback's cls) */
	char addr[INET6_ADDRSTRLEN + 16]; /* under lock: as bound */
	bool loopback;			/* written before the daemon starts */
	bool atfork;
} H = { .lock = PTHREAD_MUTEX_INITIALIZER };

static const char TEXT[] = "text/plain; charset=utf-8";

/* --- replies --------------------------------------------------------------- */

static enum MHD_Result send_reply(struct MHD_Connection *c, int status, const char *type,
				  char *body, size_t len, const char *filename)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = mhd.create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	mhd.add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	mhd.add_response_header(r, "X-Content-Type-Options", "nosniff");
	/* A page opened with ?token= must not pass its URL on. */
	mhd.add_response_header(r, "Referrer-Policy", "no-referrer");
	if (filename) {
		char cd[128];

		snprintf(cd, sizeof(cd), "inline; filename=\"%s\"", filename);
		mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, cd);
	}
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		mhd.add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET");
	ret = mhd.queue_response(c, (unsigned)status, r);
	mhd.destroy_response(r);
	return ret;
}

static enum MHD_Result send_text(struct MHD_Connection *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum MHD_Result send_text(struct MHD_Connection *c, int status, const char *fmt, ...)
{
	char *body = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&body, fmt, ap);
	va_end(ap);
	if (n < 0)
		return MHD_NO;
	return send_reply(c, status, TEXT, body, (size_t)n, NULL);
}

/* --- /prof ----------------------------------------------------------------- */

struct prof_req {
	struct agent_options o;
	uint64_t duration_ns;
	bool bad;
	struct diag d;
};

static const char PROF_PARAMS[] =
	"event, duration, interval, jstackdepth, bufsize, thread, simple, output, width, "
	"height, minwidth, reverse, pid, title";

static enum MHD_Result prof_param(void *ctx, enum MHD_ValueKind kind, const char *key,
				  const char *val)
{
	struct prof_req *q = ctx;
	const char *v = val ? val : "";
	char *end;

	(void)kind;
	if (!strcmp(key, "token")) {
		/* on_request checked it; never echoed */
	} else if (!strcmp(key, "duration")) {
		/* Seconds, as Hadoop; a unit (500ms, 2m) works too. */
		if (units_parse_duration_ns(v, 1000000000ull, &q->duration_ns) < 0 ||
		    q->duration_ns == 0 || q->duration_ns > HTTP_MAX_DURATION_S * 1000000000ull)
			diag_set(&q->d, -EINVAL,
				 "duration=%s: seconds, 1 to %d (default %d); or 500ms, 2m", v,
				 HTTP_MAX_DURATION_S, HTTP_DEFAULT_DURATION_S);
	} else if (!strcmp(key, "bufsize")) {
		/* async-profiler's frame buffer; the agent's buffers are fixed
		 * (8 x 1 MiB), so it is checked and otherwise ignored. */
		unsigned long long b = strtoull(v, &end, 10);

		if (!*v || *end || b == 0)
			diag_set(&q->d, -EINVAL, "bufsize=%s: a positive number (accepted for "
				 "compatibility; the agent's sample buffers are fixed)", v);
	} else if (!strcmp(key, "pid")) {
		long pid = strtol(v, &end, 10);

		if (!*v || *end || pid != (long)getpid())
			diag_set(&q->d, -EINVAL,
				 "pid=%s: this endpoint profiles its own process only (pid %d); "
				 "for another process use `nprof record PID`", v, (int)getpid());
	} else if (!strcmp(key, "output") && !strcmp(v, "html")) {
		/* async-profiler 2's name for the flame graph */
		agent_options_set(&q->o, "output", "flamegraph", &q->d);
	} else if (!strcmp(key, "event") || !strcmp(key, "interval") ||
		   !strcmp(key, "jstackdepth") || !strcmp(key, "thread") ||
		   !strcmp(key, "simple") || !strcmp(key, "output") || !strcmp(key, "width") ||
		   !strcmp(key, "height") || !strcmp(key, "minwidth") ||
		   !strcmp(key, "reverse") || !strcmp(key, "title")) {
		agent_options_set(&q->o, key, val, &q->d);
	} else {
		diag_set(&q->d, -EINVAL, "unknown parameter '%s'; /prof takes %s", key, PROF_PARAMS);
	}
	if (q->d.msg[0])
		q->bad = true;
	return q->bad ? MHD_NO : MHD_YES;
}

static const char *content_type(enum output_format f, const char **ret_ext)
{
	switch (f) {
	case OUTPUT_SUMMARY:
	case OUTPUT_TRACES:
	case OUTPUT_FLAT: *ret_ext = "txt"; return TEXT;
	case OUTPUT_COLLAPSED: *ret_ext = "collapsed"; return TEXT;
	case OUTPUT_PPROF: *ret_ext = "pb.gz"; return "application/octet-stream";
	case OUTPUT_SPEEDSCOPE: *ret_ext = "speedscope.json"; return "application/json";
	case OUTPUT_DOT: *ret_ext = "dot"; return "text/vnd.graphviz; charset=utf-8";
	case OUTPUT_FLAMEGRAPH:
	case OUTPUT_TREE: *ret_ext = "html"; return "text/html; charset=utf-8";
	case OUTPUT_SVG: *ret_ext = "svg"; return "image/svg+xml";
	case OUTPUT_JFR: *ret_ext = "jfr"; return "application/octet-stream";
	}
	*ret_ext = "out";
	return "application/octet-stream";
}

/* Sleeps until deadline, or until the client goes away (true). */
static bool wait_or_hangup(struct MHD_Connection *c, uint64_t ns)
{
	const union MHD_ConnectionInfo *ci =
		mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct timespec t0, t;
	uint64_t spent = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (spent < ns) {
		uint64_t left_ms = (ns - spent + 999999) / 1000000;
		struct pollfd p = { ci ? ci->connect_fd : -1, POLLRDHUP, 0 };

		if (p.fd < 0) {
			struct timespec ts = { (time_t)(left_ms / 1000), (long)(left_ms % 1000) * 1000000 };

			nanosleep(&ts, NULL);
		} else if (poll(&p, 1, (int)(left_ms > 1000 ? 1000 : left_ms)) > 0 &&
			   (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
			return true;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		spent = (uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000ull +
			(uint64_t)(t.tv_nsec - t0.tv_nsec);
	}
	return false;
}

static enum MHD_Result serve_prof(struct MHD_Connection *c)
{
	struct prof_req q;
	struct profile *p = NULL;
	const char *type, *ext;
	char *body = NULL, name[96], when[32];
	size_t len = 0;
	uint64_t id;
	time_t now;
	struct tm tm;
	FILE *m;
	int err;

	diag_clear(&q.d);
	agent_options_parse(NULL, &q.o, &q.d);
	q.o.have_format = true;
	q.o.format = OUTPUT_FLAMEGRAPH; /* Hadoop's default */
	q.duration_ns = HTTP_DEFAULT_DURATION_S * 1000000000ull;
	q.bad = false;
	mhd.get_connection_values(c, MHD_GET_ARGUMENT_KIND, prof_param, &q);
	if (q.bad)
		return send_text(c, MHD_HTTP_BAD_REQUEST, "%s\n", q.d.msg);
	if (q.o.title[0])
		q.o.out.title = q.o.title;
	err = agent_session_begin(&q.o, &id, &q.d);
	if (err == -EBUSY)
		return send_text(c, MHD_HTTP_CONFLICT, "%s\n", q.d.msg);
	if (err < 0)
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s\n", q.d.msg);
	if (wait_or_hangup(c, q.duration_ns)) {
		/* Nobody to give it to. */
		if (agent_session_end(id, &p, &q.d) == 0)
			profile_free(p);
		return MHD_NO;
	}
	err = agent_session_end(id, &p, &q.d);
	if (err == -ESTALE)
		return send_text(c, MHD_HTTP_CONFLICT, "%s\n", q.d.msg);
	if (err < 0)
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s\n", q.d.msg);
	m = open_memstream(&body, &len);
	err = m ? output_write(p, q.o.format, &q.o.out, m) : -ENOMEM;
	if (m && fclose(m) != 0 && err == 0)
		err = -ENOMEM;
	profile_free(p);
	if (err < 0) {
		free(body);
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				 "cannot format the profile: %s\n", strerror(-err));
	}
	type = content_type(q.o.format, &ext);
	now = time(NULL);
	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y%m%d-%H%M%S", &tm);
	snprintf(name, sizeof(name), "nprof-%d-%s-%s.%s", (int)getpid(),
		 event_name(q.o.event), when, ext);
	return send_reply(c, MHD_HTTP_OK, type, body, len, name);
}

/* --- /stacks, /heap -------------------------------------------------------- */

static enum MHD_Result serve_stacks(struct MHD_Connection *c)
{
	const char *out = mhd.lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "output");
	bool json = false;
	char *body = NULL;
	size_t len = 0;
	struct diag d;

	diag_clear(&d);
	if (out && !strcmp(out, "json"))
		json = true;
	else if (out && strcmp(out, "text"))
		return send_text(c, MHD_HTTP_BAD_REQUEST, "output=%s: use text (default) or json\n",
				 out);
	if (agent_stacks_dump(json, &body, &len, &d) < 0)
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s\n", d.msg);
	return send_reply(c, MHD_HTTP_OK, json ? "application/json" : TEXT, body, len, NULL);
}

static enum MHD_Result serve_heap(struct MHD_Connection *c)
{
	const char *action = mhd.lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "action");
	const char *out = mhd.lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "output");
	const char *interval = mhd.lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "interval");
	struct agent_http_reply r = { 0 };

	if (!agent_heap_http)
		return send_text(c, MHD_HTTP_NOT_IMPLEMENTED, "heap profiling not in this build\n");
	if (agent_heap_http(action, out, interval, &r) < 0 && !r.status) {
		free(r.body);
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "heap: failed\n");
	}
	if (!r.body) {
		r.body = strdup("");
		r.len = 0;
	}
	return send_reply(c, r.status ? r.status : MHD_HTTP_OK,
			  r.content_type ? r.content_type : TEXT, r.body, r.len, NULL);
}

/* --- the server ------------------------------------------------------------ */

/* On loopback, only loopback names: a browser sends the name it looked
 * up, so a page whose DNS name was rebound to 127.0.0.1 is refused. */
static bool host_ok(struct MHD_Connection *c)
{
	const char *host = mhd.lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	static const char *const names[] = { "127.0.0.1", "localhost", "[::1]" };

	if (!H.loopback || !host)
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]);

		if (!strncasecmp(host, names[i], n) && (host[n] == '\0' || host[n] == ':'))
			return true;
	}
	return false;
}

/* 403 naming why and where the token is; the token itself never. */
static enum MHD_Result auth_refuse(struct MHD_Connection *c, const struct http_auth *a,
				   const char *cause)
{
	return send_text(c, MHD_HTTP_FORBIDDEN,
			 "%s: this endpoint needs the token in %s: send Authorization: Bearer "
			 "<token> or ?token=<token>\n", cause, a->path);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_size, void **con_cls)
{
	static int first;
	const struct http_auth *a = cls;

	(void)version;
	(void)upload_data;
	if (!*con_cls) { /* headers only so far */
		*con_cls = &first;
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0; /* a body is not expected: drop it */
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET))
		return send_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "%s: use GET\n", method);
	if (!host_ok(c))
		return send_text(c, MHD_HTTP_FORBIDDEN,
				 "Host header not a loopback name; this endpoint answers "
				 "127.0.0.1, localhost and [::1] only\n");
	switch (http_auth_check(a,
				mhd.lookup_connection_value(c, MHD_HEADER_KIND,
							    MHD_HTTP_HEADER_AUTHORIZATION),
				mhd.lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token"))) {
	case HTTP_AUTH_OK:
		break;
	case HTTP_AUTH_MISSING:
		return auth_refuse(c, a, "no token");
	case HTTP_AUTH_WRONG:
		return auth_refuse(c, a, "wrong token");
	}
	if (!strcmp(url, "/prof"))
		return serve_prof(c);
	if (!strcmp(url, "/stacks"))
		return serve_stacks(c);
	if (!strcmp(url, "/heap"))
		return serve_heap(c);
	if (!strcmp(url, "/"))
		return send_text(c, MHD_HTTP_OK,
				 "nprof agent %s, pid %d\n"
				 "  /prof?event=cpu|itimer|wall&duration=10&output=flamegraph  a profile\n"
				 "  /stacks[?output=json]                                        a thread dump\n"
				 "  /heap?action=enable|disable|status|dump                      heap profiling\n",
				 "0.1.0", (int)getpid());
	return send_text(c, MHD_HTTP_NOT_FOUND, "%s: not here; use /prof, /stacks or /heap\n", url);
}

static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;

		return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;

		if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr))
			return true;
		return IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127;
	}
	return false;
}

/* "HOST:PORT", "[V6]:PORT", ":PORT" or "PORT"; HOST an address or
 * localhost. */
static int parse_addr(const char *text, struct sockaddr_storage *ret, struct diag *d)
{
	char host[INET6_ADDRSTRLEN + 2] = "127.0.0.1";
	const char *port = text, *colon;
	unsigned long pn;
	char *end;

	memset(ret, 0, sizeof(*ret));
	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':' || (size_t)(close - text - 1) >= sizeof(host))
			goto bad;
		memcpy(host, text + 1, (size_t)(close - text - 1));
		host[close - text - 1] = '\0';
		port = close + 2;
	} else if ((colon = strrchr(text, ':'))) {
		if ((size_t)(colon - text) >= sizeof(host))
			goto bad;
		if (colon > text) {
			memcpy(host, text, (size_t)(colon - text));
			host[colon - text] = '\0';
		}
		port = colon + 1;
	}
	pn = strtoul(port, &end, 10);
	if (!*port || *end || pn > 65535)
		goto bad;
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ret)->sin_addr) == 1) {
		((struct sockaddr_in *)ret)->sin_family = AF_INET;
		((struct sockaddr_in *)ret)->sin_port = htons((uint16_t)pn);
	} else if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ret)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)ret)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)ret)->sin6_port = htons((uint16_t)pn);
	} else {
		goto bad;
	}
	return 0;
bad:
	return diag_set(d, -EINVAL,
			"HTTP address '%s': use HOST:PORT with an IP address or localhost "
			"(127.0.0.1:9870, [::1]:9870; port 0 picks a free one)", text);
}

/* One row of /proc/net/tcp or tcp6 that listens on ss's port: 3 when on
 * its very address, 2 on its family's wildcard, 1 on IPv6's wildcard for
 * an IPv4 ss (a dual-stack socket), 0 when it is no holder of ss. */
static int listener_match(const struct sockaddr_storage *ss, bool v6, const char *line,
			  unsigned long *ret_inode)
{
	char hex[33];
	unsigned port, state;
	unsigned long inode;
	uint32_t w[4] = { 0 };
	size_t n;
	bool any = true;

	if (sscanf(line, " %*u: %32[0-9A-Fa-f]:%x %*s %x %*s %*s %*s %*u %*u %lu", hex, &port,
		   &state, &inode) != 4 || state != 0x0A /* TCP_LISTEN */ || inode == 0)
		return 0;
	n = strlen(hex);
	if (n != (v6 ? 32u : 8u))
		return 0;
	/* Each 32-bit word as the kernel holds it, printed %08X. */
	for (size_t i = 0; i < n / 8; i++) {
		char word[9];

		memcpy(word, hex + 8 * i, 8);
		word[8] = '\0';
		w[i] = (uint32_t)strtoul(word, NULL, 16);
		any = any && w[i] == 0;
	}
	*ret_inode = inode;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;

		if (port != ntohs(a->sin_port))
			return 0;
		if (v6)
			return any ? 1 : 0;
		return w[0] == a->sin_addr.s_addr ? 3 : any ? 2 : 0;
	} else {
		const struct sockaddr_in6 *a = (const void *)ss;

		if (port != ntohs(a->sin6_port) || !v6)
			return 0;
		return !memcmp(w, &a->sin6_addr, 16) ? 3 : any ? 2 : 0;
	}
}

/* The process listening on ss, which bind found in use: the socket's
 * inode from /proc/net/tcp and tcp6, then the process holding it among
 * the /proc/PID/fd this user may read. 0, or -ENOENT when not visible. */
static int port_holder(const struct sockaddr_storage *ss, pid_t *ret_pid, char *ret_comm,
		       size_t len)
{
	static const char *const tables[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	unsigned long inode = 0;
	char line[512], want[32], link[64], path[64];
	struct dirent *e, *f;
	int best = 0, err = -ENOENT;
	DIR *proc;

	for (size_t t = 0; t < 2; t++) {
		FILE *fp = fopen(tables[t], "re");

		while (fp && fgets(line, sizeof(line), fp)) {
			unsigned long ino;
			int m = listener_match(ss, t == 1, line, &ino);

			if (m > best) {
				best = m;
				inode = ino;
			}
		}
		if (fp)
			fclose(fp);
	}
	if (!best)
		return -ENOENT;
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	proc = opendir("/proc");
	while (proc && err < 0 && (e = readdir(proc))) {
		DIR *fds;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%.32s/fd", e->d_name);
		fds = opendir(path); /* EACCES: another user's */
		while (fds && err < 0 && (f = readdir(fds))) {
			ssize_t n = readlinkat(dirfd(fds), f->d_name, link, sizeof(link) - 1);

			if (n > 0 && (size_t)n == strlen(want) && !memcmp(link, want, (size_t)n))
				err = 0;
		}
		if (fds)
			closedir(fds);
		if (err == 0) {
			*ret_pid = (pid_t)atoi(e->d_name);
			snprintf(ret_comm, len, "?");
			proc_comm(*ret_pid, 0, ret_comm, len);
		}
	}
	if (proc)
		closedir(proc);
	return err;
}

/* bind found ss in use: one line naming who holds it, and what to do. */
static int in_use(const struct sockaddr_storage *ss, struct diag *d)
{
	char host[INET6_ADDRSTRLEN + 2], ip[INET6_ADDRSTRLEN], comm[64];
	pid_t pid = 0;

	if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, ip, sizeof(ip));
		snprintf(host, sizeof(host), "[%s]", ip);
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host, sizeof(host));
	}
	if (port_holder(ss, &pid, comm, sizeof(comm)) == 0)
		return diag_set(d, -EADDRINUSE,
				"address in use by PID %d (%s)%s; choose another port or %s:0",
				(int)pid, comm, pid == getpid() ? ", this process" : "", host);
	return diag_set(d, -EADDRINUSE,
			"address in use, held by another process (not visible to this user); "
			"choose another port or %s:0", host);
}

static void after_fork_child(void)
{
	/* The child has none of the server's threads: forget it (its
	 * listening socket stays open, unused, until exec), and its token
	 * file, which stays the parent's. */
	pthread_mutex_init(&H.lock, NULL);
	H.daemon = NULL;
	H.auth = NULL;
	H.addr[0] = '\0';
}

/* The token file goes with the process; a server still running at exit
 * is left to it. */
__attribute__((destructor)) static void http_exit(void)
{
	pthread_mutex_lock(&H.lock);
	http_auth_unlink(H.auth);
	pthread_mutex_unlock(&H.lock);
}

int agent_http_start(const char *text, struct diag *d)
{
	struct sockaddr_storage ss, bound;
	socklen_t blen = sizeof(bound);
	const union MHD_DaemonInfo *info;
	const char *allow = getenv("NPROF_HTTP_ALLOW_REMOTE");
	struct http_auth *auth = NULL;
	char host[INET6_ADDRSTRLEN];
	sigset_t all, old;
	bool open;
	int err;

	err = parse_addr(text, &ss, d);
	if (err < 0)
		return err;
	if (!is_loopback(&ss) && !(allow && !strcmp(allow, "1")))
		return diag_set(d, -EACCES,
				"HTTP address %s is not loopback: anyone who can reach it could "
				"profile this process and read its stacks; use 127.0.0.1:PORT, or "
				"set NPROF_HTTP_ALLOW_REMOTE=1 to serve it anyway", text);
	err = http_auth_mode(getenv("NPROF_HTTP_AUTH"), &open, d);
	if (err < 0)
		return err;
	err = http_mhd_load(d);
	if (err < 0)
		return err;
	/* The server needs the control thread (it drains samples). */
	err = agent_control_start(d);
	if (err < 0)
		return err;
	pthread_mutex_lock(&H.lock);
	if (H.daemon) {
		err = diag_set(d, -EALREADY, "the HTTP endpoint already serves %s", H.addr);
		goto out;
	}
	if (!H.atfork) {
		pthread_atfork(NULL, NULL, after_fork_child);
		H.atfork = true;
	}
	auth = http_auth_new(open, d);
	if (!auth) {
		err = -errno;
		goto out;
	}
	H.loopback = is_loopback(&ss);
	/* Its threads are the agent's: never sampled, every signal blocked
	 * (inherited from here). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	agent_threads_own_scope(true);
	H.daemon = mhd.start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
			(ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
		0, NULL, NULL, on_request, auth,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_CONNECTIONS,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_TIMEOUT_S,
		MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)16,
		MHD_OPTION_END);
	err = -errno;
	agent_threads_own_scope(false);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!H.daemon) {
		err = err < 0 ? err : -EIO;
		if (err == -EADDRINUSE)
			in_use(&ss, d);
		else
			diag_set(d, err, "HTTP endpoint on %s: %s", text, strerror(-err));
		goto out;
	}
	H.auth = auth;
	auth = NULL;
	info = mhd.get_daemon_info(H.daemon, MHD_DAEMON_INFO_LISTEN_FD);
	if (info && getsockname(info->listen_fd, (struct sockaddr *)&bound, &blen) == 0)
		ss = bound;
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)&ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		snprintf(H.addr, sizeof(H.addr), "[%s]:%u", host, ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const void *)&ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		snprintf(H.addr, sizeof(H.addr), "%s:%u", host, ntohs(a->sin_port));
	}
	if (H.auth->open)
		agent_log("HTTP endpoint on http://%s/ (/prof, /stacks, /heap); no token "
			  "(NPROF_HTTP_AUTH=none): open to every local user", H.addr);
	else
		agent_log("HTTP endpoint on http://%s/ (/prof, /stacks, /heap); token in %s",
			  H.addr, H.auth->path);
	err = 0;
out:
	pthread_mutex_unlock(&H.lock);
	http_auth_free(auth); /* when not serving */
	return err;
}

int agent_http_stop(void)
{
	struct MHD_Daemon *dm;
	struct http_auth *auth;

	pthread_mutex_lock(&H.lock);
	dm = H.daemon;
	auth = H.auth;
	H.daemon = NULL;
	H.auth = NULL;
	H.addr[0] = '\0';
	/* The file goes at once; requests in flight still check auth. */
	http_auth_unlink(auth);
	pthread_mutex_unlock(&H.lock);
	if (!dm)
		return -ENOENT;
	/* Waits for the connection threads: a /prof in progress ends first;
	 * they read auth until then. */
	mhd.stop_daemon(dm);
	http_auth_free(auth);
	return 0;
}

int agent_http_address(char *buf, size_t len)
{
	int err = 0;

	pthread_mutex_lock(&H.lock);
	if (H.daemon)
		snprintf(buf, len, "%s", H.addr);
	else
		err = -ENOENT;
	pthread_mutex_unlock(&H.lock);
	return err;
}

int agent_http_token_path(char *buf, size_t len)
{
	int err = 0;

	pthread_mutex_lock(&H.lock);
	if (!H.daemon)
		err = -ENOENT;
	else if ((size_t)snprintf(buf, len, "%s", H.auth->open ? "" : H.auth->path) >= len)
		err = -ERANGE;
	pthread_mutex_unlock(&H.lock);
	return err;
}
