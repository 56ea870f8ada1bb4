/* hash: one fast, freestanding hash for interning tables. */
#ifndef NPROF_BASE_HASH_H
#define NPROF_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Eight bytes at a time, each word xored in and multiplied (a 64-bit
 * multiply mixes upward, so the high half is folded down each time),
 * the last bytes one at a time as FNV-1a, then a final avalanche: good
 * enough for table indexing, not for anything adversarial. Stacks are
 * hashed whole (a million frames for two big profiles): a byte at a time
 * cost four times as much. Usable in signal context. */
static inline uint64_t hash_bytes(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;

	for (; len >= 8; len -= 8, p += 8) {
		uint64_t w;

		__builtin_memcpy(&w, p, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 32;
	}
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
