/* perfmap: the /tmp/perf-PID.map files JITs write (Node, Python 3.12+,
 * the JVM with a perf-map agent, LuaJIT, ...).
 *
 * Each line is "START SIZE NAME" with START and SIZE in hex (an optional
 * 0x accepted), NAME the rest of the line. JITs append as they compile and
 * may reuse memory: when entries overlap, the later one wins. Parsing is a
 * pure function of the text; parsing more text later appends. */
#ifndef NPROF_SYMBOLIZE_PERFMAP_H
#define NPROF_SYMBOLIZE_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strtab.h"

#define PERFMAP_MAX_ENTRIES (4u << 20)
#define PERFMAP_MAX_LINE 4096
/* Names, NULs included: only the 32-bit offsets bound them (the entry
 * count and line length allow more). */
#define PERFMAP_MAX_STRS STRTAB_MAX

struct perfmap_entry {
	uint64_t start, size;
	uint32_t name;		/* offset in strs */
	uint32_t seq;		/* line order: later lines win */
};

/* A piece of the address space and the entry that names it: the entries
 * flattened so that each address has one answer. */
struct perfmap_seg {
	uint64_t start, end;
	uint32_t entry;
};

struct perfmap {
	struct perfmap_entry *v;	/* in file order */
	size_t n, cap;
	struct perfmap_seg *segs;	/* sorted, disjoint; rebuilt when stale */
	size_t nsegs;
	struct strtab strs;
	size_t consumed;	/* bytes of the file parsed (whole lines) */
	uint64_t skipped_lines;
	bool stale;			/* entries added since segs were built */
};

void perfmap_init(struct perfmap *m);
void perfmap_release(struct perfmap *m);

/* Parses the complete lines of buf (an incomplete last line is left for
 * next time: consumed grows only by whole lines). 0, -ENOMEM, -E2BIG past
 * PERFMAP_MAX_ENTRIES or -ENOBUFS past PERFMAP_MAX_STRS. */
int perfmap_parse(struct perfmap *m, const char *buf, size_t len);

/* The entry covering addr (the latest line among overlapping ones), or
 * NULL. Rebuilds the segments first after a parse: O(n log n). */
const struct perfmap_entry *perfmap_find(struct perfmap *m, uint64_t addr);

static inline const char *perfmap_name(const struct perfmap *m,
				       const struct perfmap_entry *e)
{
	return strtab_get(&m->strs, e->name);
}

#endif
