/* flat: the top functions by self value, with their total beside it —
 * the first thing to read in a CPU profile. */
#include "output/output.h"

#include <inttypes.h>
#include <stdlib.h>

#include "output/rank.h"

int output_write_flat(const struct profile *p, const struct output_options *o,
		      FILE *out)
{
	struct rank_function *rows;
	size_t n, top = o->top ? o->top : 20;
	int64_t total = profile_total(p, 0);
	double scale = total ? 100.0 / (double)total : 0;
	char label[1024];
	int r = rank_functions(p, 0, &rows, &n);

	if (r < 0)
		return r;
	fprintf(out, "%12s %6s %12s %6s  %s\n", "self", "self%", "total",
		"total%", "function");
	for (size_t i = 0; i < n && i < top; i++) {
		if (!rows[i].self)
			break;
		fprintf(out, "%12" PRId64 " %5.1f%% %12" PRId64 " %5.1f%%  %s\n",
			rows[i].self, rows[i].self * scale, rows[i].total,
			rows[i].total * scale,
			rank_frame_label(&p->frames[rows[i].frame], label,
					 sizeof(label)));
	}
	free(rows);
	return 0;
}
