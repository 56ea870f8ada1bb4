/* numbuf: decimal and packed numbers, written through a memory stream and
 * read back; the packed digits are those the diff page decodes. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/numbuf.h"
#include "test.h"

/* Writes n numbers packed (zigzag coded when sign) and returns the text. */
static char *packed(const int64_t *v, size_t n, int sign)
{
	struct numbuf *nb = malloc(sizeof(*nb));
	char *out = NULL;
	size_t len = 0;

	nb->n = 0;
	nb->out = open_memstream(&out, &len);
	for (size_t k = 0; k < n; k++)
		numbuf_put_packed(nb, sign ? numbuf_zigzag(v[k]) : (uint64_t)v[k]);
	numbuf_flush(nb);
	fclose(nb->out);
	free(nb);
	return out;
}

/* Writes n numbers in decimal, each after sep, and returns the text. */
static char *decimal(const int64_t *v, size_t n, char sep)
{
	struct numbuf *nb = malloc(sizeof(*nb));
	char *out = NULL;
	size_t len = 0;

	nb->n = 0;
	nb->out = open_memstream(&out, &len);
	for (size_t k = 0; k < n; k++)
		numbuf_put(nb, sep, v[k]);
	numbuf_flush(nb);
	fclose(nb->out);
	free(nb);
	return out;
}

/* The numbers of text, as the page reads them (flame.html unpack()). */
static size_t unpack(const char *text, uint64_t *v, size_t max)
{
	static const char digits[] = NUMBUF_PACKED_DIGITS;
	size_t n = 0;
	unsigned shift = 0;
	uint64_t x = 0;

	for (; *text && n < max; text++) {
		uint64_t d = (uint64_t)(strchr(digits, *text) - digits);

		x |= (d & 31) << shift;
		shift += 5;
		if (d < 32) {
			v[n++] = x;
			x = 0;
			shift = 0;
		}
	}
	return n;
}

int main(void)
{
	static const int64_t u[] = { 0, 1, 31, 32, 1023, 1024, 40007, INT64_MAX };
	static const int64_t s[] = { 0, -1, 1, -2, 2, INT64_MIN, INT64_MAX, -1000000 };
	uint64_t back[16];
	char *text = packed(u, 8, 0);
	size_t n = unpack(text, back, 16);
	int same = n == 8;

	CHECK(text && !strncmp(text, "ABf", 3) && text[3] == 'g' && text[4] == 'B',
	      "0, 1, 31, then 32 as two digits, least significant first (%s)", text);
	CHECK(strspn(text, NUMBUF_PACKED_DIGITS) == strlen(text), "only the 64 digits");
	for (size_t k = 0; same && k < 8; k++)
		same = back[k] == (uint64_t)u[k];
	CHECK(same, "unsigned numbers read back, INT64_MAX too");
	CHECK(strlen(text) == 1 + 1 + 1 + 2 + 2 + 3 + 4 + 13, "digits: 5 bits each (%zu)", strlen(text));
	free(text);

	text = packed(s, 8, 1);
	n = unpack(text, back, 16);
	same = n == 8;
	for (size_t k = 0; same && k < 8; k++)
		same = (int64_t)((back[k] >> 1) ^ -(back[k] & 1)) == s[k];
	CHECK(same, "signed numbers zigzag coded read back, INT64_MIN and MAX too");
	CHECK(!strncmp(text, "ABCDE", 5), "0, -1, 1, -2, 2 are 0, 1, 2, 3, 4");
	free(text);

	{
		/* Every length of digits, both sides of each power of ten. */
		int64_t d[64];
		char expect[2048] = "", one[32];
		size_t nd = 0;
		uint64_t p = 1;

		d[nd++] = 0;
		for (int k = 1; k <= 18; k++) {
			p *= 10;
			d[nd++] = (int64_t)p - 1;
			d[nd++] = (int64_t)p;
			d[nd++] = -(int64_t)p;
		}
		d[nd++] = INT64_MAX;
		d[nd++] = INT64_MIN;
		d[nd++] = -1;
		for (size_t k = 0; k < nd; k++) {
			snprintf(one, sizeof(one), ",%" PRId64, d[k]);
			strcat(expect, one);
		}
		text = decimal(d, nd, ',');
		CHECK(text && !strcmp(text, expect), "decimal: as printf writes them (%s)", text);
		free(text);
		text = decimal(d, 3, 0);
		CHECK(text && !strcmp(text, "0910"), "no separator when sep is 0 (%s)", text);
		free(text);
	}
	{
		/* Numbers made into text once, written many times, across
		 * flushes: as numbuf_put writes them. */
		struct numbuf *nb = malloc(sizeof(*nb));
		struct numbuf_text t[3];
		char *out = NULL;
		size_t len = 0;
		int ok = 1;

		numbuf_text_make(&t[0], ',', INT64_MIN);
		numbuf_text_make(&t[1], 0, 0);
		numbuf_text_make(&t[2], ',', 4294967295);
		nb->n = 0;
		nb->out = open_memstream(&out, &len);
		for (int k = 0; k < 9000; k++)
			numbuf_put_text(nb, &t[k % 3]);
		numbuf_flush(nb);
		fclose(nb->out);
		free(nb);
		for (int k = 0; ok && k < 3000; k++)
			ok = !memcmp(out + k * 33, ",-9223372036854775808" "0" ",4294967295", 33);
		CHECK(ok && len == 3000 * 33, "text made once, written 9,000 times (%zu bytes)", len);
		free(out);
	}
	{
		/* More than a buffer's worth, so flushed on the way: nothing
		 * lost or doubled. -1 packed unsigned is UINT64_MAX. */
		static int64_t many_min[20000], many_ones[20000];
		char *dec, *pk;

		for (int k = 0; k < 20000; k++)
			many_min[k] = INT64_MIN, many_ones[k] = -1;
		dec = decimal(many_min, 20000, ',');
		pk = packed(many_ones, 20000, 0);
		CHECK(dec && strlen(dec) == 20000 * 21,
		      "decimal past a buffer's worth: every digit written (%zu)", dec ? strlen(dec) : 0);
		CHECK(pk && strlen(pk) == 20000 * 13,
		      "a buffer's worth and more: every digit written (%zu)", pk ? strlen(pk) : 0);
		free(dec);
		free(pk);
	}
	return test_done();
}
