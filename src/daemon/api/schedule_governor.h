/* schedule_governor: how much a schedule records in a period, and when
 * the next one begins, so that its recordings' CPU stays within its
 * budget (a share of one CPU). Each recording costs its process's CPU
 * (what the kernel accounted to it: jobs.c), and each period nprofd's
 * own (its thread's CPU clock over the period's work); a period of
 * every may spend budget x every. When one recording fits, the period records as many
 * as fit, the workers least recently recorded first, so that every
 * worker is recorded in turn (Google-Wide Profiling's duty cycle); when
 * not even one does, one is recorded and the period stretches to its
 * cost over the budget (Datadog's profiler's rule), at most a day. A
 * schedule whose cost is not known yet records one, to learn it. */
#ifndef NPROF_DAEMON_SCHEDULE_GOVERNOR_H
#define NPROF_DAEMON_SCHEDULE_GOVERNOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest a period grows to keep within the budget. */
#define GOVERNOR_MAX_NS (24ull * 3600 * 1000000000ull)

struct governor_plan {
	size_t take;		/* recordings this period: the first take of them */
	uint64_t interval_ns;	/* from this period's start to the next's */
	bool over;		/* one recording a day apart is still over the budget */
};

/* For wanted recordings this period (each worker in each mode), each
 * costing cost_ns (0: not known yet), nprofd's own work for a period
 * costing own_ns (finding the workers, starting the recordings), a
 * budget of one CPU (0.01 for 1 %) and a period of every_ns. */
void governor_plan(size_t wanted, uint64_t cost_ns, uint64_t own_ns, double budget,
		   uint64_t every_ns, struct governor_plan *ret);

#endif
