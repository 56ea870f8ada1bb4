/* elf_symtab: the facts of one ELF file a symbolizer needs, read with
 * libelf: its loadable segments (to turn a file offset into a virtual
 * address), its build-id and .gnu_debuglink, and its function symbols,
 * sorted for lookup by address.
 *
 * Works on any Elf handle (a file, a debug file, the vDSO image read from
 * a process, fuzzer bytes through elf_memory). Everything read is bounded
 * and checked against the section and segment sizes libelf reports. */
#ifndef NPROF_SYMBOLIZE_ELF_SYMTAB_H
#define NPROF_SYMBOLIZE_ELF_SYMTAB_H

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strtab.h"

#define ELF_MAX_LOADS 32
#define ELF_MAX_BUILD_ID 64
#define ELF_MAX_SYMBOLS (8u << 20)
#define ELF_MAX_SYMBOL_NAME 4096
/* Names, NULs included: only the 32-bit offsets bound them (the symbol
 * count and name length allow more). */
#define ELF_MAX_STRS STRTAB_MAX

struct elf_load {
	uint64_t offset, vaddr, filesz, memsz;
	uint32_t flags; /* PF_* */
};

struct elf_info {
	uint16_t type;		/* ET_EXEC, ET_DYN, ... */
	struct elf_load loads[ELF_MAX_LOADS];
	unsigned nloads;
	uint8_t build_id[ELF_MAX_BUILD_ID];
	size_t build_id_len;	/* 0 when the file has none */
	char debuglink[256];	/* "" when the file has no .gnu_debuglink */
	uint32_t debuglink_crc;
	bool has_symtab;	/* a non-empty .symtab with real contents */
	bool has_debugdata;	/* .gnu_debugdata (MiniDebugInfo, xz) */
};

struct elf_sym {
	uint64_t addr, size;
	uint32_t name;		/* offset in the table's strings */
	uint8_t rank;		/* preference among aliases; lower wins */
};

struct elf_symtab {
	struct elf_sym *syms;
	size_t n, cap;
	struct strtab strs;
	uint64_t dropped;	/* symbols past ELF_MAX_SYMBOLS */
};

/* Reads type, PT_LOAD segments, build-id, debuglink and which symbol
 * sections exist. -EINVAL when e is not a usable ELF file. */
int elf_read_info(Elf *e, struct elf_info *ret);

/* Turns an offset in the file into the virtual address the file's
 * symbols use, through the PT_LOAD segment holding that offset. -ENOENT
 * when no segment maps it. */
int elf_info_offset_to_vaddr(const struct elf_info *info, uint64_t offset,
			     uint64_t *ret_vaddr);

void elf_symtab_init(struct elf_symtab *t);
void elf_symtab_release(struct elf_symtab *t);

/* Adds the function symbols of the section of type sh_type (SHT_SYMTAB
 * or SHT_DYNSYM). Call elf_symtab_finish when all are added. */
int elf_symtab_add(struct elf_symtab *t, Elf *e, uint32_t sh_type);

/* How many entries the sections of type sh_type hold (symbols of every
 * kind, the null one included). */
size_t elf_symtab_count(Elf *e, uint32_t sh_type);

/* Sorts by address and keeps one name per address (global over weak over
 * local, then the one with fewest leading underscores, then the shortest
 * without its symbol version). */
void elf_symtab_finish(struct elf_symtab *t);

/* The symbol covering vaddr: the one whose [addr, addr+size) holds it, or
 * the nearest one below when its size is 0. NULL when none does. */
const struct elf_sym *elf_symtab_find(const struct elf_symtab *t,
				      uint64_t vaddr);

static inline const char *elf_symtab_name(const struct elf_symtab *t,
					  const struct elf_sym *s)
{
	return strtab_get(&t->strs, s->name);
}

#endif
