/* timeline: the profile's samples over time, for the flame graph page.
 *
 * The page draws how much was sampled in each slice of the recording and,
 * when a range of slices is picked, redraws the flame graph from just
 * those samples. It needs, per slice, how much value ended in each node
 * of the tree it draws: that is what is written here (format in
 * docs/flamegraph.md), with the tree's own node numbers. */
#ifndef NPROF_OUTPUT_TIMELINE_H
#define NPROF_OUTPUT_TIMELINE_H

#include <stdio.h>

#include "output/calltree.h"
#include "profile/profile.h"

/* Slices a timeline is cut into at most: about one per two pixels of a
 * flame graph's width, fine enough to pick a phase, few enough that the
 * data stays a fraction of the tree's. */
#define TIMELINE_MAX_SLICES 600

/* Writes the JSON for p's timeline against the tree t (built from value v
 * of p) as calltree_write_json writes it with min_total; `null` when p
 * has no timeline. Returns 0 or -errno. */
int timeline_write_json(const struct profile *p, const struct calltree *t,
			unsigned v, int64_t min_total, FILE *out);

#endif
