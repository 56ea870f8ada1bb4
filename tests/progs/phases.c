/* phases: one thread burns CPU in phase_one, then in phase_two, each for a
 * measured amount of its own CPU time, so that a profile's first part is
 * all phase_one and its last part all phase_two — the ground truth of a
 * flame graph drawn for a time range.
 *
 *   phases [--seconds S] [--truth FILE]
 *
 * Each phase lasts S seconds (default 1) of thread CPU time. The truth
 * file says when (CLOCK_REALTIME, ns) each phase began and ended:
 *
 *   phase_one 1764100000000000000 1764100001000000000
 *   phase_two 1764100001000000000 1764100002000000000
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progs.h"

static volatile uint64_t sink;

/* A chunk of arithmetic the compiler cannot drop. */
static NOINLINE uint64_t spin(uint64_t x)
{
	uint64_t n = work_chunk(20000);

	KEEP_FRAME();
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static NOINLINE void phase_one(uint64_t cpu_ns)
{
	uint64_t end = work_clock_ns(CLOCK_THREAD_CPUTIME_ID) + cpu_ns;

	KEEP_FRAME();
	while (work_clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		sink = spin(sink);
}

static NOINLINE void phase_two(uint64_t cpu_ns)
{
	uint64_t end = work_clock_ns(CLOCK_THREAD_CPUTIME_ID) + cpu_ns;

	KEEP_FRAME();
	while (work_clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		sink = spin(sink + 1);
}

int main(int argc, char **argv)
{
	double seconds = 1;
	const char *truth = NULL;
	uint64_t t[3];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth = argv[++i];
		else {
			fprintf(stderr, "usage: phases [--seconds S] [--truth FILE]\n");
			return 2;
		}
	}
	t[0] = work_clock_ns(CLOCK_REALTIME);
	phase_one((uint64_t)(seconds * 1e9));
	t[1] = work_clock_ns(CLOCK_REALTIME);
	phase_two((uint64_t)(seconds * 1e9));
	t[2] = work_clock_ns(CLOCK_REALTIME);
	if (truth) {
		FILE *f = fopen(truth, "w");

		if (!f) {
			perror(truth);
			return 1;
		}
		fprintf(f, "phase_one %" PRIu64 " %" PRIu64 "\nphase_two %" PRIu64 " %" PRIu64 "\n",
			t[0], t[1], t[1], t[2]);
		fclose(f);
	}
	return 0;
}
