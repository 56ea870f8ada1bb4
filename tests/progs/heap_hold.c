/* heap_hold: holds a known amount of live heap, for bench/alloc-overhead's
 * measure of what heap profiling's live set adds to resident memory.
 *
 *   heap_hold [--mib M]
 *
 * Allocates M MiB (default 256) in blocks of mixed sizes (64 B - 8 KiB,
 * from a fixed generator, so every run makes the same calls), touches
 * each, keeps them all, prints "ready BLOCKS BYTES", and waits: when its
 * stdin is closed it frees everything and exits with status 0. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

NOINLINE static void **hold(size_t want, size_t *ret_n, size_t *ret_bytes)
{
	uint64_t seed = 7;
	size_t cap = 1024, n = 0, bytes = 0;
	void **blocks = malloc(cap * sizeof(*blocks));

	KEEP_FRAME();
	while (blocks && bytes < want) {
		size_t size;

		if (n == cap) {
			void **more = realloc(blocks, 2 * cap * sizeof(*blocks));

			if (!more)
				break;
			blocks = more;
			cap *= 2;
		}
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		size = 64 + (size_t)((seed >> 33) % 8129);
		blocks[n] = malloc(size);
		if (!blocks[n])
			break;
		memset(blocks[n], 1, size);
		bytes += size;
		n++;
	}
	*ret_n = n;
	*ret_bytes = bytes;
	return blocks;
}

int main(int argc, char **argv)
{
	size_t mib = 256, n = 0, bytes = 0;
	void **blocks;
	char buf[256];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mib") && i + 1 < argc)
			mib = strtoul(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: heap_hold [--mib M]\n");
			return 2;
		}
	}
	blocks = hold(mib << 20, &n, &bytes);
	if (!blocks) {
		fprintf(stderr, "heap_hold: out of memory\n");
		return 1;
	}
	printf("ready %zu %zu\n", n, bytes);
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	for (size_t i = 0; i < n; i++)
		free(blocks[i]);
	free(blocks);
	return 0;
}
