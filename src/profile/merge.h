/* merge: one profile from the profiles of several processes of a tree
 * (nprof record of a command whose processes each wrote their own). */
#ifndef NPROF_PROFILE_MERGE_H
#define NPROF_PROFILE_MERGE_H

#include "base/diag.h"
#include "profile/profile.h"

/* Adds every sample of from (frames, stacks, threads, modules, timeline)
 * to into, whose value types must be the same (an empty into takes
 * from's, and its event and interval); the time range becomes
 * the union of both, degradation counters add up, notes not already in
 * into are appended. from is not changed. Returns 0, -EINVAL when the
 * value types differ (d says which), or -ENOMEM. */
int profile_merge(struct profile *into, const struct profile *from, struct diag *d);

/* The same, the timeline left unsorted: for many merges in a row (a
 * service's recordings of a day), then profile_sort_events once, not a
 * sort per merge. */
int profile_merge_unsorted(struct profile *into, const struct profile *from, struct diag *d);

/* profile_merge_unsorted with every stack of from put under roots
 * (nroots names, outermost first, FRAME_THREAD pseudo-frames: a host's,
 * a process's — profile_process_root_name): the workers of a service in
 * one profile, a root each. */
int profile_merge_under(struct profile *into, const struct profile *from,
			const char *const *roots, unsigned nroots, struct diag *d);

/* A stream of profiles to merge (nprof convert --parts, as nprofd
 * writes it): the most roots one may be put under, and the longest line
 * of them before it. */
#define PARTS_ROOTS_MAX 4
#define PARTS_LINE_MAX 1024

/* The timeline in time order. */
void profile_sort_events(struct profile *p);

#endif
