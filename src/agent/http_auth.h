/* http_auth: who may use the agent's HTTP endpoint (docs/agent.md "HTTP
 * endpoint"). Loopback keeps other hosts out, not other local users: by
 * default every request must carry a random token that only the
 * process's owner can read, from a file written when the endpoint starts
 * and removed when it stops or the process exits. NPROF_HTTP_AUTH=none
 * serves it open, on purpose.
 *
 * Threads: http_auth_new and http_auth_free run under http.c's lock;
 * http_auth_check runs on the server's connection threads, reading a
 * struct that does not change while its server runs. */
#ifndef NPROF_AGENT_HTTP_AUTH_H
#define NPROF_AGENT_HTTP_AUTH_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "base/diag.h"

#define HTTP_TOKEN_BYTES 32			/* from getrandom(2) */
#define HTTP_TOKEN_CHARS (2 * HTTP_TOKEN_BYTES) /* as lowercase hex */

struct http_auth {
	bool open;			 /* NPROF_HTTP_AUTH=none: no token asked */
	bool removed;			 /* path unlinked (under http.c's lock) */
	pid_t pid;			 /* the process that wrote path: a forked child leaves it */
	char token[HTTP_TOKEN_CHARS + 1];
	char path[PATH_MAX];		 /* the token file; "" when open */
};

enum http_auth_verdict {
	HTTP_AUTH_OK,
	HTTP_AUTH_MISSING, /* no token sent */
	HTTP_AUTH_WRONG,   /* a token sent, not this one */
};

/* NPROF_HTTP_AUTH's value: NULL, "" or "token" (a token, the default) or
 * "none" (open). -EINVAL otherwise, d saying what it takes. */
int http_auth_mode(const char *value, bool *ret_open, struct diag *d);

/* Makes the token and writes it, mode 0600, to http-PID.token in the
 * first of $XDG_RUNTIME_DIR/nprof, /run/user/UID/nprof, /run/nprof (root)
 * and /tmp/nprof-UID whose base is the effective user's; the nprof
 * directory is made 0700 and must be that user's, not a symlink and not
 * writable by others. With open, nothing is written. NULL and errno
 * (d saying why) on failure. */
struct http_auth *http_auth_new(bool open, struct diag *d);

/* Removes the token file when this process wrote it; NULL is fine. The
 * exit handler calls it; http_auth_free too. */
void http_auth_unlink(struct http_auth *a);
void http_auth_free(struct http_auth *a);

/* authorization: the Authorization header ("Bearer TOKEN"), query: the
 * ?token= value; either may be NULL. Compares in constant time. */
enum http_auth_verdict http_auth_check(const struct http_auth *a, const char *authorization,
				       const char *query);

#endif
