/* id_index: an open-addressing index from a key to a dense uint32 id.
 *
 * The keys live in the caller's own arrays (id i is the caller's i-th
 * entry); the index stores only ids and their hashes, and asks the caller
 * whether an id matches the key being looked up. This lets the profile
 * model intern strings, frames and stacks with one table implementation. */
#ifndef NPROF_BASE_ID_INDEX_H
#define NPROF_BASE_ID_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct id_index {
	uint32_t *ids;	   /* ID_NONE or id */
	uint32_t *hashes;  /* low 32 bits of the key's hash, to skip compares */
	size_t cap;	   /* power of two */
	size_t count;
};

#define ID_NONE UINT32_MAX

/* Returns nonzero when id's key equals the key being searched. */
typedef int (*id_index_match_fn)(const void *ctx, uint32_t id, const void *key);

void id_index_init(struct id_index *x);
void id_index_release(struct id_index *x);

/* The id whose key matches, or ID_NONE. */
uint32_t id_index_find(const struct id_index *x, uint64_t hash,
		       id_index_match_fn match, const void *ctx, const void *key);

/* Records that id has this hash; the caller has checked it is absent.
 * Returns 0 or -ENOMEM. */
int id_index_insert(struct id_index *x, uint64_t hash, uint32_t id);

#endif
