/* maps_fuzz: /proc/PID/maps text into the mapping table, then lookups and
 * overlapping inserts; the table must stay sorted and disjoint. */
#include <stdint.h>
#include <stdlib.h>

#include "symbolize/maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct maps m;
	struct map_entry e = { 0 };

	maps_init(&m);
	maps_parse(&m, (const char *)data, size, 0);
	for (size_t i = 1; i < m.n; i++)
		if (m.v[i - 1].end > m.v[i].start || m.v[i].start >= m.v[i].end)
			abort();
	if (m.n) {
		/* cover the middle of the table with one new mapping */
		e.start = m.v[0].start + (m.v[0].end - m.v[0].start) / 2;
		e.end = m.v[m.n - 1].end;
		e.kind = MAPK_FILE;
		e.path = (char *)"/x";
		if (e.start < e.end && maps_insert(&m, &e) == 0 &&
		    maps_find(&m, e.start) == NULL)
			abort();
		for (size_t i = 1; i < m.n; i++)
			if (m.v[i - 1].end > m.v[i].start)
				abort();
	}
	for (size_t i = 0; i + 8 <= size && i < 64; i += 8) {
		uint64_t a;

		__builtin_memcpy(&a, data + i, 8);
		maps_find(&m, a);
	}
	maps_release(&m);
	return 0;
}
