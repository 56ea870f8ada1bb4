/* elf_symtab_fuzz: arbitrary bytes as an ELF image through elf_memory,
 * read the way the symbolizer reads a module (info, .symtab, .dynsym,
 * lookups, offset translation). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/elf_symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_info info;
	struct elf_symtab t;
	char *copy;
	Elf *e;

	if (size > (1u << 20))
		return 0;
	elf_version(EV_CURRENT);
	/* libelf may convert a memory image in place: give it a copy. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	e = elf_memory(copy, size);
	if (e && elf_read_info(e, &info) == 0) {
		uint64_t v;

		elf_symtab_init(&t);
		elf_symtab_add(&t, e, SHT_SYMTAB);
		elf_symtab_add(&t, e, SHT_DYNSYM);
		elf_symtab_finish(&t);
		for (size_t i = 0; i < t.n && i < 256; i++) {
			const struct elf_sym *s = elf_symtab_find(&t, t.syms[i].addr);

			if (!s || strlen(elf_symtab_name(&t, s)) > ELF_MAX_SYMBOL_NAME)
				abort();
		}
		for (uint64_t off = 0; off < 0x10000; off += 0x800)
			elf_info_offset_to_vaddr(&info, off, &v);
		elf_symtab_release(&t);
	}
	if (e)
		elf_end(e);
	free(copy);
	return 0;
}
