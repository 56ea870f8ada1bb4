/* cluster_auth: the signed requests between daemons (cluster_auth.h,
 * docs/cluster.md for the threat model). */
#include "daemon/cluster_auth.h"

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

/* The signature of rq and what the claim says, as 64 hex digits. */
static int signature(struct cluster_auth *a, const struct cluster_request *rq,
		     const struct cluster_claim *c, char out[65])
{
	uint8_t body_hash[32], mac[32];
	char body_hex[65], *text = NULL;
	int n, r = -EIO;

	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, rq->body ? rq->body : "", rq->body_len,
			     body_hash) < 0)
		return -EIO;
	hex_encode(body_hash, sizeof(body_hash), body_hex);
	n = asprintf(&text, "nprof-cluster-v1\n%s\n%s\n%s\n%s\n%s\n%" PRId64 "\n%" PRIu64
		     "\n%s\n%s", rq->method, rq->path, rq->args ? rq->args : "", c->host,
		     c->user, c->uid, c->ts_ms, c->nonce, body_hex);
	if (n < 0)
		return -ENOMEM;
	if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, a->key, a->key_len, text, (size_t)n, mac) == 0) {
		hex_encode(mac, sizeof(mac), out);
		r = 0;
	}
	free(text);
	return r;
}

/* A name that goes into the header as it is. */
static bool plain(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (!n || n >= max)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.@$-", *s))
			return false;
	return true;
}

int cluster_auth_sign(struct cluster_auth *a, const struct cluster_request *rq,
		      const char *host, const char *user, int64_t uid, uint64_t now_ms,
		      char out[CLUSTER_HEADER_MAX])
{
	struct cluster_claim c = { .uid = uid, .ts_ms = now_ms };
	uint8_t rnd[16];
	int n;

	if (!plain(host, sizeof(c.host)) || !plain(user, sizeof(c.user)))
		return -EINVAL;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	snprintf(c.host, sizeof(c.host), "%s", host);
	snprintf(c.user, sizeof(c.user), "%s", user);
	hex_encode(rnd, sizeof(rnd), c.nonce);
	if (signature(a, rq, &c, c.sig) < 0)
		return -EIO;
	n = snprintf(out, CLUSTER_HEADER_MAX, "v=1;host=%s;user=%s;uid=%" PRId64 ";ts=%" PRIu64
		     ";nonce=%s;sig=%s", c.host, c.user, c.uid, c.ts_ms, c.nonce, c.sig);
	return n > 0 && n < CLUSTER_HEADER_MAX ? 0 : -EINVAL;
}

static bool all_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s) && !(*s >= 'a' && *s <= 'f'))
			return false;
	return true;
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

/* "v=1;host=...;user=...;uid=...;ts=...;nonce=...;sig=...", in that order. */
int cluster_auth_parse(const char *value, struct cluster_claim *ret)
{
	static const char *const names[] = { "v", "host", "user", "uid", "ts", "nonce", "sig" };
	char buf[CLUSTER_HEADER_MAX], *field[7], *s = buf;
	struct cluster_claim c = { .uid = 0 };
	int64_t ts;

	if (strlen(value) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, value);
	for (size_t i = 0; i < 7; i++) {
		size_t n = strlen(names[i]);
		char *semi;

		if (strncmp(s, names[i], n) || s[n] != '=')
			return -EINVAL;
		field[i] = s + n + 1;
		semi = strchr(field[i], ';');
		if ((semi != NULL) != (i < 6))
			return -EINVAL;
		if (semi) {
			*semi = '\0';
			s = semi + 1;
		}
	}
	if (strcmp(field[0], "1") || !plain(field[1], sizeof(c.host)) ||
	    !plain(field[2], sizeof(c.user)) || !decimal(field[3], &c.uid) ||
	    !decimal(field[4], &ts) || ts <= 0 || !all_hex(field[5], 32) || !all_hex(field[6], 64))
		return -EINVAL;
	strcpy(c.host, field[1]);
	strcpy(c.user, field[2]);
	c.ts_ms = (uint64_t)ts;
	strcpy(c.nonce, field[5]);
	strcpy(c.sig, field[6]);
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

static bool same_text(const char *x, const char *y, size_t n)
{
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(x[i] ^ y[i]);
	return d == 0;
}

int cluster_auth_verify(struct cluster_auth *a, const struct cluster_request *rq,
			const char *value, uint64_t now_ms, struct cluster_claim *ret,
			char *why, size_t whylen)
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
		snprintf(why, whylen, "the %s header is malformed; only nprofd daemons of the "
			 "cluster send it", CLUSTER_HEADER);
		return 401;
	}
	if (signature(a, rq, &c, sig) < 0 || !same_text(sig, c.sig, 64)) {
		snprintf(why, whylen, "the %s header's signature is not valid for this request; "
			 "every host needs the same [cluster] key_file", CLUSTER_HEADER);
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
