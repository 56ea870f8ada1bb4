/* daemon_client: the one HTTP client of nprofd, the host daemon
 * (docs/nprofd.8.md, docs/api.md). It speaks HTTP/1.1 over nprofd's unix
 * socket, where the kernel vouches for who we are (SO_PEERCRED): no token
 * is sent. The socket is $NPROF_SOCKET when set, else
 * DAEMON_SOCKET_DEFAULT; with $NPROF_HOST, the daemon behind it passes
 * each request to that host's (docs/cluster.md). Plain HTTP/1.1 to one
 * local socket is all it needs, so it writes the request itself and
 * reads the reply with http_reply (fuzzed), not with libcurl: every
 * nprof command would load libcurl and its thirty libraries at start-up
 * (issue 24; libcurl is nprofd's alone, for etcd and the other daemons
 * over TLS).
 *
 * Every call is bounded: DAEMON_TIMEOUT_S for the whole exchange of a
 * JSON call; a download (converted on the way, or a core file of
 * gigabytes) may take longer, but not DAEMON_TIMEOUT_S without a byte.
 * At most DAEMON_REPLY_MAX bytes of a reply are kept in memory (a
 * download streams to its FILE instead).
 * Errors come back as -errno with one sentence in d that names the cause
 * and the fix; an error the API answered (4xx, 5xx) carries the server's
 * own "error" text, which already does. */
#ifndef NPROF_CLIENT_DAEMON_CLIENT_H
#define NPROF_CLIENT_DAEMON_CLIENT_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "base/diag.h"

#define DAEMON_SOCKET_DEFAULT "/run/nprof/nprofd.sock"
#define DAEMON_SOCKET_ENV "NPROF_SOCKET"
/* On a cluster, the host whose nprofd answers: every request says
 * ?host= of it (a host's name, or * where a request takes every host),
 * unless it names one itself. */
#define DAEMON_HOST_ENV "NPROF_HOST"
#define DAEMON_TIMEOUT_S 120
#define DAEMON_REPLY_MAX (64u << 20)

/* The socket calls go to: $NPROF_SOCKET, or the default. */
const char *daemon_socket_path(void);

/* method ("GET", "POST", "DELETE") on path ("/api/v1/...", its query
 * included, user input escaped with daemon_escape), with json_body (NULL:
 * none) sent as application/json.
 *
 * 0 when nprofd answered 2xx: its JSON in *ret_json (decref it; NULL
 * allowed to ignore it) and the status in *ret_status.
 * An API error (4xx, 5xx): *ret_status is written also then, and the
 * result is -EINVAL (400), -EACCES (401), -EPERM (403), -ENOENT (404),
 * -EBUSY (409), -ESRCH (410: the process is gone), -E2BIG (413), -EAGAIN
 * (429), -ENOSYS (501), -ENOSPC (507) or -EIO, with the server's "error"
 * text in d.
 * No exchange: -ENOENT (no socket: nprofd is not running), -ECONNREFUSED,
 * -EACCES, -ETIMEDOUT, -EFBIG (reply past DAEMON_REPLY_MAX), -EBADMSG (a
 * 2xx reply that is not JSON), -ENOMEM, -EIO (a reply malformed or cut
 * short); *ret_status untouched. */
int daemon_call(const char *method, const char *path, const char *json_body,
		json_t **ret_json, long *ret_status, struct diag *d);

/* GET path (an artifact download) and writes the body to out as it
 * arrives. 0 on 2xx, with the server's suggested file name
 * (Content-Disposition) in ret_filename, made safe to create in the
 * current directory: its last path component, no leading dots, no
 * control characters or backslashes; "" when it sent none or nothing
 * safe was left (ret_filename may be NULL). Errors as daemon_call; an
 * API error writes nothing to out. When writing to out fails the result
 * is fwrite's -errno and ferror(out) is set, so the caller can name the
 * file. */
int daemon_download(const char *path, FILE *out, long *ret_status, char *ret_filename,
		    size_t len, struct diag *d);

/* s URL-escaped (RFC 3986: all but ALPHA DIGIT - . _ ~ as %XX), for a
 * path segment or a query value, into buf. 0, or -ENAMETOOLONG when it
 * does not fit. */
int daemon_escape(const char *s, char *buf, size_t len);

#endif
