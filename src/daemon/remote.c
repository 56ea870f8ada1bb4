/* remote: signed requests to another daemon (remote.h). */
#include "daemon/remote.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/cluster.h"
#include "daemon/cluster_auth.h"
#include "daemon/daemon.h"

#define URL_MAX 4096

struct body {
	char *data;
	size_t len, max;
	bool too_big;
};

static size_t on_data(char *p, size_t size, size_t n, void *cls)
{
	struct body *b = cls;
	size_t add = size * n;
	char *grown;

	if (b->len + add > b->max) {
		b->too_big = true;
		return 0;
	}
	grown = realloc(b->data, b->len + add + 1);
	if (!grown)
		return 0;
	memcpy(grown + b->len, p, add);
	b->len += add;
	grown[b->len] = '\0';
	b->data = grown;
	return add;
}

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

/* Content-Type and Content-Disposition, kept to pass the reply on. */
static size_t on_header(char *p, size_t size, size_t n, void *cls)
{
	struct remote_reply *r = cls;
	size_t len = size * n, name;
	char *field = NULL;

	if (len > 14 && !strncasecmp(p, "Content-Type:", 13)) {
		field = r->content_type;
		name = 13;
	} else if (len > 21 && !strncasecmp(p, "Content-Disposition:", 20)) {
		field = r->disposition;
		name = 20;
	} else {
		return len;
	}
	while (name < len && p[name] == ' ')
		name++;
	while (len > name && (p[len - 1] == '\r' || p[len - 1] == '\n'))
		len--;
	if (len - name < (field == r->content_type ? sizeof(r->content_type)
						     : sizeof(r->disposition))) {
		memcpy(field, p + name, len - name);
		field[len - name] = '\0';
	}
	return size * n;
}

int remote_call(struct daemon *d, const char *base_url, const char *pin, const char *method,
		const char *path,
		const char *const *keys, const char *const *values, size_t n, const char *body,
		size_t body_len, const struct user *u, uint64_t timeout_ms, size_t max_reply,
		struct remote_reply *ret, char *err, size_t errlen)
{
	char url[URL_MAX], args[512], header[CLUSTER_HEADER_MAX + 32], signature[CLUSTER_HEADER_MAX];
	char cerr[CURL_ERROR_SIZE] = "";
	struct body b = { .max = max_reply };
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();
	CURLcode rc;
	int r = -EIO;

	memset(ret, 0, sizeof(*ret));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!d->cluster_auth || !build(c, base_url, path, keys, values, n, url, args, sizeof(args))) {
		snprintf(err, errlen, "cannot make the request to %.200s (no cluster key, or a query "
			 "too long)", base_url);
		goto out;
	}
	{
		struct cluster_request cr = { method, path, args, body ? body : "", body_len };

		if (cluster_auth_sign(d->cluster_auth, &cr, cluster_name(d->cluster), u->name,
				      (int64_t)u->uid, now_ms(), signature) < 0) {
			snprintf(err, errlen, "cannot sign a request for user %s", u->name);
			goto out;
		}
	}
	snprintf(header, sizeof(header), "%s: %s", CLUSTER_HEADER, signature);
	h = curl_slist_append(NULL, header);
	if (h && body_len)
		h = curl_slist_append(h, "Content-Type: application/json");
	if (!h) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
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
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	if (!strcmp(method, "POST")) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
	} else if (strcmp(method, "GET")) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	}
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, ret);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		if (b.too_big)
			snprintf(err, errlen, "its reply is larger than [cluster] max_reply = %zu bytes",
				 max_reply);
		else if (rc == CURLE_OPERATION_TIMEDOUT)
			snprintf(err, errlen, "no answer within [cluster] host_timeout (%llu ms)",
				 (unsigned long long)timeout_ms);
		else
			snprintf(err, errlen, "%.300s", cerr[0] ? cerr : curl_easy_strerror(rc));
		free(b.data);
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &ret->status);
	ret->body = b.data;
	ret->len = b.len;
	r = 0;
out:
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return r;
}
