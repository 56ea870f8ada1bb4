/* chain_timeline_test: when each sample of a chain happened, into a
 * profile's timeline.
 *
 * Events keep the order they were added in until sorted, then go by
 * time; past the maximum they are counted as dropped, and so is the
 * profile's timeline then; into a profile each becomes its chain's stack
 * and thread at wall time, the monotonic time moved by the offset of the
 * two clocks (an event before the start too); value_of decides each
 * value, and a value of 0 is left out, as are the events of a chain left
 * out of the profile; reset empties it. */
#include <stdint.h>

#include "profile/chain_timeline.h"
#include "test.h"

static uint64_t doubled(void *ctx, const struct chain_event *e)
{
	(*(int *)ctx)++;
	return e->chain == 1 ? 0 : e->value * 2;
}

int main(void)
{
	struct chain_timeline tl;
	const struct chain_ids ids[3] = { { 5, 0 }, { 6, 1 }, { 7, 2 } };
	struct profile *p = profile_new();
	int calls = 0;

	chain_timeline_init(&tl, 4);
	chain_timeline_add(&tl, 3000, 0, 1);
	chain_timeline_add(&tl, 1000, 1, 1);
	chain_timeline_add(&tl, 3000, 2, 1);
	chain_timeline_add(&tl, 900, 2, 40);
	chain_timeline_add(&tl, 5000, 0, 1);
	CHECK(tl.nevents == 4 && tl.dropped == 1, "four kept, the fifth dropped");
	CHECK(tl.events[0].time_ns == 3000 && tl.events[3].time_ns == 900, "in the order added");
	chain_timeline_sort(&tl);
	CHECK(tl.events[0].time_ns == 900 && tl.events[1].time_ns == 1000 &&
	      tl.events[2].time_ns == 3000 && tl.events[3].time_ns == 3000, "sorted by time");

	CHECK(chain_timeline_to_profile(&tl, p, ids, 1000000, 950, NULL, NULL) == 0 &&
	      p->nevents == 4, "four events into the profile");
	CHECK(p->max_events == 4 && p->events_dropped == 1,
	      "its limit is the timeline's, the drop counted");
	CHECK(p->events[0].time_ns == 1000000 - 50 && p->events[1].time_ns == 1000050 &&
	      p->events[3].time_ns == 1002050, "on wall time, one before the start too");
	CHECK(p->events[0].stack == 7 && p->events[0].thread == 2 && p->events[0].value == 40 &&
	      p->events[1].stack == 6 && p->events[1].thread == 1,
	      "each as its chain's stack and thread, with its value");
	profile_free(p);

	p = profile_new();
	CHECK(chain_timeline_to_profile(&tl, p, ids, 0, 0, doubled, &calls) == 0 && calls == 4,
	      "value_of asked for every event");
	CHECK(p->nevents == 3 && p->events[0].value == 80 && p->events[1].value == 2,
	      "its values kept, a value of 0 left out");
	profile_free(p);

	{
		const struct chain_ids out[3] = { { 5, 0 }, { ID_NONE, ID_NONE }, { 7, 2 } };

		p = profile_new();
		CHECK(chain_timeline_to_profile(&tl, p, out, 0, 0, NULL, NULL) == 0 &&
		      p->nevents == 3 && p->events[0].time_ns == 900 &&
		      p->events[1].time_ns == 3000 && p->events[2].time_ns == 3000,
		      "the events of a chain left out of the profile left out too");
		profile_free(p);
	}

	chain_timeline_reset(&tl);
	CHECK(tl.nevents == 0 && tl.dropped == 0, "reset empties it");
	chain_timeline_add(&tl, 1, 0, 1);
	CHECK(tl.nevents == 1, "and it fills again");
	chain_timeline_release(&tl);
	chain_timeline_release(NULL);
	CHECK(1, "chain_timeline_release(NULL) is harmless");
	return test_done();
}
