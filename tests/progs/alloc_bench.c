/* alloc_bench: an allocation-heavy loop for bench/alloc-overhead.
 *
 *   alloc_bench [--threads T] [--scale N | --ops N]
 *
 * T threads (default 2) each keep a ring of 4096 live blocks and replace
 * them in turn (free, then malloc), 10 M operations per thread per
 * --scale, or exactly --ops per thread (bench/compare's smaller runs). Sizes are mixed as in a service, drawn from a per-thread
 * generator (so every run makes the same calls): half 16-128 B, 45 %
 * 128 B-4 KiB, 5 % 4-64 KiB (below glibc's mmap threshold: all from the
 * heap). Prints "wall W cpu C": its own measure of the work, in seconds,
 * from before the threads start to after they end (CLOCK_MONOTONIC and
 * CLOCK_PROCESS_CPUTIME_ID: a profiler's threads in the process count,
 * its start-up and its writing at exit do not). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progs.h"

#define RING 4096
#define MAX_THREADS 64
#define OPS_PER_SCALE 10000000ul

static unsigned long ops = OPS_PER_SCALE;

static double clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t mixed_size(uint64_t *seed)
{
	uint64_t r;

	*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
	r = *seed >> 33;
	if (r % 100 < 50)
		return 16 + (size_t)(r / 100 % 113);
	if (r % 100 < 95)
		return 128 + (size_t)(r / 100 % 3969);
	return 4096 + (size_t)(r / 100 % 61441);
}

NOINLINE static void churn(void **ring, unsigned long n, uint64_t *seed)
{
	KEEP_FRAME();
	for (unsigned long i = 0; i < n; i++) {
		size_t k = i % RING;

		free(ring[k]);
		ring[k] = malloc(mixed_size(seed));
		((volatile char *)ring[k])[0] = 1;
	}
}

NOINLINE static void *churn_main(void *arg)
{
	uint64_t seed = 42 + (uint64_t)(uintptr_t)arg;
	void **ring = calloc(RING, sizeof(*ring));

	KEEP_FRAME();
	if (!ring)
		abort();
	churn(ring, ops, &seed);
	for (int i = 0; i < RING; i++)
		free(ring[i]);
	free(ring);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[MAX_THREADS];
	unsigned long scale = 1, per_thread = 0;
	int threads = 2;
	double w0, c0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--scale") && i + 1 < argc)
			scale = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
			per_thread = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: alloc_bench [--threads T] [--scale N | --ops N]\n");
			return 2;
		}
	}
	if (threads < 1 || threads > MAX_THREADS || scale < 1) {
		fprintf(stderr, "alloc_bench: --threads 1..%d, --scale 1 or more\n", MAX_THREADS);
		return 2;
	}
	ops = per_thread ? per_thread : OPS_PER_SCALE * scale;
	w0 = clock_s(CLOCK_MONOTONIC);
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, churn_main, (void *)(uintptr_t)i) != 0) {
			fprintf(stderr, "alloc_bench: pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("wall %.6f cpu %.6f\n", clock_s(CLOCK_MONOTONIC) - w0,
	       clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
	return 0;
}
