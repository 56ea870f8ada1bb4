/* symcache: symbol tables of ELF modules, loaded once and shared.
 *
 * A module is keyed by its build-id, or, for files without one, by path,
 * size, mtime and inode. The same library mapped by many processes, or by
 * one process profiled many times, is parsed once. The cache owns the
 * modules; a proc_syms holds references, and only unreferenced modules
 * are evicted when the cache is full.
 *
 * Loading a module reads the binary's segments (needed to translate
 * addresses, and always taken from the mapped file itself) and its
 * symbols; when the binary has no .symtab, the symbols of its separate
 * debug file (debugfile.h) are used instead, together with .dynsym. */
#ifndef NPROF_SYMBOLIZE_SYMCACHE_H
#define NPROF_SYMBOLIZE_SYMCACHE_H

#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>

#include "symbolize/dwarf_lines.h"
#include "symbolize/elf_symtab.h"

#define SYMCACHE_MAX_MODULES 4096

struct symmod {
	/* the key */
	struct elf_info info;	/* of the mapped file, not the debug file */
	char *key_path;		/* "" when keyed by build-id */
	uint64_t key_size, key_mtime_ns, key_ino;

	struct elf_symtab symtab;
	char *debug_path;	/* the separate debug file used, or NULL */
	/* Interned demangled names per symbol, [0] full, [1] simple, filled
	 * as lookups ask for them. */
	const char **names[2];
	/* The module's DWARF (file:line, inlined frames), opened by
	 * symcache_open_dwarf at the first lookup that asks for lines;
	 * NULL when it has none. */
	struct dwarf_lines *dwarf;
	bool dwarf_tried;

	unsigned refs;
	uint64_t last_use;
};

struct symcache_stats {
	uint64_t modules_parsed;
	uint64_t cache_hits;
	uint64_t debug_files;
	uint64_t dwarf_modules;	/* modules whose DWARF was opened */
};

struct symcache;
struct target_files;

struct symcache *symcache_new(void);
void symcache_free(struct symcache *c);

/* The module for the ELF file open as fd (the caller keeps fd), which the
 * target names path; tf (its world, or NULL for this host's alone) is
 * where to look for its debug files. Takes a reference. -EINVAL when fd is not ELF. */
int symcache_get_file(struct symcache *c, int fd, const char *path,
		      struct target_files *tf, struct symmod **ret);

/* The same for an ELF image in memory (the vDSO read from a process).
 * image must stay writable for the call (libelf may convert it in place);
 * it is not kept. */
int symcache_get_image(struct symcache *c, char *image, size_t len,
		       const char *name, struct symmod **ret);

/* Opens m's DWARF once (dwarf_lines_open_module), from its mapped file
 * open as fd (the caller keeps fd), named path by the target, with debug
 * files looked for in tf's world. Afterwards m->dwarf is set, or stays NULL
 * when the module has no usable DWARF; later calls do nothing. 0, or
 * -ENOMEM (m->dwarf_tried stays false so a later call can retry). */
int symcache_open_dwarf(struct symcache *c, struct symmod *m, int fd,
			const char *path, struct target_files *tf);

/* Drops a reference; NULL is fine. */
void symcache_put(struct symcache *c, struct symmod *m);

void symcache_get_stats(const struct symcache *c, struct symcache_stats *ret);

#endif
