/* units: the number syntax users type for durations and intervals. */
#ifndef NPROF_BASE_UNITS_H
#define NPROF_BASE_UNITS_H

#include <stdint.h>

/* "10ms", "1000us", "2s", "500ns", "1.5s", "5m", "2h", "30d"; a bare number means
 * default_unit_ns units (1 for ns, 1e9 for seconds). Rejects negatives,
 * junk after the unit, and values that overflow. */
int units_parse_duration_ns(const char *s, uint64_t default_unit_ns,
			    uint64_t *ret_ns);

/* "512k", "1m", "4096", "2g", "1T": a count or a byte size, binary multipliers. */
int units_parse_count(const char *s, uint64_t *ret_count);

/* "10 ms", "1.50 s": human text for a nanosecond value, into buf. */
const char *units_format_ns(uint64_t ns, char *buf, unsigned len);

/* ns as a user writes it, in the largest unit that writes it whole
 * ("5m", "1500ms", "24h"; days only from two: a day reads "24h"), into
 * buf: what units_parse_duration_ns reads back. */
const char *units_format_duration(uint64_t ns, char *buf, unsigned len);

#endif
