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

/* "00" "01" ... "99": two digits a step, for numbuf_put. */
extern const char numbuf_pairs[200];

/* Writes sep (0 for none) and then x in decimal. Inline, two digits a
 * step into the buffer, its length known first: a flame graph's tree is
 * millions of numbers, and this was a fifth of a conversion's
 * instructions as a call writing a digit at a time and then reversing
 * them. */
static inline void numbuf_put(struct numbuf *b, char sep, int64_t x)
{
	static const uint64_t pow10[20] = {
		1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
		10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
		100000000000ull, 1000000000000ull, 10000000000000ull,
		100000000000000ull, 1000000000000000ull, 10000000000000000ull,
		100000000000000000ull, 1000000000000000000ull,
		10000000000000000000ull,
	};
	uint64_t u = x < 0 ? -(uint64_t)x : (uint64_t)x;
	/* Digits: log10 from the bit length (1233/4096 ~ log10(2)), one
	 * less than it may be, then corrected. */
	unsigned len = ((64 - (unsigned)__builtin_clzll(u | 1)) * 1233) >> 12;
	char *p;

	len += len < 20 && u >= pow10[len];
	len += !len;
	if (b->n + len + 2 > sizeof(b->buf))
		numbuf_flush(b);
	p = b->buf + b->n;
	if (sep)
		*p++ = sep;
	if (x < 0)
		*p++ = '-';
	b->n = (size_t)(p + len - b->buf);
	p += len;
	while (u >= 100) {
		__builtin_memcpy(p -= 2, &numbuf_pairs[(u % 100) * 2], 2);
		u /= 100;
	}
	if (u >= 10)
		__builtin_memcpy(p - 2, &numbuf_pairs[u * 2], 2);
	else
		p[-1] = (char)('0' + u);
}

/* A number made into text once, to be written many times: len bytes of
 * text (a separator, a sign and 19 digits at most). */
struct numbuf_text {
	char text[24];
	size_t len;
};

/* Makes sep (0 for none) and x in decimal into a numbuf_text. */
void numbuf_text_make(struct numbuf_text *t, char sep, int64_t x);

/* Writes t: a copy of all of text, whatever its length, then the
 * buffer's end moves by len. */
static inline void numbuf_put_text(struct numbuf *b, const struct numbuf_text *t)
{
	if (b->n + sizeof(t->text) > sizeof(b->buf))
		numbuf_flush(b);
	__builtin_memcpy(b->buf + b->n, t->text, sizeof(t->text));
	b->n += t->len;
}

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
