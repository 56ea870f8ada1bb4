#include "output/rank.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/id_index.h"

struct fn_ctx {
	const struct profile *p;
	const struct rank_function *rows;
};

/* Names and modules are interned, so pointers compare. */
static int fn_match(const void *ctx, uint32_t id, const void *key)
{
	const struct fn_ctx *c = ctx;
	const struct frame *a = &c->p->frames[c->rows[id].frame];
	const struct frame *b = key;

	return a->name == b->name && a->module == b->module;
}

static int by_self_then_total(const void *a, const void *b)
{
	const struct rank_function *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return (x->frame > y->frame) - (x->frame < y->frame);
}

int rank_functions(const struct profile *p, unsigned v,
		   struct rank_function **ret, size_t *ret_n)
{
	struct rank_function *rows = NULL;
	uint32_t *frame_row = NULL, *seen = NULL;
	struct id_index index;
	size_t n = 0;
	int r = -ENOMEM;

	id_index_init(&index);
	rows = calloc(p->nframes + 1, sizeof(*rows));
	frame_row = malloc((p->nframes + 1) * sizeof(*frame_row));
	seen = calloc(p->nframes + 1, sizeof(*seen));
	if (!rows || !frame_row || !seen)
		goto out;

	/* Map each frame to its function row once. */
	for (size_t f = 0; f < p->nframes; f++) {
		const struct frame *fr = &p->frames[f];
		struct fn_ctx ctx = { p, rows };
		uintptr_t key[2] = { (uintptr_t)fr->name, (uintptr_t)fr->module };
		uint64_t h = hash_bytes(key, sizeof(key), 7);
		uint32_t row = id_index_find(&index, h, fn_match, &ctx, fr);

		if (row == ID_NONE) {
			row = (uint32_t)n;
			rows[n++].frame = (uint32_t)f;
			if (id_index_insert(&index, h, row) < 0)
				goto out;
		}
		frame_row[f] = row;
	}

	/* seen[row] holds the 1-based sample index that last counted the
	 * row, so a recursive function counts once per stack in total. */
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct sample *s = &p->samples[i];
		const struct stack *st = &p->stacks[s->stack];
		const uint32_t *frames = profile_stack_frames(p, s->stack);
		int64_t value = s->values[v];

		/* Nothing to add (a diff ranks each side's stacks apart,
		 * and most stacks of a diff are in one side only). */
		if (!st->depth || !value)
			continue;
		rows[frame_row[frames[st->depth - 1]]].self += value;
		for (uint32_t d = 0; d < st->depth; d++) {
			uint32_t row = frame_row[frames[d]];

			if (seen[row] != i + 1) {
				seen[row] = (uint32_t)(i + 1);
				rows[row].total += value;
			}
		}
	}
	qsort(rows, n, sizeof(*rows), by_self_then_total);
	*ret = rows;
	*ret_n = n;
	rows = NULL;
	r = 0;
out:
	free(rows);
	free(frame_row);
	free(seen);
	id_index_release(&index);
	return r;
}

static int by_value(const void *a, const void *b)
{
	const struct rank_stack *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? 1 : -1;
	return (x->stack > y->stack) - (x->stack < y->stack);
}

int rank_stacks(const struct profile *p, unsigned v, struct rank_stack **ret,
		size_t *ret_n)
{
	struct rank_stack *rows = calloc(p->nstacks + 1, sizeof(*rows));
	size_t n = 0;

	if (!rows)
		return -ENOMEM;
	for (size_t s = 0; s < p->nstacks; s++)
		rows[s].stack = (uint32_t)s;
	for (size_t i = 0; i < p->nsamples; i++)
		rows[p->samples[i].stack].value += p->samples[i].values[v];
	qsort(rows, p->nstacks, sizeof(*rows), by_value);
	while (n < p->nstacks && rows[n].value)
		n++;
	*ret = rows;
	*ret_n = n;
	return 0;
}

const char *rank_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

const char *rank_frame_label(const struct frame *f, char *buf, size_t len)
{
	char where[512] = "", module[300] = "";

	if (f->file && f->line)
		snprintf(where, sizeof(where), " (%s:%u)", rank_basename(f->file),
			 f->line);
	/* Unknown frames already carry "module+0xOFFSET"; kernel and thread
	 * frames name themselves; "[vdso]" brackets itself. */
	if (f->module && f->kind != FRAME_UNKNOWN && f->kind != FRAME_KERNEL &&
	    f->kind != FRAME_THREAD)
		snprintf(module, sizeof(module),
			 f->module[0] == '[' ? " %s" : " [%s]",
			 rank_basename(f->module));
	snprintf(buf, len, "%s%s%s%s", f->name, where,
		 f->kind == FRAME_INLINED ? " [inlined]" : "", module);
	return buf;
}

const char *rank_frame_collapsed(const struct frame *f, char *buf, size_t len)
{
	char line[16] = "";

	if (f->line)
		snprintf(line, sizeof(line), ":%u", f->line);
	snprintf(buf, len, "%s%s%s", f->name, line,
		 f->kind == FRAME_INLINED ? "_[i]" : "");
	return buf;
}
