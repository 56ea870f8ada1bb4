/* jfr_read_fuzz: arbitrary bytes as a JFR recording.
 *
 * A successful read must give a consistent profile: every sample's stack
 * and thread inside the tables, every stack's frames inside the frame
 * table, the timeline no longer than its limit; a failure must be a clean
 * -errno with a message. The seeds are files nprof's writer produced. */
#include "output/jfr.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct profile *p)
{
	for (size_t i = 0; i < p->nsamples; i++)
		if (p->samples[i].stack >= p->nstacks || p->samples[i].thread >= p->nthreads)
			abort();
	for (size_t s = 0; s < p->nstacks; s++) {
		const uint32_t *f = profile_stack_frames(p, (uint32_t)s);

		if (p->stacks[s].depth > JFR_MAX_STACK_DEPTH)
			abort();
		for (uint32_t i = 0; i < p->stacks[s].depth; i++)
			if (f[i] >= p->nframes || !p->frames[f[i]].name)
				abort();
	}
	for (size_t i = 0; i < p->nevents; i++)
		if (p->events[i].stack >= p->nstacks || p->events[i].thread >= p->nthreads)
			abort();
	if (p->nevents > JFR_MAX_EVENTS || p->nvalues < 1)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = NULL;
	struct diag d = { "" };
	int r = jfr_read(data, size, &p, &d);

	if (r == 0) {
		check(p);
		profile_free(p);
	} else if (r > 0 || p || (!d.msg[0] && r != -ENOMEM)) {
		abort();
	}
	return 0;
}
