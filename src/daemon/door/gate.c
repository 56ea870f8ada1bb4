/* gate: see gate.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "daemon/core/log.h"
#include "daemon/core/peer.h"
#include "daemon/door/gate.h"

#define SEC 1000000000ull
#define MS 1000000ull
/* Connections accepted in a row on one door before the others are
 * looked at. */
#define ACCEPT_BURST 64
/* Refused connections whose client is given time to read the answer
 * (what it sent is read and dropped, so that closing does not reset the
 * answer away); past this many, the oldest is closed at once. */
#define LINGER_MAX 64
#define LINGER_NS (2 * SEC)
#define LOG_EVERY_NS (10 * SEC)
#define DOORS_MAX 4

struct refused {
	int fd;
	uint64_t until_ns;
};

struct gate {
	struct gate_door *doors[DOORS_MAX];
	size_t n;
	int wake[2];			/* gate_stop writes, the thread ends */
	pthread_t thread;
	struct refused linger[LINGER_MAX];
	size_t n_linger;
};

/* A whole HTTP answer of one JSON line {"error": msg} into fd, without
 * waiting: a fresh connection's send buffer takes it. */
static void answer(int fd, unsigned status, const char *reason, const char *msg)
{
	json_t *j = json_pack("{ss}", "error", msg);
	char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
	char head[256];
	int n;

	if (body) {
		n = snprintf(head, sizeof(head),
			     "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\n"
			     "Content-Length: %zu\r\nCache-Control: no-store\r\nConnection: close\r\n"
			     "%s\r\n", status, reason, strlen(body) + 1,
			     status == 408 ? "" : "Retry-After: 1\r\n");
		if (n > 0 && (size_t)n < sizeof(head) &&
		    send(fd, head, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE) == n) {
			size_t len = strlen(body);

			body[len] = '\n'; /* the NUL's place: the line ends */
			send(fd, body, len + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
			body[len] = '\0';
		}
	}
	free(body);
	json_decref(j);
}

static const char *duration(uint64_t ns, char *buf, size_t len)
{
	if (ns % SEC == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ns / SEC));
	else
		snprintf(buf, len, "%llums", (unsigned long long)(ns / MS));
	return buf;
}

/* door_limit's cut: an answer where one can be written, then shutdown:
 * the connection's thread in libmicrohttpd sees its end and closes it. */
static void cut(void *ctx, int fd, enum door_cut why)
{
	struct gate_door *door = ctx;
	char msg[400], t[32];

	duration(door->lim.deadline_ns, t, sizeof(t));
	if (why == DOOR_CUT_DEADLINE) {
		door->cut_deadline++;
		snprintf(msg, sizeof(msg), "the request did not arrive whole within request_timeout = %s "
			 "of the connection's start (or of the previous reply): send it at once, or ask "
			 "the operator to raise request_timeout in nprofd.conf", t);
	} else {
		door->cut_room++;
		snprintf(msg, sizeof(msg), "closed to make room on %s for another connection: the "
			 "request had not arrived whole; send requests at once", door->name);
	}
	if (door->plain)
		answer(fd, 408, "Request Timeout", msg);
	shutdown(fd, SHUT_RDWR);
}

int gate_door_init(struct gate_door *door)
{
	door->limit = door_limit_new(&door->lim, cut, door);
	return door->limit ? 0 : -ENOMEM;
}

void gate_door_release(struct gate_door *door)
{
	door_limit_free(door->limit);
	door->limit = NULL;
}

static void linger_close(struct gate *g, size_t i)
{
	close(g->linger[i].fd);
	g->linger[i] = g->linger[--g->n_linger];
}

/* A refused connection: its answer, then time to read it. */
static void refuse(struct gate *g, struct gate_door *door, int fd, enum door_verdict v,
		   const char *peer, uid_t uid)
{
	char msg[400], who[96];
	unsigned status = v == DOOR_PEER_FULL ? 429 : 503;

	if (door->is_unix)
		snprintf(who, sizeof(who), "uid %u", (unsigned)uid);
	else if (uid != (uid_t)-1)
		snprintf(who, sizeof(who), "this client (uid %u, on this host)", (unsigned)uid);
	else
		snprintf(who, sizeof(who), "this client (%s)", peer + 3);
	if (v == DOOR_PEER_FULL)
		snprintf(msg, sizeof(msg), "%s holds peer_connections = %u connections to %s "
			 "already%s; close some, or ask the operator to raise peer_connections in "
			 "nprofd.conf", who, door->lim.per_peer, door->name,
			 door->is_unix ? "" : ", none of them idle");
	else
		snprintf(msg, sizeof(msg), "%s holds max_connections = %u connections%s, none "
			 "waiting for a request it could close; try again shortly, or ask the "
			 "operator to raise max_connections in nprofd.conf", door->name,
			 door->lim.max, door->is_unix ? " (its last reserved_connections are for "
			 "root and the admins)" : "");
	door->refused++;
	snprintf(door->last_refusal, sizeof(door->last_refusal), "%s, past %s", peer,
		 v == DOOR_PEER_FULL ? "peer_connections" : "max_connections");
	if (!door->plain) {
		close(fd);
		return;
	}
	answer(fd, status, status == 429 ? "Too Many Requests" : "Service Unavailable", msg);
	shutdown(fd, SHUT_WR);
	if (g->n_linger == LINGER_MAX) {
		size_t oldest = 0;

		for (size_t i = 1; i < g->n_linger; i++)
			if (g->linger[i].until_ns < g->linger[oldest].until_ns)
				oldest = i;
		linger_close(g, oldest);
	}
	g->linger[g->n_linger++] = (struct refused){ fd, clock_ns(CLOCK_MONOTONIC) + LINGER_NS };
}

/* Accepts what door's listener holds, up to a burst: false when out of
 * descriptors (the caller waits a little before trying again). */
static bool accept_some(struct gate *g, struct gate_door *door)
{
	for (int i = 0; i < ACCEPT_BURST; i++) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		char peer[PEER_KEY_MAX], addr[INET6_ADDRSTRLEN] = "";
		enum door_verdict v;
		uid_t uid;
		int fd = accept4(door->listen_fd, (struct sockaddr *)&sa, &len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				if (!door->starved)
					log_error("%s: cannot accept: %s; raise the limit on open "
						  "files (LimitNOFILE) or lower max_connections",
						  door->name, strerror(errno));
				door->starved = true;
				return false;
			}
			door->starved = false;
			return true; /* EAGAIN, or the client gone already */
		}
		door->starved = false;
		if (peer_key(fd, peer, sizeof(peer), &uid) < 0) {
			close(fd);
			continue;
		}
		if (sa.ss_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, addr, sizeof(addr));
		else if (sa.ss_family == AF_INET6)
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, addr,
				  sizeof(addr));
		v = door_limit_admit(door->limit, fd, peer, door->privileged(door->ctx, uid, addr),
				     clock_ns(CLOCK_MONOTONIC));
		if (v != DOOR_ADMIT)
			refuse(g, door, fd, v, peer, uid);
		else if (door->hand(door->ctx, fd, (struct sockaddr *)&sa, len) < 0)
			door_limit_drop(door->limit, fd);
	}
	return true;
}

static void log_door(struct gate_door *door, uint64_t now)
{
	if (now - door->logged_ns < LOG_EVERY_NS ||
	    !(door->refused || door->cut_room || door->cut_deadline))
		return;
	log_info("%s: %u connections refused (the last: %s), %u closed to make room, %u cut "
		 "at request_timeout, in the last %llu s", door->name, door->refused,
		 door->refused ? door->last_refusal : "none", door->cut_room, door->cut_deadline,
		 (unsigned long long)((now - door->logged_ns) / SEC));
	door->refused = door->cut_room = door->cut_deadline = 0;
	door->logged_ns = now;
}

static void *gate_main(void *arg)
{
	struct gate *g = arg;
	struct pollfd p[1 + DOORS_MAX + LINGER_MAX];
	bool starved = false;

	for (;;) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC), next = SEC, wait;
		size_t np = 0, first_linger;
		int ms;

		for (size_t i = 0; i < g->n; i++) {
			wait = door_limit_expire(g->doors[i]->limit, now);
			if (wait < next)
				next = wait;
			log_door(g->doors[i], now);
		}
		for (size_t i = 0; i < g->n_linger;) {
			if (g->linger[i].until_ns <= now) {
				linger_close(g, i);
				continue;
			}
			if (g->linger[i].until_ns - now < next)
				next = g->linger[i].until_ns - now;
			i++;
		}
		p[np++] = (struct pollfd){ .fd = g->wake[0], .events = POLLIN };
		for (size_t i = 0; i < g->n; i++)
			p[np++] = (struct pollfd){ .fd = starved ? -1 : g->doors[i]->listen_fd,
						   .events = POLLIN };
		first_linger = np;
		for (size_t i = 0; i < g->n_linger; i++)
			p[np++] = (struct pollfd){ .fd = g->linger[i].fd, .events = POLLIN };
		ms = (int)((next + MS - 1) / MS);
		if (starved && ms > 100)
			ms = 100;
		if (poll(p, np, ms) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		starved = false;
		for (size_t i = 0; i < g->n; i++)
			if (p[1 + i].revents && !accept_some(g, g->doors[i]))
				starved = true;
		/* lingering ones: what the client sends is dropped, its end closes */
		for (size_t i = g->n_linger; i-- > 0;) {
			char buf[4096];
			ssize_t r;

			if (first_linger + i >= np || !p[first_linger + i].revents)
				continue;
			r = read(g->linger[i].fd, buf, sizeof(buf));
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
				linger_close(g, i);
		}
	}
	while (g->n_linger)
		linger_close(g, 0);
	return NULL;
}

struct gate *gate_start(struct gate_door **doors, size_t n, char *err, size_t errlen)
{
	struct gate *g = calloc(1, sizeof(*g));
	int e;

	if (!g || n > DOORS_MAX) {
		snprintf(err, errlen, "out of memory");
		free(g);
		return NULL;
	}
	g->n = n;
	for (size_t i = 0; i < n; i++) {
		g->doors[i] = doors[i];
		fcntl(doors[i]->listen_fd, F_SETFL, fcntl(doors[i]->listen_fd, F_GETFL) | O_NONBLOCK);
		doors[i]->logged_ns = clock_ns(CLOCK_MONOTONIC);
	}
	if (pipe2(g->wake, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		free(g);
		return NULL;
	}
	e = pthread_create(&g->thread, NULL, gate_main, g);
	if (e) {
		snprintf(err, errlen, "cannot start the thread that accepts connections: %s",
			 strerror(e));
		close(g->wake[0]);
		close(g->wake[1]);
		free(g);
		return NULL;
	}
	return g;
}

void gate_stop(struct gate *g)
{
	if (!g)
		return;
	if (write(g->wake[1], "x", 1) < 0)
		log_error("cannot stop the accepting thread: %s", strerror(errno));
	pthread_join(g->thread, NULL);
	close(g->wake[0]);
	close(g->wake[1]);
	free(g);
}
