/* utf8_next and json_put_string: escapes, malformed UTF-8, the HTML-safe
 * flag and the byte limit. */
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/utf8.h"
#include "test.h"

static char *put(const char *s, size_t max, unsigned flags)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	json_put_string(f, s, max, flags);
	fclose(f);
	return buf;
}

#define JSON_IS(s, max, flags, want, what)               \
	do {                                             \
		char *got_ = put(s, max, flags);         \
		CHECK_STR(got_, want, "%s", what);       \
		free(got_);                              \
	} while (0)

int main(void)
{
	uint32_t cp;

	CHECK(utf8_next((const unsigned char *)"A", &cp) == 1 && cp == 'A', "ASCII");
	CHECK(utf8_next((const unsigned char *)"\xc3\xa9", &cp) == 2 && cp == 0xe9, "two bytes");
	CHECK(utf8_next((const unsigned char *)"\xe2\x80\xa6", &cp) == 3 && cp == 0x2026,
	      "three bytes");
	CHECK(utf8_next((const unsigned char *)"\xf0\x9f\x94\xa5", &cp) == 4 && cp == 0x1f525,
	      "four bytes");
	CHECK(utf8_next((const unsigned char *)"\xc0\xaf", &cp) == 1 && cp == UTF8_INVALID,
	      "overlong: one byte, invalid");
	CHECK(utf8_next((const unsigned char *)"\xed\xa0\x80", &cp) == 1 && cp == UTF8_INVALID,
	      "surrogate: invalid");
	CHECK(utf8_next((const unsigned char *)"\xe2\x80", &cp) == 1 && cp == UTF8_INVALID,
	      "cut short by the NUL: invalid, one byte");
	CHECK(utf8_next((const unsigned char *)"", &cp) == 0 && cp == 0, "the NUL: 0");

	{
		static const uint32_t cps[] = { 'A', 0xe9, 0x2026, 0x1f525, 0x10ffff };
		unsigned char enc[5];
		int ok = 1;

		for (unsigned i = 0; i < sizeof(cps) / sizeof(cps[0]); i++) {
			size_t n = utf8_put(cps[i], enc);

			enc[n] = 0;
			ok = ok && utf8_next(enc, &cp) == n && cp == cps[i];
		}
		CHECK(ok, "utf8_put and utf8_next agree, 1 to 4 bytes");
		CHECK(utf8_put(0xd800, enc) == 3 && enc[0] == 0xef && enc[1] == 0xbf && enc[2] == 0xbd,
		      "a surrogate is put as U+FFFD");
	}
	JSON_IS("plain", 0, 0, "\"plain\"", "plain");
	JSON_IS(NULL, 0, 0, "\"\"", "NULL is empty");
	JSON_IS("a\"b\\c", 0, 0, "\"a\\\"b\\\\c\"", "quote and backslash");
	JSON_IS("t\tn\n\x7f", 0, 0, "\"t\\u0009n\\u000a\\u007f\"", "control characters");
	JSON_IS("caf\xc3\xa9", 0, 0, "\"caf\xc3\xa9\"", "valid UTF-8 kept");
	JSON_IS("x\xffy", 0, 0, "\"x\\ufffdy\"", "a malformed byte");
	JSON_IS("</script>&", 0, 0, "\"</script>&\"", "<, >, & kept without the flag");
	JSON_IS("</script>&", 0, JSON_HTML_SAFE, "\"\\u003c/script\\u003e\\u0026\"",
		"<, >, & escaped with JSON_HTML_SAFE");
	JSON_IS("a\xe2\x80\xa8z", 0, JSON_HTML_SAFE, "\"a\\u2028z\"", "U+2028 escaped for JS");
	JSON_IS("abcdef", 3, 0, "\"abc\\u2026\"", "cut at max bytes, an ellipsis");
	JSON_IS("abc", 3, 0, "\"abc\"", "exactly max: whole");
	JSON_IS("ab\xc3\xa9", 3, 0, "\"ab\\u2026\"", "never half a character");
	return test_done();
}
