/* transform: derive a new profile from another by keeping, dropping or
 * reversing stacks — what --include, --exclude and --reverse do.
 *
 * The input is not changed. The output carries everything else over: the
 * description (event, interval, value types, time range, target), the
 * notes and degradations, the threads, the modules and, for the stacks
 * kept, the timeline. */
#ifndef NPROF_PROFILE_TRANSFORM_H
#define NPROF_PROFILE_TRANSFORM_H

#include <stdbool.h>

#include "base/diag.h"
#include "profile/profile.h"

struct transform_options {
	/* POSIX extended regexes matched against frame names (unanchored,
	 * like grep -E), or NULL. A stack is kept when some frame matches
	 * include and no frame matches exclude. */
	const char *include;
	const char *exclude;
	/* Reverse each stack, leaf first: the callers of each function grow
	 * out of it (a backtrace view). Thread pseudo-frames ([name tid=N])
	 * stay at the root, so per-thread views stay per thread. */
	bool reverse;
};

/* True when o asks for nothing (a copy would equal the input). */
bool transform_is_noop(const struct transform_options *o);

/* Builds the transformed profile into *ret_out. Returns 0, -EINVAL when a
 * regex does not compile (the reason in d), or -ENOMEM. */
int profile_transform(const struct profile *in,
		      const struct transform_options *o,
		      struct profile **ret_out, struct diag *d);

#endif
