#include "output/timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/numbuf.h"

/* The span the slices cover: the recording, or the events' own span for
 * a source that did not say when it started or how long it ran. */
static void span_of(const struct profile *p, uint64_t *ret_start,
		    uint64_t *ret_len)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	for (size_t i = 0; i < p->nevents; i++) {
		if (p->events[i].time_ns < lo)
			lo = p->events[i].time_ns;
		if (p->events[i].time_ns > hi)
			hi = p->events[i].time_ns;
	}
	if (p->start_ns && p->duration_ns) {
		*ret_start = p->start_ns;
		*ret_len = p->duration_ns;
		return;
	}
	*ret_start = p->start_ns && p->start_ns <= lo ? p->start_ns : lo;
	*ret_len = hi - *ret_start + 1;
	if (!*ret_len) /* every time there is, from 0 to UINT64_MAX */
		*ret_len = UINT64_MAX;
}

/* A slice is a whole number of sampling intervals, two at least, for a
 * time-based event: otherwise a slice holds 3 samples, the next 4, and the
 * strip shows the sampling's own rhythm instead of the program's. */
static uint64_t slice_of(const struct profile *p, uint64_t len)
{
	uint64_t step = (len + TIMELINE_MAX_SLICES - 1) / TIMELINE_MAX_SLICES;
	uint64_t unit = 1000000; /* 1 ms when the interval is not a time */

	if (p->interval_unit && !strcmp(p->interval_unit, "nanoseconds") &&
	    p->interval >= 1000 && p->interval <= len / 2) {
		unit = p->interval;
		if (step < 2 * unit)
			step = 2 * unit;
	}
	return step / unit * unit + (step % unit ? unit : 0);
}

struct timeline {
	const struct profile *p;
	uint64_t start, step;
	size_t nslices;
	size_t nwritten;     /* nodes of the tree as written */
	uint32_t *node_of;   /* per event: its written node, or CALLTREE_NONE */
	double *weight;	     /* per stack: the value one unit of event is worth */
	uint32_t *by_slice;  /* event indexes, slice by slice */
	size_t *slice_first; /* nslices + 1 offsets into by_slice */
};

static void timeline_release(struct timeline *tl)
{
	free(tl->node_of);
	free(tl->weight);
	free(tl->by_slice);
	free(tl->slice_first);
}

static size_t slice_at(const struct timeline *tl, uint64_t time_ns)
{
	uint64_t k = time_ns > tl->start ? (time_ns - tl->start) / tl->step : 0;

	return k < tl->nslices ? (size_t)k : tl->nslices - 1;
}

/* Each event's node, and what it is worth: a stack's value spread evenly
 * over its events, so the slices add up to the tree whatever value v
 * measures (bytes of an allocation profile, not only samples). */
static int place_events(struct timeline *tl, const struct calltree *t,
			unsigned v, int64_t min_total)
{
	const struct profile *p = tl->p;
	uint32_t *written = malloc((t->nnodes ? t->nnodes : 1) * sizeof(*written));
	double *units = calloc(p->nstacks ? p->nstacks : 1, sizeof(*units));
	int r = -ENOMEM;

	tl->node_of = malloc((p->nevents ? p->nevents : 1) * sizeof(*tl->node_of));
	tl->weight = calloc(p->nstacks ? p->nstacks : 1, sizeof(*tl->weight));
	tl->by_slice = malloc((p->nevents ? p->nevents : 1) * sizeof(*tl->by_slice));
	tl->slice_first = calloc(tl->nslices + 1, sizeof(*tl->slice_first));
	if (!written || !units || !tl->node_of || !tl->weight || !tl->by_slice ||
	    !tl->slice_first)
		goto out;
	calltree_written_ids(t, min_total, written);
	for (size_t i = 0; i < t->nnodes; i++)
		if (written[i] != CALLTREE_NONE && written[i] >= tl->nwritten)
			tl->nwritten = written[i] + 1;
	for (size_t i = 0; i < p->nsamples; i++)
		tl->weight[p->samples[i].stack] += (double)p->samples[i].values[v];
	for (size_t i = 0; i < p->nevents; i++) {
		const struct sample_event *e = &p->events[i];
		uint32_t node = e->stack < t->nstacks ? t->stack_node[e->stack] : CALLTREE_NONE;

		tl->node_of[i] = node == CALLTREE_NONE ? CALLTREE_NONE : written[node];
		if (tl->node_of[i] != CALLTREE_NONE)
			units[e->stack] += (double)e->value;
	}
	for (size_t s = 0; s < p->nstacks; s++)
		tl->weight[s] = units[s] != 0 ? tl->weight[s] / units[s] : 0;
	/* A counting sort of the events by slice. */
	for (size_t i = 0; i < p->nevents; i++)
		if (tl->node_of[i] != CALLTREE_NONE)
			tl->slice_first[slice_at(tl, p->events[i].time_ns) + 1]++;
	for (size_t k = 0; k < tl->nslices; k++)
		tl->slice_first[k + 1] += tl->slice_first[k];
	{
		size_t *fill = tl->slice_first;

		for (size_t i = 0; i < p->nevents; i++)
			if (tl->node_of[i] != CALLTREE_NONE)
				tl->by_slice[fill[slice_at(tl, p->events[i].time_ns)]++] =
					(uint32_t)i;
		/* fill moved each offset to the next slice's start: back. */
		memmove(tl->slice_first + 1, tl->slice_first,
			tl->nslices * sizeof(*tl->slice_first));
		tl->slice_first[0] = 0;
	}
	r = 0;
out:
	free(written);
	free(units);
	return r;
}

/* Per slice: how many nodes, then each node and the value that ended in
 * it during the slice. */
static int write_cells(const struct timeline *tl, size_t nnodes, FILE *out)
{
	const struct profile *p = tl->p;
	struct numbuf *nb = malloc(sizeof(*nb));
	uint32_t *seen = malloc((nnodes ? nnodes : 1) * sizeof(*seen));
	uint32_t *nodes = malloc((nnodes ? nnodes : 1) * sizeof(*nodes));
	double *sum = calloc(nnodes ? nnodes : 1, sizeof(*sum));
	int r = -ENOMEM;

	if (!nb || !seen || !nodes || !sum)
		goto out;
	nb->n = 0;
	nb->out = out;
	memset(seen, 0xff, (nnodes ? nnodes : 1) * sizeof(*seen));
	for (size_t k = 0; k < tl->nslices; k++) {
		size_t used = 0;

		for (size_t j = tl->slice_first[k]; j < tl->slice_first[k + 1]; j++) {
			const struct sample_event *e = &p->events[tl->by_slice[j]];
			uint32_t n = tl->node_of[tl->by_slice[j]];

			if (seen[n] != k) {
				seen[n] = (uint32_t)k;
				sum[n] = 0;
				nodes[used++] = n;
			}
			sum[n] += (double)e->value * tl->weight[e->stack];
		}
		numbuf_put(nb, k ? ',' : 0, (int64_t)used);
		for (size_t j = 0; j < used; j++) {
			numbuf_put(nb, ',', nodes[j]);
			numbuf_put(nb, ',', llround(sum[nodes[j]]));
		}
	}
	numbuf_flush(nb);
	r = ferror(out) ? -EIO : 0;
out:
	free(nb);
	free(seen);
	free(nodes);
	free(sum);
	return r;
}

int timeline_write_json(const struct profile *p, const struct calltree *t,
			unsigned v, int64_t min_total, FILE *out)
{
	struct timeline tl = { .p = p };
	uint64_t len;
	int r;

	if (!p->nevents || !t->stack_node || !t->nnodes ||
	    t->nodes[0].total < min_total) {
		fputs("null", out);
		return ferror(out) ? -EIO : 0;
	}
	span_of(p, &tl.start, &len);
	tl.step = slice_of(p, len);
	tl.nslices = (size_t)(len / tl.step + (len % tl.step != 0));
	r = place_events(&tl, t, v, min_total);
	if (r < 0)
		goto out;
	fprintf(out,
		"{\"version\":1,\"offsetNs\":%" PRIu64
		",\"sliceNs\":%" PRIu64 ",\"slices\":%zu,\"events\":%zu,\"dropped\":%" PRIu64
		",\"cells\":[",
		p->start_ns && tl.start >= p->start_ns ? tl.start - p->start_ns : 0,
		tl.step, tl.nslices, p->nevents, p->events_dropped);
	r = write_cells(&tl, tl.nwritten, out);
	if (r < 0)
		goto out;
	fputs("]}", out);
	r = ferror(out) ? -EIO : 0;
out:
	timeline_release(&tl);
	return r;
}
