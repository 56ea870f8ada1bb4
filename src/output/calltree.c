/* calltree: merging stacks into one tree, and writing it safely into the
 * HTML and SVG templates. See calltree.h for the contract and
 * docs/flamegraph.md for the JSON the templates read. */
#include "output/calltree.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/json.h"
#include "base/numbuf.h"
#include "base/utf8.h"

/* Open-addressing map from a 64-bit key to a 32-bit id; the key lives in
 * the caller's arrays, so the table holds only ids (UINT32_MAX = empty). */
struct idmap {
	uint32_t *slots;
	size_t mask;
	size_t used;
};

static int idmap_init(struct idmap *m, size_t want)
{
	size_t n = 64;

	while (n < want * 2)
		n <<= 1;
	m->slots = malloc(n * sizeof(*m->slots));
	if (!m->slots)
		return -ENOMEM;
	memset(m->slots, 0xff, n * sizeof(*m->slots));
	m->mask = n - 1;
	m->used = 0;
	return 0;
}

/* Returns the slot where key is or would go. key_of reads an id's key. */
static uint32_t *idmap_slot(struct idmap *m, uint64_t key,
			    uint64_t (*key_of)(const void *, uint32_t),
			    const void *ctx)
{
	size_t i = hash_u64(key) & m->mask;

	while (m->slots[i] != UINT32_MAX && key_of(ctx, m->slots[i]) != key)
		i = (i + 1) & m->mask;
	return &m->slots[i];
}

static int idmap_grow(struct idmap *m, uint64_t (*key_of)(const void *, uint32_t),
		      const void *ctx)
{
	struct idmap bigger;
	int r;

	if ((m->used + 1) * 2 <= m->mask + 1)
		return 0;
	r = idmap_init(&bigger, m->mask + 1);
	if (r < 0)
		return r;
	for (size_t i = 0; i <= m->mask; i++)
		if (m->slots[i] != UINT32_MAX)
			*idmap_slot(&bigger, key_of(ctx, m->slots[i]), key_of,
				    ctx) = m->slots[i];
	bigger.used = m->used;
	free(m->slots);
	*m = bigger;
	return 0;
}

/* Interned strings are shared, so a function is known by its pointers. */
static uint64_t func_key_parts(const char *name, const char *module,
			       enum frame_kind kind)
{
	return hash_u64((uintptr_t)name) ^ hash_u64((uintptr_t)module * 31 + kind);
}

/* Maps every frame to its function, merging frames that differ only in
 * file, line or address. */
static int map_funcs(struct calltree *t, const struct profile *p,
		     uint32_t *frame_func)
{
	struct idmap m;
	int r = idmap_init(&m, p->nframes);

	if (r < 0)
		return r;
	t->funcs = calloc(p->nframes ? p->nframes : 1, sizeof(*t->funcs));
	if (!t->funcs) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < p->nframes; i++) {
		const struct frame *f = &p->frames[i];
		uint64_t key = func_key_parts(f->name, f->module, f->kind);
		uint32_t *slot = &m.slots[hash_u64(key) & m.mask];

		/* Hash collisions of distinct functions are possible, so
		 * compare the parts, not only the key. */
		for (;;) {
			const struct calltree_func *c;

			if (*slot == UINT32_MAX)
				break;
			c = &t->funcs[*slot];
			if (c->name == f->name && c->module == f->module &&
			    c->kind == f->kind)
				break;
			slot = &m.slots[((size_t)(slot - m.slots) + 1) & m.mask];
		}
		if (*slot == UINT32_MAX) {
			struct calltree_func *c = &t->funcs[t->nfuncs];

			c->name = f->name;
			c->module = f->module;
			c->file = f->file;
			c->line = f->line;
			c->kind = f->kind;
			*slot = (uint32_t)t->nfuncs++;
			m.used++;
		} else {
			struct calltree_func *c = &t->funcs[*slot];

			if (c->file != f->file)
				c->file = NULL;
			if (c->line != f->line)
				c->line = 0;
		}
		frame_func[i] = *slot;
	}
out:
	free(m.slots);
	return r;
}

static int compare_funcs(const void *a, const void *b, void *ctx)
{
	const struct calltree_func *fa = &((const struct calltree_func *)ctx)[*(const uint32_t *)a];
	const struct calltree_func *fb = &((const struct calltree_func *)ctx)[*(const uint32_t *)b];
	int c = strcmp(fa->name, fb->name);

	if (c)
		return c;
	if (fa->kind != fb->kind)
		return fa->kind < fb->kind ? -1 : 1;
	return strcmp(fa->module ? fa->module : "", fb->module ? fb->module : "");
}

/* Renumbers the functions in name order, so that ordering stacks by their
 * function ids orders every node's children by name. */
static int sort_funcs(struct calltree *t, uint32_t *frame_func, size_t nframes)
{
	uint32_t *order = malloc((t->nfuncs ? t->nfuncs : 1) * sizeof(*order));
	uint32_t *rank = malloc((t->nfuncs ? t->nfuncs : 1) * sizeof(*rank));
	struct calltree_func *sorted = malloc((t->nfuncs ? t->nfuncs : 1) * sizeof(*sorted));
	int r = -ENOMEM;

	if (!order || !rank || !sorted)
		goto out;
	for (size_t i = 0; i < t->nfuncs; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, t->nfuncs, sizeof(*order), compare_funcs, t->funcs);
	for (size_t i = 0; i < t->nfuncs; i++) {
		rank[order[i]] = (uint32_t)i;
		sorted[i] = t->funcs[order[i]];
	}
	for (size_t i = 0; i < nframes; i++)
		frame_func[i] = rank[frame_func[i]];
	free(t->funcs);
	t->funcs = sorted;
	sorted = NULL;
	r = 0;
out:
	free(order);
	free(rank);
	free(sorted);
	return r;
}

/* A stack with a value, as the builder sorts them. */
struct sorted_stack {
	uint32_t stack;
	uint32_t first, depth; /* its stack's, at hand for comparing */
	uint32_t key;	       /* sort_stacks' key_at, while sorting */
	int64_t value;
};

struct stack_order {
	const struct profile *p;
	/* Every stack's function ids, counted from the end the tree is built
	 * from, where p->stack_frames has its frames: sorting reads them many
	 * times per stack, and one array is far cheaper to read than three. */
	uint32_t *funcs;
};

/* Stacks in the lexicographic order of their function ids, a prefix
 * first: the order of a depth-first walk of the tree they make. */
static int compare_stacks(const void *a, const void *b, void *ctx)
{
	const struct stack_order *so = ctx;
	const struct sorted_stack *x = a, *y = b;
	const uint32_t *fa = so->funcs + x->first, *fb = so->funcs + y->first;

	for (uint32_t d = 0; d < x->depth && d < y->depth; d++)
		if (fa[d] != fb[d])
			return fa[d] < fb[d] ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* A stack's function at depth d plus one, 0 past its end: a prefix
 * sorts first. */
static uint32_t key_at(const struct stack_order *so,
		       const struct sorted_stack *x, uint32_t d)
{
	return d < x->depth ? so->funcs[x->first + d] + 1 : 0;
}

/* Sorts a few stacks that share their first d functions, by insertion:
 * the multikey quicksort's last step, where qsort_r's calls to
 * compare_stacks (from depth 0, through a pointer, after a merge sort's
 * setup) cost three times as much as the rest of the sort. */
static void sort_few(const struct stack_order *so, struct sorted_stack *a,
		     size_t n, uint32_t d)
{
	for (size_t i = 1; i < n; i++) {
		struct sorted_stack x = a[i];
		const uint32_t *fx = so->funcs + x.first;
		size_t j = i;

		while (j > 0) {
			const struct sorted_stack *y = &a[j - 1];
			const uint32_t *fy = so->funcs + y->first;
			uint32_t k = d;

			while (k < x.depth && k < y->depth && fx[k] == fy[k])
				k++;
			/* Stop at the first not after x: y <= x. */
			if (k < x.depth && k < y->depth ? fy[k] < fx[k] : y->depth <= x.depth)
				break;
			a[j] = a[j - 1];
			j--;
		}
		a[j] = x;
	}
}

static uint32_t median3(uint32_t a, uint32_t b, uint32_t c)
{
	if (a > b) {
		uint32_t t = a;

		a = b;
		b = t;
	}
	return c < a ? a : c > b ? b : c;
}

/* Sorts a[0..n) as compare_stacks orders them, for stacks that share
 * their first d functions and whose key is their function at depth d.
 * Stacks share long prefixes, which a comparison sort reads again at each
 * comparison; this (Bentley and Sedgewick's multikey quicksort) splits
 * the stacks into those below, at and above one key and goes one function
 * deeper only with those at it, so it reads each stack's function at a
 * depth about once per split. It takes half the time qsort does on the
 * stacks of two 100,000-stack profiles. Past rounds splits (bad pivots,
 * by chance or on purpose), what is left goes to qsort: the recursion
 * is at most rounds deep, and the time bounded. */
static void sort_stacks(const struct stack_order *so, struct sorted_stack *a,
			size_t n, uint32_t d, unsigned rounds)
{
	while (n > 1) {
		size_t lt = 0, i = 0, gt = n;
		uint32_t pivot;

		if (n < 16) {
			sort_few(so, a, n, d);
			return;
		}
		if (!rounds--) {
			qsort_r(a, n, sizeof(*a), compare_stacks, (void *)so);
			return;
		}
		pivot = median3(a[0].key, a[n / 2].key, a[n - 1].key);
		while (i < gt) {
			struct sorted_stack x = a[i];

			if (x.key < pivot) {
				a[i++] = a[lt];
				a[lt++] = x;
			} else if (x.key > pivot) {
				a[i] = a[--gt];
				a[gt] = x;
			} else {
				i++;
			}
		}
		sort_stacks(so, a, lt, d, rounds);
		sort_stacks(so, a + gt, n - gt, d, rounds);
		/* Those at the pivot: the same stack if it ended there. */
		if (!pivot)
			return;
		a += lt;
		n = gt - lt;
		d++;
		for (size_t j = 0; j < n; j++)
			a[j].key = key_at(so, &a[j], d);
	}
}

/* Every node's totals, its self and its children's totals (totals and
 * also values hold the selfs until then): nodes come in pre-order, after
 * their parent, so one pass from the last adds each subtree to its parent
 * complete. (Adding a stack's value to each node it passes through costs
 * its depth; this, one step per node.) */
static void sum_totals(struct calltree *t)
{
	const size_t w = t->nalso;

	for (size_t i = t->nnodes; i-- > 1;) {
		const struct calltree_node *n = &t->nodes[i];

		t->nodes[n->parent].total += n->total;
		for (size_t k = 0; k < w; k++)
			t->also[n->parent * w + k] += t->also[i * w + k];
	}
}

int calltree_build(const struct profile *p, unsigned v, bool reverse,
		   size_t max_nodes, struct calltree **ret_tree)
{
	return calltree_build_also(p, v, NULL, 0, reverse, max_nodes, ret_tree);
}

/* Builds the tree in one pass over the sorted stacks: a stack shares with
 * the one before it the nodes of their common prefix and creates the
 * rest, so nodes are made in pre-order, children in name order, and no
 * lookup table is needed. */
int calltree_build_also(const struct profile *p, unsigned v,
			const unsigned *also, unsigned nalso, bool reverse,
			size_t max_nodes, struct calltree **ret_tree)
{
	struct calltree *t = calloc(1, sizeof(*t));
	struct stack_order so = { .p = p };
	struct sorted_stack *order = NULL;
	uint32_t *frame_func = NULL, *path = NULL, path_len = 0;
	const uint32_t *prev_fs = NULL;
	int64_t *by_stack = NULL, *also_by_stack = NULL;
	size_t cap, norder = 0;
	uint32_t max_depth = 0;
	int r = -ENOMEM;

	if (!t)
		return -ENOMEM;
	for (unsigned k = 0; k < nalso; k++)
		if (nalso > PROFILE_MAX_VALUES || also[k] >= PROFILE_MAX_VALUES) {
			free(t);
			return -EINVAL;
		}
	t->nalso = nalso;
	if (!max_nodes || max_nodes > CALLTREE_MAX_NODES)
		max_nodes = CALLTREE_MAX_NODES;
	t->reversed = reverse;
	/* Every stack frame could be a node of its own; no more are needed. */
	cap = p->nstack_frames + 1 < max_nodes ? p->nstack_frames + 1 : max_nodes;
	for (size_t s = 0; s < p->nstacks; s++)
		if (p->stacks[s].depth > max_depth)
			max_depth = p->stacks[s].depth;
	t->nodes = malloc(cap * sizeof(*t->nodes));
	frame_func = malloc((p->nframes ? p->nframes : 1) * sizeof(*frame_func));
	by_stack = calloc(p->nstacks ? p->nstacks : 1, sizeof(*by_stack));
	order = malloc((p->nstacks ? p->nstacks : 1) * sizeof(*order));
	path = malloc((max_depth + 1) * sizeof(*path));
	t->stack_node = malloc((p->nstacks ? p->nstacks : 1) * sizeof(*t->stack_node));
	so.funcs = malloc((p->nstack_frames ? p->nstack_frames : 1) * sizeof(*so.funcs));
	if (!t->nodes || !frame_func || !by_stack || !order || !path ||
	    !t->stack_node || !so.funcs)
		goto out;
	memset(t->stack_node, 0xff, p->nstacks * sizeof(*t->stack_node));
	t->nstacks = p->nstacks;
	if (nalso) {
		t->also = calloc(cap * nalso, sizeof(*t->also));
		also_by_stack = calloc((p->nstacks ? p->nstacks : 1) * nalso,
				       sizeof(*also_by_stack));
		if (!t->also || !also_by_stack)
			goto out;
	}
	r = map_funcs(t, p, frame_func);
	if (r < 0)
		goto out;
	r = sort_funcs(t, frame_func, p->nframes);
	if (r < 0)
		goto out;
	for (size_t s = 0; s < p->nstacks; s++) {
		const struct stack *st = &p->stacks[s];
		const uint32_t *f = profile_stack_frames(p, (uint32_t)s);

		for (uint32_t d = 0; d < st->depth; d++)
			so.funcs[st->first + d] = frame_func[f[reverse ? st->depth - 1 - d : d]];
	}

	/* Threads are merged first: a stack is drawn once however many
	 * threads ran it (with -t the thread is already its root frame). */
	for (size_t i = 0; i < p->nsamples; i++) {
		by_stack[p->samples[i].stack] += p->samples[i].values[v];
		for (unsigned k = 0; k < nalso; k++)
			also_by_stack[(size_t)p->samples[i].stack * nalso + k] +=
				p->samples[i].values[also[k]];
	}
	for (size_t s = 0; s < p->nstacks; s++)
		if (by_stack[s])
			order[norder++] = (struct sorted_stack){
				.stack = (uint32_t)s, .first = p->stacks[s].first,
				.depth = p->stacks[s].depth, .value = by_stack[s] };
	for (size_t k = 0; k < norder; k++)
		order[k].key = key_at(&so, &order[k], 0);
	sort_stacks(&so, order, norder, 0, 64);

	t->nodes[0] = (struct calltree_node){ .func = CALLTREE_NONE,
					      .parent = CALLTREE_NONE,
					      .next_sibling = CALLTREE_NONE };
	t->nnodes = 1;
	/* path[d] is the node at depth d + 1 of the previous stack; path_len
	 * of them exist (fewer than its depth when it was cut). */
	for (size_t k = 0; k < norder; k++) {
		/* Its functions and depth from order[k], read in sequence, not
		 * through p->stacks[s], a miss at each stack. */
		uint32_t s = order[k].stack, depth = order[k].depth, common = 0;
		const uint32_t *fs = so.funcs + order[k].first;
		int64_t value = order[k].value;
		const int64_t *av = nalso ? &also_by_stack[(size_t)s * nalso] : NULL;
		uint32_t node = 0, d;

		/* The stacks are in tree order, not in memory order: the
		 * functions and values of those a few ahead are fetched while
		 * this one is added, not waited for (a stack's functions are
		 * about 100 bytes: two cache lines). */
		if (k + 4 < norder) {
			const uint32_t *ahead = so.funcs + order[k + 4].first;

			__builtin_prefetch(ahead);
			if (order[k + 4].depth > 16)
				__builtin_prefetch(ahead + 16);
			if (nalso)
				__builtin_prefetch(&also_by_stack[(size_t)order[k + 4].stack * nalso]);
		}
		while (k && common < path_len && common < depth && fs[common] == prev_fs[common])
			common++;
		if (common)
			node = path[common - 1];
		for (d = common; d < depth; d++) {
			struct calltree_node *n;
			uint32_t id;

			if (t->nnodes >= cap) {
				t->cut_value += value;
				break;
			}
			id = (uint32_t)t->nnodes++;
			n = &t->nodes[id];
			n->func = fs[d];
			n->parent = node;
			n->next_sibling = CALLTREE_NONE;
			n->depth = d + 1;
			n->total = 0;
			/* The previous stack's node at this depth, when it
			 * hangs from the same parent, is the previous sibling;
			 * else this is the first child, the node after its
			 * parent. */
			if (d == common && d < path_len)
				t->nodes[path[d]].next_sibling = id;
			if (d + 1 > t->max_depth)
				t->max_depth = d + 1;
			path[d] = id;
			node = id;
		}
		t->nodes[node].total += value;
		t->stack_node[s] = node;
		for (unsigned j = 0; j < nalso; j++)
			t->also[(size_t)node * nalso + j] += av[j];
		path_len = d;
		prev_fs = fs;
	}
	sum_totals(t);
	r = 0;
out:
	free(frame_func);
	free(so.funcs);
	free(by_stack);
	free(also_by_stack);
	free(order);
	free(path);
	if (r < 0) {
		calltree_free(t);
		return r;
	}
	*ret_tree = t;
	return 0;
}

void calltree_free(struct calltree *t)
{
	if (!t)
		return;
	free(t->nodes);
	free(t->funcs);
	free(t->also);
	free(t->stack_node);
	free(t);
}

int64_t calltree_min_total(const struct calltree *t, double minwidth,
			   unsigned width)
{
	double min;

	if (minwidth <= 0 || !width || t->nodes[0].total <= 0)
		return 1;
	min = (double)t->nodes[0].total * minwidth / width;
	return min < 1 ? 1 : (int64_t)(min + 0.999999);
}

void calltree_written_ids(const struct calltree *t, int64_t min_total,
			  uint32_t *ids)
{
	uint32_t next = 0, skip_below = UINT32_MAX;

	/* As write_nodes walks: in pre-order, a node below min_total is left
	 * out with its whole subtree, whose nodes take its parent's id. */
	for (size_t i = 0; i < t->nnodes; i++) {
		const struct calltree_node *n = &t->nodes[i];

		if (n->depth > skip_below) {
			ids[i] = ids[n->parent];
			continue;
		}
		skip_below = UINT32_MAX;
		if (n->total >= min_total) {
			ids[i] = next++;
			continue;
		}
		skip_below = n->depth;
		ids[i] = i ? ids[n->parent] : CALLTREE_NONE;
	}
}

void calltree_put_xml(const char *str, size_t max, FILE *out)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	size_t used = 0;

	while (*s) {
		uint32_t cp;
		size_t n = utf8_next(s, &cp);

		if (used + n > max) {
			fputs("...", out);
			break;
		}
		used += n;
		switch (cp) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		case '\t': case '\n': case '\r':
			/* Kept out of names so that a tooltip's lines are the
			 * writer's own. */
			putc(' ', out);
			break;
		default:
			/* XML 1.0 has no way to carry these, not even as
			 * character references. */
			if (cp < 0x20 || cp == 0xfffe || cp == 0xffff || cp == 0xfffd)
				fputs("\xef\xbf\xbd", out);
			else
				fwrite(s, 1, n, out);
		}
		s += n;
	}
}

/* Dense indexes for the distinct strings (modules, files) the JSON lists. */
struct strtab {
	const char **strs;
	size_t n;
	struct idmap m;
};

static uint64_t strtab_key_of(const void *ctx, uint32_t id)
{
	return (uintptr_t)((const struct strtab *)ctx)->strs[id];
}

static int strtab_index(struct strtab *st, const char *s, int64_t *ret)
{
	uint32_t *slot;

	if (!s) {
		*ret = -1;
		return 0;
	}
	slot = idmap_slot(&st->m, (uintptr_t)s, strtab_key_of, st);
	if (*slot == UINT32_MAX) {
		*slot = (uint32_t)st->n;
		st->strs[st->n++] = s;
		st->m.used++;
		if (idmap_grow(&st->m, strtab_key_of, st) < 0)
			return -ENOMEM;
	}
	*ret = *slot;
	return 0;
}

static void put_strings(const struct strtab *st, FILE *out)
{
	putc('[', out);
	for (size_t i = 0; i < st->n; i++) {
		if (i)
			putc(',', out);
		json_put_string(out, st->strs[i], CALLTREE_MAX_NAME, JSON_HTML_SAFE);
	}
	putc(']', out);
}

/* Whether node i is written, the nodes walked in pre-order: one below
 * min_total is left out with its whole subtree. skip_below is the walk's
 * state, UINT32_MAX to start. */
static bool written(const struct calltree *t, size_t i, int64_t min_total,
		    uint32_t *skip_below)
{
	const struct calltree_node *nd = &t->nodes[i];

	if (nd->depth > *skip_below)
		return false;
	*skip_below = UINT32_MAX;
	if (nd->total < min_total) {
		*skip_below = nd->depth;
		return false;
	}
	return true;
}

/* nodes: pre-order (node ids are), three numbers each: func (-1 for the
 * root), total, number of children written. When children were left out
 * the count is written as -(count + 1) and a fourth number follows, their
 * value, so self stays exact: total - children - left out. */
static int write_nodes(const struct calltree *t, const uint32_t *func_out,
		       int64_t min_total, struct numbuf *nb)
{
	/* Each written function's number, with its comma, made once: a
	 * million nodes name twenty thousand functions. */
	struct numbuf_text *fnum = malloc((t->nfuncs ? t->nfuncs : 1) * sizeof(*fnum));
	uint32_t skip_below = UINT32_MAX;

	if (!fnum)
		return -ENOMEM;
	for (size_t f = 0; f < t->nfuncs; f++)
		if (func_out[f] != UINT32_MAX)
			numbuf_text_make(&fnum[f], ',', func_out[f]);
	for (size_t i = 0; i < t->nnodes; i++) {
		const struct calltree_node *nd = &t->nodes[i];
		int64_t kids = 0, left_out = 0;

		if (!written(t, i, min_total, &skip_below))
			continue;
		for (uint32_t c = calltree_first_child(t, (uint32_t)i); c != CALLTREE_NONE;
		     c = t->nodes[c].next_sibling) {
			if (t->nodes[c].total >= min_total)
				kids++;
			else
				left_out += t->nodes[c].total;
		}
		if (i)
			numbuf_put_text(nb, &fnum[nd->func]);
		else
			numbuf_put(nb, 0, -1);
		numbuf_put(nb, ',', nd->total);
		numbuf_put(nb, ',', left_out ? -(kids + 1) : kids);
		if (left_out)
			numbuf_put(nb, ',', left_out);
	}
	free(fnum);
	return 0;
}

/* stacks: a tree with also values (a diff) instead of nodes, to be drawn
 * from those values (the page weighs them). The same nodes in the same
 * order, written as the stacks that make them: first how many nodes there
 * are below the root, then for each node where a
 * stack ends or children were left out, the depth of the node it shares
 * with the stack before (its new nodes hang from it), twice the number of
 * new nodes (plus one when children were left out), their functions, then
 * the node's self of each also value; when children were left out, their
 * total of each also value and their value follow. Values are zigzag
 * coded, everything packed (numbuf_put_packed). Totals are for the page
 * to sum up: most nodes of a big tree are in the middle of a stack, and
 * cost one number here, their function, where nodes and the totals and
 * selfs of two values would take seven. */
static int write_stacks(const struct calltree *t, const uint32_t *func_out,
			int64_t min_total, struct numbuf *nb)
{
	uint32_t *chain = malloc((t->max_depth + 1) * sizeof(*chain));
	uint32_t skip_below = UINT32_MAX;
	int64_t nchain = 0;

	if (!chain)
		return -ENOMEM;
	/* The page sizes its arrays by it, then decodes in one pass. */
	for (size_t i = 0; i < t->nnodes; i++)
		nchain += written(t, i, min_total, &skip_below) && i;
	numbuf_put_packed(nb, (uint64_t)nchain);
	nchain = 0;
	skip_below = UINT32_MAX;
	for (size_t i = 0; i < t->nnodes; i++) {
		const struct calltree_node *nd = &t->nodes[i];
		int64_t left_out = 0, left_also[PROFILE_MAX_VALUES] = { 0 };
		int64_t self[PROFILE_MAX_VALUES];
		int64_t own = nd->total; /* less its children's: its self */
		bool kids = false, cut = false, ends;

		if (!written(t, i, min_total, &skip_below))
			continue;
		if (i)
			chain[nchain++] = (uint32_t)i;
		for (unsigned k = 0; k < t->nalso; k++)
			self[k] = t->also[i * t->nalso + k];
		for (uint32_t c = calltree_first_child(t, (uint32_t)i); c != CALLTREE_NONE;
		     c = t->nodes[c].next_sibling) {
			const int64_t *a = &t->also[(size_t)c * t->nalso];

			own -= t->nodes[c].total;

			for (unsigned k = 0; k < t->nalso; k++)
				self[k] -= a[k];
			if (t->nodes[c].total >= min_total) {
				kids = true;
				continue;
			}
			cut = true;
			left_out += t->nodes[c].total;
			for (unsigned k = 0; k < t->nalso; k++)
				left_also[k] += a[k];
		}
		ends = own != 0;
		for (unsigned k = 0; k < t->nalso; k++)
			ends = ends || self[k];
		/* Any other node is followed by its first child. */
		if (kids && !cut && !ends)
			continue;
		numbuf_put_packed(nb, nd->depth - (uint32_t)nchain);
		numbuf_put_packed(nb, 2 * (uint64_t)nchain + cut);
		for (int64_t k = 0; k < nchain; k++)
			numbuf_put_packed(nb, func_out[t->nodes[chain[k]].func]);
		for (unsigned k = 0; k < t->nalso; k++)
			numbuf_put_packed(nb, numbuf_zigzag(self[k]));
		if (cut) {
			for (unsigned k = 0; k < t->nalso; k++)
				numbuf_put_packed(nb, numbuf_zigzag(left_also[k]));
			numbuf_put_packed(nb, numbuf_zigzag(left_out));
		}
		nchain = 0;
	}
	free(chain);
	return 0;
}

static void put_notes(const struct calltree *t, const struct profile *p,
		      int64_t min_total, uint64_t omitted, FILE *out)
{
	char buf[256];
	bool first = true;

#define NOTE(s)                                              \
	do {                                                 \
		if (!first)                                  \
			putc(',', out);                      \
		first = false;                               \
		json_put_string(out, (s), CALLTREE_MAX_NAME, JSON_HTML_SAFE); \
	} while (0)

	putc('[', out);
	for (unsigned i = 0; i < p->nnotes; i++)
		NOTE(p->notes[i]);
	if (p->degraded.lost_samples) {
		snprintf(buf, sizeof(buf), "samples lost: %" PRIu64,
			 p->degraded.lost_samples);
		NOTE(buf);
	}
	if (p->degraded.truncated_stacks) {
		snprintf(buf, sizeof(buf),
			 "samples with truncated stacks: %" PRIu64,
			 p->degraded.truncated_stacks);
		NOTE(buf);
	}
	if (p->degraded.unsymbolized_frames) {
		snprintf(buf, sizeof(buf), "frames without a symbol: %" PRIu64,
			 p->degraded.unsymbolized_frames);
		NOTE(buf);
	}
	if (p->target_exited)
		NOTE("the target exited during the recording");
	if (t->cut_value) {
		snprintf(buf, sizeof(buf),
			 "call tree limited to %zu nodes: stacks worth %" PRId64
			 " cut short",
			 t->nnodes, t->cut_value);
		NOTE(buf);
	}
	if (omitted) {
		snprintf(buf, sizeof(buf),
			 "frames below %" PRId64 " (minwidth) left out: %" PRIu64,
			 min_total, omitted);
		NOTE(buf);
	}
	putc(']', out);
#undef NOTE
}

int calltree_write_json(const struct calltree *t, const struct profile *p,
			const struct output_options *o, int64_t min_total,
			FILE *out)
{
	struct strtab modules = { 0 }, files = { 0 };
	uint32_t *func_out = NULL, *used = NULL;
	struct numbuf *nb = NULL;
	size_t nused = 0;
	uint64_t omitted = 0;
	const struct value_type *vt = &p->value_types[0];
	int r = -ENOMEM;

	func_out = malloc((t->nfuncs ? t->nfuncs : 1) * sizeof(*func_out));
	used = malloc((t->nfuncs ? t->nfuncs : 1) * sizeof(*used));
	modules.strs = malloc((t->nfuncs + 1) * sizeof(*modules.strs));
	files.strs = malloc((t->nfuncs + 1) * sizeof(*files.strs));
	nb = malloc(sizeof(*nb));
	if (!func_out || !used || !modules.strs || !files.strs || !nb ||
	    idmap_init(&modules.m, 64) < 0 || idmap_init(&files.m, 64) < 0)
		goto out;
	nb->n = 0;
	nb->out = out;

	/* Only the functions of drawn nodes are listed, renumbered in name
	 * order (the order of t->funcs), so a minwidth that prunes most of
	 * the tree shrinks the names too, and the page can sort siblings by
	 * number. */
	memset(used, 0, (t->nfuncs ? t->nfuncs : 1) * sizeof(*used));
	for (size_t i = 1; i < t->nnodes; i++) {
		const struct calltree_node *n = &t->nodes[i];

		if (n->total < min_total) {
			if (t->nodes[n->parent].total >= min_total)
				omitted++;
			continue;
		}
		/* A pruned node's subtree is pruned too: children never
		 * weigh more than their parent. */
		used[n->func] = 1;
	}
	for (size_t f = 0; f < t->nfuncs; f++) {
		func_out[f] = used[f] ? (uint32_t)nused : UINT32_MAX;
		if (used[f])
			used[nused++] = (uint32_t)f;
	}

	fputs("{\"version\":1,\"title\":", out);
	json_put_string(out, o->title ? o->title : "", CALLTREE_MAX_NAME, JSON_HTML_SAFE);
	fputs(",\"event\":", out);
	json_put_string(out, p->event ? p->event : "", 256, JSON_HTML_SAFE);
	fputs(",\"valueType\":", out);
	json_put_string(out, p->nvalues ? vt->type : "samples", 256, JSON_HTML_SAFE);
	fputs(",\"unit\":", out);
	json_put_string(out, p->nvalues ? vt->unit : "count", 256, JSON_HTML_SAFE);
	fputs(",\"command\":", out);
	json_put_string(out, p->command ? p->command : "", 256, JSON_HTML_SAFE);
	fprintf(out,
		",\"pid\":%d,\"durationNs\":%" PRIu64 ",\"startNs\":%" PRIu64
		",\"total\":%" PRId64 ",\"reverse\":%s,\"width\":%u"
		",\"minwidth\":%g,\"notes\":",
		(int)p->pid, p->duration_ns, p->start_ns, t->nodes[0].total,
		t->reversed ? "true" : "false", o->width, o->minwidth);
	put_notes(t, p, min_total, omitted, out);

	fputs(",\"names\":[", out);
	for (size_t i = 0; i < nused; i++) {
		if (i)
			putc(',', out);
		json_put_string(out, t->funcs[used[i]].name, CALLTREE_MAX_NAME, JSON_HTML_SAFE);
	}
	/* funcs: module, file, line, kind — four numbers per name. */
	fputs("],\"funcs\":[", out);
	for (size_t i = 0; i < nused; i++) {
		const struct calltree_func *f = &t->funcs[used[i]];
		int64_t mi, fi;

		if (strtab_index(&modules, f->module, &mi) < 0 ||
		    strtab_index(&files, f->file, &fi) < 0)
			goto out;
		numbuf_put(nb, i ? ',' : 0, mi);
		numbuf_put(nb, ',', fi);
		numbuf_put(nb, ',', f->line);
		numbuf_put(nb, ',', (int)f->kind);
	}
	numbuf_flush(nb);
	fputs("],\"modules\":", out);
	put_strings(&modules, out);
	fputs(",\"files\":", out);
	put_strings(&files, out);

	fputs(t->nalso ? ",\"stacks\":\"" : ",\"nodes\":[", out);
	r = 0;
	r = t->nalso ? write_stacks(t, func_out, min_total, nb) :
		       write_nodes(t, func_out, min_total, nb);
	numbuf_flush(nb);
	if (r < 0)
		goto out;
	fputs(t->nalso ? "\"}" : "]}", out);
	r = ferror(out) ? -EIO : 0;
out:
	free(nb);
	free(func_out);
	free(used);
	free(modules.strs);
	free(modules.m.slots);
	free(files.strs);
	free(files.m.slots);
	return r;
}

int calltree_fill_slots(const char *tmpl, size_t len,
			const struct calltree_slot *slots, size_t nslots,
			FILE *out)
{
	const char *at = tmpl, *end = tmpl + len;

	for (size_t k = 0; k < nslots; k++) {
		const char *b = memmem(at, (size_t)(end - at), slots[k].begin,
				       strlen(slots[k].begin)), *e;
		int r;

		if (!b)
			return -EINVAL;
		e = memmem(b, (size_t)(end - b), slots[k].end, strlen(slots[k].end));
		if (!e)
			return -EINVAL;
		fwrite(at, 1, (size_t)(b - at), out);
		r = slots[k].fill(slots[k].ctx, out);
		if (r < 0)
			return r;
		at = e + strlen(slots[k].end);
	}
	fwrite(at, 1, (size_t)(end - at), out);
	return 0;
}

int calltree_fill_template(const char *tmpl, size_t len, const char *begin,
			   const char *end,
			   int (*fill)(void *ctx, FILE *out), void *ctx,
			   FILE *out)
{
	struct calltree_slot slot = { begin, end, fill, ctx };

	return calltree_fill_slots(tmpl, len, &slot, 1, out);
}
