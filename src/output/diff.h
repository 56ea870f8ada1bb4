/* diff: two profiles compared, for `nprof diff` and its writers.
 *
 * Stacks are matched by their frames' names (not modules, kinds or lines:
 * the same function read from collapsed text and from pprof, or built
 * twice, must match). The result is one profile holding the union of both
 * profiles' stacks, so a frame that disappeared is still in it, with three
 * values per stack: BEFORE's, AFTER's and a weight that lays out a flame
 * graph of both (the sum of the two shares, or of the two raw values with
 * normalize off), plus per-function self and total values of both sides,
 * sorted by how much they changed. Value 0 of each input is compared.
 * No I/O but the writers at the end. */
#ifndef NPROF_OUTPUT_DIFF_H
#define NPROF_OUTPUT_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/diag.h"
#include "output/output.h"
#include "profile/profile.h"

/* The values of every stack of diff.merged. */
enum diff_value { DIFF_BEFORE, DIFF_AFTER, DIFF_WEIGHT };

/* A share, normalized, is a value over its profile's total; the weight of
 * a stack is the sum of its two shares in units of 1/DIFF_WEIGHT_SCALE
 * (at least 1 each), finer than a pixel of any screen. The flame graph
 * page computes the same weights from the two values it is given. */
#define DIFF_WEIGHT_SCALE 1000000000.0

struct diff_function {
	const char *name;  /* interned in diff.merged */
	uint32_t frame;	   /* its frame in diff.merged */
	int64_t self[2];   /* [DIFF_BEFORE], [DIFF_AFTER]: where it is the leaf */
	int64_t total[2];  /* of stacks containing it, once per stack */
	double self_change, total_change; /* diff_change() of each pair */
};

struct diff {
	struct profile *merged;
	int64_t total[2];	     /* each input's total of value 0 */
	bool normalize;
	struct diff_function *funcs; /* by |self_change|, then |total_change| */
	size_t nfuncs;
};

/* Compares value 0 of before and after. Profiles whose value 0 differs in
 * type or unit (cpu samples against allocated bytes) are refused with
 * -EINVAL, and one with nothing in it with -ENODATA, each with a sentence
 * in d. Returns 0 or -errno; *ret_diff to free with diff_free. */
int diff_new(const struct profile *before, const struct profile *after,
	     bool normalize, struct diff **ret_diff, struct diag *d);
void diff_free(struct diff *df);

/* A value's share of its side's total, 0 to 1 (0 when the total is 0). */
double diff_share(const struct diff *df, enum diff_value side, int64_t v);

/* How much a value changed from before to after: the share's change
 * (a fraction; 0.25 is 25 points) when normalizing, else after - before. */
double diff_change(const struct diff *df, int64_t before, int64_t after);

/* The writers: `flat` (a table of the functions that changed most, top
 * rows, o->top or 20), `collapsed` ("STACK BEFORE AFTER" per stack, as
 * difffolded.pl writes; normalizing scales BEFORE to AFTER's total, as
 * its -n does) and `flamegraph` (res/flame.html in its diff mode). Other
 * formats are -EOPNOTSUPP. Returns 0 or -errno. */
int diff_write(const struct diff *df, enum output_format f,
	       const struct output_options *o, FILE *out);

#endif
