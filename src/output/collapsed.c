/* collapsed: one line per stack, root first, frames joined by ';', a space,
 * the value — what FlameGraph's flamegraph.pl and speedscope read.
 *
 * Frames read as rank_frame_collapsed() says ("name:line", "_[i]" for an
 * inlined frame). Samples of the same stack on different threads are one
 * line: the thread,
 * when wanted, is already the stack's root frame (-t). Frame names may not
 * contain ';' or a newline (the format has no escaping), so those become
 * ':' and ' '. */
#include "output/output.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "output/rank.h"

static void put_name(const char *s, FILE *out)
{
	for (; *s; s++) {
		char c = *s;

		if (c == ';')
			c = ':';
		else if (c == '\n' || c == '\r')
			c = ' ';
		putc(c, out);
	}
}

int output_write_collapsed(const struct profile *p,
			   const struct output_options *o, FILE *out)
{
	int64_t *by_stack = calloc(p->nstacks ? p->nstacks : 1, sizeof(*by_stack));
	char name[4096];

	if (!by_stack)
		return -ENOMEM;
	for (size_t i = 0; i < p->nsamples; i++)
		by_stack[p->samples[i].stack] += p->samples[i].values[0];
	for (size_t s = 0; s < p->nstacks; s++) {
		const uint32_t *f = profile_stack_frames(p, (uint32_t)s);
		uint32_t depth = p->stacks[s].depth;

		if (!by_stack[s] || !depth)
			continue;
		for (uint32_t i = 0; i < depth; i++) {
			if (i)
				putc(';', out);
			put_name(rank_frame_collapsed(&p->frames[f[i]], name,
						      sizeof(name)),
				 out);
		}
		fprintf(out, " %" PRId64 "\n", by_stack[s]);
	}
	free(by_stack);
	return 0;
}
