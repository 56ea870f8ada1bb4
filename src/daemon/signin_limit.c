/* signin_limit: a small table of recent failures under one lock. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "daemon/signin_limit.h"

/* Names and addresses failing now. A full table forgets the one whose
 * window began longest ago: to push out an address that is refused, a
 * guesser would need this many others failing at once. */
#define ENTRIES 512

struct entry {
	char key[80];		/* "u:NAME" or "a:ADDR"; "" free */
	unsigned failures;
	uint64_t since_ns;	/* the first failure of the window */
};

struct signin_limit {
	pthread_mutex_t lock;
	unsigned max_failures;
	uint64_t window_ns;
	struct entry e[ENTRIES];
};

struct signin_limit *signin_limit_new(unsigned max_failures, uint64_t window_ns)
{
	struct signin_limit *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	pthread_mutex_init(&l->lock, NULL);
	l->max_failures = max_failures;
	l->window_ns = window_ns;
	return l;
}

void signin_limit_free(struct signin_limit *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* The live entry for kind:name, or NULL; an expired one is freed. */
static struct entry *find(struct signin_limit *l, char kind, const char *name, uint64_t now)
{
	char key[sizeof(((struct entry *)0)->key)];

	snprintf(key, sizeof(key), "%c:%s", kind, name);
	for (int i = 0; i < ENTRIES; i++) {
		struct entry *e = &l->e[i];

		if (!e->key[0] || strcmp(e->key, key))
			continue;
		if (now - e->since_ns >= l->window_ns) {
			e->key[0] = '\0';
			return NULL;
		}
		return e;
	}
	return NULL;
}

static bool refused_locked(struct signin_limit *l, char kind, const char *name, uint64_t now,
			   uint64_t *wait_ns)
{
	struct entry *e = find(l, kind, name, now);

	if (!e || e->failures < l->max_failures)
		return false;
	if (e->since_ns + l->window_ns - now > *wait_ns)
		*wait_ns = e->since_ns + l->window_ns - now;
	return true;
}

bool signin_limit_refused(struct signin_limit *l, const char *user, const char *addr,
			  uint64_t *ret_wait_s)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC), wait = 0;
	bool refused;

	pthread_mutex_lock(&l->lock);
	refused = refused_locked(l, 'u', user, now, &wait);
	refused = refused_locked(l, 'a', addr, now, &wait) || refused;
	pthread_mutex_unlock(&l->lock);
	*ret_wait_s = (wait + 999999999u) / 1000000000u;
	return refused;
}

static void count(struct signin_limit *l, char kind, const char *name, uint64_t now)
{
	struct entry *e = find(l, kind, name, now), *oldest = &l->e[0];

	if (e) {
		e->failures++;
		return;
	}
	for (int i = 0; i < ENTRIES && oldest->key[0]; i++)
		if (!l->e[i].key[0] || l->e[i].since_ns < oldest->since_ns)
			oldest = &l->e[i];
	snprintf(oldest->key, sizeof(oldest->key), "%c:%s", kind, name);
	oldest->failures = 1;
	oldest->since_ns = now;
}

void signin_limit_failed(struct signin_limit *l, const char *user, const char *addr)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	pthread_mutex_lock(&l->lock);
	count(l, 'u', user, now);
	count(l, 'a', addr, now);
	pthread_mutex_unlock(&l->lock);
}

void signin_limit_succeeded(struct signin_limit *l, const char *user)
{
	struct entry *e;

	pthread_mutex_lock(&l->lock);
	e = find(l, 'u', user, clock_ns(CLOCK_MONOTONIC));
	if (e)
		e->key[0] = '\0';
	pthread_mutex_unlock(&l->lock);
}
