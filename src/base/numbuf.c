#include "base/numbuf.h"

void numbuf_flush(struct numbuf *b)
{
	fwrite(b->buf, 1, b->n, b->out);
	b->n = 0;
}

void numbuf_put(struct numbuf *b, char sep, int64_t x)
{
	char tmp[24];
	size_t k = 0;
	uint64_t u = x < 0 ? -(uint64_t)x : (uint64_t)x;

	if (b->n + sizeof(tmp) + 2 > sizeof(b->buf))
		numbuf_flush(b);
	if (sep)
		b->buf[b->n++] = sep;
	if (x < 0)
		b->buf[b->n++] = '-';
	do {
		tmp[k++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	while (k)
		b->buf[b->n++] = tmp[--k];
}

void numbuf_put_packed(struct numbuf *b, uint64_t x)
{
	static const char digits[] = NUMBUF_PACKED_DIGITS;

	if (b->n + 16 > sizeof(b->buf))
		numbuf_flush(b);
	while (x >= 32) {
		b->buf[b->n++] = digits[32 + (x & 31)];
		x >>= 5;
	}
	b->buf[b->n++] = digits[x];
}
