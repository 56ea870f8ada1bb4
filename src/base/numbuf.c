#include "base/numbuf.h"

#include <string.h>

void numbuf_flush(struct numbuf *b)
{
	fwrite(b->buf, 1, b->n, b->out);
	b->n = 0;
}

const char numbuf_pairs[200] =
	"0001020304050607080910111213141516171819"
	"2021222324252627282930313233343536373839"
	"4041424344454647484950515253545556575859"
	"6061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

void numbuf_text_make(struct numbuf_text *t, char sep, int64_t x)
{
	struct numbuf b;

	b.n = 0; /* the rest is not read: at most 21 bytes are written */
	numbuf_put(&b, sep, x);
	memset(t->text, 0, sizeof(t->text));
	memcpy(t->text, b.buf, b.n);
	t->len = b.n;
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
