#include "symbolize/frame_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"

struct frame_cache_key {
	uint64_t addr;
	bool kernel;
	uint32_t first, n; /* frames[first..first+n) */
};

void frame_cache_init(struct frame_cache *c)
{
	memset(c, 0, sizeof(*c));
	id_index_init(&c->index);
}

void frame_cache_release(struct frame_cache *c)
{
	if (!c)
		return;
	free(c->keys);
	free(c->frames);
	id_index_release(&c->index);
	frame_cache_init(c);
}

static int key_match(const void *ctx, uint32_t id, const void *key)
{
	const struct frame_cache_key *a = &((const struct frame_cache_key *)ctx)[id];
	const struct frame_cache_key *b = key;

	return a->addr == b->addr && a->kernel == b->kernel;
}

/* Interns the frames of one address into p and appends their ids. */
static int add_frames(struct frame_cache *c, struct profile *p,
		      const struct symbol_info *si, unsigned n)
{
	int err;

	if (si[0].module && si[0].kind != FRAME_KERNEL) {
		uint32_t module;

		err = profile_intern_module(p, si[0].module, si[0].build_id, &module);
		if (err < 0)
			return err;
	}
	if (array_reserve(&c->frames, &c->frames_cap, c->nframes + n, sizeof(*c->frames)) < 0)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		struct frame f = { .name = si[i].name, .module = si[i].module,
				   .file = si[i].file, .line = si[i].line,
				   .kind = si[i].kind, .address = si[i].module_offset };

		err = profile_intern_frame(p, &f, &c->frames[c->nframes + i]);
		if (err < 0)
			return err;
	}
	c->nframes += n;
	return 0;
}

int frame_cache_get(struct frame_cache *c, struct proc_syms *ps,
		    struct profile *p, uint64_t addr, bool kernel,
		    unsigned flags, uint32_t *out, unsigned *ret_n)
{
	struct frame_cache_key k = { addr, kernel, 0, 0 };
	uint64_t h = hash_u64(addr ^ (uint64_t)kernel);
	uint32_t id = id_index_find(&c->index, h, key_match, c->keys, &k);
	struct symbol_info si[SYM_MAX_FRAMES_PER_ADDR];
	int err;

	if (id != ID_NONE) {
		k = c->keys[id];
		goto out;
	}
	err = proc_syms_lookup_frames(ps, addr, kernel, flags, si,
				      SYM_MAX_FRAMES_PER_ADDR, &k.n);
	if (err < 0)
		return err;
	k.first = (uint32_t)c->nframes;
	err = add_frames(c, p, si, k.n);
	if (err < 0)
		return err;
	if (array_reserve(&c->keys, &c->keys_cap, c->nkeys + 1, sizeof(*c->keys)) < 0)
		return -ENOMEM;
	if (id_index_insert(&c->index, h, (uint32_t)c->nkeys) < 0)
		return -ENOMEM;
	c->keys[c->nkeys++] = k;
out:
	memcpy(out, c->frames + k.first, k.n * sizeof(*out));
	*ret_n = k.n;
	return 0;
}
