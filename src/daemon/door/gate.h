/* gate: the one thread that accepts on nprofd's doors. Each connection
 * is admitted by its door's limits (door_limit.h) and handed to the
 * door's libmicrohttpd, or refused: on a door without TLS with an HTTP
 * answer of one line ({"error": ...}, 429 past peer_connections, 503
 * past max_connections) that the client is left time to read. The
 * thread also cuts the connections past request_timeout (408 where it
 * can be written) and says in nprofd's log, at most every 10 s per
 * door, what it refused and cut. */
#ifndef NPROF_DAEMON_GATE_H
#define NPROF_DAEMON_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "daemon/door/door_limit.h"

struct gate_door {
	const char *name;		/* "the socket", "the HTTP listener": for words */
	bool is_unix;			/* peers are uids (words, and no address) */
	int listen_fd;			/* made non-blocking by gate_start */
	bool plain;			/* no TLS: answers are written as they are */
	struct door_limits lim;		/* what limit was made with, for words */
	struct door_limit *limit;	/* made by gate_door_init */
	/* Whether the peer (uid, or (uid_t)-1; addr, or "" on the socket)
	 * is root, an admin or a trusted proxy: no share, the reserve. */
	bool (*privileged)(void *ctx, uid_t uid, const char *addr);
	/* Hands fd on (libmicrohttpd): 0, or -1 when it could not (fd is
	 * closed then). */
	int (*hand)(void *ctx, int fd, const struct sockaddr *sa, socklen_t len);
	void *ctx;
	/* the gate thread's own: what happened since the log's last line */
	unsigned refused, cut_room, cut_deadline;
	char last_refusal[160];
	uint64_t logged_ns;
	bool starved;			/* out of descriptors, said once */
};

/* Makes door->limit from door->lim, its cuts done by the gate: 0 or
 * -ENOMEM. */
int gate_door_init(struct gate_door *door);
void gate_door_release(struct gate_door *door);

struct gate;

/* Starts the thread on n doors (at most 4, kept by the caller until
 * gate_stop): NULL with the reason in err. */
struct gate *gate_start(struct gate_door **doors, size_t n, char *err, size_t errlen);
void gate_stop(struct gate *g);

#endif
