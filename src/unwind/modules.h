/* unwind modules: which runtime address range uses which unwind table,
 * with what load bias. A plain sorted array the engine (or the agent's
 * control thread) fills, and the walker reads.
 *
 * Concurrency contract:
 *   - unwind_modules_add, _from_maps and _release allocate and read /proc:
 *     never from a signal handler, and never while a walk may be reading
 *     the same list. To change the list under running walks, build a new
 *     list and publish its pointer (the agent swaps it atomically and
 *     frees the old one only when no handler can hold it).
 *   - unwind_modules_find is async-signal-safe: a binary search, nothing
 *     else. */
#ifndef NPROF_UNWIND_MODULES_H
#define NPROF_UNWIND_MODULES_H

#include <stdint.h>
#include <sys/types.h>

#include "unwind/unwind_table.h"

#define UNWIND_MAX_MODULES 65536 /* executable mappings per process */

struct unwind_module {
	uint64_t start, end;		  /* runtime range [start, end) */
	uint64_t bias;			  /* runtime address - link-time vaddr */
	const struct unwind_table *table; /* NULL: frame pointers only */
};

struct unwind_modules {
	struct unwind_module *v; /* sorted by start, non-overlapping */
	unsigned n, cap;
	unsigned no_table;	 /* mappings added without a table */
	/* Names this list's contents among every list the process ever made:
	 * a fresh value from one process-wide counter at init and at each
	 * add, never 0 after init. A row cache (unwind/row_cache.h) keys its
	 * entries with it, so that rows remembered under one list are never
	 * served for another (a list rebuilt after dlopen or dlclose, the
	 * list of another process, or a freed list's address reused). 0 (a
	 * list zeroed but never initialised): the walker caches nothing. */
	uint64_t generation;
	/* How the walker asks a lazy table for a row (set by
	 * unwind_modules_from_maps when its cache is lazy:
	 * unwind_table_find_lazy). It locks and allocates, so only a
	 * caller walking outside signal context sets it; NULL otherwise,
	 * when a lazy table gives no rows (frame pointers). */
	const struct cfi_row *(*find_lazy)(const struct unwind_table *t, uint64_t vaddr);
};

void unwind_modules_init(struct unwind_modules *m);
void unwind_modules_release(struct unwind_modules *m);

/* Adds a range (kept sorted). -EEXIST: overlaps one already there;
 * -E2BIG: UNWIND_MAX_MODULES reached. */
int unwind_modules_add(struct unwind_modules *m, uint64_t start, uint64_t end,
		       uint64_t bias, const struct unwind_table *table);

/* The module holding addr, or NULL. Async-signal-safe (inline: see
 * cfi_table_find). */
static inline const struct unwind_module *
unwind_modules_find(const struct unwind_modules *m, uint64_t addr)
{
	unsigned lo = 0, hi;

	if (!m || !m->n)
		return NULL;
	hi = m->n;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (m->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= m->v[lo - 1].end)
		return NULL;
	return &m->v[lo - 1];
}

/* Adds every executable mapping of pid (0: this process) from
 * /proc/PID/maps, taking tables from c: files are opened through
 * /proc/PID/root so containers work; the vDSO uses this process's own
 * (the same kernel maps the same image everywhere). A mapping whose
 * table cannot be built is still added, with table NULL, so the walker
 * knows to use frame pointers there. Fails only when maps cannot be read
 * or memory runs out. */
int unwind_modules_from_maps(struct unwind_modules *m, struct unwind_cache *c, pid_t pid);

/* The same from the text of /proc/PID/maps read by the caller (len
 * bytes), for a caller that reads it once for several uses: a process
 * with 2,000 threads has 4,000 lines. */
int unwind_modules_from_maps_text(struct unwind_modules *m, struct unwind_cache *c, pid_t pid,
				  const char *text, size_t len);

#endif
