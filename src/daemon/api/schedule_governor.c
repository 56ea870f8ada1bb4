/* schedule_governor: a period's share of the budget (schedule_governor.h). */
#include "daemon/api/schedule_governor.h"

/* The period a cost of spend_ns keeps within budget, at least every_ns
 * and at most a day (over: even a day is not enough). */
static uint64_t stretched(double spend_ns, double budget, uint64_t every_ns, bool *over)
{
	double need = spend_ns / budget;

	*over = need >= (double)GOVERNOR_MAX_NS;
	if (*over)
		return GOVERNOR_MAX_NS;
	return need > (double)every_ns ? (uint64_t)need : every_ns;
}

void governor_plan(size_t wanted, uint64_t cost_ns, uint64_t own_ns, double budget,
		   uint64_t every_ns, struct governor_plan *ret)
{
	/* what the recordings may spend: the period's budget less nprofd's
	 * own work for it */
	double allowance = budget * (double)every_ns - (double)own_ns;
	double fit;

	*ret = (struct governor_plan){ .take = wanted, .interval_ns = every_ns };
	if (!wanted)
		return;
	if (!cost_ns || budget <= 0) {
		ret->take = 1;
		if (budget > 0)
			ret->interval_ns = stretched((double)own_ns, budget, every_ns, &ret->over);
		return;
	}
	fit = allowance / (double)cost_ns;
	if (fit >= 1) {
		if (fit < (double)wanted)
			ret->take = (size_t)fit;
		return;
	}
	ret->take = 1;
	ret->interval_ns = stretched((double)(cost_ns + own_ns), budget, every_ns, &ret->over);
}
