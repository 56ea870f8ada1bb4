/* signin_limit: a small table of recent failures under one lock, and the
 * door's token bucket. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/auth/signin_limit.h"

/* Pairs, addresses and clients failing now. A full table forgets the
 * record whose last failure is oldest: to push out a record that is
 * refused, a guesser would need this many others failing, which the
 * door's rate spreads over this many minutes divided by its rate. */
#define ENTRIES 1024
#define SEC 1000000000ull

enum kind { PAIR = 'p', ADDRESS = 'a', CLIENT = 'c' };

struct entry {
	char key[128];		/* "p:ADDR NAME", "a:ADDR", "c:PEER"; "" free */
	unsigned failures;	/* counted since the record began, in-flight ones too */
	unsigned in_flight;	/* attempts let through and not yet ended */
	uint64_t last_ns;	/* the last failure's (or attempt's) time */
};

struct signin_limit {
	pthread_mutex_t lock;
	struct signin_limits lim;
	double tokens;		/* the door's bucket: up to failures_per_minute */
	uint64_t tokens_ns;	/* when it was last filled */
	struct entry e[ENTRIES];
};

struct signin_limit *signin_limit_new(const struct signin_limits *limits)
{
	struct signin_limit *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	pthread_mutex_init(&l->lock, NULL);
	l->lim = *limits;
	l->tokens = limits->failures_per_minute;
	return l;
}

void signin_limit_free(struct signin_limit *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->lock);
	free(l);
}

static void make_key(char *key, size_t len, enum kind kind, const struct signin_attempt *a)
{
	if (kind == PAIR)
		snprintf(key, len, "p:%s %s", a->addr, a->user);
	else if (kind == ADDRESS)
		snprintf(key, len, "a:%s", a->addr);
	else
		snprintf(key, len, "c:%s", a->peer);
}

/* The live record of kind for a, or NULL; one past its window is freed.
 * With create, a new one (the least recently failed pushed out if need
 * be). */
static struct entry *find(struct signin_limit *l, enum kind kind, const struct signin_attempt *a,
			  uint64_t now, bool create)
{
	char key[sizeof(((struct entry *)0)->key)];
	struct entry *oldest = NULL;

	make_key(key, sizeof(key), kind, a);
	for (int i = 0; i < ENTRIES; i++) {
		struct entry *e = &l->e[i];

		if (e->key[0] && !e->in_flight && now - e->last_ns >= l->lim.window_ns)
			e->key[0] = '\0';
		if (e->key[0] && !strcmp(e->key, key))
			return e;
		if (!oldest || !e->key[0] || (oldest->key[0] && e->last_ns < oldest->last_ns))
			oldest = e;
	}
	if (!create)
		return NULL;
	snprintf(oldest->key, sizeof(oldest->key), "%s", key);
	oldest->failures = 0;
	oldest->in_flight = 0;
	oldest->last_ns = now;
	return oldest;
}

/* What a record still has to wait, from its last failure: nothing
 * below threshold failures, 1 s at threshold, doubling with each
 * further one, at most the window. */
static uint64_t wait_of(const struct signin_limit *l, const struct entry *e, unsigned threshold,
			uint64_t now)
{
	uint64_t wait, until;
	unsigned past;

	if (!e || e->failures < threshold)
		return 0;
	past = e->failures - threshold;
	wait = past >= 40 ? l->lim.window_ns : SEC << past;
	if (wait > l->lim.window_ns)
		wait = l->lim.window_ns;
	until = e->last_ns + wait;
	return until > now ? until - now : 0;
}

static void fill_bucket(struct signin_limit *l, uint64_t now)
{
	double per_ns = l->lim.failures_per_minute / (60.0 * SEC);

	if (now > l->tokens_ns) {
		l->tokens += (double)(now - l->tokens_ns) * per_ns;
		if (l->tokens > l->lim.failures_per_minute)
			l->tokens = l->lim.failures_per_minute;
	}
	l->tokens_ns = now;
}

static uint64_t whole_seconds(uint64_t ns)
{
	return (ns + SEC - 1) / SEC;
}

int signin_limit_try(struct signin_limit *l, const char *user, const char *addr,
		     const char *peer, uint64_t now, struct signin_attempt *a,
		     enum signin_refusal *ret_why, uint64_t *ret_wait_s)
{
	struct entry *pair, *address, *client;
	uint64_t wait;
	int r = 0;

	memset(a, 0, sizeof(*a));
	snprintf(a->user, sizeof(a->user), "%s", user);
	snprintf(a->addr, sizeof(a->addr), "%s", addr);
	snprintf(a->peer, sizeof(a->peer), "%s", peer);
	pthread_mutex_lock(&l->lock);
	pair = find(l, PAIR, a, now, false);
	address = find(l, ADDRESS, a, now, false);
	client = find(l, CLIENT, a, now, false);
	fill_bucket(l, now);
	if ((wait = wait_of(l, pair, l->lim.max_failures, now))) {
		*ret_why = SIGNIN_PAIR;
	} else if ((wait = wait_of(l, address, l->lim.max_address_failures, now))) {
		*ret_why = SIGNIN_ADDRESS;
	} else if (l->tokens >= 1) {
		l->tokens -= 1;
		a->took_token = true;
	} else if (client && (client->failures || client->in_flight)) {
		/* the door is over its rate, and this client has failed */
		*ret_why = SIGNIN_DOOR;
		wait = (uint64_t)((1 - l->tokens) * 60.0 * SEC / l->lim.failures_per_minute) + 1;
	}
	if (wait) {
		*ret_wait_s = whole_seconds(wait);
		r = -EAGAIN;
		goto out;
	}
	/* let through: a failure until it is known not to be */
	pair = find(l, PAIR, a, now, true);
	pair->failures++;
	pair->last_ns = now;
	address = find(l, ADDRESS, a, now, true);
	address->failures++;
	address->last_ns = now;
	address->in_flight++;
	pair->in_flight++;
	client = find(l, CLIENT, a, now, true);
	client->in_flight++;
	if (!client->failures)
		client->last_ns = now;
out:
	pthread_mutex_unlock(&l->lock);
	return r;
}

/* Ends a's attempt in each record (found again by key: a full table may
 * have moved them). */
static void end_attempt(struct signin_limit *l, const struct signin_attempt *a, uint64_t now,
			bool failed)
{
	static const enum kind kinds[] = { PAIR, ADDRESS, CLIENT };

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		struct entry *e = find(l, kinds[i], a, now, failed);

		if (!e)
			continue;
		if (e->in_flight)
			e->in_flight--;
		if (failed) {
			if (kinds[i] == CLIENT)
				e->failures++;
			if (e->last_ns < now)
				e->last_ns = now;
		} else if (kinds[i] == PAIR) {
			e->key[0] = '\0';
		} else if (kinds[i] == ADDRESS && e->failures) {
			e->failures--;
		}
		if (e->key[0] && !e->failures && !e->in_flight)
			e->key[0] = '\0';
	}
}

void signin_limit_failed(struct signin_limit *l, const struct signin_attempt *a, uint64_t now)
{
	pthread_mutex_lock(&l->lock);
	end_attempt(l, a, now, true);
	pthread_mutex_unlock(&l->lock);
}

void signin_limit_succeeded(struct signin_limit *l, const struct signin_attempt *a, uint64_t now)
{
	pthread_mutex_lock(&l->lock);
	end_attempt(l, a, now, false);
	if (a->took_token) {
		l->tokens += 1;
		if (l->tokens > l->lim.failures_per_minute)
			l->tokens = l->lim.failures_per_minute;
	}
	pthread_mutex_unlock(&l->lock);
}
