/* etcd: etcd's v3 JSON gateway over libcurl (etcd.h). The gateway
 * writes 64-bit numbers as strings and keys and values in base64; an
 * error is {"error", "code", "message"} with a non-200 status. */
#include "daemon/cluster/etcd.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/curl_body.h"

#define KEY_MAX 1024

struct etcd {
	char *endpoint[ETCD_MAX_ENDPOINTS];
	size_t n;
	size_t last_good;		/* tried first */
	uint64_t timeout_ms;
	size_t max_reply;
	char *ca, *cert, *key;
	char *user, *password;		/* etcd's auth; NULL: none */
	struct etcd_token *token;
};

/* --- base64 ---------------------------------------------------------------- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void etcd_base64_encode(const unsigned char *in, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	out[o] = '\0';
}

static int b64_value(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;

	return p ? (int)(p - b64) : -1;
}

int etcd_base64_decode(const char *in, size_t n, unsigned char *out, size_t outlen,
		       size_t *ret_len)
{
	size_t o = 0;

	if (n % 4)
		return -EINVAL;
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		size_t pad = 0;

		for (int k = 0; k < 4; k++) {
			if (in[i + k] == '=' && i + 4 == n && k >= 2) {
				v[k] = 0;
				pad++;
				continue;
			}
			if (pad || (v[k] = b64_value(in[i + k])) < 0)
				return -EINVAL; /* '=' then a digit, or not base64 */
		}
		uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
			     (uint32_t)v[3];

		if (o + 3 - pad > outlen)
			return -EINVAL;
		out[o++] = (unsigned char)(x >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(x >> 8);
		if (pad < 1)
			out[o++] = (unsigned char)x;
	}
	*ret_len = o;
	return 0;
}

/* --- replies ------------------------------------------------------------------ */

/* A JSON object, or NULL: what every reply is. */
static json_t *load(const char *text, size_t len)
{
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);

	if (j && !json_is_object(j)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* An int64 the gateway writes as a string ("123") or, from other
 * proxies, a number. Absent: 0 (protobuf's default), true. */
static bool get_int(json_t *o, const char *name, int64_t *ret)
{
	json_t *v = json_object_get(o, name);
	const char *s;
	char *end;

	*ret = 0;
	if (!v)
		return true;
	if (json_is_integer(v)) {
		*ret = json_integer_value(v);
		return true;
	}
	if (!json_is_string(v))
		return false;
	s = json_string_value(v);
	if (!*s || strlen(s) > 20)
		return false;
	errno = 0;
	*ret = strtoll(s, &end, 10);
	return !errno && !*end;
}

int etcd_parse_grant(const char *text, size_t len, int64_t *ret_id, int64_t *ret_ttl)
{
	json_t *j = load(text, len);
	int64_t id, ttl;
	int r = -EPROTO;

	if (j && get_int(j, "ID", &id) && get_int(j, "TTL", &ttl) && id != 0 && ttl > 0 &&
	    !json_object_get(j, "error")) {
		*ret_id = id;
		*ret_ttl = ttl;
		r = 0;
	}
	json_decref(j);
	return r;
}

/* The keepalive is a stream: {"result": {...}} per line; the first one
 * answers. A lease etcd no longer has comes back without its TTL. */
int etcd_parse_keepalive(const char *text, size_t len, int64_t *ret_ttl)
{
	const char *nl = memchr(text, '\n', len);
	json_t *j = load(text, nl ? (size_t)(nl - text) : len);
	json_t *res = json_object_get(j, "result");
	int64_t ttl;
	int r = -EPROTO;

	if (json_is_object(res) && get_int(res, "TTL", &ttl) && ttl >= 0) {
		r = ttl > 0 ? 0 : -ENOENT;
		if (ttl > 0)
			*ret_ttl = ttl;
	}
	json_decref(j);
	return r;
}

/* A base64 field of o, decoded into a NUL-terminated malloc'd string of
 * at most max bytes: 0, or -EPROTO. An absent field is empty. */
static int get_b64(json_t *o, const char *name, size_t max, char **ret, size_t *ret_len)
{
	json_t *v = json_object_get(o, name);
	const char *s = v ? json_string_value(v) : "";
	size_t n, out_len;
	char *buf;

	if (!s)
		return -EPROTO;
	n = strlen(s);
	if (n / 4 * 3 > max + 2 || !(buf = malloc(n / 4 * 3 + 1)))
		return -EPROTO;
	if (etcd_base64_decode(s, n, (unsigned char *)buf, n / 4 * 3, &out_len) < 0 ||
	    out_len > max) {
		free(buf);
		return -EPROTO;
	}
	buf[out_len] = '\0';
	*ret = buf;
	*ret_len = out_len;
	return 0;
}

int etcd_parse_range(const char *text, size_t len, size_t max, struct etcd_kv **ret_kvs,
		     size_t *ret_n)
{
	json_t *j = load(text, len), *kvs = json_object_get(j, "kvs");
	struct etcd_kv *out = NULL;
	size_t n = json_array_size(kvs), got = 0, key_len;
	int r = -EPROTO;

	if (!j || (kvs && !json_is_array(kvs)) || n > max)
		goto out;
	if (n && !(out = calloc(n, sizeof(*out))))
		goto out;
	for (; got < n; got++) {
		json_t *kv = json_array_get(kvs, got);

		if (!json_is_object(kv) ||
		    get_b64(kv, "key", KEY_MAX, &out[got].key, &key_len) < 0)
			goto out;
		if (strlen(out[got].key) != key_len ||
		    get_b64(kv, "value", len, &out[got].value, &out[got].value_len) < 0) {
			free(out[got].key);
			goto out;
		}
	}
	*ret_kvs = out;
	*ret_n = n;
	out = NULL;
	r = 0;
out:
	etcd_kvs_free(out, got);
	json_decref(j);
	return r;
}

int etcd_parse_token(const char *text, size_t len, char *token, size_t size)
{
	json_t *j = load(text, len);
	const char *t = json_string_value(json_object_get(j, "token"));
	int r = -EPROTO;

	if (t && *t && strlen(t) < size) {
		r = 0;
		for (const char *s = t; *s; s++)
			if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
				r = -EPROTO; /* it goes into a header */
		if (r == 0)
			strcpy(token, t);
	}
	json_decref(j);
	return r;
}

void etcd_kvs_free(struct etcd_kv *kvs, size_t n)
{
	for (size_t i = 0; kvs && i < n; i++) {
		free(kvs[i].key);
		free(kvs[i].value);
	}
	free(kvs);
}

/* --- the client ----------------------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_start(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

struct etcd *etcd_new(const struct etcd_options *o)
{
	struct etcd *e = calloc(1, sizeof(*e));
	char *list = o->endpoints ? strdup(o->endpoints) : NULL, *save = NULL;

	pthread_once(&curl_once, curl_start);
	if (!e || !list) {
		errno = ENOMEM;
		goto fail;
	}
	for (char *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		while (*s == ' ')
			s++;
		if (e->n == ETCD_MAX_ENDPOINTS ||
		    (strncmp(s, "http://", 7) && strncmp(s, "https://", 8))) {
			errno = EINVAL;
			goto fail;
		}
		/* "http://h:2379/" and "http://h:2379" name the same base */
		if (!(e->endpoint[e->n] = strdup(s))) {
			errno = ENOMEM;
			goto fail;
		}
		for (size_t l = strlen(s); l && e->endpoint[e->n][l - 1] == '/'; l--)
			e->endpoint[e->n][l - 1] = '\0';
		e->n++;
	}
	if (!e->n) {
		errno = EINVAL;
		goto fail;
	}
	e->timeout_ms = o->timeout_ms ? o->timeout_ms : 3000;
	e->max_reply = o->max_reply ? o->max_reply : 1 << 20;
	e->ca = dup_or_null(o->ca);
	e->cert = dup_or_null(o->cert);
	e->key = dup_or_null(o->key);
	e->user = dup_or_null(o->user);
	e->password = o->password ? strdup(o->password) : NULL;
	e->token = o->token;
	if (e->user && (!e->password || !e->token)) {
		errno = EINVAL;
		goto fail;
	}
	free(list);
	return e;
fail:
	free(list);
	etcd_free(e);
	return NULL;
}

void etcd_free(struct etcd *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		free(e->endpoint[i]);
	free(e->ca);
	free(e->cert);
	free(e->key);
	free(e->user);
	if (e->password)
		explicit_bzero(e->password, strlen(e->password));
	free(e->password);
	free(e);
}

/* What a failed TLS connection to etcd means for the settings, in why:
 * -EACCES when rc is one, else 0. With --client-cert-auth, etcd ends a
 * handshake whose client certificate it does not take; curl then fails
 * to connect, send or receive, depending on the TLS version. */
static int tls_failure(const struct etcd *e, const char *url, CURLcode rc, const char *cerr,
		       char *why, size_t whylen)
{
	if (strncmp(url, "https://", 8))
		return 0;
	switch (rc) {
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
		snprintf(why, whylen, "%.300s: etcd's certificate is not trusted (%.200s); %s",
			 url, cerr, e->ca ? "[cluster] etcd_ca must be the CA that signed it"
					  : "set [cluster] etcd_ca to the CA that signed it");
		return -EACCES;
	case CURLE_SSL_CERTPROBLEM:
		snprintf(why, whylen, "%.300s: cannot use [cluster] etcd_cert and etcd_key (%.200s)",
			 url, cerr);
		return -EACCES;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
		snprintf(why, whylen, "%.300s: etcd ended the TLS connection (%.200s): with "
			 "--client-cert-auth it ends one whose client certificate its CA did not "
			 "sign; %s", url,
			 cerr, e->cert ? "check [cluster] etcd_cert and etcd_key"
				       : "set [cluster] etcd_cert and etcd_key");
		return -EACCES;
	default:
		return 0;
	}
}

/* POSTs request (JSON text) to url, with token ("" none): 0 and the 200
 * body into *ret, or -errno with why (one line): -EACCES when TLS failed
 * for the settings; *ret_status the status. */
static int post_one(struct etcd *e, const char *url, const char *request, const char *token,
		    bool first_line, struct curl_body *ret, long *ret_status, char *why, size_t whylen)
{
	struct curl_body b = { .max = e->max_reply, .first_line = first_line };
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	char cerr[CURL_ERROR_SIZE] = "", auth[300];
	CURL *c = curl_easy_init();
	CURLcode rc;
	long status = 0;
	int r = -EIO;

	if (h && token[0]) {
		snprintf(auth, sizeof(auth), "Authorization: %s", token);
		h = curl_slist_append(h, auth);
	}
	if (!c || !h) {
		curl_easy_cleanup(c);
		curl_slist_free_all(h);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	/* HTTP/1.1 over TLS as over TCP: with HTTP/2 (ALPN), a handshake
	 * etcd ends comes back as an HTTP/2 error rather than a TLS one */
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)e->timeout_ms);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, request);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, curl_body_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	if (e->ca)
		curl_easy_setopt(c, CURLOPT_CAINFO, e->ca);
	if (e->cert)
		curl_easy_setopt(c, CURLOPT_SSLCERT, e->cert);
	if (e->key)
		curl_easy_setopt(c, CURLOPT_SSLKEY, e->key);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	*ret_status = status;
	/* a keepalive's first line ends the transfer on purpose */
	if ((rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && !b.too_big && b.data)) && status == 200) {
		*ret = b;
		return 0;
	}
	if (b.too_big)
		snprintf(why, whylen, "%.300s: the reply is larger than %zu bytes", url, e->max_reply);
	else if ((r = tls_failure(e, url, rc, cerr[0] ? cerr : curl_easy_strerror(rc), why,
				  whylen)) < 0)
		;
	else if (rc != CURLE_OK && rc != CURLE_WRITE_ERROR)
		snprintf(why, whylen, "%.300s: %.200s", url, cerr[0] ? cerr : curl_easy_strerror(rc));
	else
		snprintf(why, whylen, "%.300s: HTTP %ld %.100s", url, status, b.data ? b.data : "");
	for (char *s = why; *s; s++)
		if (*s == '\n' || *s == '\r')
			*s = ' ';
	free(b.data);
	return r < 0 ? r : -EIO;
}

/* The shared token, authenticating at base when there is none (or when
 * stale, the one etcd refused): 0, or -errno and why. */
static int get_token(struct etcd *e, const char *base, const char *stale, char *token,
		     size_t size, char *why, size_t whylen)
{
	char url[1200];
	struct curl_body b;
	json_t *q;
	char *req;
	long status;
	int r = 0;

	pthread_mutex_lock(&e->token->lock);
	if (stale && !strcmp(e->token->text, stale))
		e->token->text[0] = '\0';
	if (!e->token->text[0]) {
		q = json_pack("{ss ss}", "name", e->user, "password", e->password);
		req = q ? json_dumps(q, JSON_COMPACT) : NULL;
		json_decref(q);
		snprintf(url, sizeof(url), "%s/v3/auth/authenticate", base);
		r = req ? post_one(e, url, req, "", false, &b, &status, why, whylen) : -ENOMEM;
		if (req) {
			explicit_bzero(req, strlen(req));
			free(req);
		}
		if (r == 0) {
			r = etcd_parse_token(b.data, b.len, e->token->text, sizeof(e->token->text));
			free(b.data);
			if (r < 0)
				snprintf(why, whylen, "%s: no token in etcd's reply to auth/authenticate",
					 base);
		} else if (status == 400 || status == 401) {
			snprintf(why, whylen, "%s refused [cluster] etcd_user %s: check it and "
				 "etcd_password_file", base, e->user);
		}
	}
	snprintf(token, size, "%s", e->token->text);
	pthread_mutex_unlock(&e->token->lock);
	return r;
}

/* POSTs request (JSON text) to path at each endpoint in turn: the
 * answering endpoint's 200 body into *ret (free it), or -errno and err.
 * With etcd's auth, a token etcd no longer takes is renewed once. */
static int call(struct etcd *e, const char *path, const char *request, bool first_line,
		struct curl_body *ret, char *err, size_t errlen)
{
	char why[700] = "";
	int r = 0;

	for (size_t k = 0; k < e->n; k++) {
		size_t i = (e->last_good + k) % e->n;
		char url[1200], token[256] = "";
		long status = 0;

		r = 0;

		snprintf(url, sizeof(url), "%s%s", e->endpoint[i], path);
		for (int attempt = 0; attempt < 2; attempt++) {
			if (e->user && (r = get_token(e, e->endpoint[i], attempt ? token : NULL, token,
						      sizeof(token), why, sizeof(why))) < 0)
				break;
			r = post_one(e, url, request, token, first_line, ret, &status, why, sizeof(why));
			if (r == 0 || !e->user || status != 401)
				break;
		}
		if (r == 0) {
			e->last_good = i;
			return 0;
		}
	}
	/* the last endpoint's reason says what to do */
	if (r == -EACCES) {
		snprintf(err, errlen, "cannot talk to etcd over TLS: %s", why);
		return -EACCES;
	}
	snprintf(err, errlen, "etcd did not answer (%s); check [cluster] etcd and that etcd runs",
		 why);
	return -EHOSTUNREACH;
}

static int proto_error(const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "etcd's reply to %s is not what etcd v3 sends; check that [cluster] "
		 "etcd names etcd 3.4 or later's client URL", what);
	return -EPROTO;
}

int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *ret_id, char *err, size_t errlen)
{
	char req[64];
	struct curl_body b;
	int64_t ttl;
	int r;

	snprintf(req, sizeof(req), "{\"TTL\":\"%" PRId64 "\"}", ttl_s);
	r = call(e, "/v3/lease/grant", req, false, &b, err, errlen);
	if (r < 0)
		return r;
	r = etcd_parse_grant(b.data, b.len, ret_id, &ttl);
	free(b.data);
	return r < 0 ? proto_error("lease/grant", err, errlen) : 0;
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ret_ttl, char *err, size_t errlen)
{
	char req[64];
	struct curl_body b;
	int r;

	snprintf(req, sizeof(req), "{\"ID\":\"%" PRId64 "\"}", id);
	r = call(e, "/v3/lease/keepalive", req, true, &b, err, errlen);
	if (r < 0)
		return r;
	r = etcd_parse_keepalive(b.data, b.len, ret_ttl);
	free(b.data);
	if (r == -ENOENT) {
		snprintf(err, errlen, "etcd no longer has lease %" PRId64 " (it expired); granting "
			 "a new one", id);
		return r;
	}
	return r < 0 ? proto_error("lease/keepalive", err, errlen) : 0;
}

int etcd_lease_revoke(struct etcd *e, int64_t id, char *err, size_t errlen)
{
	char req[64];
	struct curl_body b;
	int r;

	snprintf(req, sizeof(req), "{\"ID\":\"%" PRId64 "\"}", id);
	r = call(e, "/v3/lease/revoke", req, false, &b, err, errlen);
	if (r == 0)
		free(b.data);
	return r;
}

/* s (len bytes) in base64, malloc'd. */
static char *b64_dup(const char *s, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1);

	if (out)
		etcd_base64_encode((const unsigned char *)s, len, out);
	return out;
}

int etcd_put(struct etcd *e, const char *key, const char *value, int64_t lease, char *err,
	     size_t errlen)
{
	char *k = b64_dup(key, strlen(key)), *v = b64_dup(value, strlen(value)), *req = NULL;
	char lease_text[32];
	struct curl_body b;
	int r = -ENOMEM;

	snprintf(lease_text, sizeof(lease_text), "%" PRId64, lease);
	if (k && v) {
		json_t *q = json_pack("{ss ss ss}", "key", k, "value", v, "lease", lease_text);

		req = json_dumps(q, JSON_COMPACT);
		json_decref(q);
	}
	if (req) {
		r = call(e, "/v3/kv/put", req, false, &b, err, errlen);
		if (r == 0)
			free(b.data);
	} else {
		snprintf(err, errlen, "etcd: out of memory");
	}
	free(k);
	free(v);
	free(req);
	return r;
}

int etcd_range_prefix(struct etcd *e, const char *prefix, size_t max, struct etcd_kv **ret_kvs,
		      size_t *ret_n, char *err, size_t errlen)
{
	size_t n = strlen(prefix);
	char *k = b64_dup(prefix, n), *end = NULL, *req = NULL;
	char last[KEY_MAX];
	struct curl_body b;
	int r = -ENOMEM;

	/* the range [prefix, prefix with its last byte one higher) */
	if (n == 0 || n >= sizeof(last) || (unsigned char)prefix[n - 1] == 0xff) {
		free(k);
		snprintf(err, errlen, "etcd: bad prefix");
		return -EINVAL;
	}
	memcpy(last, prefix, n);
	last[n - 1]++;
	end = b64_dup(last, n);
	if (k && end) {
		json_t *q = json_pack("{ss ss sI}", "key", k, "range_end", end, "limit",
				      (json_int_t)max);

		req = json_dumps(q, JSON_COMPACT);
		json_decref(q);
	}
	if (req) {
		r = call(e, "/v3/kv/range", req, false, &b, err, errlen);
		if (r == 0) {
			r = etcd_parse_range(b.data, b.len, max, ret_kvs, ret_n);
			free(b.data);
			if (r < 0)
				r = proto_error("kv/range", err, errlen);
		}
	} else {
		snprintf(err, errlen, "etcd: out of memory");
	}
	free(k);
	free(end);
	free(req);
	return r;
}

int etcd_open_to_anyone(struct etcd *e, const char *key, bool *ret_open, char *where,
			size_t wherelen, char *err, size_t errlen)
{
	/* the same endpoints and CA, none of the credentials */
	struct etcd anon = *e;
	char *k = b64_dup(key, strlen(key)), *req = NULL, why[700] = "";
	struct curl_body b;
	long status = 0;
	int r = -EHOSTUNREACH;

	anon.cert = anon.key = anon.user = anon.password = NULL;
	if (k) {
		json_t *q = json_pack("{ss sb}", "key", k, "count_only", 1);

		req = json_dumps(q, JSON_COMPACT);
		json_decref(q);
	}
	for (size_t i = 0; req && i < e->n; i++) {
		size_t at = (e->last_good + i) % e->n;
		char url[1200];

		snprintf(url, sizeof(url), "%s/v3/kv/range", e->endpoint[at]);
		r = post_one(&anon, url, req, "", false, &b, &status, why, sizeof(why));
		/* served (200), or refused: a status, or a TLS handshake etcd ended */
		if (r == 0 || status || r == -EACCES) {
			if (r == 0)
				free(b.data);
			*ret_open = r == 0;
			snprintf(where, wherelen, "%s", e->endpoint[at]);
			r = 0;
			break;
		}
	}
	if (r < 0)
		snprintf(err, errlen, "etcd did not answer (%s)", req ? why : "out of memory");
	free(k);
	free(req);
	return r;
}
