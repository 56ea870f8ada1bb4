/* schedule_runner: the thread that runs schedules (continuous
 * profiling). When a schedule's period begins it records, in each of its
 * modes, every worker its selector takes that its user may see, as
 * instances of that user marked with the schedule (GET
 * /api/v1/instances?schedule=ID); a worker already recorded in that mode
 * on demand is left to it; what a schedule started is removed past its
 * keep. A schedule lives in the index: nprofd restarted, it goes on at
 * its next period. */
#ifndef NPROF_DAEMON_SCHEDULE_RUNNER_H
#define NPROF_DAEMON_SCHEDULE_RUNNER_H

#include <stddef.h>

#include "daemon/api/schedule_selector.h"
#include "daemon/core/daemon.h"
#include "daemon/store/schedule_rows.h"

struct schedule_runner;

/* Starts the thread: NULL when it cannot (out of memory, no thread). */
struct schedule_runner *schedule_runner_start(struct daemon *d);

/* Stops it (what it started runs on, as the daemon's other instances). */
void schedule_runner_stop(struct schedule_runner *r);

/* The user a schedule acts as: false when their account is gone. */
bool schedule_user(const struct daemon *d, const struct schedule *s, struct user *ret);

/* The workers sel takes that u may see, now: 0 and *ret (n of them;
 * free it), or -errno. */
int schedule_matches(struct daemon *d, const struct schedule_selector *sel, const struct user *u,
		     struct worker **ret, size_t *n);

#endif
