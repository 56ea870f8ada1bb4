/* etcd: a small client of etcd's v3 API through its JSON gateway (etcd
 * 3.4: POST /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke,
 * /v3/kv/put, /v3/kv/range), what nprofd's registry needs and no more.
 *
 * Every call tries the endpoints in turn, starting with the last one
 * that answered, each within the timeout; a reply above max_reply bytes
 * is cut off and refused. Replies are untrusted bytes: the etcd_parse_*
 * functions read them defensively (tests/fuzz/etcd_reply_fuzz.c).
 * A struct etcd may be used by one thread at a time. */
#ifndef NPROF_DAEMON_ETCD_H
#define NPROF_DAEMON_ETCD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ETCD_MAX_ENDPOINTS 16

/* etcd's auth token, shared by the handles of one user: authenticating
 * costs etcd a password hash, so it is done once, and again only when
 * etcd no longer takes the token (it expired, etcd restarted). */
struct etcd_token {
	pthread_mutex_t lock;
	char text[256];			/* "" until authenticated */
};

struct etcd_options {
	const char *endpoints;		/* "http://127.0.0.1:2379,http://10.0.0.2:2379" */
	uint64_t timeout_ms;		/* per endpoint and call, connecting included */
	size_t max_reply;		/* bytes of a reply body */
	const char *ca, *cert, *key;	/* PEM files for https endpoints; NULL: none */
	const char *user, *password;	/* etcd's auth; NULL: none */
	struct etcd_token *token;	/* with user: where its token is kept */
};

struct etcd_kv {
	char *key;			/* NUL-terminated text */
	char *value;			/* NUL-terminated; value_len bytes before it */
	size_t value_len;
};

/* NULL with errno: EINVAL (no endpoint, more than ETCD_MAX_ENDPOINTS, one
 * not http:// or https://), ENOMEM. */
struct etcd *etcd_new(const struct etcd_options *o);
void etcd_free(struct etcd *e);

/* Each returns 0, or -errno with one line in err naming the endpoint(s)
 * and the cause: -EHOSTUNREACH when none answered, -EACCES when TLS
 * failed for the settings (etcd's certificate not signed by etcd_ca, a
 * client certificate etcd does not take), -EPROTO for a reply that is
 * not what etcd sends, -ENOENT for a lease etcd no longer has. */
int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *ret_id, char *err, size_t errlen);
/* ret_ttl: the seconds the lease has left (its TTL again). */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ret_ttl, char *err, size_t errlen);
int etcd_lease_revoke(struct etcd *e, int64_t id, char *err, size_t errlen);
/* key and value are text; lease 0: none. */
int etcd_put(struct etcd *e, const char *key, const char *value, int64_t lease, char *err,
	     size_t errlen);
/* The keys under prefix, at most max of them (etcd's limit), sorted by
 * key: *ret_kvs (etcd_kvs_free) and *ret_n. */
int etcd_range_prefix(struct etcd *e, const char *prefix, size_t max, struct etcd_kv **ret_kvs,
		      size_t *ret_n, char *err, size_t errlen);
void etcd_kvs_free(struct etcd_kv *kvs, size_t n);
/* Whether etcd serves a client with no credentials (no user's token, no
 * client certificate) a read of key: *ret_open, and the endpoint asked
 * in where; or -errno and err when no endpoint answered at all. */
int etcd_open_to_anyone(struct etcd *e, const char *key, bool *ret_open, char *where,
			size_t wherelen, char *err, size_t errlen);

/* The replies' readers (len bytes, not NUL-terminated): 0 or -EPROTO;
 * -ENOENT from keepalive for a lease that has expired. Keys above
 * 1 KiB, values above the reply, more than max pairs: -EPROTO. */
int etcd_parse_grant(const char *text, size_t len, int64_t *ret_id, int64_t *ret_ttl);
int etcd_parse_keepalive(const char *text, size_t len, int64_t *ret_ttl);
int etcd_parse_range(const char *text, size_t len, size_t max, struct etcd_kv **ret_kvs,
		     size_t *ret_n);
/* auth/authenticate's reply: its token (printable, no blank) into
 * token (size bytes). */
int etcd_parse_token(const char *text, size_t len, char *token, size_t size);

/* Standard base64 (with padding) of n bytes into out (4 * ((n + 2) / 3)
 * + 1 bytes); decoding: -EINVAL on anything else, at most outlen bytes. */
void etcd_base64_encode(const unsigned char *in, size_t n, char *out);
int etcd_base64_decode(const char *in, size_t n, unsigned char *out, size_t outlen,
		       size_t *ret_len);

#endif
