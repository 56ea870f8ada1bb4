/* server: nprofd's two doors — the unix socket every local user may
 * connect to (who they are is the kernel's word: SO_PEERCRED) and the
 * HTTP listener (loopback unless TLS is configured; who they are is an
 * API token's owner) — both HTTP/1.1 served by libmicrohttpd, both
 * matching each request in the route table (route.h) and auditing
 * what it did. */
#ifndef NPROF_DAEMON_SERVER_H
#define NPROF_DAEMON_SERVER_H

#include <stdbool.h>
#include <stddef.h>

struct daemon;
struct server;

/* Starts listening on d->cfg.socket_path and d->cfg.listen. NULL with
 * the one-line reason in err. */
struct server *server_start(struct daemon *d, char *err, size_t errlen);
void server_stop(struct server *s);

/* The HTTP listener's port (when listen said :0, the one the kernel
 * chose), 0 when there is none. */
unsigned server_http_port(const struct server *s);

#endif
