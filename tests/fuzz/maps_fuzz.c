/* maps_fuzz: /proc/PID/maps text line by line through base/proc's one
 * parser (each line's range non-empty, its path inside the text), into
 * the mapping table, then lookups and overlapping inserts; the table must
 * stay sorted and disjoint. The same
 * text through the unwinder's own reader of code mappings (a thread dump
 * reads the maps once for both), its paths made relative first so that it
 * opens no file: the module list must stay sorted and disjoint too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/proc.h"
#include "symbolize/maps.h"
#include "unwind/modules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct maps m;
	struct map_entry e = { 0 };
	const char *in = (const char *)data, *p = in;
	struct proc_map_line l;

	while (proc_maps_next(&p, in + size, &l))
		if (l.start >= l.end || l.path < in || l.path + l.path_len > p || p > in + size)
			abort();
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
	{
		static struct unwind_cache *cache;
		struct unwind_modules um;
		char *text = malloc(size ? size : 1);

		if (!cache)
			cache = unwind_cache_new();
		if (text && cache) {
			memcpy(text, data, size);
			for (size_t i = 0; i < size; i++)
				if (text[i] == '/')
					text[i] = '_'; /* no path: nothing opened */
			unwind_modules_init(&um);
			unwind_modules_from_maps_text(&um, cache, 0, text, size);
			for (unsigned i = 0; i < um.n; i++)
				if (um.v[i].start >= um.v[i].end ||
				    (i && um.v[i - 1].end > um.v[i].start))
					abort();
			unwind_modules_release(&um);
		}
		free(text);
	}
	for (size_t i = 0; i + 8 <= size && i < 64; i += 8) {
		uint64_t a;

		__builtin_memcpy(&a, data + i, 8);
		maps_find(&m, a);
	}
	maps_release(&m);
	return 0;
}
