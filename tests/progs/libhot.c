/* libhot: the library dlopen_host loads at run time. hot_in_library burns
 * CPU in chunks, through a static helper so that the library's own .symtab
 * (not just .dynsym) is needed to name every frame. */
#include <stdint.h>

#include "progs.h"

uint64_t hot_in_library(uint64_t rounds);

NOINLINE static uint64_t hot_mix(uint64_t x, uint64_t rounds)
{
	KEEP_FRAME();
	for (uint64_t i = 0; i < rounds; i++) {
		x ^= x << 9;
		x ^= x >> 5;
		x += i * 0x9e3779b97f4a7c15ull;
	}
	return x;
}

/* Exported: the host finds it with dlsym. */
NOINLINE uint64_t hot_in_library(uint64_t rounds)
{
	/* Not a tail call: hot_in_library stays on the stack. */
	uint64_t r = hot_mix(rounds | 1, rounds);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}
