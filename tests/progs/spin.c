/* spin: a fixed amount of CPU-bound work, for the overhead benchmark.
 *
 *   spin [--iterations N] [--threads T]
 *   spin --forever [--threads T]
 *
 * Each of T threads (default 1) runs N rounds (default 400) of a hash loop
 * through a few levels of calls (spin_outer -> spin_middle -> spin_leaf), so
 * a sampler has real stacks to walk. On exit it prints the wall time of the
 * work in seconds on stdout: "wall 1.234567". A fixed amount of work is what
 * the benchmarks time; the tests use --forever: it prints "ready" and works
 * until killed (the target for attach-by-PID timing). NPROF_TEST_WORK_SCALE
 * scales spin_leaf's chunk (work.h). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progs.h"

static long rounds = 400;
static int forever;
static volatile uint64_t sink;

static double clock_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE static uint64_t spin_leaf(uint64_t x)
{
	uint64_t n = work_chunk(10000);

	KEEP_FRAME();
	for (uint64_t i = 0; i < n; i++)
		x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ull + i;
	return x;
}

NOINLINE static uint64_t spin_middle(uint64_t x)
{
	for (int i = 0; i < 100; i++)
		x = spin_leaf(x);
	return x;
}

NOINLINE static void *spin_outer(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg + 1;
	for (long r = 0; forever || r < rounds; r++)
		x = spin_middle(x);
	sink += x;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
			rounds = atol(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--forever"))
			forever = 1;
		else {
			fprintf(stderr, "usage: spin [--iterations N] [--threads T] [--forever]\n");
			return 2;
		}
	}
	if (threads < 1 || threads > 64)
		threads = 1;
	if (forever) {
		printf("ready\n");
		fflush(stdout);
	}
	double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	pthread_t t[64];
	for (int i = 1; i < threads; i++)
		pthread_create(&t[i], NULL, spin_outer, (void *)(uintptr_t)i);
	spin_outer(NULL);
	for (int i = 1; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("wall %.6f cpu %.6f\n", clock_s(CLOCK_MONOTONIC) - t0,
	       clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
	return 0;
}
