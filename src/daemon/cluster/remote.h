/* remote: one request to another daemon of the cluster, signed for the
 * user it is made for and for that host at the URL's address
 * (cluster_auth.h), within a timeout and a bound on the reply's size.
 * Its reply is used only once its signature holds: signed by the key,
 * by that host, for this request. Safe to call from many threads at
 * once. */
#ifndef NPROF_DAEMON_REMOTE_H
#define NPROF_DAEMON_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/cluster/cluster_auth.h"

struct daemon;
struct user;

struct remote_reply {
	long status;			/* HTTP status; 0 when none came */
	char *body;			/* NUL-terminated (free it); NULL when none */
	size_t len;
	char content_type[64];		/* as sent; "" when none or longer */
	char disposition[256];		/* Content-Disposition as sent; "" when none */
	uint64_t length;		/* Content-Length as sent; 0 when none */
	char signature[CLUSTER_HEADER_MAX]; /* X-Nprof-Cluster-Reply as sent; "" when none */
	char host[64], nonce[33];	/* the host asked and the request's nonce */
	bool body_unchecked;		/* remote_stream: the body is signed by its hash, to
					   check once read whole (remote_read_whole) */
};

/* METHOD base_url (host's, as registered: "http://10.0.0.2:9700/") +
 * path with the query args (keys[i]=values[i], URL-escaped here; a NULL
 * value: the key alone) and body, signed by this host for u, for host at
 * base_url's authority. 0 and the reply (any status), signed by host;
 * or -errno with one line in err (the host did not answer within
 * timeout_ms, its reply was larger than max_reply or not signed, the
 * request could not be signed). An https base_url is checked against
 * pin, the public key the host registered ("sha256//BASE64"), when it
 * registered one; else against the system's certificate authorities. */
int remote_call(struct daemon *d, const char *base_url, const char *pin, const char *host,
		const char *method, const char *path,
		const char *const *keys, const char *const *values, size_t n, const char *body,
		size_t body_len, const struct user *u, uint64_t timeout_ms, size_t max_reply,
		struct remote_reply *ret, char *err, size_t errlen);

/* The same for a download (a GET), streamed: once the reply's status and
 * headers have come (within timeout_ms) and their signature holds, ret
 * (body NULL) and *ret_fd, the read end of a pipe its body flows into,
 * from a thread of its own, as fast as the reader takes it; the
 * transfer ends when it stalls for timeout_ms or the reader closes the
 * fd. No bound on its size: the reader copies it out, never holds it. A
 * file the host sends as it reads it is signed by its size, and may be
 * passed on as it comes; a body signed by its hash (ret->body_unchecked:
 * a JSON reply) is read with remote_read_whole before it is used. 0, or
 * -errno and err. */
int remote_stream(struct daemon *d, const char *base_url, const char *pin, const char *host,
		  const char *path, const char *const *keys, const char *const *values, size_t n,
		  const struct user *u, uint64_t timeout_ms, struct remote_reply *ret,
		  int *ret_fd, char *err, size_t errlen);

/* The rest of a streamed reply (fd, closed here), at most max bytes,
 * into r->body and r->len, and its signature checked when it signs the
 * body: 0, or -errno and err. */
int remote_read_whole(struct daemon *d, int fd, size_t max, struct remote_reply *r, char *err,
		      size_t errlen);

#endif
