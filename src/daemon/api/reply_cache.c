/* reply_cache: a few dozen texts under one lock, evicted least recently
 * used first. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/reply_cache.h"

/* Lists differ by user and query: a host's users polling their pages
 * fit; a key not asked for again is pushed out by those that are. */
#define ENTRIES 64

struct entry {
	char *key;		/* NULL: free */
	uint64_t version;
	char *text;
	size_t len;
	uint64_t used;		/* the tick of its last use */
};

struct reply_cache {
	pthread_mutex_t lock;
	size_t max_bytes, bytes;
	uint64_t tick;
	struct entry e[ENTRIES];
};

struct reply_cache *reply_cache_new(size_t max_bytes)
{
	struct reply_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	c->max_bytes = max_bytes;
	return c;
}

static void drop(struct reply_cache *c, struct entry *e)
{
	c->bytes -= e->len;
	free(e->key);
	free(e->text);
	memset(e, 0, sizeof(*e));
}

void reply_cache_free(struct reply_cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < ENTRIES; i++)
		if (c->e[i].key)
			drop(c, &c->e[i]);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static struct entry *find(struct reply_cache *c, const char *key)
{
	for (int i = 0; i < ENTRIES; i++)
		if (c->e[i].key && !strcmp(c->e[i].key, key))
			return &c->e[i];
	return NULL;
}

char *reply_cache_get(struct reply_cache *c, const char *key, uint64_t version, size_t *ret_len)
{
	struct entry *e;
	char *copy = NULL;

	pthread_mutex_lock(&c->lock);
	e = find(c, key);
	if (e && e->version == version && (copy = malloc(e->len + 1))) {
		memcpy(copy, e->text, e->len + 1);
		*ret_len = e->len;
		e->used = ++c->tick;
	}
	pthread_mutex_unlock(&c->lock);
	return copy;
}

/* The entry to fill: key's own, else a free one, else the least
 * recently used. */
static struct entry *slot(struct reply_cache *c, const char *key)
{
	struct entry *e = find(c, key), *oldest = &c->e[0];

	if (e)
		return e;
	for (int i = 0; i < ENTRIES; i++) {
		if (!c->e[i].key)
			return &c->e[i];
		if (c->e[i].used < oldest->used)
			oldest = &c->e[i];
	}
	return oldest;
}

static struct entry *least_recent(struct reply_cache *c)
{
	struct entry *oldest = NULL;

	for (int i = 0; i < ENTRIES; i++)
		if (c->e[i].key && (!oldest || c->e[i].used < oldest->used))
			oldest = &c->e[i];
	return oldest;
}

void reply_cache_put(struct reply_cache *c, const char *key, uint64_t version, const char *text,
		     size_t len)
{
	char *k, *t;
	struct entry *e;

	if (len > c->max_bytes / 8)
		return;
	k = strdup(key);
	t = malloc(len + 1);
	if (!k || !t) {
		free(k);
		free(t);
		return;
	}
	memcpy(t, text, len);
	t[len] = '\0';
	pthread_mutex_lock(&c->lock);
	e = slot(c, key);
	if (e->key && !strcmp(e->key, key) && e->version > version) {
		/* a request that began later kept a newer text already */
		pthread_mutex_unlock(&c->lock);
		free(k);
		free(t);
		return;
	}
	if (e->key)
		drop(c, e);
	while (c->bytes + len > c->max_bytes)
		drop(c, least_recent(c));
	*e = (struct entry){ .key = k, .version = version, .text = t, .len = len,
			     .used = ++c->tick };
	c->bytes += len;
	pthread_mutex_unlock(&c->lock);
}
