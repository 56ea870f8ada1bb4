/* daemon_schedule_governor: a period's share of the budget
 * (src/daemon/api/schedule_governor.c) — all that fit the budget of one
 * period are recorded, no more; an unknown cost records one to learn it;
 * a recording over the period's budget stretches the period to its cost
 * over the budget, at most a day, which says so; nothing wanted, nothing
 * recorded; nprofd's own work for a period is paid from the same budget. */
#include "daemon/api/schedule_governor.h"
#include "test.h"

#define S 1000000000ull
#define MS 1000000ull

int main(void)
{
	struct governor_plan p;

	governor_plan(40, 100 * MS, 0, 0.01, 30 * S, &p);
	CHECK(p.take == 3 && p.interval_ns == 30 * S && !p.over,
	      "40 wanted at 100 ms each, 1%% of 30 s: 3 this period, every 30 s (%zu)", p.take);
	governor_plan(2, 100 * MS, 0, 0.01, 60 * S, &p);
	CHECK(p.take == 2 && p.interval_ns == 60 * S, "2 wanted, 6 fit: both (%zu)", p.take);
	governor_plan(5, 0, 0, 0.01, 60 * S, &p);
	CHECK(p.take == 1 && p.interval_ns == 60 * S, "a cost not known yet: one, to learn it");
	governor_plan(5, 2 * S, 0, 0.01, 60 * S, &p);
	CHECK(p.take == 1 && p.interval_ns == 200 * S && !p.over,
	      "one recording of 2 s over 1%% of 60 s: one, the period stretched to 200 s (%llu)",
	      (unsigned long long)(p.interval_ns / S));
	governor_plan(1, 1000 * S, 0, 0.0001, 60 * S, &p);
	CHECK(p.take == 1 && p.interval_ns == GOVERNOR_MAX_NS && p.over,
	      "over the budget even a day apart: a day, and it says so");
	governor_plan(0, 100 * MS, 0, 0.01, 60 * S, &p);
	CHECK(p.take == 0 && p.interval_ns == 60 * S, "nothing wanted: nothing");
	governor_plan(10, 300 * MS, 0, 0.01, 30 * S, &p);
	CHECK(p.take == 1 && p.interval_ns == 30 * S, "exactly one fits: one, on time");
	/* nprofd's own work for a period comes out of its budget */
	governor_plan(40, 100 * MS, 100 * MS, 0.01, 30 * S, &p);
	CHECK(p.take == 2 && p.interval_ns == 30 * S,
	      "nprofd's own 100 ms a period, 1%% of 30 s: 2 of 100 ms left (%zu)", p.take);
	governor_plan(5, 2 * S, 1 * S, 0.01, 60 * S, &p);
	CHECK(p.take == 1 && p.interval_ns == 300 * S && !p.over,
	      "a recording of 2 s and nprofd's 1 s over 1%%: the period stretched to 300 s (%llu)",
	      (unsigned long long)(p.interval_ns / S));
	governor_plan(5, 0, 1 * S, 0.01, 60 * S, &p);
	CHECK(p.take == 1 && p.interval_ns == 100 * S,
	      "a cost not known yet, nprofd's own 1 s over 1%%: one, 100 s apart (%llu)",
	      (unsigned long long)(p.interval_ns / S));
	governor_plan(5, 0, 10 * MS, 0.01, 60 * S, &p);
	CHECK(p.take == 1 && p.interval_ns == 60 * S, "nprofd's own within the budget: on time");
	return test_done();
}
