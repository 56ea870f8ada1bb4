/* chain_timeline: when each sample of a chain_table happened, for the
 * profile's timeline (JFR, the flame graph's samples over time).
 *
 * Times are CLOCK_MONOTONIC as taken while recording; they become wall
 * time only when the timeline goes into a profile, with the two clocks
 * read at one moment. Bounded: past max events, adding counts a drop.
 * Not thread-safe and not for signal context (it allocates). */
#ifndef NPROF_PROFILE_CHAIN_TIMELINE_H
#define NPROF_PROFILE_CHAIN_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* One sample in time: when, which chain, and its share of value 0 (1 for
 * a sample, the ns of an off-CPU span starting at time_ns). */
struct chain_event {
	uint64_t time_ns; /* CLOCK_MONOTONIC */
	uint32_t chain;
	uint64_t value;
};

struct chain_timeline {
	struct chain_event *events; /* in the order added */
	size_t nevents;
	uint64_t dropped;	    /* events past max, or out of memory */
	/* Private. */
	size_t max, cap;
};

void chain_timeline_init(struct chain_timeline *tl, size_t max);
void chain_timeline_release(struct chain_timeline *tl);
/* Empties tl and keeps its memory, for the next recording. */
void chain_timeline_reset(struct chain_timeline *tl);

/* Notes a sample of chain at time_ns; counts a drop when tl is full. */
void chain_timeline_add(struct chain_timeline *tl, uint64_t time_ns, uint32_t chain,
			uint64_t value);

/* Puts the events in time order (events from several buffers come in
 * order per buffer only). */
void chain_timeline_sort(struct chain_timeline *tl);

/* A chain's place in a profile: its stack and thread; ID_NONE for a
 * chain left out of the profile. */
struct chain_ids {
	uint32_t stack, thread;
};

/* Moves the timeline into p (p->max_events becomes tl's max): each event
 * at wall time start_real_ns + (time_ns - start_mono_ns), start_real_ns
 * and start_mono_ns being one moment on the two clocks, as ids[chain]'s
 * stack and thread, with the value value_of gives (NULL: the event's
 * own); an event of value 0, or of a chain left out, is left out.
 * 0 or -ENOMEM. */
int chain_timeline_to_profile(const struct chain_timeline *tl, struct profile *p,
			      const struct chain_ids *ids, uint64_t start_real_ns,
			      uint64_t start_mono_ns,
			      uint64_t (*value_of)(void *ctx, const struct chain_event *e),
			      void *ctx);

#endif
