/* perfmap_fuzz: perf map text, parsed in two pieces (as a JIT appends),
 * then lookups. */
#include <stdint.h>
#include <stdlib.h>

#include "symbolize/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap m;
	size_t half = size / 2;

	perfmap_init(&m);
	perfmap_parse(&m, (const char *)data, half);
	if (m.consumed > half)
		abort();
	perfmap_parse(&m, (const char *)data + m.consumed, size - m.consumed);
	for (size_t i = 0; i < m.n && i < 64; i++) {
		uint64_t a = m.v[i].start + m.v[i].size / 2;
		const struct perfmap_entry *e = perfmap_find(&m, a);

		if (!e || a - e->start >= e->size)
			abort(); /* some entry covers the middle of each */
	}
	perfmap_release(&m);
	return 0;
}
