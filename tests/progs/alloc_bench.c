/* alloc_bench: an allocation-heavy loop for bench/alloc-overhead: a ring
 * of 4096 live blocks of 16 B - 4 KiB, each replaced in turn (malloc and
 * free), 20 M operations per --scale; prints "wall SECONDS" measured by
 * itself (CLOCK_MONOTONIC). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progs.h"

#define RING 4096

NOINLINE static void churn(void **ring, unsigned long n, uint64_t *seed)
{
	KEEP_FRAME();
	for (unsigned long i = 0; i < n; i++) {
		size_t k = i % RING, size;

		*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
		size = 16 + (size_t)((*seed >> 33) % 4080);
		free(ring[k]);
		ring[k] = malloc(size);
		((volatile char *)ring[k])[0] = 1;
	}
}

int main(int argc, char **argv)
{
	unsigned long scale = 1;
	uint64_t seed = 42;
	void **ring = calloc(RING, sizeof(*ring));
	struct timespec t0, t1;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--scale") && i + 1 < argc)
			scale = strtoul(argv[++i], NULL, 10);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	churn(ring, 20000000ul * scale, &seed);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int i = 0; i < RING; i++)
		free(ring[i]);
	free(ring);
	printf("wall %.6f\n", (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
