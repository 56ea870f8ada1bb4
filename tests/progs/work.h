/* work.h: the rule for test workloads that must run "long enough", shared
 * by the test programs (through progs.h) and the unit tests' spinners.
 *
 * Such a workload repeats a small, fixed chunk of work until a clock
 * (CLOCK_THREAD_CPUTIME_ID, CLOCK_PROCESS_CPUTIME_ID, CLOCK_MONOTONIC)
 * says enough time has passed; never a count of chunks sized for one
 * machine's speed, which a faster CPU finishes before a recording has
 * sampled anything. A bar on a count (samples, switches) is held to what
 * the program or the kernel measured, not to a number tuned to a machine.
 *
 * NPROF_TEST_WORK_SCALE (a number from 1/64 to 64, default 1) multiplies
 * the work in every chunk: 0.25 makes each chunk four times quicker, as a
 * faster CPU would, 4 four times slower. A workload that follows the rule
 * behaves the same at any scale; `make check-speed` runs the suite at 0.25
 * and at 4 to prove it. A malformed value stops the program (status 2),
 * so that a typo cannot pass for a run at another speed. */
#ifndef NPROF_TEST_WORK_H
#define NPROF_TEST_WORK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The factor, read once per program; a race between two first calls
 * reads the same environment twice. */
static inline double work_scale(void)
{
	static double cached; /* 0 until read */
	double s;
	const char *e;
	char *end;

	__atomic_load(&cached, &s, __ATOMIC_RELAXED);
	if (s > 0)
		return s;
	e = getenv("NPROF_TEST_WORK_SCALE");
	s = 1;
	if (e && *e) {
		s = strtod(e, &end);
		if (*end || !(s >= 1.0 / 64 && s <= 64)) {
			fprintf(stderr, "NPROF_TEST_WORK_SCALE=%s: want a number from 1/64 to 64 "
					"(0.25: a CPU four times faster, 4: four times slower)\n", e);
			exit(2);
		}
	}
	__atomic_store(&cached, &s, __ATOMIC_RELAXED);
	return s;
}

/* n units of work in one chunk, scaled; at least 1. */
static inline uint64_t work_chunk(uint64_t n)
{
	double k = (double)n * work_scale();

	return k >= 1 ? (uint64_t)k : 1;
}

/* The clock c now, in ns. */
static inline uint64_t work_clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
