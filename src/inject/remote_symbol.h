/* remote_symbol: where a function of a shared library is in another
 * process: its module found in /proc/PID/maps, its ELF read from the
 * mapped file itself (base/target_files.h: by map_files when nprof is
 * root, never by a path resolved in the process's mount namespace), its
 * load address from the mapping of offset 0. */
#ifndef NPROF_INJECT_REMOTE_SYMBOL_H
#define NPROF_INJECT_REMOTE_SYMBOL_H

#include <libelf.h>
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"

/* One line of /proc/PID/maps. */
struct remote_mapping {
	uint64_t start, end, offset, inode;
};

struct remote_module {
	char path[PATH_MAX];	   /* as the process sees it */
	struct remote_mapping map; /* its mapping of offset 0 */
	uint64_t bias;		   /* run-time address minus ELF virtual address */
};

/* The first module mapped in pid whose file name starts with one of
 * prefixes (NULL-terminated, e.g. "libc.so."). -ENOENT when none. */
int remote_module_find(pid_t pid, const char *const *prefixes,
		       struct remote_module *ret, struct diag *d);

/* The run-time address of the defined, exported function name in m (its
 * default version when there are several). -ENOENT when m has none. */
int remote_symbol(pid_t pid, const struct remote_module *m, const char *name,
		  uint64_t *ret_addr, struct diag *d);

/* The run-time address of the first occurrence of bytes in m's code
 * (executable segments). -ENOENT when there is none. */
int remote_code_find(pid_t pid, const struct remote_module *m,
		     const uint8_t *bytes, size_t n, uint64_t *ret_addr,
		     struct diag *d);

/* The parts that read the ELF itself, a file of the process's user (fuzzed:
 * tests/fuzz/target_elf_fuzz.c). The lowest PT_LOAD's page-aligned virtual
 * address (what offset 0's mapping starts at, minus the bias); the value
 * of the exported function name (its default version first); the virtual
 * address of the first occurrence of bytes in an executable segment.
 * -ENOENT (or -EINVAL) when there is none. */
int remote_elf_load_base(Elf *e, uint64_t *ret_vaddr);
int remote_elf_symbol(Elf *e, const char *name, uint64_t *ret_value);
int remote_elf_code_find(Elf *e, const uint8_t *bytes, size_t n, uint64_t *ret_vaddr);

#endif
