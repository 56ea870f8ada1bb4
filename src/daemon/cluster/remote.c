/* remote: signed requests to another daemon (remote.h). */
#include "daemon/cluster/remote.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "daemon/cluster/cluster.h"
#include "daemon/cluster/cluster_auth.h"
#include "daemon/core/curl_body.h"
#include "daemon/core/daemon.h"
#include "daemon/core/wall_time.h"

#define URL_MAX 4096

/* The URL and the signed form of its query ("LEN:KEY=LEN:VALUE;"). */
static bool build(CURL *c, const char *base_url, const char *path, const char *const *keys,
		  const char *const *values, size_t n, char *url, char *args, size_t args_size)
{
	size_t base = strlen(base_url), used, args_len = 0;

	/* the registered URL ends in '/', the path starts with one */
	while (base && base_url[base - 1] == '/')
		base--;
	used = (size_t)snprintf(url, URL_MAX, "%.*s%s", (int)base, base_url, path);
	args[0] = '\0';
	for (size_t i = 0; i < n && used < URL_MAX; i++) {
		char *k = curl_easy_escape(c, keys[i], 0);
		char *v = values[i] ? curl_easy_escape(c, values[i], 0) : NULL;
		bool ok = k && (v || !values[i]) &&
			  request_args_add(args, args_size, &args_len, keys[i], values[i]);

		if (ok)
			used += (size_t)snprintf(url + used, URL_MAX - used, "%c%s%s%s", i ? '&' : '?',
						 k, v ? "=" : "", v ? v : "");
		curl_free(k);
		curl_free(v);
		if (!ok)
			return false;
	}
	return used < URL_MAX;
}

/* Content-Type and Content-Disposition, kept to pass the reply on, and
 * the reply's signature. */
static size_t on_header(char *p, size_t size, size_t n, void *cls)
{
	static const size_t sig_name = sizeof(CLUSTER_REPLY_HEADER ":") - 1;
	struct remote_reply *r = cls;
	size_t len = size * n, name, room;
	char *field = NULL;

	if (len > 14 && !strncasecmp(p, "Content-Type:", 13)) {
		field = r->content_type;
		name = 13;
		room = sizeof(r->content_type);
	} else if (len > 21 && !strncasecmp(p, "Content-Disposition:", 20)) {
		field = r->disposition;
		name = 20;
		room = sizeof(r->disposition);
	} else if (len > sig_name && !strncasecmp(p, CLUSTER_REPLY_HEADER ":", sig_name)) {
		field = r->signature;
		name = sig_name;
		room = sizeof(r->signature);
	} else if (len > 16 && !strncasecmp(p, "Content-Length:", 15)) {
		char digits[24];
		size_t k = 0;

		for (name = 15; name < len && p[name] == ' '; name++)
			;
		while (name < len && k < sizeof(digits) - 1 && p[name] >= '0' && p[name] <= '9')
			digits[k++] = p[name++];
		digits[k] = '\0';
		r->length = k && k < 20 ? strtoull(digits, NULL, 10) : 0;
		return size * n;
	} else {
		return len;
	}
	while (name < len && p[name] == ' ')
		name++;
	while (len > name && (p[len - 1] == '\r' || p[len - 1] == '\n'))
		len--;
	if (len - name < room) {
		memcpy(field, p + name, len - name);
		field[len - name] = '\0';
	}
	return size * n;
}

/* Whether r (its body whole when body is set) is signed by the host
 * asked, for the request made: 0; 1 when the headers are and the body
 * is to be checked once read whole; or -EBADMSG and err. */
static int check_reply(struct daemon *d, const struct remote_reply *r, const char *body,
		       size_t len, char *err, size_t errlen)
{
	struct cluster_reply cr = {
		.status = r->status > 0 && r->status < 1000 ? (unsigned)r->status : 0,
		.content_type = r->content_type, .disposition = r->disposition,
		.body = body, .body_len = len, .size = r->length,
	};
	char why[400];
	json_t *j;
	int v = cluster_auth_verify_reply(d->cluster_auth, &cr, r->signature[0] ? r->signature : NULL,
					  r->host, r->nonce, why, sizeof(why));

	if (v >= 0)
		return v;
	/* A daemon that cannot check a request refuses it unsigned: its
	 * reason helps the operator (clocks, keys), shown as unverified. */
	j = body && (r->status == 401 || r->status == 503) && !r->signature[0]
		    ? json_loadb(body, len, 0, NULL) : NULL;
	if (json_is_string(json_object_get(j, "error")))
		snprintf(err, errlen, "it refused the request (HTTP %ld, unsigned: %.300s)", r->status,
			 json_string_value(json_object_get(j, "error")));
	else
		snprintf(err, errlen, "%s (HTTP %ld)", why, r->status);
	json_decref(j);
	return -EBADMSG;
}

/* c set up for the request signed for host at base_url (URL, pin,
 * method, body, headers into *ret_h, connecting within timeout_ms), and
 * r told what its reply must be signed for: 0, or -errno and err. */
static int prepare(struct daemon *d, CURL *c, const char *base_url, const char *pin,
		   const char *host, const char *method, const char *path,
		   const char *const *keys, const char *const *values, size_t n, const char *body,
		   size_t body_len, const struct user *u, uint64_t timeout_ms,
		   struct remote_reply *r, struct curl_slist **ret_h, char *err, size_t errlen)
{
	char url[URL_MAX], args[512], header[CLUSTER_HEADER_MAX + 32], signature[CLUSTER_HEADER_MAX];
	struct cluster_request cr;
	struct cluster_claim claim = { .uid = (int64_t)u->uid, .ts_ms = now_ms() };
	struct curl_slist *h;

	if (!d->cluster_auth || !build(c, base_url, path, keys, values, n, url, args, sizeof(args)) ||
	    cluster_auth_authority(base_url, claim.at, sizeof(claim.at)) < 0) {
		snprintf(err, errlen, "cannot make the request to %.200s (no cluster key, a query "
			 "too long, or not a URL)", base_url);
		return -EINVAL;
	}
	snprintf(claim.host, sizeof(claim.host), "%s", cluster_name(d->cluster));
	snprintf(claim.to, sizeof(claim.to), "%s", host);
	snprintf(claim.user, sizeof(claim.user), "%s", u->name);
	cr = (struct cluster_request){ method, path, args, body ? body : "", body_len };
	if (cluster_auth_sign(d->cluster_auth, &cr, &claim, signature) < 0) {
		snprintf(err, errlen, "cannot sign a request for user %s", u->name);
		return -EINVAL;
	}
	snprintf(r->host, sizeof(r->host), "%s", host);
	snprintf(r->nonce, sizeof(r->nonce), "%s", claim.nonce);
	snprintf(header, sizeof(header), "%s: %s", CLUSTER_HEADER, signature);
	h = curl_slist_append(NULL, header);
	if (h && body_len)
		h = curl_slist_append(h, "Content-Type: application/json");
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	*ret_h = h;
	curl_easy_setopt(c, CURLOPT_URL, url);
	/* The key the host registered is its identity: a self-signed
	 * certificate is the usual case, and no name need match. */
	if (pin && *pin && !strncmp(url, "https://", 8)) {
		curl_easy_setopt(c, CURLOPT_PINNEDPUBLICKEY, pin);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	/* a POST's body, or another method's when it has one (PATCH) */
	if (!strcmp(method, "POST") || (strcmp(method, "GET") && body_len)) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
	}
	if (strcmp(method, "POST") && strcmp(method, "GET"))
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	return 0;
}

static void transfer_error(CURLcode rc, const char *cerr, uint64_t timeout_ms, char *err,
			   size_t errlen)
{
	if (rc == CURLE_OPERATION_TIMEDOUT)
		snprintf(err, errlen, "no answer within %llu ms", (unsigned long long)timeout_ms);
	else
		snprintf(err, errlen, "%.300s", cerr[0] ? cerr : curl_easy_strerror(rc));
}

int remote_call(struct daemon *d, const char *base_url, const char *pin, const char *host,
		const char *method, const char *path, const char *const *keys,
		const char *const *values, size_t n, const char *body, size_t body_len,
		const struct user *u, uint64_t timeout_ms, size_t max_reply,
		struct remote_reply *ret, char *err, size_t errlen)
{
	char cerr[CURL_ERROR_SIZE] = "";
	struct curl_body b = { .max = max_reply };
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();
	CURLcode rc;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = prepare(d, c, base_url, pin, host, method, path, keys, values, n, body, body_len, u,
		    timeout_ms, ret, &h, err, errlen);
	if (r < 0)
		goto out;
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, ret);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, curl_body_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		if (b.too_big)
			snprintf(err, errlen, "its reply is larger than [cluster] max_reply = %zu bytes",
				 max_reply);
		else
			transfer_error(rc, cerr, timeout_ms, err, errlen);
		free(b.data);
		r = -EIO;
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &ret->status);
	/* nothing of it is used unless it is the host's answer to this request */
	r = check_reply(d, ret, b.data ? b.data : "", b.len, err, errlen);
	if (r < 0) {
		free(b.data);
		goto out;
	}
	ret->body = b.data;
	ret->len = b.len;
out:
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return r;
}

/* --- a download, streamed through a pipe ---------------------------------------- */

/* Shared by the caller, until it has the headers, and the transfer's
 * thread, until the transfer ends: the last one frees it. */
struct stream {
	pthread_mutex_t lock;
	pthread_cond_t changed;		/* headers came, or the transfer ended */
	unsigned refs;			/* under lock */
	bool headers, ended;		/* under lock */
	CURL *c;
	struct curl_slist *h;
	int wfd;			/* the pipe's write end: the thread's */
	struct remote_reply reply;	/* written by the thread before headers is set */
	char cerr[CURL_ERROR_SIZE];
	char err[400];			/* the thread's, before ended is set */
};

static void stream_put(struct stream *s)
{
	bool last;

	pthread_mutex_lock(&s->lock);
	last = --s->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (!last)
		return;
	curl_slist_free_all(s->h);
	curl_easy_cleanup(s->c);
	pthread_cond_destroy(&s->changed);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static size_t stream_header(char *p, size_t size, size_t n, void *cls)
{
	struct stream *s = cls;
	size_t len = size * n;
	long status = 0;

	on_header(p, size, n, &s->reply);
	/* the blank line that ends a header block: the final one past 1xx */
	if (len <= 2 && (p[0] == '\r' || p[0] == '\n')) {
		curl_easy_getinfo(s->c, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200) {
			pthread_mutex_lock(&s->lock);
			s->reply.status = status;
			s->headers = true;
			pthread_cond_signal(&s->changed);
			pthread_mutex_unlock(&s->lock);
		}
	}
	return len;
}

/* Blocks while the reader is slower; a reader that closed its end makes
 * write fail (EPIPE: nprofd ignores SIGPIPE), which ends the transfer. */
static size_t stream_data(char *p, size_t size, size_t n, void *cls)
{
	struct stream *s = cls;
	size_t len = size * n, off = 0;

	while (off < len) {
		ssize_t w = write(s->wfd, p + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return 0;
		off += (size_t)w;
	}
	return len;
}

static void *stream_run(void *arg)
{
	struct stream *s = arg;
	CURLcode rc = curl_easy_perform(s->c);

	close(s->wfd);
	pthread_mutex_lock(&s->lock);
	if (rc != CURLE_OK)
		snprintf(s->err, sizeof(s->err), "%.300s",
			 s->cerr[0] ? s->cerr : curl_easy_strerror(rc));
	s->ended = true;
	pthread_cond_signal(&s->changed);
	pthread_mutex_unlock(&s->lock);
	stream_put(s);
	return NULL;
}

int remote_stream(struct daemon *d, const char *base_url, const char *pin, const char *host,
		  const char *path, const char *const *keys, const char *const *values, size_t n,
		  const struct user *u, uint64_t timeout_ms, struct remote_reply *ret,
		  int *ret_fd, char *err, size_t errlen)
{
	struct stream *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	pthread_attr_t attr;
	pthread_t th;
	struct timespec until;
	int fds[2] = { -1, -1 }, r;
	bool headers;

	memset(ret, 0, sizeof(*ret));
	if (!s || !(s->c = curl_easy_init()) || pipe2(fds, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "out of memory or file descriptors");
		if (s)
			curl_easy_cleanup(s->c);
		free(s);
		return -ENOMEM;
	}
	r = prepare(d, s->c, base_url, pin, host, "GET", path, keys, values, n, NULL, 0, u,
		    timeout_ms, &s->reply, &s->h, err, errlen);
	if (r < 0) {
		curl_slist_free_all(s->h);
		curl_easy_cleanup(s->c);
		free(s);
		close(fds[0]);
		close(fds[1]);
		return r;
	}
	/* no bound on the whole: on a transfer that stalls, seconds at a time */
	curl_easy_setopt(s->c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(s->c, CURLOPT_LOW_SPEED_TIME, (long)(timeout_ms / 1000 ? timeout_ms / 1000 : 1));
	curl_easy_setopt(s->c, CURLOPT_HEADERFUNCTION, stream_header);
	curl_easy_setopt(s->c, CURLOPT_HEADERDATA, s);
	curl_easy_setopt(s->c, CURLOPT_WRITEFUNCTION, stream_data);
	curl_easy_setopt(s->c, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(s->c, CURLOPT_ERRORBUFFER, s->cerr);
	s->wfd = fds[1];
	s->refs = 2;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->changed, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 1u << 20); /* curl and a TLS handshake */
	if (pthread_create(&th, &attr, stream_run, s) != 0) {
		pthread_attr_destroy(&attr);
		close(fds[0]);
		close(fds[1]);
		s->refs = 1;
		stream_put(s);
		snprintf(err, errlen, "cannot start a thread for the download");
		return -EAGAIN;
	}
	pthread_attr_destroy(&attr);
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)(timeout_ms / 1000);
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&s->lock);
	while (!s->headers && !s->ended &&
	       pthread_cond_timedwait(&s->changed, &s->lock, &until) != ETIMEDOUT)
		;
	headers = s->headers;
	if (headers)
		*ret = s->reply;
	else if (s->ended)
		snprintf(err, errlen, "%s", s->err[0] ? s->err : "no reply");
	else
		snprintf(err, errlen, "no answer within %llu ms", (unsigned long long)timeout_ms);
	pthread_mutex_unlock(&s->lock);
	stream_put(s);
	/* its headers are the host's answer to this request, or nothing is used */
	if (headers && (r = check_reply(d, ret, NULL, 0, err, errlen)) < 0)
		headers = false;
	if (!headers) {
		close(fds[0]); /* the thread, if still waiting, ends at its first write */
		return r == -EBADMSG ? r : -EIO;
	}
	ret->body_unchecked = r == 1;
	*ret_fd = fds[0];
	return 0;
}

int remote_read_whole(struct daemon *d, int fd, size_t max, struct remote_reply *r, char *err,
		      size_t errlen)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap + 1);
	ssize_t got = 0;

	while (buf && len <= max) {
		if (len == cap) {
			char *grown = realloc(buf, cap * 2 + 1);

			if (!grown) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
			cap *= 2;
		}
		got = read(fd, buf + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	if (!buf || got < 0 || len > max) {
		free(buf);
		snprintf(err, errlen, "its reply is larger than [cluster] max_reply = %zu bytes, or "
			 "could not be read", max);
		return -EIO;
	}
	buf[len] = '\0';
	if (r->body_unchecked && check_reply(d, r, buf, len, err, errlen) < 0) {
		free(buf);
		return -EBADMSG;
	}
	r->body_unchecked = false;
	r->body = buf;
	r->len = len;
	return 0;
}
