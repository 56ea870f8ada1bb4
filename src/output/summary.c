/* summary: what was recorded, and how far to trust it. */
#include "output/output.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/units.h"

static void print_interval(const struct profile *p, FILE *out)
{
	char buf[64];

	if (!p->interval)
		return;
	if (p->interval_unit && !strcmp(p->interval_unit, "nanoseconds"))
		fprintf(out, ", interval %s",
			units_format_ns(p->interval, buf, sizeof(buf)));
	else
		fprintf(out, ", interval %" PRIu64 " %s", p->interval,
			p->interval_unit ? p->interval_unit : "");
}

static void print_start(const struct profile *p, FILE *out)
{
	time_t t = (time_t)(p->start_ns / 1000000000ull);
	struct tm tm;
	char buf[64];

	if (!p->start_ns || !gmtime_r(&t, &tm))
		return;
	strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
	fprintf(out, " (from %s)", buf);
}

/* Threads by their share of value 0, busiest first, at most five. */
static void print_threads(const struct profile *p, int64_t total, FILE *out)
{
	int64_t *by_thread = calloc(p->nthreads + 1, sizeof(*by_thread));
	size_t shown = 0;

	fprintf(out, "threads      %zu\n", p->nthreads);
	if (!by_thread)
		return;
	for (size_t i = 0; i < p->nsamples; i++)
		by_thread[p->samples[i].thread] += p->samples[i].values[0];
	while (shown < 5) {
		size_t best = p->nthreads;

		for (size_t t = 0; t < p->nthreads; t++)
			if (by_thread[t] > 0 &&
			    (best == p->nthreads || by_thread[t] > by_thread[best]))
				best = t;
		if (best == p->nthreads)
			break;
		fprintf(out, "  %-16s tid %-8d %5.1f%%\n",
			*p->threads[best].name ? p->threads[best].name : "?",
			(int)p->threads[best].tid,
			total ? 100.0 * by_thread[best] / total : 0.0);
		by_thread[best] = -1;
		shown++;
	}
	free(by_thread);
}

int output_write_summary(const struct profile *p,
			 const struct output_options *o, FILE *out)
{
	int64_t total = p->nvalues ? profile_total(p, 0) : 0;
	const struct profile_degraded *dg = &p->degraded;
	char buf[64];

	fprintf(out, "event        %s", p->event ? p->event : "?");
	print_interval(p, out);
	fprintf(out, "\ntarget       PID %d", (int)p->pid);
	if (p->command)
		fprintf(out, " (%s)", p->command);
	fprintf(out, "%s\n", p->target_exited ? ", exited during the recording" : "");
	fprintf(out, "duration     %s",
		units_format_ns(p->duration_ns, buf, sizeof(buf)));
	print_start(p, out);
	fputc('\n', out);
	for (unsigned v = 0; v < p->nvalues; v++) {
		int64_t t = v ? profile_total(p, v) : total;

		if (p->value_types[v].unit &&
		    !strcmp(p->value_types[v].unit, "nanoseconds"))
			fprintf(out, "%-12s %s\n", p->value_types[v].type,
				units_format_ns((uint64_t)t, buf, sizeof(buf)));
		else
			fprintf(out, "%-12s %" PRId64 "\n",
				p->value_types[v].type, t);
	}
	print_threads(p, total, out);
	fprintf(out, "stacks       %zu distinct, unwound with %s\n", p->nstacks,
		p->unwinder ? p->unwinder : "?");
	fprintf(out, "degraded     %" PRIu64 " lost samples, %" PRIu64
		" truncated stacks, %" PRIu64 " frames without symbols\n",
		dg->lost_samples, dg->truncated_stacks, dg->unsymbolized_frames);
	for (unsigned i = 0; i < p->nnotes; i++)
		fprintf(out, "note         %s\n", p->notes[i]);
	return 0;
}
