/* frame_cache: each distinct address named once, as profile frames.
 *
 * Turning a recording into a profile looks up the same addresses again and
 * again (every sample of a hot loop). The cache maps (address, kernel) to
 * the frame ids proc_syms_lookup_frames gave for it — several with
 * SYM_LINES, the function and its inlined callees — and interns each
 * frame's module once. One cache serves one profile: the ids are that
 * profile's. Not for signal context. */
#ifndef NPROF_SYMBOLIZE_FRAME_CACHE_H
#define NPROF_SYMBOLIZE_FRAME_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/id_index.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"

struct frame_cache {
	struct frame_cache_key *keys;
	size_t nkeys, keys_cap;
	struct id_index index;
	uint32_t *frames; /* every address's frame ids, outermost first */
	size_t nframes, frames_cap;
};

void frame_cache_init(struct frame_cache *c);
void frame_cache_release(struct frame_cache *c);

/* The frame ids of addr in p, outermost first, into out (room for
 * SYM_MAX_FRAMES_PER_ADDR) and their count into *ret_n. flags are
 * symbolize_flags and must be the same on every call. 0 or -ENOMEM. */
int frame_cache_get(struct frame_cache *c, struct proc_syms *ps,
		    struct profile *p, uint64_t addr, bool kernel,
		    unsigned flags, uint32_t *out, unsigned *ret_n);

#endif
