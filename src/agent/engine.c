/* engine: the table of the agent's engines (engine.h). */
#include "agent/engine.h"

const struct agent_engine *const agent_engines[3] = {
	&agent_engine_timers, &agent_engine_wall, &agent_engine_mem,
};

const struct agent_engine *agent_engine_for(enum event_id e)
{
	static const struct agent_engine *const by_event[EVENT_COUNT] = {
		[EVENT_CPU] = &agent_engine_timers,
		[EVENT_ITIMER] = &agent_engine_timers,
		[EVENT_WALL] = &agent_engine_wall,
		[EVENT_ALLOC] = &agent_engine_mem,
		[EVENT_HEAP] = &agent_engine_mem,
		[EVENT_LOCK] = &agent_engine_mem,
	};

	return (unsigned)e < EVENT_COUNT ? by_event[e] : NULL;
}
