/* diff: the union of two profiles by frame names, and what changed per
 * function. See diff.h for the contract; docs/nprof-diff.1.md for what
 * the numbers mean to a reader. */
#include "output/diff.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/id_index.h"
#include "output/rank.h"

static const char *const side_names[2] = { "BEFORE", "AFTER" };

/* Frames of diff.merged are known by their interned name alone. */
static int name_match(const void *ctx, uint32_t id, const void *key)
{
	const struct profile *merged = ctx;

	return merged->frames[id].name == key;
}

static const struct value_type *type_of(const struct profile *p)
{
	static const struct value_type samples = { "samples", "count" };

	return p->nvalues ? &p->value_types[0] : &samples;
}

/* Maps every frame of p to the frame of merged with its name, creating
 * the ones merged lacks (the first module and kind seen are kept, for
 * colours and labels; file and line are left out, as in rank.h). */
static int map_frames(struct profile *merged, struct id_index *by_name,
		      const struct profile *p, uint32_t *frame_map)
{
	for (size_t i = 0; i < p->nframes; i++) {
		const struct frame *f = &p->frames[i];
		const char *name = profile_intern_string(merged, f->name);
		uint64_t h;
		uint32_t id;

		if (!name)
			return -ENOMEM;
		h = hash_u64((uintptr_t)name);
		id = id_index_find(by_name, h, name_match, merged, name);
		if (id == ID_NONE) {
			struct frame nf = { .name = name, .module = f->module,
					    .kind = f->kind, .address = f->address };
			int r = profile_intern_frame(merged, &nf, &id);

			if (r < 0)
				return r;
			r = id_index_insert(by_name, h, id);
			if (r < 0)
				return r;
		}
		frame_map[i] = id;
	}
	return 0;
}

/* Adds every sample of p to merged as value side. */
static int add_side(struct diff *df, struct id_index *by_name,
		    const struct profile *p, enum diff_value side,
		    uint32_t thread)
{
	struct profile *merged = df->merged;
	uint32_t *frame_map = malloc((p->nframes + 1) * sizeof(*frame_map));
	uint32_t *stack_map = malloc((p->nstacks + 1) * sizeof(*stack_map));
	uint32_t *frames = NULL, max_depth = 0;
	int r = -ENOMEM;

	for (size_t s = 0; s < p->nstacks; s++)
		if (p->stacks[s].depth > max_depth)
			max_depth = p->stacks[s].depth;
	frames = malloc((max_depth + 1) * sizeof(*frames));
	if (!frame_map || !stack_map || !frames)
		goto out;
	memset(stack_map, 0xff, (p->nstacks + 1) * sizeof(*stack_map));
	r = map_frames(merged, by_name, p, frame_map);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct sample *sm = &p->samples[i];
		int64_t v = sm->values[0], values[PROFILE_MAX_VALUES] = { 0 };

		if (v <= 0)
			continue;
		if (stack_map[sm->stack] == UINT32_MAX) {
			const struct stack *st = &p->stacks[sm->stack];
			const uint32_t *src = profile_stack_frames(p, sm->stack);

			for (uint32_t d = 0; d < st->depth; d++)
				frames[d] = frame_map[src[d]];
			r = profile_intern_stack(merged, frames, st->depth,
						 st->truncated, &stack_map[sm->stack]);
			if (r < 0)
				goto out;
		}
		values[side] = v;
		r = profile_add_sample(merged, stack_map[sm->stack], thread, values);
		if (r < 0)
			goto out;
	}
	r = 0;
out:
	free(frame_map);
	free(stack_map);
	free(frames);
	return r;
}

/* A stack's weight of one side: its share in units of 1/DIFF_WEIGHT_SCALE,
 * at least 1, or the value itself when not normalizing; 0 for none. */
static int64_t weight(const struct diff *df, enum diff_value side, int64_t v)
{
	int64_t w;

	if (v <= 0 || !df->normalize)
		return v > 0 ? v : 0;
	w = llround(DIFF_WEIGHT_SCALE * (double)v / (double)df->total[side]);
	return w < 1 ? 1 : w;
}

static int by_change(const void *a, const void *b)
{
	const struct diff_function *x = a, *y = b;
	double sx = fabs(x->self_change), sy = fabs(y->self_change);
	double tx = fabs(x->total_change), ty = fabs(y->total_change);

	if (sx != sy)
		return sx < sy ? 1 : -1;
	if (tx != ty)
		return tx < ty ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Self and total of both sides per function, joined by frame: merged has
 * one frame per name, so rank's function rows are its frames. */
static int rank_both(struct diff *df)
{
	const struct profile *m = df->merged;
	struct rank_function *rows[2] = { NULL, NULL };
	size_t nrows[2];
	struct diff_function *funcs = calloc(m->nframes + 1, sizeof(*funcs));
	size_t n = 0;
	int r = -ENOMEM;

	if (!funcs)
		goto out;
	for (int side = 0; side < 2; side++) {
		r = rank_functions(m, (unsigned)side, &rows[side], &nrows[side]);
		if (r < 0)
			goto out;
		for (size_t i = 0; i < nrows[side]; i++) {
			struct diff_function *f = &funcs[rows[side][i].frame];

			f->self[side] = rows[side][i].self;
			f->total[side] = rows[side][i].total;
		}
	}
	for (size_t i = 0; i < m->nframes; i++) {
		struct diff_function f = funcs[i];

		if (!f.total[0] && !f.total[1])
			continue;
		f.name = m->frames[i].name;
		f.frame = (uint32_t)i;
		f.self_change = diff_change(df, f.self[0], f.self[1]);
		f.total_change = diff_change(df, f.total[0], f.total[1]);
		funcs[n++] = f;
	}
	qsort(funcs, n, sizeof(*funcs), by_change);
	df->funcs = funcs;
	df->nfuncs = n;
	funcs = NULL;
	r = 0;
out:
	free(rows[0]);
	free(rows[1]);
	free(funcs);
	return r;
}

int diff_new(const struct profile *before, const struct profile *after,
	     bool normalize, struct diff **ret_diff, struct diag *d)
{
	const struct profile *in[2] = { before, after };
	const struct value_type *tb = type_of(before), *ta = type_of(after);
	struct value_type types[3];
	struct diff *df = NULL;
	struct id_index by_name;
	uint32_t thread;
	int r;

	if (strcmp(tb->type, ta->type) || strcmp(tb->unit, ta->unit))
		return diag_set(d, -EINVAL,
				"BEFORE counts %s (%s) and AFTER %s (%s): a diff compares two profiles of one kind; record both with the same event",
				tb->type, tb->unit, ta->type, ta->unit);
	for (int side = 0; side < 2; side++)
		if (profile_total(in[side], 0) <= 0)
			return diag_set(d, -ENODATA,
					"%s has no samples: nothing to compare; record it longer or check that the file is the profile meant",
					side_names[side]);
	id_index_init(&by_name);
	df = calloc(1, sizeof(*df));
	r = -ENOMEM;
	if (!df || !(df->merged = profile_new()))
		goto out;
	df->normalize = normalize;
	for (int side = 0; side < 2; side++)
		df->total[side] = profile_total(in[side], 0);
	types[DIFF_BEFORE] = *tb;
	types[DIFF_AFTER] = *ta;
	types[DIFF_WEIGHT] = (struct value_type){ "weight", normalize ? "share" : tb->unit };
	r = profile_set_value_types(df->merged, types, 3);
	if (r < 0)
		goto out;
	df->merged->event = profile_intern_string(df->merged,
		after->event ? after->event : before->event);
	/* Threads are not compared: two runs' thread ids never match, and
	 * -t's thread frames are matched by name like any frame. */
	r = profile_intern_thread(df->merged, 0, "", &thread);
	if (r < 0)
		goto out;
	for (int side = 0; side < 2; side++) {
		r = add_side(df, &by_name, in[side], (enum diff_value)side, thread);
		if (r < 0)
			goto out;
	}
	/* Rounded once per stack and side (one thread: a sample is a stack),
	 * from the values the flame graph page is given, so that the page
	 * weighs the stacks exactly as the tree written was built. */
	for (size_t i = 0; i < df->merged->nsamples; i++) {
		int64_t *v = df->merged->samples[i].values;

		v[DIFF_WEIGHT] = weight(df, DIFF_BEFORE, v[DIFF_BEFORE]) +
				 weight(df, DIFF_AFTER, v[DIFF_AFTER]);
	}
	r = rank_both(df);
	if (r < 0)
		goto out;
	*ret_diff = df;
	df = NULL;
out:
	id_index_release(&by_name);
	diff_free(df);
	return r;
}

void diff_free(struct diff *df)
{
	if (!df)
		return;
	profile_free(df->merged);
	free(df->funcs);
	free(df);
}

double diff_share(const struct diff *df, enum diff_value side, int64_t v)
{
	return df->total[side] > 0 ? (double)v / (double)df->total[side] : 0;
}

double diff_change(const struct diff *df, int64_t before, int64_t after)
{
	if (!df->normalize)
		return (double)(after - before);
	return diff_share(df, DIFF_AFTER, after) - diff_share(df, DIFF_BEFORE, before);
}
