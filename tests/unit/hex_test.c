/* hex_parse: digits of either case, where it stops, the 0x prefix only
 * when asked, the 16-digit bound, no reading past end, nothing written
 * on a refusal. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "base/hex.h"
#include "test.h"

static int parse(const char *s, unsigned flags, uint64_t *v, size_t *used)
{
	const char *stop = NULL;
	int rc = hex_parse(s, s + strlen(s), flags, v, &stop);

	if (rc == 0)
		*used = (size_t)(stop - s);
	return rc;
}

int main(void)
{
	uint64_t v = 0;
	size_t used = 0;
	const char *stop;

	CHECK(parse("ffffffff81000000 T _text", 0, &v, &used) == 0 &&
	      v == 0xffffffff81000000ull && used == 16, "kallsyms address, stops at the space");
	CHECK(parse("DeadBeef", 0, &v, &used) == 0 && v == 0xdeadbeef && used == 8,
	      "either case");
	CHECK(parse("0", 0, &v, &used) == 0 && v == 0 && used == 1, "zero");
	CHECK(parse("7f00-7f10", 0, &v, &used) == 0 && v == 0x7f00 && used == 4,
	      "stops at the first other byte");
	CHECK(parse("ffffffffffffffff", 0, &v, &used) == 0 && v == UINT64_MAX && used == 16,
	      "16 digits: the largest value");
	CHECK(parse("0123456789abcdefABCDEF", 0, &v, &used) == -EINVAL, "17 digits or more refused");
	CHECK(parse("00000000000000001", 0, &v, &used) == -EINVAL,
	      "leading zeros count: 17 digits refused");
	CHECK(parse("", 0, &v, &used) == -EINVAL, "empty refused");
	CHECK(parse("g1", 0, &v, &used) == -EINVAL, "no digit refused");
	CHECK(parse("0x1f rest", 0, &v, &used) == 0 && v == 0 && used == 1,
	      "without HEX_PREFIX, 0x is a 0 that stops at x");
	CHECK(parse("0x1f rest", HEX_PREFIX, &v, &used) == 0 && v == 0x1f && used == 4,
	      "with HEX_PREFIX, 0x skipped");
	CHECK(parse("0X1F", HEX_PREFIX, &v, &used) == 0 && v == 0x1f && used == 4, "0X too");
	CHECK(parse("1f", HEX_PREFIX, &v, &used) == 0 && v == 0x1f && used == 2,
	      "the prefix is optional");
	CHECK(parse("0x", HEX_PREFIX, &v, &used) == -EINVAL, "a prefix without digits refused");
	CHECK(parse("0xg", HEX_PREFIX, &v, &used) == -EINVAL, "a prefix before junk refused");
	CHECK(parse("0 x", HEX_PREFIX, &v, &used) == 0 && v == 0 && used == 1,
	      "a lone 0 is a number even with HEX_PREFIX");
	CHECK(parse("0xffffffffffffffff", HEX_PREFIX, &v, &used) == 0 && v == UINT64_MAX &&
	      used == 18, "the prefix does not count as digits");
	{
		static const char buf[] = "1234abcd", pre[] = "0x12", zz[] = "zz";

		CHECK(hex_parse(buf, buf + 3, 0, &v, &stop) == 0 && v == 0x123 && stop == buf + 3,
		      "stops at end, not at a NUL");
		CHECK(hex_parse(buf, buf, 0, &v, &stop) == -EINVAL, "empty range refused");
		CHECK(hex_parse(pre, pre + 1, HEX_PREFIX, &v, &stop) == 0 && v == 0 &&
		      stop == pre + 1, "a prefix cut by end is not read as one");
		v = 42;
		stop = NULL;
		CHECK(hex_parse(zz, zz + 2, 0, &v, &stop) == -EINVAL && v == 42 && !stop,
		      "nothing written on a refusal");
	}
	return test_done();
}
