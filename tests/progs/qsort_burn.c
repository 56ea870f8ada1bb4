/* qsort_burn: CPU burnt in a costly comparator that libc's qsort calls:
 *
 *   main -> sort_things -> qsort (libc: qsort_r, msort_with_tmp, ...)
 *        -> compare_costly
 *
 *   qsort_burn [--seconds N]
 *
 * Nearly all the CPU is in compare_costly, below libc frames that have no
 * frame pointers on Debian: a frame-pointer walk from the comparator loses
 * sort_things and main, a DWARF walk keeps them. Sorts of 4096 numbers
 * (the chunk, scaled by NPROF_TEST_WORK_SCALE: work.h) repeat until the
 * seconds have passed on CLOCK_MONOTONIC; the comparator's own cost is
 * not scaled: it sets the comparator's share of the CPU, not how long
 * the program runs. "ready" is printed on stdout once sorting runs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progs.h"

#define N 4096

static volatile uint64_t sink;

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* About a microsecond of hashing per comparison: the sort's own work is
 * noise next to it. */
NOINLINE static int compare_costly(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	KEEP_FRAME();
	for (int i = 0; i < 300; i++) {
		x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull;
		y = (y ^ (y >> 29)) * 0xbf58476d1ce4e5b9ull;
	}
	sink += x ^ y;
	return *(const uint64_t *)a < *(const uint64_t *)b ? -1
	       : *(const uint64_t *)a > *(const uint64_t *)b;
}

NOINLINE static void sort_things(uint64_t *v, size_t n, uint64_t *rng)
{
	KEEP_FRAME();
	for (size_t i = 0; i < n; i++) {
		*rng ^= *rng << 13;
		*rng ^= *rng >> 7;
		*rng ^= *rng << 17;
		v[i] = *rng;
	}
	qsort(v, n, sizeof(*v), compare_costly);
	sink += v[0];
}

int main(int argc, char **argv)
{
	size_t n = work_chunk(N);
	uint64_t *v = calloc(n, sizeof(*v));
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	double seconds = 5, end;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atof(argv[++i]);
		} else {
			fprintf(stderr, "usage: qsort_burn [--seconds N]\n");
			return 2;
		}
	}
	if (!v) {
		perror("qsort_burn");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	end = mono_s() + seconds;
	do
		sort_things(v, n, &rng);
	while (mono_s() < end);
	free(v);
	return 0;
}
