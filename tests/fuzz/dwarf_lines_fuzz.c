/* dwarf_lines_fuzz: arbitrary bytes as an ELF image through elf_memory,
 * opened the way the symbolizer opens a module's DWARF, then looked up
 * across its executable segments: the unit index, the DIE walk towards a
 * PC and the reading of names, call sites and line rows must stay within
 * their limits and never crash, whatever libdw is handed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/dwarf_lines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dwarf_lines *dl = NULL;
	struct elf_info info;
	char *copy;
	Elf *e;

	if (size > (1u << 20))
		return 0;
	elf_version(EV_CURRENT);
	/* libelf (and libdw, decompressing sections) may write to a memory
	 * image: give them a copy. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	e = elf_memory(copy, size);
	if (!e)
		goto out;
	if (elf_read_info(e, &info) < 0)
		info.nloads = 0;
	if (dwarf_lines_open_elf(e, &dl) < 0) {
		elf_end(e);
		goto out;
	}
	for (unsigned i = 0; i < info.nloads; i++) {
		const struct elf_load *l = &info.loads[i];
		uint64_t step = l->memsz / 128 + 1;

		for (unsigned k = 0; k < 128 && k * step < l->memsz; k++) {
			uint64_t a = l->vaddr + k * step;
			struct dwarf_loc locs[4];
			unsigned n = 0;

			/* A small max, so dropping inlined levels is fuzzed too. */
			if (dwarf_lines_find(dl, a, locs, (unsigned)(a % 4) + 1, &n) == 0 &&
			    (n < 1 || n > (unsigned)(a % 4) + 1))
				abort();
			for (unsigned j = 0; j < n; j++) {
				if (locs[j].file && !locs[j].line)
					abort();
				/* The strings must be readable to their end. */
				sink += locs[j].name ? strlen(locs[j].name) : 0;
				sink += locs[j].file ? strlen(locs[j].file) : 0;
			}
		}
	}
	dwarf_lines_free(dl);
out:
	free(copy);
	return 0;
}
