/* host_check: whom a browser's request is from, by the names it carries.
 * A browser says in Host which name it reached nprofd by, and in Origin
 * which page made the request; a page of another site must not act
 * through its visitor's browser — neither by asking from its own origin
 * (CSRF) nor by a name of its own that its DNS points here (DNS
 * rebinding: then its Origin matches its Host, and only the name tells
 * it from nprofd's own page). */
#ifndef NPROF_DAEMON_HOST_CHECK_H
#define NPROF_DAEMON_HOST_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "daemon/core/config.h"

/* The names a request's Host may say besides the connection's own
 * address and, on loopback, localhost: host_names, this host's name,
 * the cluster's name and the host of its url. */
#define HOST_NAMES_MAX (CONFIG_MAX_NAMES + 3)

struct host_names {
	char name[HOST_NAMES_MAX][CONFIG_HOST_MAX];	/* lower case */
	size_t n;
};

/* Fills h from cfg and this host's name (gethostname). */
void host_names_init(struct host_names *h, const struct daemon_config *cfg);

/* Whether a Host header (NULL: none, HTTP/1.0 — no browser) names
 * nprofd: the address the client connected to (local: the connection's
 * own address, NULL when unknown), localhost when that is loopback (a
 * browser resolves localhost itself), or one of h. The port is not
 * compared: the name is what a rebinding page cannot choose. */
bool host_allowed(const struct host_names *h, const char *host,
		  const struct sockaddr_storage *local);

/* Whether an Origin header (NULL: none — curl and nprof send none, and
 * are no browser acting for someone else) is nprofd's own page: its
 * scheme (https with tls) and the request's Host. */
bool origin_allowed(const char *origin, const char *host, bool tls);

#endif
