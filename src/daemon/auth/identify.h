/* identify: who is asking nprofd, from a connection of one of its doors. */
#ifndef NPROF_DAEMON_IDENTIFY_H
#define NPROF_DAEMON_IDENTIFY_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "daemon/core/daemon.h"

/* On the unix socket: the peer's uid, as the kernel says (SO_PEERCRED),
 * into u, completed from the host's accounts; false when it has none. */
bool identify_peer(struct daemon *d, struct MHD_Connection *c, struct user *u);

/* Over HTTP: a trusted proxy's user header, else an API token (Bearer),
 * else a browser's session cookie (which carries its CSRF token); false
 * when none holds. */
bool identify_http(struct daemon *d, struct MHD_Connection *c, struct user *u);

/* The client's IP address as text into buf ("" when unknown). */
void identify_client_address(struct MHD_Connection *c, char *buf, size_t len);

/* A change made with a session carries its CSRF token (X-CSRF-Token). */
bool identify_csrf_ok(struct MHD_Connection *c, const struct user *u);

#endif
