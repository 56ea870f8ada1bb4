/* cluster_auth: the signed requests, replies and registrations between
 * daemons (cluster_auth.h, docs/cluster.md for the threat model). */
#include "daemon/cluster/cluster_auth.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hex.h"

/* How far a nonce's slot may be from its hash's. */
#define PROBE 64

struct nonce_slot {
	uint8_t nonce[16];
	uint64_t ts_ms;			/* 0: free */
};

struct cluster_auth {
	uint8_t key[CLUSTER_KEY_MAX];
	size_t key_len;
	uint64_t window_ms;
	pthread_mutex_t lock;		/* the nonces */
	struct nonce_slot *nonces;	/* CLUSTER_NONCES, open addressing */
};

struct cluster_auth *cluster_auth_new_key(const void *key, size_t len, uint64_t window_ms)
{
	struct cluster_auth *a;

	if (len < CLUSTER_KEY_MIN || len > CLUSTER_KEY_MAX) {
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a || !(a->nonces = calloc(CLUSTER_NONCES, sizeof(*a->nonces)))) {
		free(a);
		errno = ENOMEM;
		return NULL;
	}
	memcpy(a->key, key, len);
	a->key_len = len;
	a->window_ms = window_ms;
	pthread_mutex_init(&a->lock, NULL);
	return a;
}

struct cluster_auth *cluster_auth_new(const char *key_file, uid_t uid, uint64_t window_ms,
				      char *err, size_t errlen)
{
	uint8_t key[CLUSTER_KEY_MAX + 2];
	struct cluster_auth *a = NULL;
	struct stat st;
	ssize_t n = -1;
	int fd = open(key_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);

	if (fd < 0) {
		snprintf(err, errlen, "[cluster] key_file = %s: %s; create it (head -c 32 "
			 "/dev/urandom | base64 >%s; chmod 600 %s), the same file on every host",
			 key_file, strerror(errno), key_file, key_file);
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid ||
	    (st.st_mode & 077)) {
		snprintf(err, errlen, "[cluster] key_file = %s must be a regular file of uid %u "
			 "with no permission for group or others; chown %u %s; chmod 600 %s",
			 key_file, (unsigned)uid, (unsigned)uid, key_file, key_file);
		errno = EPERM;
		goto out;
	}
	/* The key is the file's bytes less a final newline, for a key
	 * written as text (base64, as every message here suggests: raw
	 * random bytes end in a newline one time in 256). */
	n = read(fd, key, sizeof(key));
	if (n > 0 && key[n - 1] == '\n')
		n--;
	if (n < CLUSTER_KEY_MIN || n > CLUSTER_KEY_MAX) {
		snprintf(err, errlen, "[cluster] key_file = %s holds %zd bytes; the key is %d to %d "
			 "bytes (head -c 32 /dev/urandom | base64 >%s)", key_file, n, CLUSTER_KEY_MIN,
			 CLUSTER_KEY_MAX, key_file);
		errno = EINVAL;
		goto out;
	}
	a = cluster_auth_new_key(key, (size_t)n, window_ms);
	if (!a)
		snprintf(err, errlen, "out of memory reading [cluster] key_file");
out:
	explicit_bzero(key, sizeof(key));
	close(fd);
	return a;
}

void cluster_auth_free(struct cluster_auth *a)
{
	if (!a)
		return;
	explicit_bzero(a->key, sizeof(a->key));
	pthread_mutex_destroy(&a->lock);
	free(a->nonces);
	free(a);
}

/* HMAC-SHA256 of len bytes of text under the key, as 64 hex digits. */
static int mac_hex(struct cluster_auth *a, const char *text, size_t len, char out[65])
{
	uint8_t mac[32];

	if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, a->key, a->key_len, text, len, mac) < 0)
		return -EIO;
	hex_encode(mac, sizeof(mac), out);
	return 0;
}

static int sha256_hex(const char *data, size_t len, char out[65])
{
	uint8_t digest[32];

	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, data ? data : "", len, digest) < 0)
		return -EIO;
	hex_encode(digest, sizeof(digest), out);
	return 0;
}

static bool same_text(const char *x, const char *y, size_t n)
{
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(x[i] ^ y[i]);
	return d == 0;
}

/* n lowercase hex digits at s */
static bool all_hex_n(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
			return false;
	return true;
}

static bool all_hex(const char *s, size_t n)
{
	return strlen(s) == n && all_hex_n(s, n);
}

/* The signature of rq and what the claim says, as 64 hex digits. */
static int signature(struct cluster_auth *a, const struct cluster_request *rq,
		     const struct cluster_claim *c, char out[65])
{
	char body_hex[65], *text = NULL;
	int n, r;

	if (sha256_hex(rq->body, rq->body_len, body_hex) < 0)
		return -EIO;
	n = asprintf(&text, "nprof-cluster-v2\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%" PRId64 "\n%" PRIu64
		     "\n%s\n%s", rq->method, rq->path, rq->args ? rq->args : "", c->host, c->to,
		     c->at, c->user, c->uid, c->ts_ms, c->nonce, body_hex);
	if (n < 0)
		return -ENOMEM;
	r = mac_hex(a, text, (size_t)n, out);
	free(text);
	return r;
}

/* A name that goes into a header as it is (extra: more bytes allowed). */
static bool plain_with(const char *s, size_t max, const char *extra)
{
	size_t n = strlen(s);

	if (!n || n >= max)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.@$-", *s) && !strchr(extra, *s))
			return false;
	return true;
}

static bool plain(const char *s, size_t max)
{
	return plain_with(s, max, "");
}

/* An authority: a host name or address, ':', a port (IPv6 in brackets). */
static bool authority_text(const char *s)
{
	return plain_with(s, CLUSTER_AUTHORITY_MAX, ":[]") && !strchr(s, '@');
}

int cluster_auth_authority(const char *url, char *out, size_t size)
{
	size_t skip = !strncmp(url, "http://", 7) ? 7 : !strncmp(url, "https://", 8) ? 8 : 0;
	const char *host = url + skip, *end = host + strcspn(host, "/?#"), *port = NULL;
	const char *host_end;
	char buf[CLUSTER_AUTHORITY_MAX];
	unsigned long p = skip == 8 ? 443 : 80;
	int n;

	if (!skip || end == host || memchr(host, '@', (size_t)(end - host)))
		return -EINVAL;
	if (*host == '[') {
		host_end = memchr(host, ']', (size_t)(end - host));
		if (!host_end || host_end == host + 1)
			return -EINVAL;
		host_end++;
		if (host_end < end && *host_end != ':')
			return -EINVAL;
	} else {
		host_end = memchr(host, ':', (size_t)(end - host));
		if (!host_end)
			host_end = end;
	}
	if (host_end == host)
		return -EINVAL;
	if (host_end < end) {
		char *stop;

		port = host_end + 1;
		if (port == end || end - port > 5 || !isdigit((unsigned char)*port))
			return -EINVAL;
		p = strtoul(port, &stop, 10);
		if (stop != end || p == 0 || p > 65535)
			return -EINVAL;
	}
	/* a name or IPv4 address; an IPv6 address in brackets */
	for (const char *c = host + (*host == '['); c < host_end - (*host == '['); c++)
		if (*host == '[' ? !isxdigit((unsigned char)*c) && !strchr(":.", *c)
				 : !isalnum((unsigned char)*c) && !strchr("._-", *c))
			return -EINVAL;
	n = snprintf(buf, sizeof(buf), "%.*s:%lu", (int)(host_end - host), host, p);
	if (n < 0 || (size_t)n >= sizeof(buf) || (size_t)n >= size)
		return -EINVAL;
	for (char *c = buf; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	strcpy(out, buf);
	return 0;
}

int cluster_auth_sign(struct cluster_auth *a, const struct cluster_request *rq,
		      struct cluster_claim *c, char out[CLUSTER_HEADER_MAX])
{
	uint8_t rnd[16];
	int n;

	if (!plain(c->host, sizeof(c->host)) || !plain(c->to, sizeof(c->to)) ||
	    !authority_text(c->at) || !plain(c->user, sizeof(c->user)))
		return -EINVAL;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	hex_encode(rnd, sizeof(rnd), c->nonce);
	if (signature(a, rq, c, c->sig) < 0)
		return -EIO;
	n = snprintf(out, CLUSTER_HEADER_MAX, "v=2;host=%s;to=%s;at=%s;user=%s;uid=%" PRId64
		     ";ts=%" PRIu64 ";nonce=%s;sig=%s", c->host, c->to, c->at, c->user, c->uid,
		     c->ts_ms, c->nonce, c->sig);
	return n > 0 && n < CLUSTER_HEADER_MAX ? 0 : -EINVAL;
}


/* A whole decimal number of at most 19 digits, with an optional '-'. */
static bool decimal(const char *s, int64_t *ret)
{
	bool neg = *s == '-';
	uint64_t x = 0;
	size_t n = 0;

	for (s += neg; *s; s++, n++) {
		if (!isdigit((unsigned char)*s) || n == 19)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	if (!n)
		return false;
	*ret = neg ? -(int64_t)x : (int64_t)x;
	return true;
}

/* "NAME=VALUE;..." with exactly the names given, in their order, into
 * field[] (pointing into buf, a copy of value): false when it is not. */
static bool fields(const char *value, const char *const *names, size_t n, char *buf,
		   size_t size, char **field)
{
	char *s = buf;

	if (strlen(value) >= size)
		return false;
	strcpy(buf, value);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(names[i]);
		char *semi;

		if (strncmp(s, names[i], len) || s[len] != '=')
			return false;
		field[i] = s + len + 1;
		semi = strchr(field[i], ';');
		if ((semi != NULL) != (i < n - 1))
			return false;
		if (semi) {
			*semi = '\0';
			s = semi + 1;
		}
	}
	return true;
}

int cluster_auth_parse(const char *value, struct cluster_claim *ret)
{
	static const char *const names[] = { "v", "host", "to", "at", "user", "uid", "ts",
					     "nonce", "sig" };
	char buf[CLUSTER_HEADER_MAX], *field[9];
	struct cluster_claim c = { .uid = 0 };
	int64_t ts;

	if (!fields(value, names, 9, buf, sizeof(buf), field))
		return -EINVAL;
	if (strcmp(field[0], "2") || !plain(field[1], sizeof(c.host)) ||
	    !plain(field[2], sizeof(c.to)) || !authority_text(field[3]) ||
	    !plain(field[4], sizeof(c.user)) || !decimal(field[5], &c.uid) ||
	    !decimal(field[6], &ts) || ts <= 0 || !all_hex(field[7], 32) || !all_hex(field[8], 64))
		return -EINVAL;
	strcpy(c.host, field[1]);
	strcpy(c.to, field[2]);
	strcpy(c.at, field[3]);
	strcpy(c.user, field[4]);
	c.ts_ms = (uint64_t)ts;
	strcpy(c.nonce, field[7]);
	strcpy(c.sig, field[8]);
	*ret = c;
	return 0;
}

/* Remembers the nonce for the window: 0, -EEXIST (seen: a replay), or
 * -ENOSPC (every slot it may take is remembering a live one). */
static int remember(struct cluster_auth *a, const struct cluster_claim *c, uint64_t now_ms)
{
	uint8_t id[16];
	uint64_t h = 0;
	struct nonce_slot *free_slot = NULL;
	const char *stop;
	int r = 0;

	for (int i = 0; i < 16; i++) {
		uint64_t byte;

		hex_parse(c->nonce + 2 * i, c->nonce + 2 * i + 2, 0, &byte, &stop);
		id[i] = (uint8_t)byte;
	}
	/* the nonce is random: its first bytes are a hash already */
	memcpy(&h, id, sizeof(h));
	pthread_mutex_lock(&a->lock);
	for (size_t k = 0; k < PROBE; k++) {
		struct nonce_slot *s = &a->nonces[(h + k) % CLUSTER_NONCES];
		bool live = s->ts_ms && s->ts_ms + a->window_ms >= now_ms;

		if (live && !memcmp(s->nonce, id, sizeof(id))) {
			r = -EEXIST;
			goto out;
		}
		if (!live && !free_slot)
			free_slot = s;
	}
	if (!free_slot) {
		r = -ENOSPC;
		goto out;
	}
	memcpy(free_slot->nonce, id, sizeof(id));
	free_slot->ts_ms = c->ts_ms;
out:
	pthread_mutex_unlock(&a->lock);
	return r;
}

static bool reached_at(const struct cluster_self *self, const char *at)
{
	for (size_t i = 0; i < self->n_authorities; i++)
		if (!strcmp(self->authorities[i], at))
			return true;
	return false;
}

int cluster_auth_verify(struct cluster_auth *a, const struct cluster_request *rq,
			const char *value, const struct cluster_self *self, uint64_t now_ms,
			struct cluster_claim *ret, char *why, size_t whylen)
{
	struct cluster_claim c;
	char sig[65];
	int r;

	if (!a) {
		snprintf(why, whylen, "a signed request between nprofd daemons, but this one has no "
			 "cluster key; set [cluster] key_file here as on the other hosts");
		return 401;
	}
	if (cluster_auth_parse(value, &c) < 0) {
		snprintf(why, whylen, "the %s header is malformed or of another version; only "
			 "nprofd daemons of the cluster send it, each of the same version",
			 CLUSTER_HEADER);
		return 401;
	}
	if (signature(a, rq, &c, sig) < 0 || !same_text(sig, c.sig, 64)) {
		snprintf(why, whylen, "the %s header's signature is not valid for this request; "
			 "every host needs the same [cluster] key_file", CLUSTER_HEADER);
		return 401;
	}
	/* Signed by a member: is it for this daemon, now? */
	if (!strcmp(c.host, self->name)) {
		snprintf(why, whylen, "a request signed by this host (%s) came back to it: a "
			 "registration in etcd points one of its requests here; check GET /api/v1/hosts",
			 c.host);
		return 401;
	}
	if (strcmp(c.to, self->name) || !reached_at(self, c.at)) {
		snprintf(why, whylen, "a request %s signed for host %s at %s, not for this one (%s "
			 "at %s); it was sent elsewhere and replayed here, or [cluster] name or url "
			 "differ from what this host registered", c.host, c.to, c.at, self->name,
			 self->n_authorities ? self->authorities[0] : "no address");
		return 401;
	}
	if (c.ts_ms < self->started_ms) {
		snprintf(why, whylen, "a request %s signed %" PRIu64 " ms before this daemon "
			 "started, for an earlier run of it: replayed", c.host,
			 self->started_ms - c.ts_ms);
		return 401;
	}
	if (c.ts_ms + a->window_ms < now_ms || now_ms + a->window_ms < c.ts_ms) {
		snprintf(why, whylen, "a signed request from %s is %" PRId64 " ms off this host's "
			 "clock, beyond the window of %" PRIu64 " ms; synchronize the clocks (NTP)",
			 c.host, (int64_t)(now_ms - c.ts_ms), a->window_ms);
		return 401;
	}
	r = remember(a, &c, now_ms);
	if (r == -EEXIST) {
		snprintf(why, whylen, "a signed request from %s was replayed (its nonce was "
			 "used already); each request is good once", c.host);
		return 401;
	}
	if (r < 0) {
		snprintf(why, whylen, "too many signed requests within [cluster] signature_window "
			 "to remember their nonces; try again shortly");
		return 503;
	}
	*ret = c;
	return 0;
}

/* --- replies ------------------------------------------------------------------ */

/* BODY of a reply's signed text: "sha256:HEX" of a body had whole,
 * "stream:SIZE" of one sent as it is read. */
static int reply_body(const struct cluster_reply *r, char *out, size_t size)
{
	char hex[65];

	if (!r->body) {
		snprintf(out, size, "stream:%" PRIu64, r->size);
		return 0;
	}
	if (sha256_hex(r->body, r->body_len, hex) < 0)
		return -EIO;
	snprintf(out, size, "sha256:%s", hex);
	return 0;
}

static int reply_signature(struct cluster_auth *a, const struct cluster_reply *r,
			   const char *host, const char *nonce, const char *body, char out[65])
{
	char *text = NULL;
	int n, ret;

	n = asprintf(&text, "nprof-cluster-reply-v1\n%s\n%s\n%u\n%s\n%s\n%s", host, nonce,
		     r->status, r->content_type ? r->content_type : "",
		     r->disposition ? r->disposition : "", body);
	if (n < 0)
		return -ENOMEM;
	ret = mac_hex(a, text, (size_t)n, out);
	free(text);
	return ret;
}

int cluster_auth_sign_reply(struct cluster_auth *a, const struct cluster_reply *r,
			    const char *host, const char *nonce, char out[CLUSTER_HEADER_MAX])
{
	char body[80], sig[65];
	int n;

	if (!plain(host, 64) || !all_hex(nonce, 32))
		return -EINVAL;
	if (reply_body(r, body, sizeof(body)) < 0 ||
	    reply_signature(a, r, host, nonce, body, sig) < 0)
		return -EIO;
	n = snprintf(out, CLUSTER_HEADER_MAX, "v=1;host=%s;body=%s;sig=%s", host, body, sig);
	return n > 0 && n < CLUSTER_HEADER_MAX ? 0 : -EINVAL;
}

/* "stream:" and 1 to 20 digits: the size into *ret. */
static bool stream_size(const char *s, uint64_t *ret)
{
	int64_t v;

	if (strncmp(s, "stream:", 7) || s[7] == '-' || strlen(s + 7) > 19 || !decimal(s + 7, &v))
		return false;
	*ret = (uint64_t)v;
	return true;
}

int cluster_auth_verify_reply(struct cluster_auth *a, const struct cluster_reply *r,
			      const char *value, const char *host, const char *nonce,
			      char *why, size_t whylen)
{
	static const char *const names[] = { "v", "host", "body", "sig" };
	char buf[CLUSTER_HEADER_MAX], *field[4], sig[65], had[80];
	uint64_t size = 0;
	bool hashed;

	if (!value || !fields(value, names, 4, buf, sizeof(buf), field) || strcmp(field[0], "1") ||
	    !plain(field[1], 64) || !all_hex(field[3], 64) ||
	    !((hashed = !strncmp(field[2], "sha256:", 7) && all_hex(field[2] + 7, 64)) ||
	      stream_size(field[2], &size))) {
		snprintf(why, whylen, "its reply is not signed with the cluster key (no valid %s "
			 "header): not an nprofd of this cluster of the same version, or its "
			 "registration in etcd points elsewhere", CLUSTER_REPLY_HEADER);
		return -EBADMSG;
	}
	if (!a || strcmp(field[1], host) ||
	    reply_signature(a, r, field[1], nonce, field[2], sig) < 0 ||
	    !same_text(sig, field[3], 64)) {
		snprintf(why, whylen, "its reply's signature does not hold for this request (signed "
			 "by %s for another request, or with another key): not what %s answered",
			 field[1], host);
		return -EBADMSG;
	}
	if (!hashed) {
		/* sent as a stream: its size, when both say one */
		if (r->body ? size && size != r->body_len : size != r->size) {
			snprintf(why, whylen, "its reply is %" PRIu64 " bytes, not the %" PRIu64
				 " its signature says", r->body ? (uint64_t)r->body_len : r->size, size);
			return -EBADMSG;
		}
		return 0;
	}
	if (!r->body)
		return 1;
	if (reply_body(r, had, sizeof(had)) < 0 || !same_text(had, field[2], 71)) {
		snprintf(why, whylen, "its reply's body is not the one signed: altered on the way");
		return -EBADMSG;
	}
	return 0;
}

/* --- registrations ------------------------------------------------------------- */

#define RECORD_SIG_TAIL ",\"sig\":\"0000000000000000000000000000000000000000000000000000000000000000\"}"
#define RECORD_SIG_LEN 64
/* where the digits start, from the end of the value */
#define RECORD_SIG_FROM_END (RECORD_SIG_LEN + 2)

static int record_signature(struct cluster_auth *a, const char *key, const char *zeroed,
			    size_t len, char out[65])
{
	char *text = NULL;
	int n, r;

	n = asprintf(&text, "nprof-cluster-host-v1\n%s\n%.*s", key, (int)len, zeroed);
	if (n < 0)
		return -ENOMEM;
	r = mac_hex(a, text, (size_t)n, out);
	free(text);
	return r;
}

int cluster_auth_sign_record(struct cluster_auth *a, const char *key, const char *record,
			     char **ret)
{
	size_t len = strlen(record), tail = strlen(RECORD_SIG_TAIL);
	char *value, sig[65];

	/* "{...}" with at least one member: the signature goes last */
	if (len < 3 || record[0] != '{' || record[len - 1] != '}' || record[len - 2] == '{')
		return -EINVAL;
	if (!(value = malloc(len - 1 + tail + 1)))
		return -ENOMEM;
	memcpy(value, record, len - 1);
	memcpy(value + len - 1, RECORD_SIG_TAIL, tail + 1);
	len = len - 1 + tail;
	if (record_signature(a, key, value, len, sig) < 0) {
		free(value);
		return -EIO;
	}
	memcpy(value + len - RECORD_SIG_FROM_END, sig, RECORD_SIG_LEN);
	*ret = value;
	return 0;
}

int cluster_auth_check_record(struct cluster_auth *a, const char *key, const char *value,
			      size_t len, char *why, size_t whylen)
{
	size_t tail = strlen(RECORD_SIG_TAIL);
	char *zeroed, sig[65];
	bool ok;

	if (len < tail + 2 || value[0] != '{' ||
	    memcmp(value + len - tail, RECORD_SIG_TAIL, tail - RECORD_SIG_FROM_END) ||
	    memcmp(value + len - 2, "\"}", 2) ||
	    !all_hex_n(value + len - RECORD_SIG_FROM_END, RECORD_SIG_LEN)) {
		snprintf(why, whylen, "not signed with the cluster key");
		return -EBADMSG;
	}
	if (!a || !(zeroed = malloc(len))) {
		snprintf(why, whylen, "cannot check its signature (no key, or out of memory)");
		return -EBADMSG;
	}
	memcpy(zeroed, value, len);
	memset(zeroed + len - RECORD_SIG_FROM_END, '0', RECORD_SIG_LEN);
	ok = record_signature(a, key, zeroed, len, sig) == 0 &&
	     same_text(sig, value + len - RECORD_SIG_FROM_END, RECORD_SIG_LEN);
	free(zeroed);
	if (!ok) {
		snprintf(why, whylen, "its signature does not hold (altered, moved from another "
			 "key, or signed with another key_file)");
		return -EBADMSG;
	}
	return 0;
}
