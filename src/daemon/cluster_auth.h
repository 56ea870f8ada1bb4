/* cluster_auth: requests between nprofd daemons, signed with the
 * cluster's shared key (docs/cluster.md). The daemon a user signed in to
 * signs a request for that user; the daemon that receives it checks the
 * signature, the time and that the nonce is new, and then treats the
 * request as that user's (by name, in its own accounts).
 *
 * The header, X-Nprof-Cluster:
 *   v=1;host=A;user=alice;uid=1000;ts=MS;nonce=32HEX;sig=64HEX
 * sig = HMAC-SHA256(key, "nprof-cluster-v1\nMETHOD\nPATH\nARGS\nHOST\n
 *                         USER\nUID\nTS\nNONCE\nSHA256HEX(BODY)")
 * where ARGS is the query in the server's unambiguous form
 * (request_args_add: "LEN:KEY=LEN:VALUE;" in order).
 *
 * cluster_auth_sign and cluster_auth_parse touch no shared state;
 * cluster_auth_verify takes the replay table's lock. */
#ifndef NPROF_DAEMON_CLUSTER_AUTH_H
#define NPROF_DAEMON_CLUSTER_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CLUSTER_HEADER "X-Nprof-Cluster"
#define CLUSTER_HEADER_MAX 512
#define CLUSTER_KEY_MIN 32
#define CLUSTER_KEY_MAX 1024
/* Nonces remembered, for the window: a request that finds no slot is
 * refused (503), never let through by forgetting one early. */
#define CLUSTER_NONCES 65536

/* What a signed request says of itself. */
struct cluster_claim {
	char host[64];		/* the daemon that signed */
	char user[64];		/* for whom, by name */
	int64_t uid;		/* their uid on the signing host (the audit log's) */
	uint64_t ts_ms;		/* when, in ms since the epoch */
	char nonce[33];		/* 32 hex digits */
	char sig[65];		/* 64 hex digits */
};

/* A request to sign or check: its method, path (decoded, without the
 * query), args (request_args_add's form; "" for none) and body. */
struct cluster_request {
	const char *method, *path, *args;
	const char *body;
	size_t body_len;
};

/* Reads the key file: a regular file owned by uid with no permission
 * for group or others, CLUSTER_KEY_MIN to CLUSTER_KEY_MAX bytes (a
 * trailing newline is not part of the key). NULL with errno and one line
 * in err naming the fault and the fix. */
struct cluster_auth *cluster_auth_new(const char *key_file, uid_t uid, uint64_t window_ms,
				      char *err, size_t errlen);
/* The same from key bytes (tests). */
struct cluster_auth *cluster_auth_new_key(const void *key, size_t len, uint64_t window_ms);
void cluster_auth_free(struct cluster_auth *a);

/* The header's value for rq, signed now (now_ms) for user by host:
 * 0, or -EINVAL (a name that does not fit or holds ';' or '=') / -EIO. */
int cluster_auth_sign(struct cluster_auth *a, const struct cluster_request *rq,
		      const char *host, const char *user, int64_t uid, uint64_t now_ms,
		      char out[CLUSTER_HEADER_MAX]);

/* Parses a header value: 0 or -EINVAL (fuzzed). */
int cluster_auth_parse(const char *value, struct cluster_claim *ret);

/* Checks a header for rq at now_ms: 0 and the claim, or an HTTP status
 * (401: malformed, bad signature, out of the window, replayed; 503: no
 * room to remember the nonce) with one line in why. */
int cluster_auth_verify(struct cluster_auth *a, const struct cluster_request *rq,
			const char *value, uint64_t now_ms, struct cluster_claim *ret,
			char *why, size_t whylen);

#endif
