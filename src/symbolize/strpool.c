#include "symbolize/strpool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"

/* Big enough that a typical process's names fit in a few chunks, small
 * enough that a pool used for one short name stays cheap. */
#define CHUNK_SIZE (64 * 1024)

struct key {
	const char *s;
	size_t len;
};

void strpool_init(struct strpool *p, size_t max_bytes)
{
	memset(p, 0, sizeof(*p));
	id_index_init(&p->index);
	p->max_bytes = max_bytes;
}

void strpool_release(struct strpool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nchunks; i++)
		free(p->chunks[i]);
	free(p->chunks);
	free(p->strs);
	id_index_release(&p->index);
	strpool_init(p, p->max_bytes);
}

static int match(const void *ctx, uint32_t id, const void *k)
{
	const struct strpool *p = ctx;
	const struct key *key = k;
	const char *s = p->strs[id];

	return !strncmp(s, key->s, key->len) && s[key->len] == '\0';
}

static char *alloc(struct strpool *p, size_t size)
{
	char *mem;

	if (size > p->cur_left) {
		size_t csize = size > CHUNK_SIZE / 4 ? size : CHUNK_SIZE;

		if (array_reserve(&p->chunks, &p->chunks_cap, p->nchunks + 1,
				  sizeof(*p->chunks)) < 0)
			return NULL;
		mem = malloc(csize);
		if (!mem)
			return NULL;
		p->chunks[p->nchunks++] = mem;
		/* A string given its own chunk leaves the current one in use. */
		if (csize == size)
			return mem;
		p->cur = mem;
		p->cur_left = csize;
	}
	mem = p->cur;
	p->cur += size;
	p->cur_left -= size;
	return mem;
}

const char *strpool_intern_len(struct strpool *p, const char *s, size_t len)
{
	struct key key = { s, len };
	uint64_t h = hash_bytes(s, len, 0);
	uint32_t id = id_index_find(&p->index, h, match, p, &key);
	char *copy;
	const char *ret = NULL;

	if (id != ID_NONE)
		return p->strs[id];
	if (p->max_bytes && p->bytes + len + 1 > p->max_bytes) {
		errno = ENOBUFS;
		return NULL;
	}
	if (array_reserve(&p->strs, &p->cap, p->n + 1, sizeof(*p->strs)) < 0)
		goto out;
	copy = alloc(p, len + 1);
	if (!copy)
		goto out;
	memcpy(copy, s, len);
	copy[len] = '\0';
	if (id_index_insert(&p->index, h, (uint32_t)p->n) < 0)
		goto out; /* copy stays in its chunk, freed with the pool */
	p->strs[p->n++] = copy;
	p->bytes += len + 1;
	ret = copy;
out:
	if (!ret)
		errno = ENOMEM;
	return ret;
}

const char *strpool_intern(struct strpool *p, const char *s)
{
	return strpool_intern_len(p, s, strlen(s));
}
