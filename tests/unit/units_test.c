/* The number syntax of -d and -i. */
#include "base/units.h"
#include "test.h"

#include <errno.h>

int main(void)
{
	uint64_t v = 0;

	CHECK(units_parse_duration_ns("10ms", 1, &v) == 0 && v == 10000000, "10ms");
	CHECK(units_parse_duration_ns("1000us", 1, &v) == 0 && v == 1000000, "1000us");
	CHECK(units_parse_duration_ns("5", 1000000000, &v) == 0 && v == 5000000000ull,
	      "bare number in the default unit");
	CHECK(units_parse_duration_ns("1.5", 1000000000, &v) == 0 && v == 1500000000ull,
	      "fractional seconds");
	CHECK(units_parse_duration_ns("2s", 1, &v) == 0 && v == 2000000000ull, "2s");
	CHECK(units_parse_duration_ns("250ns", 1000000000, &v) == 0 && v == 250, "250ns");
	CHECK(units_parse_duration_ns("0", 1000000000, &v) == 0 && v == 0, "zero");
	CHECK(units_parse_duration_ns("-1", 1, &v) == -EINVAL, "negative refused");
	CHECK(units_parse_duration_ns("10x", 1, &v) == -EINVAL, "bad unit refused");
	CHECK(units_parse_duration_ns("ms", 1, &v) == -EINVAL, "unit alone refused");
	CHECK(units_parse_duration_ns("", 1, &v) == -EINVAL, "empty refused");
	CHECK(units_parse_duration_ns("1e30", 1000000000, &v) == -ERANGE, "overflow refused");
	CHECK(units_parse_duration_ns("nan", 1, &v) == -EINVAL, "nan refused");
	CHECK(units_parse_duration_ns("30d", 1, &v) == 0 && v == 30ull * 86400 * 1000000000ull, "30d");
	CHECK(units_parse_duration_ns("1.5d", 1, &v) == 0 && v == 36ull * 3600 * 1000000000ull, "1.5d");
	CHECK(units_parse_count("2T", &v) == 0 && v == 2ull << 40, "2T");
	CHECK(units_parse_count("512k", &v) == 0 && v == 524288, "512k");
	CHECK(units_parse_count("1m", &v) == 0 && v == 1048576, "1m");
	CHECK(units_parse_count("100", &v) == 0 && v == 100, "100");
	CHECK(units_parse_count("12q", &v) == -EINVAL, "bad count suffix refused");

	char buf[32];
	CHECK_STR(units_format_ns(10000000, buf, sizeof(buf)), "10.00 ms", "format ms");
	CHECK_STR(units_format_ns(2500000000ull, buf, sizeof(buf)), "2.50 s", "format s");
	CHECK_STR(units_format_ns(999, buf, sizeof(buf)), "999 ns", "format ns");
	CHECK_STR(units_format_duration(60000000000ull, buf, sizeof(buf)), "1m", "duration 1m");
	CHECK_STR(units_format_duration(1500000000ull, buf, sizeof(buf)), "1500ms",
		  "duration 1500ms: the largest unit that writes it whole");
	CHECK_STR(units_format_duration(86400000000000ull, buf, sizeof(buf)), "24h",
		  "a day reads 24h");
	CHECK_STR(units_format_duration(2 * 86400000000000ull, buf, sizeof(buf)), "2d", "two, 2d");
	CHECK_STR(units_format_duration(0, buf, sizeof(buf)), "0", "nothing, 0");
	{
		uint64_t back = 0;

		CHECK(units_parse_duration_ns(units_format_duration(5400000000000ull, buf, sizeof(buf)),
					      1000000000ull, &back) == 0 && back == 5400000000000ull,
		      "what it writes (%s) reads back", buf);
	}
	return test_done();
}
