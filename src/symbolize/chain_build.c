#include "symbolize/chain_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int chain_build_open(struct chain_build *b, struct proc_syms *ps,
		     const struct chain_build_options *o)
{
	const struct event_def *e = o->event;
	bool lines = o->sym_flags & SYM_LINES;
	struct profile *p;
	int err;

	memset(b, 0, sizeof(*b));
	frame_cache_init(&b->names);
	b->ps = ps;
	b->max_depth = o->max_depth;
	b->sym_flags = o->sym_flags;
	b->per_thread = o->per_thread;
	b->name_thread = o->name_thread;
	/* max_depth counts addresses; with lines each may bring its inlined
	 * callees; then the root, the pseudo-frames above and below. */
	b->frames = calloc((size_t)o->max_depth * (lines ? SYM_MAX_FRAMES_PER_ADDR : 1) + 4,
			   sizeof(*b->frames));
	p = b->p = profile_new();
	if (!p || !b->frames)
		return -ENOMEM;
	err = profile_set_value_types(p, e->values, e->nvalues);
	if (err < 0)
		return err;
	p->event = profile_intern_string(p, e->name);
	p->interval_unit = profile_intern_string(p, e->interval_unit);
	p->unwinder = profile_intern_string(p, o->unwinder);
	p->command = o->command && o->command[0] ? profile_intern_string(p, o->command) : NULL;
	if (!p->event || !p->interval_unit || !p->unwinder ||
	    (o->command && o->command[0] && !p->command))
		return -ENOMEM;
	p->pid = o->pid;
	return 0;
}

static int pseudo(struct profile *p, const char *name, enum frame_kind kind, uint32_t *ret)
{
	struct frame f = { .name = name, .kind = kind };

	return profile_intern_frame(p, &f, ret);
}

/* The thread tid: named name, else as the profile knows it, else as
 * name_thread says. */
static int thread_for(struct chain_build *b, pid_t tid, const char *name, uint32_t *ret)
{
	char asked[16] = ""; /* TASK_COMM_LEN */
	int err = profile_intern_thread(b->p, tid, name, ret);

	if (err < 0 || b->p->threads[*ret].name[0] || !b->name_thread)
		return err;
	b->name_thread(tid, asked, sizeof(asked));
	return asked[0] ? profile_intern_thread(b->p, tid, asked, ret) : 0;
}

int chain_build_add(struct chain_build *b, const struct chain_build_stack *s,
		    const int64_t *values, uint32_t *ret_stack, uint32_t *ret_thread)
{
	uint32_t skip = s->n > b->max_depth ? s->n - b->max_depth : 0;
	uint32_t depth = 0, stack, thread;
	int err = thread_for(b, s->tid, s->thread_name, &thread);

	if (err < 0)
		return err;
	if (b->per_thread) {
		char root[64];

		if (!s->root)
			profile_thread_root_name(root, sizeof(root), b->p->threads[thread].name,
						 s->tid);
		err = pseudo(b->p, s->root ? s->root : root, FRAME_THREAD, &b->frames[depth++]);
		if (err < 0)
			return err;
	}
	if (s->above) {
		err = pseudo(b->p, s->above, FRAME_KERNEL, &b->frames[depth++]);
		if (err < 0)
			return err;
	}
	/* From the root (ips[n-1]) to the leaf, the outermost skip left out. */
	for (uint32_t i = s->n - skip; i-- > 0;) {
		bool exact = i == 0 || i == s->nkernel; /* a pc, not a return address */
		unsigned n;

		err = frame_cache_get(&b->names, b->ps, b->p, exact ? s->ips[i] : s->ips[i] - 1,
				      i < s->nkernel, b->sym_flags, &b->frames[depth], &n);
		if (err < 0)
			return err;
		depth += n;
	}
	if (s->leaf) {
		err = pseudo(b->p, s->leaf, s->leaf_kind, &b->frames[depth++]);
		if (err < 0)
			return err;
	}
	err = profile_intern_stack(b->p, b->frames, depth, s->truncated || skip, &stack);
	if (err < 0)
		return err;
	if (ret_stack)
		*ret_stack = stack;
	if (ret_thread)
		*ret_thread = thread;
	return profile_add_sample(b->p, stack, thread, values);
}

int chain_build_chains(struct chain_build *b, const struct chain_table *t,
		       const struct chain_timeline *tl, uint64_t start_real_ns,
		       uint64_t start_mono_ns, const struct chain_look *look)
{
	struct chain_ids *ids = malloc((t->nchains ? t->nchains : 1) * sizeof(*ids));
	int err = 0;

	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < t->nchains && err == 0; i++) {
		const struct chain *c = &t->chains[i];
		int64_t values[PROFILE_MAX_VALUES] = { 0 };
		struct chain_build_stack s = {
			.ips = chain_table_ips(t, c), .n = c->n, .nkernel = c->nkernel,
			.truncated = c->truncated, .tid = c->tid,
		};

		ids[i] = (struct chain_ids){ ID_NONE, ID_NONE };
		if (look->describe(look->ctx, (uint32_t)i, c, &s, values))
			err = chain_build_add(b, &s, values, &ids[i].stack, &ids[i].thread);
	}
	if (err == 0 && tl)
		err = chain_timeline_to_profile(tl, b->p, ids, start_real_ns, start_mono_ns,
						look->event_value, look->ctx);
	free(ids);
	return err;
}

struct profile *chain_build_take(struct chain_build *b)
{
	struct profile *p = b->p;

	b->p = NULL;
	return p;
}

void chain_build_release(struct chain_build *b)
{
	profile_free(b->p);
	free(b->frames);
	frame_cache_release(&b->names);
	memset(b, 0, sizeof(*b));
}
