/* dwarf_lines: source lines and inlined frames of one module, from its
 * DWARF, read with libdw.
 *
 * For an address in a module (an ELF virtual address, as the module's
 * symbols use), says which function contains it, which functions were
 * inlined into it on the way down to the address, and the file:line of
 * each: the innermost frame's line is the line of the address, and every
 * frame outside an inlined call has the line of that call
 * (DW_AT_call_file/DW_AT_call_line), as a debugger's backtrace would.
 *
 * The DWARF comes from the mapped file itself when it has .debug_info,
 * else from its separate debug file (debugfile.h). A module's DWARF is
 * opened only when lines are asked for, and kept with its symbols.
 *
 * Everything is bounded: at most DWARF_LINES_MAX_INLINES inlined levels,
 * DIE nesting walked to DWARF_LINES_MAX_NESTING, at most
 * DWARF_LINES_MAX_RANGES address ranges indexed per module. Broken DWARF
 * gives no lines (-ENOENT), never a crash of ours: libdw reports its own
 * errors and every index it returns is checked. */
#ifndef NPROF_SYMBOLIZE_DWARF_LINES_H
#define NPROF_SYMBOLIZE_DWARF_LINES_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize/elf_symtab.h"

#define DWARF_LINES_MAX_INLINES 32
#define DWARF_LINES_MAX_NESTING 128
#define DWARF_LINES_MAX_RANGES (4u << 20)
#define DWARF_LINES_MAX_UNITS (1u << 20)

struct dwarf_lines;
struct target_files;

/* One frame of an address: the function, or a function inlined in it. */
struct dwarf_loc {
	const char *name;	  /* DW_AT_name (through abstract origins), or NULL */
	const char *linkage_name; /* mangled DW_AT_linkage_name, or NULL */
	const char *file;	  /* source file, or NULL when unknown */
	uint32_t line;		  /* 0 when unknown */
	bool inlined;		  /* a DW_TAG_inlined_subroutine */
	/* Strings stay valid until dwarf_lines_free. */
};

/* The DWARF of an ELF handle; on success takes e, which the caller no
 * longer ends. An e read from a file keeps using its descriptor unless
 * the caller did elf_cntl(e, ELF_C_FDREAD) first. -ENOENT when e has no
 * .debug_info or libdw cannot use it. */
int dwarf_lines_open_elf(Elf *e, struct dwarf_lines **ret);

/* The DWARF of the module whose mapped file is open as fd (the caller
 * keeps fd) and named path by the target: the file's own when it has
 * .debug_info, else its debug file's, found from info (the file's facts)
 * in tf's world (or NULL: this host's alone; debugfile.h). ret_debug_path,
 * when not NULL, gets the debug file used (malloc'd) or NULL. */
int dwarf_lines_open_module(int fd, const char *path, struct target_files *tf,
			    const struct elf_info *info,
			    struct dwarf_lines **ret, char **ret_debug_path);

void dwarf_lines_free(struct dwarf_lines *dl);

/* The frames of vaddr, outermost first: ret[0] the function the code is
 * in (not inlined), then each inlined callee down to the innermost. At
 * most max frames; when there are more, the outermost inlined levels are
 * dropped and ret[0]'s line, which would name a call that is no longer
 * shown, is 0. An address in a unit with lines but no function (assembly)
 * gives one frame with name NULL. *ret_n is at least 1 on success.
 * -ENOENT when no unit covers vaddr, -EINVAL when max is 0. */
int dwarf_lines_find(struct dwarf_lines *dl, uint64_t vaddr,
		     struct dwarf_loc *ret, unsigned max, unsigned *ret_n);

#endif
