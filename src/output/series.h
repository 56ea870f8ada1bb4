/* series: value 0 of profiles over wall-clock time, in buckets of one
 * step, for the timeline of a service's recordings (nprof convert
 * --series, which nprofd's GET /api/v1/profiles/series runs as the
 * recordings' owner).
 *
 * Each profile's samples are placed at their own times where its
 * timeline holds them (struct sample_event), each stack's value spread
 * over its events as the flame graph's strip spreads it (timeline.c);
 * the value of stacks without an event (a format without a timeline) is
 * spread evenly over the profile's span, so the buckets always add up
 * to the profiles' totals. Buckets are whole
 * multiples of the step since the epoch: a poll a few seconds later
 * draws the same bars, one more at the end. */
#ifndef NPROF_OUTPUT_SERIES_H
#define NPROF_OUTPUT_SERIES_H

#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

/* More buckets than this is a step too small for the range. */
#define SERIES_MAX_BUCKETS 100000

struct series {
	uint64_t step_ns;
	uint64_t from_ns, until_ns;	/* until 0: whatever the profiles span */
	int64_t first;			/* the bucket (time / step) of values[0] */
	size_t n;
	double *values;
	double outside;			/* value that fell outside [from, until) */
	unsigned profiles, spread;	/* added; of them, placed by their span */
	char type[32], unit[32];	/* value 0's, as the first profile names it */
};

/* Buckets of step_ns over [from_ns, until_ns), or over what the
 * profiles span when until_ns is 0. 0, -EINVAL (no step, from not
 * before until) or -E2BIG (more than SERIES_MAX_BUCKETS), -ENOMEM. */
int series_init(struct series *s, uint64_t step_ns, uint64_t from_ns, uint64_t until_ns);

/* Adds p's value 0. -EINVAL when it measures another value than the
 * profiles before it (*ret_type its type), -E2BIG when an unbounded
 * series would outgrow SERIES_MAX_BUCKETS, -ENOMEM. */
int series_add(struct series *s, const struct profile *p, const char **ret_type);

/* {"type","unit","step","from","values":[...],"profiles","spread",
 * "outside"}: step in seconds, from the first bucket's start in Unix
 * seconds. 0 or -errno. */
int series_write_json(const struct series *s, FILE *out);

void series_release(struct series *s);

#endif
