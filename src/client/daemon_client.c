/* daemon_client: see daemon_client.h. */
#include "client/daemon_client.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <curl/curl.h>

#define CONNECT_TIMEOUT_S 10
/* What an API error's body may take while a download is being written. */
#define ERROR_BODY_MAX (64u << 10)
#define URL_MAX 2048

/* One request and what came back; filled by curl's callbacks. */
struct exchange {
	CURL *h;
	char *buf;		/* the body kept in memory, NUL-terminated */
	size_t len, cap, max;
	bool too_big;
	FILE *out;		/* a download: a 2xx body goes here, not to buf */
	int write_err;		/* errno of a failed write to out */
	char filename[256];	/* Content-Disposition's, as sent */
};

/* libcurl is loaded the first time nprof talks to nprofd, not with nprof:
 * it and the TLS, Kerberos and LDAP libraries behind it are some 35
 * objects whose loading and constructors took ~4.4 ms of CPU at the
 * start of every nprof (docs/performance.md), more than a whole thread
 * dump of a small process. Written once under curl_once. */
#ifndef NPROF_CURL_SONAME
#define NPROF_CURL_SONAME "libcurl.so.4"
#endif

static struct {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *h);
	CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *h);
	char *(*easy_escape)(CURL *h, const char *s, int len);
	const char *(*easy_strerror)(CURLcode rc);
	void (*free)(void *p);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
	bool ready;
	char why[256];		/* when not ready */
} cu;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_start(void)
{
	static const struct {
		const char *name;
		size_t at;
	} syms[] = {
#define CU_SYM(field, name) { name, offsetof(__typeof__(cu), field) }
		CU_SYM(global_init, "curl_global_init"),
		CU_SYM(easy_init, "curl_easy_init"),
		CU_SYM(easy_setopt, "curl_easy_setopt"),
		CU_SYM(easy_perform, "curl_easy_perform"),
		CU_SYM(easy_getinfo, "curl_easy_getinfo"),
		CU_SYM(easy_cleanup, "curl_easy_cleanup"),
		CU_SYM(easy_escape, "curl_easy_escape"),
		CU_SYM(easy_strerror, "curl_easy_strerror"),
		CU_SYM(free, "curl_free"),
		CU_SYM(slist_append, "curl_slist_append"),
		CU_SYM(slist_free_all, "curl_slist_free_all"),
#undef CU_SYM
	};
	void *lib = dlopen(NPROF_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		snprintf(cu.why, sizeof(cu.why), "cannot load libcurl (%s): %s; install it "
			 "(Debian: libcurl3-gnutls)", NPROF_CURL_SONAME, dlerror());
		return;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *f = dlsym(lib, syms[i].name);

		if (!f) {
			snprintf(cu.why, sizeof(cu.why), "%s has no %s: not a libcurl nprof "
				 "can use", NPROF_CURL_SONAME, syms[i].name);
			return; /* lib stays loaded: harmless */
		}
		memcpy((char *)&cu + syms[i].at, &f, sizeof(f));
	}
	cu.global_init(CURL_GLOBAL_DEFAULT);
	cu.ready = true;
}

/* A new handle into *ret, libcurl loaded the first time: 0, or -errno
 * with d (may be NULL) saying why. */
static int curl_new(CURL **ret, struct diag *d)
{
	pthread_once(&curl_once, curl_start);
	if (!cu.ready)
		return diag_set(d, -ELIBACC, "%s", cu.why);
	*ret = cu.easy_init();
	if (!*ret)
		return diag_set(d, -ENOMEM, "out of memory starting libcurl");
	return 0;
}

const char *daemon_socket_path(void)
{
	const char *env = getenv(DAEMON_SOCKET_ENV);

	return env && env[0] ? env : DAEMON_SOCKET_DEFAULT;
}

int daemon_escape(const char *s, char *buf, size_t len)
{
	CURL *h;
	char *e;
	int r = curl_new(&h, NULL);

	if (r < 0)
		return r;
	e = cu.easy_escape(h, s, 0);
	if (!e)
		r = -ENOMEM;
	else if (strlen(e) >= len)
		r = -ENAMETOOLONG;
	else
		strcpy(buf, e);
	cu.free(e);
	cu.easy_cleanup(h);
	return r;
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

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct exchange *x = arg;
	size_t len = size * n;
	long status = 0;

	if (x->out) {
		cu.easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200 && status < 300) {
			errno = 0;
			if (fwrite(data, 1, len, x->out) != len) {
				x->write_err = errno ? errno : EIO;
				return 0; /* ends the transfer */
			}
			return len;
		}
	}
	return keep(x, data, len) ? len : 0;
}

/* Content-Disposition: attachment; filename="NAME" (or filename=NAME). */
static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct exchange *x = arg;
	size_t len = size * n, i = 0;
	static const char key[] = "Content-Disposition:";
	const char *p, *end = data + len;
	char quote = 0;

	if (len < sizeof(key) - 1 || strncasecmp(data, key, sizeof(key) - 1))
		return len;
	p = memmem(data, len, "filename=", 9);
	if (!p)
		return len;
	p += 9;
	if (p < end && *p == '"')
		quote = *p++;
	while (p < end && i + 1 < sizeof(x->filename) && *p != '\r' && *p != '\n' &&
	       (quote ? *p != quote : *p != ';' && *p != ' '))
		x->filename[i++] = *p++;
	x->filename[i] = '\0';
	return len;
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

static int connect_error(long os_err, const char *sock, struct diag *d)
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
	case EACCES:
	case EPERM:
		return diag_set(d, -EACCES, "permission denied on nprofd's socket %s (uid %u may "
				"not open it or a directory above it): ask an admin to let you "
				"reach it, or run nprof as a user who may", sock, (unsigned)getuid());
	default:
		return diag_set(d, os_err ? -(int)os_err : -EIO, "cannot connect to nprofd at %s: "
				"%s; is it running? (nprofd, or systemctl start nprofd; NPROF_SOCKET "
				"names another socket)", sock,
				os_err ? strerror((int)os_err) : "connection failed");
	}
}

static int transport_error(CURLcode rc, struct exchange *x, const char *sock, struct diag *d)
{
	long os_err = 0;

	if (x->too_big)
		return diag_set(d, -EFBIG, "nprofd's reply is larger than %u MiB, more than nprof "
				"keeps in memory; ask for less (a filter, a lower limit)",
				DAEMON_REPLY_MAX >> 20);
	if (x->write_err)
		return diag_set(d, -x->write_err, "cannot write the download: %s",
				strerror(x->write_err));
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		cu.easy_getinfo(x->h, CURLINFO_OS_ERRNO, &os_err);
		return connect_error(os_err, sock, d);
	case CURLE_OPERATION_TIMEDOUT:
		return diag_set(d, -ETIMEDOUT, "nprofd (%s) %s within %d s; it may be stuck or "
				"overloaded: see its log (journalctl -u nprofd)", sock,
				x->out ? "sent nothing more" : "did not answer", DAEMON_TIMEOUT_S);
	case CURLE_OUT_OF_MEMORY:
		return diag_set(d, -ENOMEM, "out of memory talking to nprofd");
	case CURLE_WRITE_ERROR:
		return diag_set(d, -ENOMEM, "out of memory reading nprofd's reply");
	default:
		return diag_set(d, -EIO, "talking to nprofd at %s failed: %s; see its log "
				"(journalctl -u nprofd)", sock, cu.easy_strerror(rc));
	}
}

/* Runs one request; 0 with *ret_status once nprofd answered anything. */
static int exchange_run(struct exchange *x, const char *method, const char *path,
			const char *body, long *ret_status, struct diag *d)
{
	const char *sock = daemon_socket_path();
	struct curl_slist *hdrs = NULL, *h;
	char url[URL_MAX];
	CURLcode rc;
	long status = 0;
	int r = 0;

	if (strlen(sock) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return diag_set(d, -ENAMETOOLONG, "%s=%s is longer than a unix socket path may "
				"be (%zu bytes)", DAEMON_SOCKET_ENV, sock,
				sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
	if ((size_t)snprintf(url, sizeof(url), "http://nprofd%s", path) >= sizeof(url))
		return diag_set(d, -ENAMETOOLONG, "the request path is too long (%zu bytes)",
				strlen(path));
	r = curl_new(&x->h, d);
	if (r < 0)
		return r;
	/* The host in the URL is not looked up: the unix socket is the way. */
	cu.easy_setopt(x->h, CURLOPT_UNIX_SOCKET_PATH, sock);
	cu.easy_setopt(x->h, CURLOPT_URL, url);
	cu.easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
	if (x->out) {
		/* A core file may take longer than that to copy: a download is
		 * bounded by its silences instead (nprofd converts within 60 s). */
		cu.easy_setopt(x->h, CURLOPT_LOW_SPEED_LIMIT, 1L);
		cu.easy_setopt(x->h, CURLOPT_LOW_SPEED_TIME, (long)DAEMON_TIMEOUT_S);
	} else {
		cu.easy_setopt(x->h, CURLOPT_TIMEOUT, (long)DAEMON_TIMEOUT_S);
	}
	cu.easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_TIMEOUT_S);
	cu.easy_setopt(x->h, CURLOPT_USERAGENT, "nprof");
	cu.easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_body);
	cu.easy_setopt(x->h, CURLOPT_WRITEDATA, x);
	cu.easy_setopt(x->h, CURLOPT_HEADERFUNCTION, on_header);
	cu.easy_setopt(x->h, CURLOPT_HEADERDATA, x);
	h = cu.slist_append(hdrs, "Accept: application/json");
	hdrs = h ? h : hdrs;
	if (!strcmp(method, "POST")) {
		cu.easy_setopt(x->h, CURLOPT_POST, 1L);
		cu.easy_setopt(x->h, CURLOPT_POSTFIELDS, body ? body : "");
		cu.easy_setopt(x->h, CURLOPT_POSTFIELDSIZE, (long)(body ? strlen(body) : 0));
		/* No "100 Continue" round trip for a body of a few bytes. */
		h = cu.slist_append(hdrs, "Expect:");
		hdrs = h ? h : hdrs;
		if (body) {
			h = cu.slist_append(hdrs, "Content-Type: application/json");
			hdrs = h ? h : hdrs;
		}
	} else if (strcmp(method, "GET")) {
		cu.easy_setopt(x->h, CURLOPT_CUSTOMREQUEST, method);
	}
	cu.easy_setopt(x->h, CURLOPT_HTTPHEADER, hdrs);
	rc = cu.easy_perform(x->h);
	if (rc != CURLE_OK)
		r = transport_error(rc, x, sock, d);
	else
		cu.easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
	cu.slist_free_all(hdrs);
	if (r == 0)
		*ret_status = status;
	return r;
}

static void exchange_release(struct exchange *x)
{
	if (x->h)
		cu.easy_cleanup(x->h);
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
		safe_name(x.filename, ret_filename, len);
out:
	exchange_release(&x);
	return r;
}
