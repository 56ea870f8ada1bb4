#include "base/units.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses "<number><suffix>" with a decimal number; the suffix is matched
 * against the table. Doubles are exact for every integer below 2^53, far
 * beyond any sane interval, and let users write "1.5s". */
struct suffix {
	const char *name;
	double mult;
};

static int parse_with_suffixes(const char *s, const struct suffix *tab,
			       double bare_mult, uint64_t *ret)
{
	char *end;
	double v, mult = bare_mult;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	if (*end) {
		const struct suffix *t;

		for (t = tab; t->name; t++)
			if (!strcmp(end, t->name))
				break;
		if (!t->name)
			return -EINVAL;
		mult = t->mult;
	}
	v *= mult;
	if (v >= 18446744073709551615.0)
		return -ERANGE;
	*ret = (uint64_t)(v + 0.5);
	return 0;
}

int units_parse_duration_ns(const char *s, uint64_t default_unit_ns,
			    uint64_t *ret_ns)
{
	static const struct suffix tab[] = {
		{ "ns", 1 },	 { "us", 1e3 },	 { "ms", 1e6 },
		{ "s", 1e9 },	 { "m", 60e9 },	 { "min", 60e9 },
		{ "h", 3600e9 }, { "d", 86400e9 }, { NULL, 0 },
	};
	return parse_with_suffixes(s, tab, (double)default_unit_ns, ret_ns);
}

int units_parse_count(const char *s, uint64_t *ret_count)
{
	static const struct suffix tab[] = {
		{ "k", 1024.0 }, { "K", 1024.0 }, { "m", 1048576.0 },
		{ "M", 1048576.0 }, { "g", 1073741824.0 }, { "G", 1073741824.0 },
		{ "t", 1099511627776.0 }, { "T", 1099511627776.0 }, { NULL, 0 },
	};
	return parse_with_suffixes(s, tab, 1, ret_count);
}

const char *units_format_ns(uint64_t ns, char *buf, unsigned len)
{
	if (ns >= 1000000000ull)
		snprintf(buf, len, "%.2f s", ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else if (ns >= 1000ull)
		snprintf(buf, len, "%.2f us", ns / 1e3);
	else
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	return buf;
}

const char *units_format_duration(uint64_t ns, char *buf, unsigned len)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {
		{ "d", 86400000000000ull }, { "h", 3600000000000ull }, { "m", 60000000000ull },
		{ "s", 1000000000ull }, { "ms", 1000000 }, { "us", 1000 }, { "ns", 1 },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (ns && ns % units[i].ns == 0 && (i > 0 || ns >= 2 * units[0].ns)) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(ns / units[i].ns),
				 units[i].unit);
			return buf;
		}
	}
	snprintf(buf, len, "0");
	return buf;
}
