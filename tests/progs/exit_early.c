/* exit_early: burns CPU in burn_until_exit for a short time, then exits
 * with status 0 -- a target that ends in the middle of a recording.
 *
 *   exit_early [--seconds S]      (default 1)
 *
 * "ready" is printed on stdout once it burns. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progs.h"

static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE static void burn_until_exit(double until)
{
	uint64_t x = 5, n = work_chunk(100000);
	while (now() < until)
		for (uint64_t i = 0; i < n; i++)
			x = (x ^ (x << 5)) + 0x632be59bd9b4e019ull;
	sink = x;
}

int main(int argc, char **argv)
{
	double seconds = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: exit_early [--seconds S]\n");
			return 2;
		}
	}
	double end = now() + seconds;
	printf("ready\n");
	fflush(stdout);
	burn_until_exit(end);
	return 0;
}
