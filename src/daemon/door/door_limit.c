/* door_limit: a fixed table of the door's connections under one lock,
 * scanned whole (it holds at most max + DOOR_SLACK, and a scan is far
 * cheaper than the connection it decides on). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/door/door_limit.h"

/* An admitted connection that libmicrohttpd has not taken after this
 * long never will be (it closed the socket without telling). */
#define UNSTARTED_NS (10 * 1000000000ull)

struct door_slot {
	int fd;			/* -1: free */
	char peer[PEER_KEY_MAX];
	bool privileged;
	bool started;		/* libmicrohttpd has it: fd stays its until closed */
	bool receiving;		/* a request is on its way: the deadline runs */
	bool cut;		/* being closed: counts against DOOR_SLACK only */
	uint64_t since_ns;	/* admitted, or its last reply gone */
};

struct door_limit {
	pthread_mutex_t lock;
	struct door_limits lim;
	door_cut_fn *cut;
	void *ctx;
	unsigned n;
	struct door_slot s[];
};

struct door_limit *door_limit_new(const struct door_limits *lim, door_cut_fn *cut, void *ctx)
{
	unsigned n = lim->max + DOOR_SLACK;
	struct door_limit *l = calloc(1, sizeof(*l) + n * sizeof(l->s[0]));

	if (!l)
		return NULL;
	pthread_mutex_init(&l->lock, NULL);
	l->lim = *lim;
	l->cut = cut;
	l->ctx = ctx;
	l->n = n;
	for (unsigned i = 0; i < n; i++)
		l->s[i].fd = -1;
	return l;
}

void door_limit_free(struct door_limit *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* The oldest connection still receiving its request that may give way
 * (of peer, or of anyone but the privileged when peer is NULL). */
static struct door_slot *victim(struct door_limit *l, const char *peer)
{
	struct door_slot *v = NULL;

	for (unsigned i = 0; i < l->n; i++) {
		struct door_slot *s = &l->s[i];

		if (s->fd < 0 || !s->started || !s->receiving || s->cut || s->privileged ||
		    (peer && strcmp(s->peer, peer)))
			continue;
		if (!v || s->since_ns < v->since_ns)
			v = s;
	}
	return v;
}

static void cut(struct door_limit *l, struct door_slot *s, enum door_cut why)
{
	s->cut = true;
	l->cut(l->ctx, s->fd, why);
}

enum door_verdict door_limit_admit(struct door_limit *l, int fd, const char *peer,
				   bool privileged, uint64_t now)
{
	unsigned all = 0, unprivileged = 0, of_peer = 0;
	struct door_slot *free_slot = NULL, *v;
	enum door_verdict r = DOOR_ADMIT;

	pthread_mutex_lock(&l->lock);
	for (unsigned i = 0; i < l->n; i++) {
		struct door_slot *s = &l->s[i];

		if (s->fd == fd) /* its number reused: the one it named is closed */
			s->fd = -1;
		if (s->fd < 0) {
			if (!free_slot)
				free_slot = s;
			continue;
		}
		if (s->cut)
			continue;
		all++;
		unprivileged += !s->privileged;
		of_peer += !strcmp(s->peer, peer);
	}
	if (!free_slot) {
		r = DOOR_FULL;
		goto out;
	}
	if (!privileged && of_peer >= l->lim.per_peer) {
		if (!l->lim.evict_own || !(v = victim(l, peer))) {
			r = DOOR_PEER_FULL;
			goto out;
		}
		cut(l, v, DOOR_CUT_ROOM);
		all--;
		unprivileged--;
	}
	if (all >= l->lim.max || (!privileged && unprivileged >= l->lim.max - l->lim.reserved)) {
		if (!(v = victim(l, NULL))) {
			r = DOOR_FULL;
			goto out;
		}
		cut(l, v, DOOR_CUT_ROOM);
	}
	*free_slot = (struct door_slot){ .fd = fd, .privileged = privileged, .receiving = true,
					 .since_ns = now };
	strncpy(free_slot->peer, peer, sizeof(free_slot->peer) - 1);
out:
	pthread_mutex_unlock(&l->lock);
	return r;
}

void door_limit_drop(struct door_limit *l, int fd)
{
	pthread_mutex_lock(&l->lock);
	for (unsigned i = 0; i < l->n; i++)
		if (l->s[i].fd == fd && !l->s[i].started)
			l->s[i].fd = -1;
	pthread_mutex_unlock(&l->lock);
}

struct door_slot *door_limit_started(struct door_limit *l, int fd)
{
	struct door_slot *found = NULL;

	pthread_mutex_lock(&l->lock);
	for (unsigned i = 0; i < l->n && !found; i++)
		if (l->s[i].fd == fd && !l->s[i].started) {
			found = &l->s[i];
			found->started = true;
		}
	pthread_mutex_unlock(&l->lock);
	return found;
}

void door_limit_received(struct door_limit *l, struct door_slot *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&l->lock);
	s->receiving = false;
	pthread_mutex_unlock(&l->lock);
}

void door_limit_idle(struct door_limit *l, struct door_slot *s, uint64_t now)
{
	if (!s)
		return;
	pthread_mutex_lock(&l->lock);
	s->receiving = true;
	s->since_ns = now;
	pthread_mutex_unlock(&l->lock);
}

void door_limit_closed(struct door_limit *l, struct door_slot *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&l->lock);
	s->fd = -1;
	pthread_mutex_unlock(&l->lock);
}

const char *door_slot_peer(const struct door_slot *s)
{
	return s->peer;
}

uint64_t door_limit_expire(struct door_limit *l, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	pthread_mutex_lock(&l->lock);
	for (unsigned i = 0; i < l->n; i++) {
		struct door_slot *s = &l->s[i];
		uint64_t due;

		if (s->fd < 0 || s->cut)
			continue;
		if (!s->started) {
			if (now - s->since_ns >= UNSTARTED_NS)
				s->fd = -1;
			continue;
		}
		if (!s->receiving)
			continue;
		due = s->since_ns + l->lim.deadline_ns;
		if (due <= now)
			cut(l, s, DOOR_CUT_DEADLINE);
		else if (due - now < next)
			next = due - now;
	}
	pthread_mutex_unlock(&l->lock);
	return next;
}

unsigned door_limit_held(struct door_limit *l, const char *peer)
{
	unsigned n = 0;

	pthread_mutex_lock(&l->lock);
	for (unsigned i = 0; i < l->n; i++)
		n += l->s[i].fd >= 0 && !l->s[i].cut && !strcmp(l->s[i].peer, peer);
	pthread_mutex_unlock(&l->lock);
	return n;
}
