/* cluster_auth: what passes between nprofd daemons, signed with the
 * cluster's shared key (docs/cluster.md): the requests one daemon makes
 * of another for a user, the other's replies, and each host's
 * registration in etcd. HMAC-SHA256 under the key, each kind of text
 * with a first line of its own, so that no signature of one kind is
 * good for another.
 *
 * A request, X-Nprof-Cluster:
 *   v=2;host=A;to=B;at=AUTHORITY;user=alice;uid=1000;ts=MS;nonce=32HEX;sig=64HEX
 * sig = HMAC(key, "nprof-cluster-v2\nMETHOD\nPATH\nARGS\nHOST\nTO\nAT\n
 *                  USER\nUID\nTS\nNONCE\nSHA256HEX(BODY)")
 * where ARGS is the query in the server's unambiguous form
 * (request_args_add: "LEN:KEY=LEN:VALUE;" in order), TO the host it is
 * for (its name in the cluster) and AT the URL's authority it was sent
 * to (cluster_auth_authority). The daemon that checks it must be TO,
 * reached at AT, started before TS, and not A itself.
 *
 * Its reply, X-Nprof-Cluster-Reply:
 *   v=1;host=B;body=sha256:64HEX|stream:SIZE;sig=64HEX
 * sig = HMAC(key, "nprof-cluster-reply-v1\nHOST\nNONCE\nSTATUS\n
 *                  CONTENT-TYPE\nCONTENT-DISPOSITION\nBODY")
 * with NONCE the request's: a reply is good for that request alone. A
 * body sent whole is signed by its hash; a file sent as it is read (an
 * artifact, a conversion) by its size alone (0: not said), which TLS
 * then carries intact (docs/cluster.md says why).
 *
 * A registration, the value of /nprof/v1/hosts/NAME in etcd: a JSON
 * object whose last member is "sig": "64HEX", with
 * sig = HMAC(key, "nprof-cluster-host-v1\nKEY\nVALUE") where VALUE is
 * the value with those 64 digits as zeros: the bytes as written, no
 * canonical form needed; KEY binds it to its key.
 *
 * Only cluster_auth_verify touches shared state (the replay table, under
 * its lock). */
#ifndef NPROF_DAEMON_CLUSTER_AUTH_H
#define NPROF_DAEMON_CLUSTER_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CLUSTER_HEADER "X-Nprof-Cluster"
#define CLUSTER_REPLY_HEADER "X-Nprof-Cluster-Reply"
#define CLUSTER_HEADER_MAX 768
#define CLUSTER_KEY_MIN 32
#define CLUSTER_KEY_MAX 1024
/* "host:port", as cluster_auth_authority writes it */
#define CLUSTER_AUTHORITY_MAX 272
/* Nonces remembered, for the window: a request that finds no slot is
 * refused (503), never let through by forgetting one early. */
#define CLUSTER_NONCES 65536

/* What a signed request says of itself: the signer fills host to ts,
 * cluster_auth_sign the rest. */
struct cluster_claim {
	char host[64];		/* the daemon that signed */
	char to[64];		/* the host it is for, by its name in the cluster */
	char at[CLUSTER_AUTHORITY_MAX]; /* the authority it was sent to */
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

/* The daemon that checks a request: who the others know it as. */
struct cluster_self {
	const char *name;			/* its name in the cluster */
	const char *const *authorities;		/* where it is reached, "host:port" each */
	size_t n_authorities;
	uint64_t started_ms;			/* a request signed before is for another run */
};

/* A reply to a signed request, as sent or as received. */
struct cluster_reply {
	unsigned status;
	const char *content_type;	/* as sent; "" when none */
	const char *disposition;	/* Content-Disposition as sent; "" when none */
	const char *body;		/* the body when it is had whole; NULL: a stream */
	size_t body_len;
	uint64_t size;			/* a stream's Content-Length; 0 when not said */
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

/* A URL's authority as requests name it: "host:port", the host in
 * lower case (an IPv6 address in brackets), the port said even when it
 * is the scheme's (80, 443). 0, or -EINVAL for what is not an http:// or
 * https:// URL with a host. */
int cluster_auth_authority(const char *url, char *out, size_t size);

/* The header's value for rq and c (host, to, at, user, uid and ts set
 * by the caller; a fresh nonce and the signature filled in): 0, or
 * -EINVAL (a name that does not fit or holds ';' or '=') / -EIO. */
int cluster_auth_sign(struct cluster_auth *a, const struct cluster_request *rq,
		      struct cluster_claim *c, char out[CLUSTER_HEADER_MAX]);

/* Parses a header value: 0 or -EINVAL (fuzzed). */
int cluster_auth_parse(const char *value, struct cluster_claim *ret);

/* Checks a header for rq, received by self at now_ms: 0 and the claim,
 * or an HTTP status (401: malformed, bad signature, for another host or
 * address, signed by self or before it started, out of the window,
 * replayed; 503: no room to remember the nonce) with one line in why. */
int cluster_auth_verify(struct cluster_auth *a, const struct cluster_request *rq,
			const char *value, const struct cluster_self *self, uint64_t now_ms,
			struct cluster_claim *ret, char *why, size_t whylen);

/* The reply header's value for r, sent by host to the request that
 * carried nonce: 0, or -EINVAL / -EIO. */
int cluster_auth_sign_reply(struct cluster_auth *a, const struct cluster_reply *r,
			    const char *host, const char *nonce, char out[CLUSTER_HEADER_MAX]);

/* Checks a reply header (value; NULL when none came) for r, from host,
 * to the request that carried nonce: 0 when it holds; 1 when it holds
 * for the headers and signs a body by its hash that r has not (a
 * stream): check it again with the body, read whole, before using it;
 * -EBADMSG with one line in why (fuzzed). */
int cluster_auth_verify_reply(struct cluster_auth *a, const struct cluster_reply *r,
			      const char *value, const char *host, const char *nonce,
			      char *why, size_t whylen);

/* The value to put in etcd at key for record (a JSON object's compact
 * text, without "sig"), signed: malloc'd into *ret. 0, or -EINVAL (not
 * an object's text) / -ENOMEM / -EIO. */
int cluster_auth_sign_record(struct cluster_auth *a, const char *key, const char *record,
			     char **ret);

/* Whether value (len bytes, from etcd) is a record signed for key: 0,
 * or -EBADMSG with one line in why (fuzzed). */
int cluster_auth_check_record(struct cluster_auth *a, const char *key, const char *value,
			      size_t len, char *why, size_t whylen);

#endif
