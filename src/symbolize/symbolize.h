/* symbolize: from addresses in a process to names a person can read.
 *
 * A symbolizer is long-lived: it caches each ELF module's symbol table by
 * build-id (or, without one, by path, size and mtime), so a second
 * recording of the same binary does not parse it again. A proc_syms is one
 * target process: its mappings (from /proc/PID/maps, then kept current with
 * the mmap records the engine sees), its /tmp/perf-PID.map, and the kernel's
 * symbols. Lookups never fail for lack of a symbol: an address without one
 * gets the name "module+0xOFFSET" (kind FRAME_UNKNOWN), never a bare number.
 *
 * Runs outside signal context. Not thread-safe: one thread uses a
 * symbolizer and its proc_syms at a time. (Opening a process with kernel
 * symbols starts a private thread that reads /proc/kallsyms; it touches
 * only the kernel table, which lookups use after joining it.) */
#ifndef NPROF_SYMBOLIZE_SYMBOLIZE_H
#define NPROF_SYMBOLIZE_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"
#include "profile/profile.h"

struct symbolizer;
struct proc_syms;

/* A mapping as the engine learns it from PERF_RECORD_MMAP2. */
struct mapping {
	uint64_t start, end; /* [start, end) */
	uint64_t pgoff;	     /* file offset of start */
	uint32_t maj, min;
	uint64_t inode;
	uint32_t prot;	     /* PROT_* */
	const char *path;    /* as the kernel names it; copied */
};

struct symbol_info {
	const char *name;   /* demangled; simple when SYM_SIMPLE */
	const char *module; /* path of the module as mapped, or NULL */
	uint64_t module_offset; /* address as an offset in module's file */
	enum frame_kind kind;
	const char *build_id; /* the module's GNU build-id, lowercase hex, or NULL */
	/* Source file and line (SYM_LINES, from DWARF), or NULL and 0 when
	 * unknown. For a frame with an inlined callee below it, the line of
	 * that call; for the innermost frame, the line of the address. */
	const char *file;
	uint32_t line;
	/* name, module, build_id and file stay valid until the symbolizer is
	 * freed. */
};

enum symbolize_flags {
	SYM_SIMPLE = 1 << 0, /* no namespaces, templates or parameter lists */
	SYM_LINES = 1 << 1,  /* file:line and inlined frames, from DWARF
				(proc_syms_lookup_frames) */
};

/* Most frames one address can give: the function and the functions
 * inlined into it on the way to the address. */
#define SYM_MAX_FRAMES_PER_ADDR 33

struct symbolizer_stats {
	uint64_t modules_parsed;  /* ELF files whose symbols were read */
	uint64_t cache_hits;	  /* modules served from the build-id cache */
	uint64_t debug_files;	  /* separate debug files used */
	uint64_t dwarf_modules;	  /* modules whose DWARF was opened (SYM_LINES) */
};

struct symbolizer *symbolizer_new(void);
void symbolizer_free(struct symbolizer *s);
void symbolizer_get_stats(const struct symbolizer *s,
			  struct symbolizer_stats *ret);

/* Reads /proc/PID/maps and the process's perf map, and the kernel symbols
 * when kernel is true. Fails with -ESRCH (no such process) or -EACCES
 * (maps not readable: another user's process), with d saying so. */
int symbolizer_open_process(struct symbolizer *s, pid_t pid, bool kernel,
			    struct proc_syms **ret, struct diag *d);

enum symbolizer_open_flags {
	SYM_OPEN_KERNEL = 1 << 0, /* the kernel's symbols too (kernel above) */
	/* Each module's symbols read at the first lookup of an address in
	 * it, not every code mapping's at open (proc_syms_load is not run):
	 * for a caller that names a few addresses at once while the process
	 * runs (a thread dump: of mariadbd's 31 code mappings, its frames
	 * touch 3 or 4). Without it, everything mapped is read at open, so
	 * that a recording can still name a process that has exited since;
	 * with it, a module first asked for after the process (another
	 * user's) has exited gives "module+0xOFFSET" names. */
	SYM_OPEN_LAZY = 1 << 1,
};

/* symbolizer_open_process with flags (SYM_OPEN_*), and the text of
 * /proc/PID/maps when the caller has read it already (maps_len bytes;
 * NULL: read here). */
int symbolizer_open_process_flags(struct symbolizer *s, pid_t pid, unsigned flags,
				  const char *maps, size_t maps_len,
				  struct proc_syms **ret, struct diag *d);

/* symbolizer_open_process in two steps, for a recording that starts
 * sampling first: symbolizer_open_process_maps reads the maps and the
 * perf map only (SYM_OPEN_LAZY: a millisecond, while the process surely
 * lives), proc_syms_load then reads the symbols of the code it maps, and
 * of all it maps from then on, and starts reading the kernel's in the
 * background (what the open does at once without SYM_OPEN_LAZY). */
int symbolizer_open_process_maps(struct symbolizer *s, pid_t pid, bool kernel,
				 struct proc_syms **ret, struct diag *d);
void proc_syms_load(struct proc_syms *ps);
void proc_syms_free(struct proc_syms *ps);

/* Adds a mapping seen after the process was opened (dlopen, mmap). A new
 * mapping replaces the part of any old one it overlaps. */
int proc_syms_add_mapping(struct proc_syms *ps, const struct mapping *m);

/* Re-reads the perf map (a JIT may have appended to it). Lookups also do
 * this by themselves, at most every 100 ms, when an address in
 * anonymous memory has no name. */
int proc_syms_reload_perf_map(struct proc_syms *ps);

/* Reads, ahead of its first lookup, the module that holds the user
 * address addr: its symbols (and debug file), with lines its DWARF too.
 * What a recording does while samples arrive, so that its end has only
 * lookups left. Cheap when the module is read already, or addr is in
 * none; the kernel's symbols have a thread of their own. */
void proc_syms_prefetch(struct proc_syms *ps, uint64_t addr, bool lines);

/* Names addr. kernel says the address came from the kernel part of a
 * callchain. Always fills ret; returns 0 or -ENOMEM. */
int proc_syms_lookup(struct proc_syms *ps, uint64_t addr, bool kernel,
		     unsigned flags, struct symbol_info *ret);

/* Names addr as one or more frames, OUTERMOST FIRST: ret[0] is the
 * function the code is in, as proc_syms_lookup names it; with SYM_LINES,
 * ret[0] and each following frame also get file and line from the
 * module's DWARF, and ret[1..] are the functions inlined into it down to
 * the innermost (kind FRAME_INLINED; same module, offset and build-id as
 * ret[0]). At most max frames (the outermost inlined levels are dropped
 * past it, and ret[0]'s line with them). Without SYM_LINES, or where
 * there is no DWARF (a stripped module without debug file, the kernel, a
 * JIT), one frame exactly as proc_syms_lookup gives it, file NULL, line
 * 0. The module's DWARF is opened at its first SYM_LINES lookup.
 * Always fills ret[0] and *ret_n (>= 1); returns 0, -ENOMEM (ret[0]
 * still names the address), or -EINVAL when max is 0 (nothing filled). */
int proc_syms_lookup_frames(struct proc_syms *ps, uint64_t addr, bool kernel,
			    unsigned flags, struct symbol_info *ret,
			    unsigned max, unsigned *ret_n);

/* Why kernel frames cannot be named, or NULL when they can, when the
 * process was opened without kernel symbols, or when no kernel address has
 * been looked up yet (kallsyms is read by a background thread started at
 * open, and joined at the first kernel lookup)
 * ("/proc/kallsyms shows zero addresses: kernel.kptr_restrict=1; ..."). */
const char *proc_syms_kernel_problem(const struct proc_syms *ps);

#endif
