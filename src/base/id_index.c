#include "base/id_index.h"

#include <errno.h>
#include <stdlib.h>

void id_index_init(struct id_index *x)
{
	x->ids = NULL;
	x->hashes = NULL;
	x->cap = 0;
	x->count = 0;
}

void id_index_release(struct id_index *x)
{
	if (!x)
		return;
	free(x->ids);
	free(x->hashes);
	id_index_init(x);
}

uint32_t id_index_find(const struct id_index *x, uint64_t hash,
		       id_index_match_fn match, const void *ctx, const void *key)
{
	size_t mask, i;

	if (!x->cap)
		return ID_NONE;
	mask = x->cap - 1;
	for (i = hash & mask;; i = (i + 1) & mask) {
		uint32_t id = x->ids[i];

		if (id == ID_NONE)
			return ID_NONE;
		if (x->hashes[i] == (uint32_t)hash && match(ctx, id, key))
			return id;
	}
}

static void place(uint32_t *ids, uint32_t *hashes, size_t cap, uint32_t h,
		  uint32_t id)
{
	size_t i;

	/* Only the low 32 bits survive a resize; they index any table up to
	 * 2^32 slots, which the uint32 ids cap anyway. */
	for (i = h & (cap - 1); ids[i] != ID_NONE; i = (i + 1) & (cap - 1))
		;
	ids[i] = id;
	hashes[i] = h;
}

static int grow(struct id_index *x)
{
	size_t ncap = x->cap ? x->cap * 2 : 64;
	uint32_t *ids = malloc(ncap * sizeof(*ids));
	uint32_t *hashes = malloc(ncap * sizeof(*hashes));

	if (!ids || !hashes) {
		free(ids);
		free(hashes);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ncap; i++)
		ids[i] = ID_NONE;
	for (size_t i = 0; i < x->cap; i++)
		if (x->ids[i] != ID_NONE)
			place(ids, hashes, ncap, x->hashes[i], x->ids[i]);
	free(x->ids);
	free(x->hashes);
	x->ids = ids;
	x->hashes = hashes;
	x->cap = ncap;
	return 0;
}

int id_index_insert(struct id_index *x, uint64_t hash, uint32_t id)
{
	/* Keep the load under 1/2 so probe chains stay short. */
	if ((x->count + 1) * 2 > x->cap) {
		int r = grow(x);

		if (r < 0)
			return r;
	}
	place(x->ids, x->hashes, x->cap, (uint32_t)hash, id);
	x->count++;
	return 0;
}
