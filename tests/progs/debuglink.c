/* debuglink: built, then stripped of every symbol table, with its symbols
 * and DWARF moved to debuglink.debug next to it and a .gnu_debuglink
 * section pointing there (tests/progs/progs.mk). The hot function is static,
 * so it is in neither .dynsym nor anything else left in the binary: only
 * the debug file can name it.
 *
 *   debuglink [--seconds N]
 *
 * Hot chain: main -> hidden_outer -> hidden_hot_loop. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progs.h"

static volatile uint64_t sink;

NOINLINE static uint64_t hidden_hot_loop(uint64_t x)
{
	uint64_t n = work_chunk(3000000);

	KEEP_FRAME();
	for (uint64_t i = 0; i < n; i++)
		x = (x ^ (x >> 3)) * 0xff51afd7ed558ccdull + i;
	return x;
}

NOINLINE static void hidden_outer(double seconds)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	uint64_t x = 42;
	do {
		x = hidden_hot_loop(x);
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
	sink = x;
}

int main(int argc, char **argv)
{
	double seconds = 5;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: debuglink [--seconds N]\n");
			return 2;
		}
	}
	printf("ready\n");
	fflush(stdout);
	hidden_outer(seconds);
	return 0;
}
