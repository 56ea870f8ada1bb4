/* door_limit: the connections one of nprofd's doors holds, by peer
 * (peer.h), and the deadline for receiving a request.
 *
 * A new connection is admitted, or refused before it reaches
 * libmicrohttpd:
 *
 *   - a peer may hold per_peer connections (root and the admins on the
 *     socket, trusted proxies over HTTP: any number); past it the socket
 *     refuses (a uid is a user: their connections are theirs to close),
 *     while HTTP closes that peer's oldest connection that is still
 *     receiving its request, if it has one (an address may be shared:
 *     the connections that make no progress give way to the new one);
 *   - the door holds max connections, the last reserved of them for the
 *     privileged peers only: past it, the oldest connection of an
 *     unprivileged peer that is still receiving its request is closed
 *     to make room, if there is one; else the new one is refused.
 *
 * A connection receiving a request (from its start, or from the end of
 * its previous reply) that has not received it whole within deadline_ns
 * is closed: a client that trickles a header line now and then is cut
 * all the same. A request received whole is never cut: its reply (a
 * download, a stream) takes what it takes.
 *
 * Closing is the cut callback's, called with the lock held, so the fd is
 * still the connection's (libmicrohttpd closes it only after
 * door_limit_closed). Every function may be called from any thread. */
#ifndef NPROF_DAEMON_DOOR_LIMIT_H
#define NPROF_DAEMON_DOOR_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/core/peer.h"

/* Connections being closed to make room, besides max: what the door's
 * libmicrohttpd may hold at once is max + DOOR_SLACK. */
#define DOOR_SLACK 32

struct door_limits {
	unsigned max;		/* max_connections */
	unsigned reserved;	/* of max, for privileged peers (reserved_connections; 0 over HTTP) */
	unsigned per_peer;	/* peer_connections */
	bool evict_own;		/* past per_peer, close the peer's own oldest (HTTP) */
	uint64_t deadline_ns;	/* request_timeout */
};

enum door_verdict {
	DOOR_ADMIT,
	DOOR_PEER_FULL,		/* the peer holds per_peer, all busy (or on the socket) */
	DOOR_FULL,		/* the door holds what it may, none still receiving */
};

enum door_cut { DOOR_CUT_DEADLINE, DOOR_CUT_ROOM };

/* Closes connection fd (shutdown(2): libmicrohttpd then ends it), why
 * says for what. Called with the door's lock held. */
typedef void door_cut_fn(void *ctx, int fd, enum door_cut why);

struct door_limit;
struct door_slot;

struct door_limit *door_limit_new(const struct door_limits *limits, door_cut_fn *cut, void *ctx);
void door_limit_free(struct door_limit *l);

/* A connection accepted on fd, of peer (privileged: root, an admin, a
 * trusted proxy), at now_ns: admitted (possibly after cutting another),
 * or refused. */
enum door_verdict door_limit_admit(struct door_limit *l, int fd, const char *peer,
				   bool privileged, uint64_t now_ns);

/* An admitted fd that could not be handed on (libmicrohttpd closed it). */
void door_limit_drop(struct door_limit *l, int fd);

/* libmicrohttpd took the connection on fd: its slot for the calls
 * below, or NULL when fd was not admitted (then it is not counted). */
struct door_slot *door_limit_started(struct door_limit *l, int fd);

/* The connection's request arrived whole: no deadline until its reply
 * has gone. */
void door_limit_received(struct door_limit *l, struct door_slot *s);

/* Its reply has gone: it waits for its next request, from now_ns. */
void door_limit_idle(struct door_limit *l, struct door_slot *s, uint64_t now_ns);

/* It closed: its slot is free. s may be NULL. */
void door_limit_closed(struct door_limit *l, struct door_slot *s);

/* The connection's peer key. */
const char *door_slot_peer(const struct door_slot *s);

/* Cuts the connections past their deadline at now_ns and forgets
 * admitted ones libmicrohttpd never took; the ns until the next
 * deadline (UINT64_MAX: none). */
uint64_t door_limit_expire(struct door_limit *l, uint64_t now_ns);

/* How many connections peer holds (not being closed). */
unsigned door_limit_held(struct door_limit *l, const char *peer);

#endif
