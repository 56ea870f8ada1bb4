#include "base/utf8.h"

size_t utf8_next(const unsigned char *s, uint32_t *ret_cp)
{
	uint32_t cp, min;
	size_t n;

	if (s[0] < 0x80) {
		*ret_cp = s[0];
		return s[0] ? 1 : 0;
	}
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, cp = s[0] & 0x1f, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, cp = s[0] & 0x0f, min = 0x800;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		goto bad;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
			goto bad;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		goto bad;
	*ret_cp = cp;
	return n;
bad:
	*ret_cp = UTF8_INVALID;
	return 1;
}

size_t utf8_put(uint32_t cp, unsigned char out[4])
{
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		cp = UTF8_INVALID;
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xc0 | cp >> 6);
		out[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xe0 | cp >> 12);
		out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (unsigned char)(0xf0 | cp >> 18);
	out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

void utf8_clean(char *s)
{
	unsigned char *p = (unsigned char *)s;

	while (*p) {
		uint32_t cp;
		size_t n;

		if (*p < 0x20 || *p == 0x7f) {
			*p++ = '?';
			continue;
		}
		if (*p < 0x80) {
			p++;
			continue;
		}
		n = utf8_next(p, &cp);
		if (cp == UTF8_INVALID && n == 1)
			*p = '?';
		p += n;
	}
}
