/* schedule_governor: a period's share of the budget (schedule_governor.h). */
#include "daemon/api/schedule_governor.h"

void governor_plan(size_t wanted, uint64_t cost_ns, double budget, uint64_t every_ns,
		   struct governor_plan *ret)
{
	double allowance = budget * (double)every_ns;
	double fit;

	*ret = (struct governor_plan){ .take = wanted, .interval_ns = every_ns };
	if (!wanted)
		return;
	if (!cost_ns || budget <= 0) {
		ret->take = 1;
		return;
	}
	fit = allowance / (double)cost_ns;
	if (fit >= 1) {
		if (fit < (double)wanted)
			ret->take = (size_t)fit;
		return;
	}
	ret->take = 1;
	if ((double)cost_ns / budget >= (double)GOVERNOR_MAX_NS) {
		ret->interval_ns = GOVERNOR_MAX_NS;
		ret->over = true;
	} else {
		ret->interval_ns = (uint64_t)((double)cost_ns / budget);
	}
}
