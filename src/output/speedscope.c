/* speedscope: the JSON file format speedscope.app opens
 * (https://www.speedscope.app/file-format-schema.json).
 *
 * All frames go in shared.frames (index = the model's frame id); each
 * profile is "sampled": one frame-index list per stack, root first, with
 * its weight. The weight is the first value speedscope has a unit for
 * (nanoseconds, bytes, ...: cpu profiles show time), else value 0 with
 * unit "none".
 *
 * When samples fall on more than one thread (a recording with -t), there
 * is one profile per thread, busiest first, named "name tid=N", and the
 * [name tid=N] pseudo-frames are left out of the stacks: speedscope's
 * profile selector already says which thread it is.
 *
 * JSON must be UTF-8: bytes that are not are written as U+FFFD. */
#include "output/output.h"

#include "base/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The value to weigh by, and speedscope's name for its unit. */
static unsigned pick_value(const struct profile *p, const char **ret_unit)
{
	static const char *const known[] = { "nanoseconds", "microseconds",
					     "milliseconds", "seconds", "bytes" };

	for (unsigned v = 0; v < p->nvalues; v++)
		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			if (p->value_types[v].unit &&
			    !strcmp(p->value_types[v].unit, known[k])) {
				*ret_unit = known[k];
				return v;
			}
	*ret_unit = "none";
	return 0;
}

/* Writes one sampled profile: the samples of thread `thread`, or of all
 * threads when thread is -1. */
static void put_profile(const struct profile *p, long thread, unsigned v,
			const char *unit, const char *name, int64_t total,
			bool strip_threads, FILE *out)
{
	bool first = true;

	fputs("{\"type\":\"sampled\",\"name\":", out);
	json_put_string(out, name, 0, 0);
	fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRId64
		",\"samples\":[", unit, total);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct sample *s = &p->samples[i];
		uint32_t depth = p->stacks[s->stack].depth;
		/* Not called for an empty stack: stack_frames may be NULL. */
		const uint32_t *f = depth ? profile_stack_frames(p, s->stack) : NULL;
		bool first_frame = true;

		if ((thread >= 0 && s->thread != (uint32_t)thread) || s->values[v] <= 0)
			continue;
		fputs(first ? "\n[" : ",\n[", out);
		first = false;
		for (uint32_t k = 0; k < depth; k++) {
			if (strip_threads && p->frames[f[k]].kind == FRAME_THREAD)
				continue;
			fprintf(out, first_frame ? "%" PRIu32 : ",%" PRIu32, f[k]);
			first_frame = false;
		}
		putc(']', out);
	}
	fputs("],\"weights\":[", out);
	first = true;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct sample *s = &p->samples[i];

		if ((thread >= 0 && s->thread != (uint32_t)thread) || s->values[v] <= 0)
			continue;
		fprintf(out, first ? "%" PRId64 : ",%" PRId64, s->values[v]);
		first = false;
	}
	fputs("]}", out);
}

int output_write_speedscope(const struct profile *p,
			    const struct output_options *o, FILE *out)
{
	const char *unit;
	unsigned v = pick_value(p, &unit);
	int64_t *by_thread = calloc(p->nthreads + 1, sizeof(*by_thread));
	size_t *order = calloc(p->nthreads + 1, sizeof(*order));
	size_t used = 0;
	int64_t total = 0;
	char name[512];

	if (!by_thread || !order) {
		free(by_thread);
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nsamples; i++)
		if (p->nvalues && p->samples[i].values[v] > 0) {
			by_thread[p->samples[i].thread] += p->samples[i].values[v];
			total += p->samples[i].values[v];
		}
	/* Threads with samples, busiest first (insertion sort: few threads). */
	for (size_t t = 0; t < p->nthreads; t++) {
		size_t k = used;

		if (by_thread[t] <= 0)
			continue;
		while (k > 0 && by_thread[order[k - 1]] < by_thread[t]) {
			order[k] = order[k - 1];
			k--;
		}
		order[k] = t;
		used++;
	}

	if (o->title)
		snprintf(name, sizeof(name), "%s", o->title);
	else if (p->command)
		snprintf(name, sizeof(name), "%s (pid %d) %s", p->command,
			 (int)p->pid, p->event ? p->event : "");
	else
		snprintf(name, sizeof(name), "nprof %s", p->event ? p->event : "profile");

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
	      "\"exporter\":\"nprof\",\"name\":", out);
	json_put_string(out, name, 0, 0);
	fputs(",\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[", out);
	for (size_t f = 0; f < p->nframes; f++) {
		const struct frame *fr = &p->frames[f];
		const char *file = fr->file ? fr->file : fr->module;

		fputs(f ? ",\n{\"name\":" : "\n{\"name\":", out);
		json_put_string(out, fr->name, 0, 0);
		if (file) {
			fputs(",\"file\":", out);
			json_put_string(out, file, 0, 0);
		}
		if (fr->line)
			fprintf(out, ",\"line\":%" PRIu32, fr->line);
		putc('}', out);
	}
	fputs("]},\n\"profiles\":[", out);
	if (used > 1 && p->nvalues) {
		for (size_t k = 0; k < used; k++) {
			const struct thread *t = &p->threads[order[k]];
			char tname[300];

			/* tid 0, no name: stacks the source knew no thread
			 * for (collapsed lines without a thread frame). */
			if (!t->tid && !*t->name)
				snprintf(tname, sizeof(tname), "no thread");
			else
				snprintf(tname, sizeof(tname), "%s tid=%d",
					 *t->name ? t->name : "thread", (int)t->tid);
			if (k)
				fputs(",\n", out);
			put_profile(p, (long)order[k], v, unit, tname,
				    by_thread[order[k]], true, out);
		}
	} else if (p->nvalues) {
		put_profile(p, -1, v, unit, name, total, false, out);
	}
	fputs("]}\n", out);
	free(by_thread);
	free(order);
	return 0;
}
