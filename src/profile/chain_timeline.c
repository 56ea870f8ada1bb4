#include "profile/chain_timeline.h"

#include <stdlib.h>
#include <string.h>

#include "base/array.h"

void chain_timeline_init(struct chain_timeline *tl, size_t max)
{
	memset(tl, 0, sizeof(*tl));
	tl->max = max;
}

void chain_timeline_release(struct chain_timeline *tl)
{
	if (!tl)
		return;
	free(tl->events);
	chain_timeline_init(tl, tl->max);
}

void chain_timeline_reset(struct chain_timeline *tl)
{
	tl->nevents = 0;
	tl->dropped = 0;
}

void chain_timeline_add(struct chain_timeline *tl, uint64_t time_ns, uint32_t chain,
			uint64_t value)
{
	if (tl->nevents >= tl->max ||
	    array_reserve(&tl->events, &tl->cap, tl->nevents + 1, sizeof(*tl->events)) < 0) {
		tl->dropped++;
		return;
	}
	tl->events[tl->nevents++] = (struct chain_event){ time_ns, chain, value };
}

static int cmp_time(const void *a, const void *b)
{
	const struct chain_event *x = a, *y = b;

	return (x->time_ns > y->time_ns) - (x->time_ns < y->time_ns);
}

void chain_timeline_sort(struct chain_timeline *tl)
{
	qsort(tl->events, tl->nevents, sizeof(*tl->events), cmp_time);
}

int chain_timeline_to_profile(const struct chain_timeline *tl, struct profile *p,
			      const struct chain_ids *ids, uint64_t start_real_ns,
			      uint64_t start_mono_ns,
			      uint64_t (*value_of)(void *ctx, const struct chain_event *e),
			      void *ctx)
{
	p->max_events = tl->max;
	for (size_t i = 0; i < tl->nevents; i++) {
		const struct chain_event *e = &tl->events[i];
		/* Unsigned: an event a little before start_mono_ns (the
		 * engine's events run before the clocks are read) lands as
		 * far before start_real_ns. */
		uint64_t t = start_real_ns + (e->time_ns - start_mono_ns);
		uint64_t value = value_of ? value_of(ctx, e) : e->value;
		int err;

		if (!value || ids[e->chain].stack == ID_NONE)
			continue;
		err = profile_add_event(p, t, ids[e->chain].stack, ids[e->chain].thread,
					(int64_t)value);
		if (err < 0)
			return err;
	}
	p->events_dropped += tl->dropped;
	return 0;
}
