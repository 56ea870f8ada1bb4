/* calltree: the profile's stacks merged into one tree, for the writers
 * that draw one (flamegraph, tree, svg).
 *
 * A flame graph of 100,000 distinct stacks shares most of their prefixes;
 * merging them once, in C, is what keeps the HTML small and the browser
 * fast. A node is a function (name, module, kind — the same function seen
 * at several lines is one node, as in rank.h) under a given path of
 * callers; its total is the value of every sample passing through it, its
 * self the value of samples ending in it. Siblings are sorted by name, as
 * flamegraph.pl does, so equal profiles draw equal pictures.
 *
 * The tree is bounded: past max_nodes, a stack is cut at the deepest node
 * that exists and its value counted there as self (cut_value says how
 * much). No I/O except the helpers at the end, which write to a FILE. */
#ifndef NPROF_OUTPUT_CALLTREE_H
#define NPROF_OUTPUT_CALLTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "output/output.h"
#include "profile/profile.h"

#define CALLTREE_NONE UINT32_MAX
/* 4M nodes is ~200 MiB with the hash table; far beyond what a person reads. */
#define CALLTREE_MAX_NODES (4u << 20)
/* Names longer than this are cut (with "...") in every drawn output. */
#define CALLTREE_MAX_NAME 4096

struct calltree_func {
	const char *name;
	const char *module; /* NULL when unknown */
	const char *file;   /* NULL unless every merged frame agrees */
	uint32_t line;	    /* 0 unless every merged frame agrees */
	enum frame_kind kind;
};

/* Nodes are in pre-order: a node's first child, when it has one, is the
 * node after it (calltree_first_child), and its self is its total less
 * its children's (calltree_self). 24 bytes: a 100,000-stack profile
 * makes over a million nodes, and the 40 of a node that also held both
 * were a third of a flame graph's memory, each page of it a fault. */
struct calltree_node {
	uint32_t func;	       /* index into funcs; CALLTREE_NONE for the root */
	uint32_t parent;       /* CALLTREE_NONE for the root */
	uint32_t next_sibling; /* CALLTREE_NONE for the last child */
	uint32_t depth;	       /* 0 for the root */
	int64_t total;
};

struct calltree {
	struct calltree_node *nodes; /* nodes[0] is the root: everything */
	size_t nnodes;
	struct calltree_func *funcs;
	size_t nfuncs;
	uint32_t max_depth; /* of any node, the root being 0 */
	bool reversed;	    /* built from leaf-first stacks */
	int64_t cut_value;  /* value whose stack was cut at max_nodes */
	/* Other values summed along the same paths (calltree_build_also):
	 * node i's total of the k-th is also[i * nalso + k] (its self is that
	 * less its children's). NULL and 0 for calltree_build. */
	int64_t *also;
	unsigned nalso;
	/* Per stack of the profile: the node its value was added to as self
	 * (where it ends, or was cut), CALLTREE_NONE for a stack of no
	 * value. How the timeline finds its events in the tree. */
	uint32_t *stack_node;
	size_t nstacks;
};

/* Node i's first child; CALLTREE_NONE for a leaf. */
static inline uint32_t calltree_first_child(const struct calltree *t, uint32_t i)
{
	return i + 1 < t->nnodes && t->nodes[i + 1].parent == i ? i + 1 : CALLTREE_NONE;
}

/* The value of the samples that end at node i (or were cut there). */
static inline int64_t calltree_self(const struct calltree *t, uint32_t i)
{
	int64_t self = t->nodes[i].total;

	for (uint32_t c = calltree_first_child(t, i); c != CALLTREE_NONE;
	     c = t->nodes[c].next_sibling)
		self -= t->nodes[c].total;
	return self;
}

/* Merges value v of every sample of p. reverse builds the tree from
 * leaf-first stacks (the hot functions at the base, their callers above).
 * max_nodes 0 means CALLTREE_MAX_NODES. Returns 0 or -ENOMEM. */
int calltree_build(const struct profile *p, unsigned v, bool reverse,
		   size_t max_nodes, struct calltree **ret_tree);

/* The same, with nalso more values of p (indexes in also[]) summed into
 * t->also: a differential flame graph lays its tree out by one value (a
 * weight both profiles share) and colours it by two others. nalso is at
 * most PROFILE_MAX_VALUES. Returns 0, -EINVAL or -ENOMEM. */
int calltree_build_also(const struct profile *p, unsigned v,
			const unsigned *also, unsigned nalso, bool reverse,
			size_t max_nodes, struct calltree **ret_tree);
void calltree_free(struct calltree *t);

/* The smallest total worth drawing: frames narrower than minwidth px on a
 * width px wide graph of everything. 1 when nothing should be omitted. */
int64_t calltree_min_total(const struct calltree *t, double minwidth,
			   unsigned width);

/* Writes the tree as one JSON object (format in docs/flamegraph.md), safe
 * to embed in a <script> element: '<', '>', '&', U+2028 and U+2029 are
 * \u-escaped and invalid UTF-8 becomes U+FFFD. Subtrees whose total is
 * below min_total are left out. A tree with also values is written to be
 * drawn from them: as "stacks" instead of "nodes", each value's self
 * (and what was left out) where a stack ends, for the page to sum up.
 * Returns 0 or -errno. */
int calltree_write_json(const struct calltree *t, const struct profile *p,
			const struct output_options *o, int64_t min_total,
			FILE *out);

/* For each node (t->nnodes of them), its index among the nodes
 * calltree_write_json writes with min_total, or that of its nearest
 * written ancestor; CALLTREE_NONE when nothing is written. */
void calltree_written_ids(const struct calltree *t, int64_t min_total,
			  uint32_t *ids);

/* Writes s as XML character data or attribute text: escaped, tabs and
 * line breaks as spaces, invalid UTF-8 and characters XML forbids
 * replaced by U+FFFD, cut at max bytes with "...". */
void calltree_put_xml(const char *s, size_t max, FILE *out);

/* Writes the template (len bytes), replacing the text from the first
 * occurrence of begin up to and including the following end with what
 * fill writes. Returns fill's result, or -EINVAL when a marker is missing
 * (a template that lost its placeholder is a build bug, caught by tests). */
int calltree_fill_template(const char *tmpl, size_t len, const char *begin,
			   const char *end,
			   int (*fill)(void *ctx, FILE *out), void *ctx,
			   FILE *out);

/* One placeholder of a template: the text from begin up to and including
 * the following end is replaced by what fill writes. */
struct calltree_slot {
	const char *begin, *end;
	int (*fill)(void *ctx, FILE *out);
	void *ctx;
};

/* calltree_fill_template for several placeholders, in the order they
 * appear in the template (a differential flame graph fills the tree and
 * the diff's own data). Returns 0, a fill's error or -EINVAL. */
int calltree_fill_slots(const char *tmpl, size_t len,
			const struct calltree_slot *slots, size_t nslots,
			FILE *out);

#endif
