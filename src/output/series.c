#include "output/series.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

int series_init(struct series *s, uint64_t step_ns, uint64_t from_ns, uint64_t until_ns)
{
	memset(s, 0, sizeof(*s));
	if (!step_ns || (until_ns && from_ns >= until_ns))
		return -EINVAL;
	s->step_ns = step_ns;
	s->from_ns = from_ns;
	s->until_ns = until_ns;
	if (!until_ns)
		return 0;
	s->first = (int64_t)(from_ns / step_ns);
	s->n = (size_t)((until_ns + step_ns - 1) / step_ns - (uint64_t)s->first);
	if (s->n > SERIES_MAX_BUCKETS)
		return -E2BIG;
	s->values = calloc(s->n, sizeof(*s->values));
	return s->values ? 0 : -ENOMEM;
}

void series_release(struct series *s)
{
	if (!s)
		return;
	free(s->values);
	s->values = NULL;
}

/* Makes room for buckets lo..hi (an unbounded series grows both ways). */
static int cover(struct series *s, int64_t lo, int64_t hi)
{
	int64_t first = s->n ? (lo < s->first ? lo : s->first) : lo;
	int64_t last = s->n ? (hi > s->first + (int64_t)s->n - 1 ? hi : s->first + (int64_t)s->n - 1) : hi;
	size_t n = (size_t)(last - first + 1);
	double *v;

	if (s->n && first == s->first && n == s->n)
		return 0;
	if (n > SERIES_MAX_BUCKETS)
		return -E2BIG;
	v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (s->n)
		memcpy(v + (s->first - first), s->values, s->n * sizeof(*v));
	free(s->values);
	s->values = v;
	s->first = first;
	s->n = n;
	return 0;
}

/* value over [a, b) (b == a: at a), shared among the buckets it
 * overlaps by how much of it each holds. */
static int put(struct series *s, uint64_t a, uint64_t b, double value)
{
	uint64_t lo = a, hi = b;
	int r;

	if (s->until_ns) {
		/* what lies outside the range is counted, not drawn */
		lo = a > s->from_ns ? a : s->from_ns;
		hi = b < s->until_ns ? b : s->until_ns;
		if (b == a ? a < s->from_ns || a >= s->until_ns : lo >= hi) {
			s->outside += value;
			return 0;
		}
		if (b > a)
			s->outside += value * (double)((hi - lo) < (b - a) ? (b - a) - (hi - lo) : 0) /
				      (double)(b - a);
	} else if ((r = cover(s, (int64_t)(a / s->step_ns),
			      (int64_t)((b > a ? b - 1 : a) / s->step_ns))) < 0) {
		return r;
	}
	if (b == a) {
		s->values[(int64_t)(a / s->step_ns) - s->first] += value;
		return 0;
	}
	for (uint64_t t = lo; t < hi;) {
		uint64_t k = t / s->step_ns, end = (k + 1) * s->step_ns;

		if (end > hi)
			end = hi;
		s->values[(int64_t)k - s->first] += value * (double)(end - t) / (double)(b - a);
		t = end;
	}
	return 0;
}

int series_add(struct series *s, const struct profile *p, const char **ret_type)
{
	const char *type = p->nvalues ? p->value_types[0].type : NULL;
	double placed = 0, rest, *weight = NULL;
	uint64_t lo = UINT64_MAX, hi = 0;
	int r = 0;

	if (!s->profiles) {
		snprintf(s->type, sizeof(s->type), "%s", type ? type : "");
		snprintf(s->unit, sizeof(s->unit), "%s",
			 p->nvalues && p->value_types[0].unit ? p->value_types[0].unit : "");
	} else if (strcmp(s->type, type ? type : "")) {
		*ret_type = type ? type : "";
		return -EINVAL;
	}
	s->profiles++;
	if (!p->nvalues)
		return 0;
	if (p->nevents) {
		/* What one unit of a stack's events is worth: its value spread
		 * evenly over its events, as the flame graph's own strip does
		 * (timeline.c), whatever value 0 measures (bytes of an
		 * allocation whose event counts 1). */
		double *units = calloc(p->nstacks + 1, sizeof(*units));

		weight = calloc(p->nstacks + 1, sizeof(*weight));
		if (!units || !weight) {
			free(units);
			free(weight);
			return -ENOMEM;
		}
		for (size_t i = 0; i < p->nevents; i++)
			if (p->events[i].stack < p->nstacks)
				units[p->events[i].stack] += (double)p->events[i].value;
		for (size_t i = 0; i < p->nsamples; i++)
			weight[p->samples[i].stack] += (double)p->samples[i].values[0];
		for (size_t k = 0; k < p->nstacks; k++)
			weight[k] = units[k] != 0 ? weight[k] / units[k] : 0;
		free(units);
	}
	for (size_t i = 0; i < p->nevents && r == 0; i++) {
		const struct sample_event *e = &p->events[i];
		double v = e->stack < p->nstacks ? (double)e->value * weight[e->stack] : 0;

		r = put(s, e->time_ns, e->time_ns, v);
		placed += v;
		lo = e->time_ns < lo ? e->time_ns : lo;
		hi = e->time_ns > hi ? e->time_ns : hi;
	}
	free(weight);
	if (r < 0)
		return r;
	/* (a whole number: the rounding of the weights is not a remainder) */
	rest = (double)profile_total(p, 0) - placed;
	if (rest < 0.5 && rest > -0.5)
		return 0;
	/* Stacks without an event: over the span the profile says it ran,
	 * else its events' own. */
	s->spread++;
	if (p->start_ns) {
		lo = p->start_ns;
		hi = p->start_ns + p->duration_ns;
	} else if (lo > hi) {
		/* no time at all: nothing says where to draw it */
		s->outside += rest;
		return 0;
	}
	return put(s, lo, hi, rest);
}

int series_write_json(const struct series *s, FILE *out)
{
	fputs("{\"type\":", out);
	json_put_string(out, s->type, sizeof(s->type), 0);
	fputs(",\"unit\":", out);
	json_put_string(out, s->unit, sizeof(s->unit), 0);
	fprintf(out, ",\"step\":%.3f,\"from\":%.3f,\"values\":[", (double)s->step_ns / 1e9,
		(double)((uint64_t)s->first * s->step_ns) / 1e9);
	for (size_t i = 0; i < s->n; i++)
		fprintf(out, "%s%.15g", i ? "," : "", s->values[i]);
	fprintf(out, "],\"profiles\":%u,\"spread\":%u,\"outside\":%.15g}\n", s->profiles, s->spread,
		s->outside);
	return ferror(out) ? -EIO : 0;
}
