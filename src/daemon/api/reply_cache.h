/* reply_cache: the JSON text of recent list replies, by who asked for
 * what, each good while its version (the index's generation, the
 * worker scan's number) is current. A page that polls, or many clients
 * reading the same lists, then costs a copy per request rather than
 * queries, a JSON tree and its rendering — most of a busy daemon's time.
 * Bounded in bytes ([top] reply_cache); the least recently used goes
 * first. Thread-safe. */
#ifndef NPROF_DAEMON_REPLY_CACHE_H
#define NPROF_DAEMON_REPLY_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct reply_cache;

/* NULL when out of memory; max_bytes 0 keeps nothing. */
struct reply_cache *reply_cache_new(size_t max_bytes);
void reply_cache_free(struct reply_cache *c);

/* A copy (free it) of the text kept under key at version, its length in
 * *ret_len; NULL when there is none at that version. */
char *reply_cache_get(struct reply_cache *c, const char *key, uint64_t version, size_t *ret_len);

/* Keeps a copy of text under key at version, replacing what was kept
 * under key before. A text above an eighth of the bound is not kept. */
void reply_cache_put(struct reply_cache *c, const char *key, uint64_t version, const char *text,
		     size_t len);

#endif
