/* target_elf_fuzz: arbitrary bytes as an ELF image, read the ways root
 * reads a user's files when an admin acts on their process and nprof is
 * not confined to what that user could do: `nprof attach`'s reads of the
 * process's C library (its load base, an exported function by version,
 * rt_sigreturn's code: src/inject/remote_symbol.c) and the unwind table
 * built from a whole file (sections found and decompressed, the build-id
 * note, the segments, then the CFI: src/unwind/unwind_table.c), looked up
 * at addresses across it. Symbols and DWARF have elf_symtab_fuzz and
 * dwarf_lines_fuzz. */
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inject/remote_symbol.h"
#include "unwind/unwind_table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t sigreturn[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	struct unwind_table *t = NULL;
	uint64_t v;
	char *copy;
	Elf *e;

	if (size > (1u << 20))
		return 0;
	/* libelf may decompress sections in place: give it its own copy. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	elf_version(EV_CURRENT);
	e = elf_memory(copy, size);
	if (e) {
		if (remote_elf_load_base(e, &v) == 0)
			sink += v;
		if (remote_elf_symbol(e, "dlopen", &v) == 0)
			sink += v;
		if (remote_elf_code_find(e, sigreturn, sizeof(sigreturn), &v) == 0)
			sink += v;
		elf_end(e);
	}
	memcpy(copy, data, size);
	if (unwind_table_from_memory(copy, size, &t) == 0) {
		uint64_t bias;

		for (unsigned i = 0; i < t->nseg; i++) {
			const struct unwind_seg *s = &t->segs[i];

			for (uint64_t a = s->vaddr; a < s->vaddr + s->memsz && a - s->vaddr < 4096; a += 7) {
				const struct cfi_row *row = unwind_table_find(t, a);

				sink += row ? 1 : 0;
			}
			if (unwind_table_bias(t, 0x400000, s->offset, &bias) == 0)
				sink += bias;
		}
		unwind_table_free(t);
	}
	free(copy);
	return 0;
}
