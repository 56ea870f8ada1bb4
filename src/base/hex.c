#include "base/hex.h"

#include <errno.h>

static int digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int hex_parse(const char *p, const char *end, unsigned flags,
	      uint64_t *ret_value, const char **ret_stop)
{
	uint64_t v = 0;
	int digits = 0, d;

	if ((flags & HEX_PREFIX) && end - p >= 2 && p[0] == '0' &&
	    (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	for (; p < end && (d = digit(*p)) >= 0; p++, digits++) {
		if (digits == 16)
			return -EINVAL;
		v = v << 4 | (uint64_t)d;
	}
	if (!digits)
		return -EINVAL;
	*ret_value = v;
	*ret_stop = p;
	return 0;
}

void hex_encode(const uint8_t *bytes, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 15];
	}
	out[2 * n] = '\0';
}

int hex_decode(const char *text, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i++) {
		int hi = digit(text[2 * i]), lo = hi < 0 ? -1 : digit(text[2 * i + 1]);

		if (lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}
