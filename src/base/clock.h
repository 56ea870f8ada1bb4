/* clock: a clock's time now, in nanoseconds — CLOCK_MONOTONIC for
 * durations and deadlines, CLOCK_REALTIME for timestamps,
 * CLOCK_THREAD_CPUTIME_ID for CPU used. Async-signal-safe. */
#ifndef NPROF_BASE_CLOCK_H
#define NPROF_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
