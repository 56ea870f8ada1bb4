/* unwind_table: one module's unwind rows, built from its ELF file (and a
 * separate debug file's .debug_frame), plus a cache keyed by build-id so
 * each module is built once per process and shared by every recording.
 *
 * Concurrency contract:
 *   - unwind_table_from_elf/_from_memory/_free, unwind_cache_* and
 *     unwind_table_bias allocate, open files or take the cache's mutex:
 *     never call them from a signal handler.
 *   - A table returned by either is immutable until freed (a cached table
 *     lives until its cache is freed). unwind_table_find only reads it and
 *     is async-signal-safe.
 *   - unwind_cache_get may be called from several threads at once. */
#ifndef NPROF_UNWIND_TABLE_H
#define NPROF_UNWIND_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/cfi.h"

#define UNWIND_MAX_SEGS 16
#define UNWIND_BUILD_ID_MAX 64

struct unwind_seg {
	uint64_t vaddr, offset, filesz, memsz;
	uint32_t flags; /* PF_* */
};

struct unwind_lazy;

struct unwind_table {
	struct cfi_table *cfi;	 /* NULL: no usable CFI, frame pointers only
				    (or, with lazy, rows built as asked) */
	/* A table from a lazy cache (unwind_cache_set_lazy): the file's
	 * .eh_frame found through .eh_frame_hdr, each FDE's rows built the
	 * first time an address in it is asked for (unwind_table_find_lazy,
	 * never in a signal handler); cfi is then NULL. */
	struct unwind_lazy *lazy;
	int cfi_err;		 /* why cfi is NULL: -ENOENT (no section),
				    -EINVAL (malformed), -E2BIG, ... */
	uint8_t build_id[UNWIND_BUILD_ID_MAX];
	unsigned build_id_len;	 /* 0: the file has none */
	struct unwind_seg segs[UNWIND_MAX_SEGS]; /* PT_LOAD, in file order */
	unsigned nseg;
	unsigned sources;	 /* UNWIND_SRC_* that gave FDEs */
};

enum {
	UNWIND_SRC_EH_FRAME = 1,
	UNWIND_SRC_DEBUG_FRAME = 2,	/* the main file's own */
	UNWIND_SRC_DEBUG_FILE = 4,	/* the separate debug file's */
};

/* Builds the table of an x86-64 ELF file. debug_path (may be NULL) names
 * a separate debug file whose .debug_frame fills ranges .eh_frame lacks;
 * it is ignored when its build-id differs from path's. Fails (-errno)
 * only when path is not a readable x86-64 ELF; a file without usable CFI
 * gives a table with cfi = NULL and cfi_err set. */
int unwind_table_from_elf(const char *path, const char *debug_path,
			  struct unwind_table **ret_table);

/* Whether the x86-64 ELF file open as fd (left open) has CFI to build a
 * table from (.eh_frame or .debug_frame, not empty), without building it:
 * 0, -ENOENT (none), -ENOEXEC (not x86-64 ELF), or another -errno. */
int unwind_table_probe_fd(int fd);

/* The same from an ELF image in memory (the vDSO). */
int unwind_table_from_memory(const void *image, size_t size,
			     struct unwind_table **ret_table);

void unwind_table_free(struct unwind_table *t);

/* The load bias (runtime address - link-time vaddr) of a mapping of this
 * file at map_start from file offset map_offset. -ENOENT: no PT_LOAD
 * holds that offset. */
int unwind_table_bias(const struct unwind_table *t, uint64_t map_start,
		      uint64_t map_offset, uint64_t *ret_bias);

/* The row covering link-time vaddr, or NULL. Async-signal-safe. */
static inline const struct cfi_row *unwind_table_find(const struct unwind_table *t,
						      uint64_t vaddr)
{
	return t && t->cfi ? cfi_table_find(t->cfi, vaddr) : NULL;
}

/* The row covering link-time vaddr of a lazy table (built for that FDE
 * the first time), or of any other as unwind_table_find. Takes a lock
 * and allocates: never from a signal handler. Rows stay valid until the
 * table is freed. */
const struct cfi_row *unwind_table_find_lazy(const struct unwind_table *t, uint64_t vaddr);

/* How many FDEs a lazy table has built rows for (0 for another). */
unsigned unwind_table_lazy_fdes(const struct unwind_table *t);

struct unwind_cache;

/* NULL + errno on failure. */
struct unwind_cache *unwind_cache_new(void);
void unwind_cache_free(struct unwind_cache *c);

/* Makes the tables c builds from then on lazy where the file allows
 * (.eh_frame with its .eh_frame_hdr index, no .debug_frame to merge, no
 * separate debug file): opening a file then costs its headers only, and
 * each function's rows are built when a walk first needs them. For a
 * caller that walks a few stacks out of signal context (a thread dump);
 * the agent, whose walks run in signal handlers, never asks. A lazy
 * table keeps its file mapped until the cache is freed. */
void unwind_cache_set_lazy(struct unwind_cache *c);
bool unwind_cache_is_lazy(struct unwind_cache *c);

/* The table of path, built the first time a file with its build-id (or,
 * without one, its device, inode, size and mtime) is asked for. The table
 * belongs to the cache. */
int unwind_cache_get(struct unwind_cache *c, const char *path, const char *debug_path,
		     const struct unwind_table **ret_table);

/* Same for the file open as fd (left open): another process's file,
 * opened with no more rights than its user's (base/target_files.h). */
int unwind_cache_get_fd(struct unwind_cache *c, int fd, const struct unwind_table **ret_table);

/* Same for an in-memory image (keyed by its build-id; -ENOENT without). */
int unwind_cache_get_memory(struct unwind_cache *c, const void *image, size_t size,
			    const struct unwind_table **ret_table);

/* How many tables the cache has built (tests check sharing with it). */
unsigned unwind_cache_builds(const struct unwind_cache *c);

#endif
