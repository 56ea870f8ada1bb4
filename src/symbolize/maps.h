/* maps: a process's memory mappings, from /proc/PID/maps text (read and
 * parsed line by line by base/proc.h) and from the engine's mmap records.
 *
 * The table is sorted by start address and never holds overlapping
 * entries: adding a mapping replaces whatever part of older ones it
 * covers, as the kernel does (a dlopen over a freed region, a JIT
 * remapping its code). Parsing is a pure function of the text so it can be
 * fuzzed. */
#ifndef NPROF_SYMBOLIZE_MAPS_H
#define NPROF_SYMBOLIZE_MAPS_H

#include <stddef.h>
#include <stdint.h>

/* Bounds on what a hostile or broken maps file can make us hold.
 * vm.max_map_count defaults to 65530; a million leaves room for hosts that
 * raise it. */
#define MAPS_MAX_ENTRIES (1u << 20)
#define MAPS_MAX_LINE 8192

enum map_kind {
	MAPK_ANON,	/* no name, "//anon", "[anon:NAME]", "[anon_shmem:NAME]" */
	MAPK_FILE,	/* a path, possibly deleted */
	MAPK_MEMFD,	/* "/memfd:NAME (deleted)": a file with no path to open */
	MAPK_VDSO,	/* "[vdso]" */
	MAPK_SPECIAL,	/* "[heap]", "[stack]", "[vvar]", "[vsyscall]", ... */
};

struct map_entry {
	uint64_t start, end;	/* [start, end) */
	uint64_t pgoff;		/* file offset of start */
	uint32_t maj, min;
	uint64_t inode;
	uint32_t prot;		/* PROT_* */
	enum map_kind kind;
	int deleted;		/* the kernel said " (deleted)" */
	char *path;		/* owned; without " (deleted)"; "" when anonymous */
	uint32_t user;		/* the owner's tag (the symbolizer's module slot) */
};

struct maps {
	struct map_entry *v;
	size_t n, cap;
	uint64_t skipped_lines;	/* malformed or too long; not fatal */
};

void maps_init(struct maps *m);
void maps_release(struct maps *m);

/* Parses /proc/PID/maps text (len bytes, need not end in NUL or newline)
 * and adds each mapping. Malformed lines are skipped and counted. Returns 0,
 * -ENOMEM, or -E2BIG past MAPS_MAX_ENTRIES (the entries so far are kept). */
int maps_parse(struct maps *m, const char *buf, size_t len, uint32_t user);

/* Classifies a kernel-given path: sets kind and deleted, and writes the
 * path without its " (deleted)" suffix into a new string. */
int maps_classify_path(const char *path, enum map_kind *ret_kind,
		       int *ret_deleted, char **ret_clean);

/* Adds a copy of e (path copied), replacing the overlapped parts of older
 * entries. Returns 0, -EINVAL (empty range), -ENOMEM or -E2BIG. */
int maps_insert(struct maps *m, const struct map_entry *e);

/* The entry containing addr, or NULL. */
const struct map_entry *maps_find(const struct maps *m, uint64_t addr);

#endif
