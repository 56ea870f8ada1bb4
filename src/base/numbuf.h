/* numbuf: integers written in decimal through a buffer of their own.
 *
 * A flame graph's data is millions of numbers; fprintf per number was
 * most of the time spent writing one. */
#ifndef NPROF_BASE_NUMBUF_H
#define NPROF_BASE_NUMBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct numbuf {
	char buf[1 << 16];
	size_t n;
	FILE *out;
};

/* Writes what is buffered to b->out. */
void numbuf_flush(struct numbuf *b);

/* Writes sep (0 for none) and then x in decimal. */
void numbuf_put(struct numbuf *b, char sep, int64_t x);

/* Packed numbers, for data too big for a JSON array (a diff's flame
 * graph): x in base 32, least significant digit first, each digit one
 * character of NUMBUF_PACKED_DIGITS: from its first half for a number's
 * last digit, its second half for the others. No separator, nothing to
 * escape in JSON or HTML, and about half the bytes of decimal with
 * commas; a page decodes it faster than JSON.parse reads the array. */
#define NUMBUF_PACKED_DIGITS \
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

void numbuf_put_packed(struct numbuf *b, uint64_t x);

/* A signed number as an unsigned one for numbuf_put_packed: 0, -1, 1,
 * -2... become 0, 1, 2, 3... */
static inline uint64_t numbuf_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

#endif
