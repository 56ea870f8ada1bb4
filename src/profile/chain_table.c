#include "profile/chain_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"

void chain_table_init(struct chain_table *t, size_t max_chains, size_t max_ips)
{
	*t = (struct chain_table){ .max_chains = max_chains, .max_ips = max_ips };
	id_index_init(&t->index);
}

void chain_table_reset(struct chain_table *t)
{
	t->nchains = t->nips = 0;
	id_index_release(&t->index);
	id_index_init(&t->index);
}

void chain_table_release(struct chain_table *t)
{
	if (!t)
		return;
	free(t->chains);
	free(t->ips);
	id_index_release(&t->index);
	chain_table_init(t, t->max_chains, t->max_ips);
}

/* The fields beside the addresses seed the hash of the addresses. */
static uint64_t key_hash(const struct chain_key *k)
{
	uint64_t seed = ((uint64_t)(uint32_t)k->tid << 32) ^ ((uint64_t)k->kind << 24) ^
			((uint64_t)(uint8_t)k->state << 16) ^ ((uint64_t)k->flags << 8) ^
			((uint64_t)k->truncated << 48) ^ ((uint64_t)k->nkernel << 52);

	return hash_bytes(k->ips, k->n * sizeof(*k->ips), seed);
}

static int key_match(const void *ctx, uint32_t id, const void *key)
{
	const struct chain_table *t = ctx;
	const struct chain *c = &t->chains[id];
	const struct chain_key *k = key;

	return c->tid == k->tid && c->kind == k->kind && c->n == k->n &&
	       c->nkernel == k->nkernel && c->truncated == k->truncated &&
	       c->state == k->state && c->flags == k->flags &&
	       (!k->n || !memcmp(t->ips + c->first, k->ips, k->n * sizeof(*k->ips)));
}

int chain_table_add(struct chain_table *t, const struct chain_key *k, unsigned count,
		    uint64_t weight, uint32_t *ret_id)
{
	uint64_t h = key_hash(k);
	uint32_t id = id_index_find(&t->index, h, key_match, t, k);

	if (id == ID_NONE) {
		if (t->nchains >= t->max_chains || t->nips + k->n > t->max_ips)
			return -E2BIG;
		if (array_reserve(&t->chains, &t->chains_cap, t->nchains + 1, sizeof(*t->chains)) < 0 ||
		    array_reserve(&t->ips, &t->ips_cap, t->nips + k->n, sizeof(*t->ips)) < 0)
			return -ENOMEM;
		if (id_index_insert(&t->index, h, (uint32_t)t->nchains) < 0)
			return -ENOMEM;
		id = (uint32_t)t->nchains++;
		t->chains[id] = (struct chain){
			.first = t->nips, .n = k->n, .nkernel = k->nkernel, .tid = k->tid,
			.kind = k->kind, .state = k->state, .truncated = k->truncated,
			.flags = k->flags,
		};
		if (k->n)
			memcpy(t->ips + t->nips, k->ips, k->n * sizeof(*k->ips));
		t->nips += k->n;
	}
	t->chains[id].samples += count;
	t->chains[id].weight += weight;
	*ret_id = id;
	return 0;
}
