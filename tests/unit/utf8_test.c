/* utf8: decoding, encoding, and cleaning text for logs and JSON. */
#include <string.h>

#include "base/utf8.h"
#include "test.h"

static const char *cleaned(const char *in)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "%s", in);
	utf8_clean(buf);
	return buf;
}

int main(void)
{
	unsigned char out[4];
	uint32_t cp;

	CHECK(utf8_next((const unsigned char *)"\xc3\xa9", &cp) == 2 && cp == 0xe9, "é: two bytes, U+00E9");
	CHECK(utf8_next((const unsigned char *)"\xc0\xaf", &cp) == 1 && cp == UTF8_INVALID,
	      "an overlong '/' is malformed, one byte");
	CHECK(utf8_put(0x1f600, out) == 4 && !memcmp(out, "\xf0\x9f\x98\x80", 4), "U+1F600 in four bytes");
	CHECK_STR(cleaned("plain text"), "plain text", "ASCII text is kept");
	CHECK_STR(cleaned("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93", "well-formed UTF-8 is kept");
	CHECK_STR(cleaned("a\tb\nc\x1b[31m\x7f"), "a?b?c?[31m?", "control bytes become ?");
	CHECK_STR(cleaned("x\xff\xc3y\xe2\x9c"), "x??y??", "malformed bytes become ?, one each");
	return test_done();
}
