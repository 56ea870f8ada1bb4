/* traces: the heaviest stacks, leaf first, each with its share — the way
 * async-profiler's "traces" output reads. */
#include "output/output.h"

#include <inttypes.h>
#include <stdlib.h>

#include "output/rank.h"

int output_write_traces(const struct profile *p, const struct output_options *o,
			FILE *out)
{
	struct rank_stack *rows;
	size_t n, top = o->top ? o->top : 20;
	int64_t total = profile_total(p, 0);
	const char *unit = p->nvalues ? p->value_types[0].type : "samples";
	char label[1024];
	int r = rank_stacks(p, 0, &rows, &n);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n && i < top; i++) {
		const struct stack *st = &p->stacks[rows[i].stack];
		const uint32_t *frames = profile_stack_frames(p, rows[i].stack);

		fprintf(out, "--- %" PRId64 " %s (%.2f%%)%s\n", rows[i].value,
			unit, total ? 100.0 * rows[i].value / total : 0.0,
			st->truncated ? ", truncated" : "");
		for (uint32_t d = st->depth; d-- > 0;)
			fprintf(out, "  [%2u] %s\n", st->depth - 1 - d,
				rank_frame_label(&p->frames[frames[d]], label,
						 sizeof(label)));
		putc('\n', out);
	}
	if (n > top)
		fprintf(out, "... %zu more stacks\n", n - top);
	free(rows);
	return 0;
}
