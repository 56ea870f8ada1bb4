/* wall: the wall-clock engine's sampler thread. Each tick (the interval)
 * it visits threads round-robin, reads each one's state from
 * /proc/self/task/TID/stat, and either signals it (the handler records its
 * stack and state) or, when the thread is blocked in the same system call
 * from the same frame as when last signalled and has used no CPU since,
 * records that same stack again without disturbing it. A thread whose
 * signal is still pending is not signalled again (the two would merge);
 * its visits are credited to that sample once the handler has run. Every
 * visit is one sample. At most per_tick threads are signalled per tick,
 * so a process with thousands of threads stays cheap; a thread visited
 * every k ticks gets a sample weighing k intervals. */
#ifndef NPROF_AGENT_WALL_H
#define NPROF_AGENT_WALL_H

#include <stdint.h>

#include "base/diag.h"

struct agent_wall_stats {
	uint64_t ticks;
	uint64_t signalled;	/* threads signalled */
	uint64_t repeated;	/* samples reusing the last stack (no signal) */
	uint64_t owed;		/* visits credited to a sample whose signal was
				   still pending (the thread waiting for a CPU) */
	uint64_t send_failed;	/* rt_tgsigqueueinfo failed (thread gone) */
	unsigned threads_max;	/* most threads seen at once */
	unsigned per_tick;
};

int agent_wall_start(uint64_t interval_ns, unsigned per_tick, struct diag *d);
void agent_wall_stop(void);
/* In a child after fork (the session's atfork handler): forgets the
 * parent's sampler, which the child does not have. */
void agent_wall_after_fork(void);
/* 0, or -ENOENT when the sampler never ran. */
int agent_wall_get_stats(struct agent_wall_stats *ret);

#endif
