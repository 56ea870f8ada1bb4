/* rank: per-function and per-stack totals that the text writers sort. */
#ifndef NPROF_OUTPUT_RANK_H
#define NPROF_OUTPUT_RANK_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* A function is a (name, module) pair: the same name in two modules, or
 * one function seen at several lines, is one row. */
struct rank_function {
	uint32_t frame;	 /* a representative frame id */
	int64_t self;	 /* value where it is the leaf */
	int64_t total;	 /* value of stacks containing it, once per stack */
};

/* Totals of value v per function, sorted by self then total, descending.
 * Returns 0 or -ENOMEM; *ret_n rows in *ret (free() it). */
int rank_functions(const struct profile *p, unsigned v,
		   struct rank_function **ret, size_t *ret_n);

struct rank_stack {
	uint32_t stack;
	int64_t value;
};

/* Value v per stack (merged across threads), descending. */
int rank_stacks(const struct profile *p, unsigned v, struct rank_stack **ret,
		size_t *ret_n);

/* How a frame reads in text outputs: "name (file.c:12) [inlined]
 * [module-basename]", each part only when it says something. */
const char *rank_frame_label(const struct frame *f, char *buf, size_t len);

/* How a frame reads in collapsed stacks, async-profiler's way: "name",
 * "name:12" when its line is known, "_[i]" appended when inlined. */
const char *rank_frame_collapsed(const struct frame *f, char *buf, size_t len);

/* The basename of a path; path itself when it has no '/'. */
const char *rank_basename(const char *path);

#endif
