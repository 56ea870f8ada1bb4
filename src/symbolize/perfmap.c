#include "symbolize/perfmap.h"
#include "base/array.h"
#include "base/hex.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void perfmap_init(struct perfmap *m)
{
	memset(m, 0, sizeof(*m));
	strtab_init(&m->strs, PERFMAP_MAX_STRS);
}

void perfmap_release(struct perfmap *m)
{
	if (!m)
		return;
	free(m->v);
	free(m->segs);
	strtab_release(&m->strs);
	perfmap_init(m);
}

static int add(struct perfmap *m, uint64_t start, uint64_t size,
	       const char *name, size_t len)
{
	struct perfmap_entry *e;
	int err;

	if (m->n >= PERFMAP_MAX_ENTRIES)
		return -E2BIG;
	if (array_reserve(&m->v, &m->cap, m->n + 1, sizeof(*m->v)) < 0)
		return -ENOMEM;
	e = &m->v[m->n];
	err = strtab_add(&m->strs, name, len, &e->name);
	if (err < 0)
		return err;
	e->start = start;
	e->size = size;
	e->seq = (uint32_t)m->n;
	m->n++;
	m->stale = true;
	return 0;
}

static int parse_line(struct perfmap *m, const char *p, const char *end)
{
	uint64_t start, size;

	if (end > p && end[-1] == '\r')
		end--;
	if (hex_parse(p, end, HEX_PREFIX, &start, &p) < 0 || p == end || *p != ' ')
		return -EINVAL;
	p++;
	if (hex_parse(p, end, HEX_PREFIX, &size, &p) < 0 || p == end || *p != ' ')
		return -EINVAL;
	p++;
	if (p == end || size == 0 || start + size < start ||
	    memchr(p, '\0', (size_t)(end - p)))
		return -EINVAL;
	return add(m, start, size, p, (size_t)(end - p));
}

int perfmap_parse(struct perfmap *m, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	int err = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			break; /* the JIT is still writing this line */
		if (nl - p > PERFMAP_MAX_LINE) {
			m->skipped_lines++;
		} else if (nl > p) {
			err = parse_line(m, p, nl);
			if (err == -EINVAL) {
				m->skipped_lines++;
				err = 0;
			} else if (err < 0) {
				break;
			}
		}
		m->consumed += (size_t)(nl + 1 - p);
		p = nl + 1;
	}
	return err;
}

static int cmp_u64(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return a < b ? -1 : a > b;
}

/* qsort has no context argument; a perfmap is used by one thread at a
 * time, so the entries being sorted are passed through a static. */
static const struct perfmap_entry *sort_entries;

static int cmp_by_start(const void *pa, const void *pb)
{
	const struct perfmap_entry *a = &sort_entries[*(const uint32_t *)pa];
	const struct perfmap_entry *b = &sort_entries[*(const uint32_t *)pb];

	return a->start < b->start ? -1 : a->start > b->start;
}

/* A max-heap of entry indexes by seq: the entries open at a point, the
 * latest on top. */
static void heap_push(uint32_t *h, size_t *n, const struct perfmap_entry *v,
		      uint32_t x)
{
	size_t i = (*n)++;

	while (i > 0 && v[h[(i - 1) / 2]].seq < v[x].seq) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = x;
}

static void heap_pop(uint32_t *h, size_t *n, const struct perfmap_entry *v)
{
	uint32_t x = h[--(*n)];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && v[h[c + 1]].seq > v[h[c]].seq)
			c++;
		if (v[h[c]].seq <= v[x].seq)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = x;
}

/* Sweeps the boundaries of all entries in address order, keeping the
 * entries open at each point in a heap, so every stretch between two
 * boundaries is named by the latest line covering it. */
static int rebuild(struct perfmap *m)
{
	uint64_t *bounds = NULL;
	uint32_t *order = NULL, *heap = NULL;
	struct perfmap_seg *segs = NULL;
	size_t nb = 0, nh = 0, ns = 0, next = 0;
	int err = -ENOMEM;

	if (m->n) {
		bounds = malloc(2 * m->n * sizeof(*bounds));
		order = malloc(m->n * sizeof(*order));
		heap = malloc(m->n * sizeof(*heap));
		segs = malloc(2 * m->n * sizeof(*segs));
		if (!bounds || !order || !heap || !segs)
			goto out;
	}
	for (size_t i = 0; i < m->n; i++) {
		bounds[nb++] = m->v[i].start;
		bounds[nb++] = m->v[i].start + m->v[i].size;
		order[i] = (uint32_t)i;
	}
	qsort(bounds, nb, sizeof(*bounds), cmp_u64);
	sort_entries = m->v;
	qsort(order, m->n, sizeof(*order), cmp_by_start);
	sort_entries = NULL;
	for (size_t b = 0; b + 1 < nb; b++) {
		uint64_t pos = bounds[b];

		if (pos == bounds[b + 1])
			continue;
		while (next < m->n && m->v[order[next]].start <= pos)
			heap_push(heap, &nh, m->v, order[next++]);
		while (nh && m->v[heap[0]].start + m->v[heap[0]].size <= pos)
			heap_pop(heap, &nh, m->v);
		if (!nh)
			continue;
		if (ns && segs[ns - 1].entry == heap[0] && segs[ns - 1].end == pos)
			segs[ns - 1].end = bounds[b + 1];
		else
			segs[ns++] = (struct perfmap_seg){ pos, bounds[b + 1], heap[0] };
	}
	free(m->segs);
	m->segs = segs;
	m->nsegs = ns;
	m->stale = false;
	segs = NULL;
	err = 0;
out:
	free(bounds);
	free(order);
	free(heap);
	free(segs);
	return err;
}

const struct perfmap_entry *perfmap_find(struct perfmap *m, uint64_t addr)
{
	size_t lo = 0, hi;

	if (m->stale && rebuild(m) < 0)
		return NULL;
	hi = m->nsegs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->segs[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->nsegs && m->segs[lo].start <= addr)
		return &m->v[m->segs[lo].entry];
	return NULL;
}
