/* daemon_client: see daemon_client.h. */
#include "client/daemon_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "base/clock.h"
#include "client/http_reply.h"

#define CONNECT_TIMEOUT_S 10
/* What an API error's body may take while a download is being written. */
#define ERROR_BODY_MAX (64u << 10)
/* The request's head: the method, the path and five header lines. */
#define REQUEST_HEAD_MAX 2048
#define NS_PER_S 1000000000ull
#define URL_MAX 2048

/* One request and what came back; filled by on_body as the reply is read. */
struct exchange {
	struct http_reply reply;
	char *buf;		/* the body kept in memory, NUL-terminated */
	size_t len, cap, max;
	bool too_big;
	FILE *out;		/* a download: a 2xx body goes here, not to buf */
	int write_err;		/* errno of a failed write to out */
};

const char *daemon_socket_path(void)
{
	const char *env = getenv(DAEMON_SOCKET_ENV);

	return env && env[0] ? env : DAEMON_SOCKET_DEFAULT;
}

/* path routed to $NPROF_HOST's nprofd (?host=, docs/cluster.md) when
 * that is set and path names no host itself: into buf, *ret_path
 * pointing at it; else *ret_path is path. 0, or -ENAMETOOLONG. */
static int routed_path(const char *path, char *buf, size_t len, const char **ret_path,
		       struct diag *d)
{
	const char *host = getenv(DAEMON_HOST_ENV);
	char esc[768];

	*ret_path = path;
	if (!host || !host[0] || strstr(path, "?host=") || strstr(path, "&host="))
		return 0;
	if (daemon_escape(host, esc, sizeof(esc)) < 0 ||
	    (size_t)snprintf(buf, len, "%s%chost=%s", path, strchr(path, '?') ? '&' : '?', esc) >= len)
		return diag_set(d, -ENAMETOOLONG, "%s=%.64s... is too long for a host's name",
				DAEMON_HOST_ENV, host);
	*ret_path = buf;
	return 0;
}

static bool unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

int daemon_escape(const char *s, char *buf, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (n + (unreserved(c) ? 1 : 3) >= len)
			return -ENAMETOOLONG;
		if (unreserved(c)) {
			buf[n++] = (char)c;
		} else {
			buf[n++] = '%';
			buf[n++] = hex[c >> 4];
			buf[n++] = hex[c & 15];
		}
	}
	if (n >= len)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return 0;
}

static bool keep(struct exchange *x, const char *data, size_t len)
{
	if (len > x->max - x->len) {
		x->too_big = true;
		return false;
	}
	if (x->len + len + 1 > x->cap) {
		size_t cap = x->cap ? x->cap : 4096;
		char *b;

		while (cap < x->len + len + 1)
			cap *= 2;
		b = realloc(x->buf, cap);
		if (!b)
			return false;
		x->buf = b;
		x->cap = cap;
	}
	memcpy(x->buf + x->len, data, len);
	x->len += len;
	x->buf[x->len] = '\0';
	return true;
}

static int on_body(void *arg, const char *data, size_t len)
{
	struct exchange *x = arg;

	if (x->out && x->reply.status >= 200 && x->reply.status < 300) {
		errno = 0;
		if (fwrite(data, 1, len, x->out) != len) {
			x->write_err = errno ? errno : EIO;
			return -x->write_err;
		}
		return 0;
	}
	if (keep(x, data, len))
		return 0;
	return x->too_big ? -EFBIG : -ENOMEM;
}

/* A name the server suggested, made safe to create here: no directory,
 * no hidden file, nothing a terminal would act on. */
static void safe_name(const char *raw, char *buf, size_t len)
{
	const char *s = strrchr(raw, '/') ? strrchr(raw, '/') + 1 : raw;
	size_t n = 0;

	while (*s == '.')
		s++;
	for (; *s && n + 1 < len; s++) {
		unsigned char c = (unsigned char)*s;

		buf[n++] = c < 0x20 || c == 0x7f || c == '\\' ? '_' : (char)c;
	}
	buf[n] = '\0';
}

static int status_errno(long status)
{
	switch (status) {
	case 400: return -EINVAL;
	case 401: return -EACCES;
	case 403: return -EPERM;
	case 404: return -ENOENT;
	case 409: return -EBUSY;
	case 410: return -ESRCH;
	case 413: return -E2BIG;
	case 429: return -EAGAIN;
	case 501: return -ENOSYS;
	case 507: return -ENOSPC;
	default: return -EIO;
	}
}

/* The server's "error" text, as it wrote it (control characters shown
 * as '?': it may quote what a user typed). */
static int api_error(long status, const struct exchange *x, struct diag *d)
{
	json_t *j = x->buf ? json_loadb(x->buf, x->len, 0, NULL) : NULL;
	const char *msg = json_string_value(json_object_get(j, "error"));
	int err = status_errno(status);

	if (msg && msg[0]) {
		char text[sizeof(d->msg)];
		size_t i;

		for (i = 0; msg[i] && i + 1 < sizeof(text); i++)
			text[i] = (unsigned char)msg[i] < 0x20 || msg[i] == 0x7f ? '?' : msg[i];
		text[i] = '\0';
		diag_set(d, err, "%s", text);
	} else {
		diag_set(d, err, "nprofd answered HTTP %ld without saying why; see its log "
			 "(journalctl -u nprofd)", status);
	}
	json_decref(j);
	return err;
}

static int connect_error(int os_err, const char *sock, struct diag *d)
{
	struct stat st;

	if (!os_err && access(sock, F_OK) < 0)
		os_err = errno;
	switch (os_err) {
	case ENOENT:
		return diag_set(d, -ENOENT, "nprofd is not running here (no socket at %s): start it "
				"(nprofd, or systemctl start nprofd), or set NPROF_SOCKET", sock);
	case ECONNREFUSED:
		if (stat(sock, &st) == 0 && !S_ISSOCK(st.st_mode))
			return diag_set(d, -ENOTSOCK, "%s is not a socket: set NPROF_SOCKET to "
					"nprofd's socket (default %s)", sock, DAEMON_SOCKET_DEFAULT);
		return diag_set(d, -ECONNREFUSED, "nprofd is not running here (nothing listens on "
				"%s, a socket left behind): start it (nprofd, or systemctl start "
				"nprofd), or set NPROF_SOCKET", sock);
	case ETIMEDOUT:
		return diag_set(d, -ETIMEDOUT, "nprofd (%s) did not take the connection within %d s; "
				"it may be stuck or overloaded: see its log (journalctl -u nprofd)",
				sock, CONNECT_TIMEOUT_S);
	case EACCES:
	case EPERM:
		return diag_set(d, -EACCES, "permission denied on nprofd's socket %s (uid %u may "
				"not open it or a directory above it): ask an admin to let you "
				"reach it, or run nprof as a user who may", sock, (unsigned)getuid());
	default:
		return diag_set(d, os_err ? -os_err : -EIO, "cannot connect to nprofd at %s: "
				"%s; is it running? (nprofd, or systemctl start nprofd; NPROF_SOCKET "
				"names another socket)", sock,
				os_err ? strerror(os_err) : "connection failed");
	}
}

/* The request's head and body, whole, into a buffer of its own
 * (*ret_text, to free). */
static int request_text(const char *method, const char *path, const char *body,
			char **ret_text, size_t *ret_len, struct diag *d)
{
	size_t body_len = body ? strlen(body) : 0, n;
	/* a POST says its length, none; another method has a body when
	 * given one (PATCH) */
	bool has_body = !strcmp(method, "POST") || body;
	char *text;
	int k;

	/* The path goes on the request line as it is: nothing in it may end
	 * that line or the path (daemon_escape's output never does). */
	for (const char *p = path; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return diag_set(d, -EINVAL, "the request path holds a space or a control "
					"character");
	if (strlen(path) > URL_MAX)
		return diag_set(d, -ENAMETOOLONG, "the request path is too long (%zu bytes)",
				strlen(path));
	n = REQUEST_HEAD_MAX + strlen(path) + body_len;
	text = malloc(n);
	if (!text)
		return diag_set(d, -ENOMEM, "out of memory talking to nprofd");
	/* The host is not looked up: the unix socket is the way (nprofd
	 * checks no Host there). Connection: close, so that the reply ends
	 * where the connection does when nothing else says. */
	k = snprintf(text, n, "%s %s HTTP/1.1\r\nHost: nprofd\r\nUser-Agent: nprof\r\n"
		     "Accept: application/json\r\nConnection: close\r\n", method, path);
	if (has_body && body)
		k += snprintf(text + k, n - (size_t)k, "Content-Type: application/json\r\n");
	if (has_body)
		k += snprintf(text + k, n - (size_t)k, "Content-Length: %zu\r\n", body_len);
	k += snprintf(text + k, n - (size_t)k, "\r\n");
	if (has_body && body_len)
		memcpy(text + k, body, body_len);
	*ret_text = text;
	*ret_len = (size_t)k + (has_body ? body_len : 0);
	return 0;
}

/* Waits until fd is ready for events, at most until deadline (a
 * CLOCK_MONOTONIC time in ns): 0, or -ETIMEDOUT. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC);
		int r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)((deadline - now + 999999) / 1000000));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* A connected socket to sock in *ret_fd, non-blocking; or -errno. A
 * full backlog is waited for CONNECT_TIMEOUT_S (SO_SNDTIMEO bounds a
 * unix socket's connect), then -ETIMEDOUT. */
static int connect_socket(const char *sock, int *ret_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = CONNECT_TIMEOUT_S };
	int fd, err;

	memcpy(sa.sun_path, sock, strlen(sock));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		err = errno == EAGAIN ? ETIMEDOUT : errno;
		close(fd);
		return -err;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	*ret_fd = fd;
	return 0;
}

/* wait_fd's err (-ETIMEDOUT, or poll's) as d's sentence. */
static int wait_error(int err, const struct exchange *x, const char *sock, struct diag *d)
{
	if (err != -ETIMEDOUT)
		return diag_set(d, err, "waiting for nprofd at %s failed: %s", sock, strerror(-err));
	return diag_set(d, -ETIMEDOUT, "nprofd (%s) %s within %d s; it may be stuck or "
			"overloaded: see its log (journalctl -u nprofd)", sock,
			x->out ? "sent nothing more" : "did not answer", DAEMON_TIMEOUT_S);
}

/* Why the reader or on_body stopped a reply's reading, as d's sentence. */
static int feed_error(int err, const struct exchange *x, const char *sock, const struct diag *why,
		      struct diag *d)
{
	if (x->too_big)
		return diag_set(d, -EFBIG, "nprofd's reply is larger than %u MiB, more than nprof "
				"keeps in memory; ask for less (a filter, a lower limit)",
				DAEMON_REPLY_MAX >> 20);
	if (x->write_err)
		return diag_set(d, -x->write_err, "cannot write the download: %s",
				strerror(x->write_err));
	if (err == -ENOMEM)
		return diag_set(d, -ENOMEM, "out of memory reading nprofd's reply");
	return diag_set(d, -EIO, "talking to nprofd at %s failed: a malformed reply: %s; is it "
			"nprofd's socket? (see its log: journalctl -u nprofd)", sock, why->msg);
}

/* Sends the request, then reads the reply until it is whole or the
 * connection ends. A server may answer and close before it read the
 * request (nprofd's gate refusing a connection): a failed send is an
 * error only when no reply follows. */
static int converse(struct exchange *x, int fd, const char *req, size_t req_len,
		    const char *sock, struct diag *d)
{
	uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + DAEMON_TIMEOUT_S * NS_PER_S;
	char buf[64 * 1024];
	struct diag why;
	size_t sent = 0;
	int send_err = 0, r;

	diag_clear(&why);
	while (sent < req_len && !send_err) {
		ssize_t n = send(fd, req + sent, req_len - sent, MSG_NOSIGNAL);

		if (n >= 0)
			sent += (size_t)n;
		else if (errno == EAGAIN && (r = wait_fd(fd, POLLOUT, deadline)) < 0)
			return wait_error(r, x, sock, d);
		else if (errno != EAGAIN && errno != EINTR)
			send_err = errno;
	}
	for (;;) {
		ssize_t n;

		if (x->out)	/* a download: bounded by its silences */
			deadline = clock_ns(CLOCK_MONOTONIC) + DAEMON_TIMEOUT_S * NS_PER_S;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			r = wait_fd(fd, POLLIN, deadline);
			if (r < 0)
				return wait_error(r, x, sock, d);
			continue;
		}
		if (n < 0 && errno != ECONNRESET)
			return diag_set(d, -errno, "reading nprofd's reply on %s failed: %s", sock,
					strerror(errno));
		if (n <= 0) {	/* the connection ended */
			if (http_reply_end(&x->reply, &why) == 0)
				return 0;
			if (send_err && !x->reply.head_done)
				return diag_set(d, -EIO, "sending the request to nprofd at %s failed: "
						"%s; see its log (journalctl -u nprofd)", sock,
						strerror(send_err));
			return diag_set(d, -EIO, "talking to nprofd at %s failed: it %s; see its "
					"log (journalctl -u nprofd)", sock, why.msg);
		}
		r = http_reply_feed(&x->reply, buf, (size_t)n, &why);
		if (r < 0)
			return feed_error(r, x, sock, &why, d);
		if (x->reply.done)
			return 0;
	}
}

/* Runs one request; 0 with *ret_status once nprofd answered anything. */
static int exchange_run(struct exchange *x, const char *method, const char *path,
			const char *body, long *ret_status, struct diag *d)
{
	const char *sock = daemon_socket_path();
	char routed[URL_MAX + 1];
	size_t req_len = 0;
	char *req = NULL;
	int fd = -1, r;

	if ((r = routed_path(path, routed, sizeof(routed), &path, d)) < 0)
		return r;
	if (strlen(sock) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return diag_set(d, -ENAMETOOLONG, "%s=%s is longer than a unix socket path may "
				"be (%zu bytes)", DAEMON_SOCKET_ENV, sock,
				sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
	http_reply_init(&x->reply, on_body, x);
	r = request_text(method, path, body, &req, &req_len, d);
	if (r < 0)
		return r;
	r = connect_socket(sock, &fd);
	if (r < 0)
		r = connect_error(-r, sock, d);
	else
		r = converse(x, fd, req, req_len, sock, d);
	if (r == 0)
		*ret_status = x->reply.status;
	if (fd >= 0)
		close(fd);
	free(req);
	return r;
}

static void exchange_release(struct exchange *x)
{
	free(x->buf);
}

int daemon_call(const char *method, const char *path, const char *json_body,
		json_t **ret_json, long *ret_status, struct diag *d)
{
	struct exchange x = { .max = DAEMON_REPLY_MAX };
	json_error_t jerr;
	json_t *j = NULL;
	long status;
	int r;

	r = exchange_run(&x, method, path, json_body, &status, d);
	if (r < 0)
		goto out;
	if (ret_status)
		*ret_status = status;
	if (status < 200 || status >= 300) {
		r = api_error(status, &x, d);
		goto out;
	}
	if (ret_json) {
		j = json_loadb(x.buf ? x.buf : "", x.len, 0, &jerr);
		if (!j) {
			r = diag_set(d, -EBADMSG, "nprofd's reply to %s %s is not JSON (%s); is %s "
				     "nprofd's socket?", method, path, jerr.text, daemon_socket_path());
			goto out;
		}
		*ret_json = j;
	}
out:
	exchange_release(&x);
	return r;
}

int daemon_download(const char *path, FILE *out, long *ret_status, char *ret_filename,
		    size_t len, struct diag *d)
{
	struct exchange x = { .max = ERROR_BODY_MAX, .out = out };
	long status;
	int r;

	r = exchange_run(&x, "GET", path, NULL, &status, d);
	if (r < 0)
		goto out;
	if (ret_status)
		*ret_status = status;
	if (status < 200 || status >= 300) {
		r = api_error(status, &x, d);
		goto out;
	}
	if (fflush(out) != 0) {
		r = diag_set(d, -(errno ? errno : EIO), "cannot write the download: %s",
			     strerror(errno ? errno : EIO));
		goto out;
	}
	if (ret_filename && len)
		safe_name(x.reply.filename, ret_filename, len);
out:
	exchange_release(&x);
	return r;
}
