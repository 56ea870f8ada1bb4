/* hash: one fast, freestanding hash for interning tables. */
#ifndef NPROF_BASE_HASH_H
#define NPROF_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a folded with a final avalanche; good enough for table
 * indexing, not for anything adversarial. Usable in signal context. */
static inline uint64_t hash_bytes(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static inline uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

#endif
