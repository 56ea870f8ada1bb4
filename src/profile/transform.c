#include "profile/transform.h"

#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

bool transform_is_noop(const struct transform_options *o)
{
	return !o->include && !o->exclude && !o->reverse;
}

/* Compiles re and marks, per frame of p, whether its name matches. */
static int match_frames(const struct profile *p, const char *re,
			const char *option, bool **ret, struct diag *d)
{
	regex_t rx;
	bool *hit;
	int r = regcomp(&rx, re, REG_EXTENDED | REG_NOSUB);

	if (r) {
		char msg[256];

		regerror(r, &rx, msg, sizeof(msg));
		return diag_set(d, -EINVAL,
				"%s '%s': not a valid extended regex (%s)",
				option, re, msg);
	}
	hit = calloc(p->nframes + 1, sizeof(*hit));
	if (!hit) {
		regfree(&rx);
		return -ENOMEM;
	}
	/* Per frame, not per stack: frames are shared by many stacks. */
	for (size_t f = 0; f < p->nframes; f++)
		hit[f] = regexec(&rx, p->frames[f].name, 0, NULL, 0) == 0;
	regfree(&rx);
	*ret = hit;
	return 0;
}

static bool any_hit(const bool *hit, const uint32_t *frames, uint32_t depth)
{
	for (uint32_t i = 0; i < depth; i++)
		if (hit[frames[i]])
			return true;
	return false;
}

/* Copies the description: strings are interned again in the new profile,
 * so it does not depend on the old one's lifetime. */
static int copy_header(const struct profile *in, struct profile *out)
{
	int r;

#define COPY_STR(field)                                                \
	do {                                                           \
		out->field = profile_intern_string(out, in->field);    \
		if (in->field && !out->field)                          \
			return -ENOMEM;                                \
	} while (0)
	COPY_STR(event);
	COPY_STR(interval_unit);
	COPY_STR(command);
	COPY_STR(unwinder);
#undef COPY_STR
	if (in->nvalues) {
		r = profile_set_value_types(out, in->value_types, in->nvalues);
		if (r < 0)
			return r;
	}
	out->interval = in->interval;
	out->start_ns = in->start_ns;
	out->duration_ns = in->duration_ns;
	out->pid = in->pid;
	out->target_exited = in->target_exited;
	for (unsigned i = 0; i < in->nnotes; i++) {
		r = profile_add_note(out, "%s", in->notes[i]);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < in->nmodules; i++) {
		uint32_t id;

		r = profile_intern_module(out, in->modules[i].path,
					  in->modules[i].build_id, &id);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < in->nthreads; i++) {
		uint32_t id;

		r = profile_intern_thread(out, in->threads[i].tid,
					  in->threads[i].name, &id);
		if (r < 0)
			return r;
	}
	out->max_events = in->max_events;
	return 0;
}

int profile_transform(const struct profile *in,
		      const struct transform_options *o,
		      struct profile **ret_out, struct diag *d)
{
	struct profile *out = NULL;
	bool *inc = NULL, *exc = NULL;
	uint32_t *frame_map = NULL, *stack_map = NULL, *buf = NULL;
	size_t max_depth = 1;
	int r;

	if (o->include && (r = match_frames(in, o->include, "--include", &inc, d)) < 0)
		goto out;
	if (o->exclude && (r = match_frames(in, o->exclude, "--exclude", &exc, d)) < 0)
		goto out;
	r = -ENOMEM;
	out = profile_new();
	if (!out)
		goto out;
	r = copy_header(in, out);
	if (r < 0)
		goto out;

	r = -ENOMEM;
	frame_map = calloc(in->nframes + 1, sizeof(*frame_map));
	stack_map = malloc((in->nstacks + 1) * sizeof(*stack_map));
	for (size_t s = 0; s < in->nstacks; s++)
		if (in->stacks[s].depth > max_depth)
			max_depth = in->stacks[s].depth;
	buf = malloc(max_depth * sizeof(*buf));
	if (!frame_map || !stack_map || !buf)
		goto out;
	/* Frames in the same order, so ids line up with the input's. */
	for (size_t f = 0; f < in->nframes; f++) {
		r = profile_intern_frame(out, &in->frames[f], &frame_map[f]);
		if (r < 0)
			goto out;
	}
	/* The frame count of the input was already counted once. */
	out->degraded = in->degraded;

	for (size_t s = 0; s < in->nstacks; s++) {
		uint32_t depth = in->stacks[s].depth, lead = 0;
		/* Not called for an empty stack: stack_frames may be NULL. */
		const uint32_t *f = depth ? profile_stack_frames(in, (uint32_t)s) : NULL;

		stack_map[s] = UINT32_MAX;
		if ((inc && !any_hit(inc, f, depth)) || (exc && any_hit(exc, f, depth)))
			continue;
		for (uint32_t i = 0; i < depth; i++)
			buf[i] = frame_map[f[i]];
		if (o->reverse) {
			while (lead < depth && in->frames[f[lead]].kind == FRAME_THREAD)
				lead++;
			for (uint32_t i = lead, j = depth; i + 1 < j; i++, j--) {
				uint32_t t = buf[i];

				buf[i] = buf[j - 1];
				buf[j - 1] = t;
			}
		}
		r = profile_intern_stack(out, buf, depth, in->stacks[s].truncated,
					 &stack_map[s]);
		if (r < 0)
			goto out;
	}
	for (size_t i = 0; i < in->nsamples; i++) {
		const struct sample *smp = &in->samples[i];
		uint32_t t;

		if (stack_map[smp->stack] == UINT32_MAX)
			continue;
		r = profile_intern_thread(out, in->threads[smp->thread].tid, NULL, &t);
		if (r == 0)
			r = profile_add_sample(out, stack_map[smp->stack], t,
					       smp->values);
		if (r < 0)
			goto out;
	}
	for (size_t i = 0; i < in->nevents; i++) {
		const struct sample_event *e = &in->events[i];
		uint32_t t;

		if (stack_map[e->stack] == UINT32_MAX)
			continue;
		r = profile_intern_thread(out, in->threads[e->thread].tid, NULL, &t);
		if (r == 0)
			r = profile_add_event(out, e->time_ns, stack_map[e->stack],
					      t, e->value);
		if (r < 0)
			goto out;
	}
	out->events_dropped = in->events_dropped;
	*ret_out = out;
	out = NULL;
	r = 0;
out:
	free(inc);
	free(exc);
	free(frame_map);
	free(stack_map);
	free(buf);
	profile_free(out);
	return r;
}
