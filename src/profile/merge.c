#include "profile/merge.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool same_types(const struct profile *a, const struct profile *b)
{
	if (a->nvalues != b->nvalues)
		return false;
	for (unsigned i = 0; i < a->nvalues; i++)
		if (strcmp(a->value_types[i].type, b->value_types[i].type) ||
		    strcmp(a->value_types[i].unit, b->value_types[i].unit))
			return false;
	return true;
}

static int merge_header(struct profile *into, const struct profile *from)
{
	uint64_t end = into->start_ns + into->duration_ns;
	int r;

	if (!into->event && from->event) {
		into->event = profile_intern_string(into, from->event);
		into->interval = from->interval;
		into->interval_unit = profile_intern_string(into, from->interval_unit);
		if (!into->event || (from->interval_unit && !into->interval_unit))
			return -ENOMEM;
	}
	if (from->start_ns && (!into->start_ns || from->start_ns < into->start_ns))
		into->start_ns = from->start_ns;
	if (from->start_ns + from->duration_ns > end)
		end = from->start_ns + from->duration_ns;
	into->duration_ns = end - into->start_ns;
	into->degraded.lost_samples += from->degraded.lost_samples;
	into->degraded.truncated_stacks += from->degraded.truncated_stacks;
	into->degraded.unsymbolized_frames += from->degraded.unsymbolized_frames;
	for (unsigned i = 0; i < from->nnotes; i++) {
		bool known = false;

		for (unsigned j = 0; j < into->nnotes && !known; j++)
			known = !strcmp(into->notes[j], from->notes[i]);
		if (!known && (r = profile_add_note(into, "%s", from->notes[i])) < 0)
			return r;
	}
	for (size_t i = 0; i < from->nmodules; i++) {
		uint32_t id;

		r = profile_intern_module(into, from->modules[i].path, from->modules[i].build_id, &id);
		if (r < 0)
			return r;
	}
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct sample_event *x = a, *y = b;

	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

/* from's stack s, interned in into under the nroots frames at the
 * start of buf; frame_map maps from's frames. */
static int map_stack(struct profile *into, const struct profile *from, size_t s,
		     const uint32_t *frame_map, uint32_t *buf, unsigned nroots, uint32_t *ret)
{
	const uint32_t *frames = profile_stack_frames(from, (uint32_t)s);
	uint32_t depth = from->stacks[s].depth;

	for (uint32_t i = 0; i < depth; i++)
		buf[nroots + i] = frame_map[frames[i]];
	return profile_intern_stack(into, buf, nroots + depth, from->stacks[s].truncated, ret);
}

void profile_sort_events(struct profile *p)
{
	qsort(p->events, p->nevents, sizeof(*p->events), by_time);
}

int profile_merge(struct profile *into, const struct profile *from, struct diag *d)
{
	int r = profile_merge_unsorted(into, from, d);

	/* The timeline stays in time order: the processes ran side by side. */
	if (r == 0 && from->nevents)
		profile_sort_events(into);
	return r;
}

int profile_merge_unsorted(struct profile *into, const struct profile *from, struct diag *d)
{
	return profile_merge_under(into, from, NULL, 0, d);
}

int profile_merge_under(struct profile *into, const struct profile *from,
			const char *const *roots, unsigned nroots, struct diag *d)
{
	uint32_t *frame_map = NULL, *stack_map = NULL, *thread_map = NULL, *buf = NULL;
	size_t max_depth = 1;
	int r;

	if (into->nvalues == 0 && into->nsamples == 0 && from->nvalues)
		r = profile_set_value_types(into, from->value_types, from->nvalues);
	else if (!same_types(into, from))
		return diag_set(d, -EINVAL, "cannot merge a profile of %s into one of %s",
				from->nvalues ? from->value_types[0].type : "valueless",
				into->nvalues ? into->value_types[0].type : "valueless");
	else
		r = 0;
	if (r < 0 || (r = merge_header(into, from)) < 0)
		return r;
	for (size_t s = 0; s < from->nstacks; s++)
		if (from->stacks[s].depth > max_depth)
			max_depth = from->stacks[s].depth;
	r = -ENOMEM;
	frame_map = malloc((from->nframes + 1) * sizeof(*frame_map));
	stack_map = malloc((from->nstacks + 1) * sizeof(*stack_map));
	thread_map = malloc((from->nthreads + 1) * sizeof(*thread_map));
	buf = malloc((nroots + max_depth) * sizeof(*buf));
	if (!frame_map || !stack_map || !thread_map || !buf)
		goto out;
	for (unsigned i = 0; i < nroots; i++) {
		struct frame root = { .name = roots[i], .kind = FRAME_THREAD };

		if ((r = profile_intern_frame(into, &root, &buf[i])) < 0)
			goto out;
	}
	for (size_t f = 0; f < from->nframes; f++)
		if ((r = profile_intern_frame(into, &from->frames[f], &frame_map[f])) < 0)
			goto out;
	for (size_t s = 0; s < from->nstacks; s++)
		if ((r = map_stack(into, from, s, frame_map, buf, nroots, &stack_map[s])) < 0)
			goto out;
	for (size_t t = 0; t < from->nthreads; t++)
		if ((r = profile_intern_thread(into, from->threads[t].tid, from->threads[t].name,
					       &thread_map[t])) < 0)
			goto out;
	for (size_t i = 0; i < from->nsamples; i++) {
		const struct sample *smp = &from->samples[i];

		r = profile_add_sample(into, stack_map[smp->stack], thread_map[smp->thread],
				       smp->values);
		if (r < 0)
			goto out;
	}
	if (from->max_events > into->max_events)
		into->max_events = from->max_events;
	into->events_dropped += from->events_dropped;
	for (size_t i = 0; i < from->nevents; i++) {
		const struct sample_event *e = &from->events[i];

		r = profile_add_event(into, e->time_ns, stack_map[e->stack], thread_map[e->thread],
				      e->value);
		if (r < 0)
			goto out;
	}
	r = 0;
out:
	free(frame_map);
	free(stack_map);
	free(thread_map);
	free(buf);
	return r;
}
