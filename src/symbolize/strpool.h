/* strpool: interned strings that live as long as their pool.
 *
 * The symbolizer hands out names that must stay valid until it is freed,
 * and the same name comes back for many addresses (every sampled PC in a
 * function). Interning keeps one copy of each. Strings are packed into
 * chunks that never move, so returned pointers stay valid as the pool
 * grows. */
#ifndef NPROF_SYMBOLIZE_STRPOOL_H
#define NPROF_SYMBOLIZE_STRPOOL_H

#include <stddef.h>

#include "base/id_index.h"

struct strpool {
	struct id_index index;
	const char **strs;	/* id -> string */
	size_t n, cap;
	char **chunks;		/* every allocation, freed together */
	size_t nchunks, chunks_cap;
	char *cur;		/* free space in the newest chunk */
	size_t cur_left;
	size_t bytes;		/* total interned bytes, for limits */
	size_t max_bytes;	/* 0 = unlimited */
};

void strpool_init(struct strpool *p, size_t max_bytes);
void strpool_release(struct strpool *p);

/* The pool's copy of s (len bytes, need not be NUL-terminated), or NULL
 * with errno ENOMEM (out of memory) or ENOBUFS (past max_bytes). */
const char *strpool_intern_len(struct strpool *p, const char *s, size_t len);
const char *strpool_intern(struct strpool *p, const char *s);

#endif
