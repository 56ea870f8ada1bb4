/* merge: one profile from the profiles of several processes of a tree
 * (nprof record of a command whose processes each wrote their own). */
#ifndef NPROF_PROFILE_MERGE_H
#define NPROF_PROFILE_MERGE_H

#include "base/diag.h"
#include "profile/profile.h"

/* Adds every sample of from (frames, stacks, threads, modules, timeline)
 * to into, whose value types must be the same; the time range becomes
 * the union of both, degradation counters add up, notes not already in
 * into are appended. from is not changed. Returns 0, -EINVAL when the
 * value types differ (d says which), or -ENOMEM. */
int profile_merge(struct profile *into, const struct profile *from, struct diag *d);

/* The same, the timeline left unsorted: for many merges in a row (a
 * service's recordings of a day), then profile_sort_events once, not a
 * sort per merge. */
int profile_merge_unsorted(struct profile *into, const struct profile *from, struct diag *d);

/* The timeline in time order. */
void profile_sort_events(struct profile *p);

#endif
