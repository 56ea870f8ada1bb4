/* engine: out-of-process sampling of any process with perf_event_open.
 *
 * The engine opens one event per (thread, CPU) with inherit set, so every
 * thread is sampled, including threads created during the recording; each
 * CPU's events share one ring buffer. Samples are aggregated by raw
 * address chain while recording (cheap), and symbolized once per distinct
 * address at the end, into a profile.
 *
 * How a sample becomes a stack of addresses is the unwinder's job
 * (engine/unwinder.h): frame pointers (the kernel's callchain) today,
 * DWARF CFI over a copied user stack next. */
#ifndef NPROF_ENGINE_ENGINE_H
#define NPROF_ENGINE_ENGINE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"

enum cstack_mode { CSTACK_AUTO, CSTACK_FP, CSTACK_DWARF };

/* A thread as it was just before an off-CPU recording (wall, offcpu):
 * what a thread blocked from the start is charged to until its first
 * switch-in (docs/engine.md, "Threads that do not move"). */
struct engine_thread_start {
	pid_t tid;
	char state;		/* /proc's letter: R S D T t Z, '?' */
	uint64_t *ips;		/* leaf first, user frames; malloc'd; NULL: unknown */
	unsigned n;
	bool truncated;
	/* Blocked in system call nr with these user sp and pc: the stack
	 * holds if the thread is still there once the events run. */
	bool in_syscall;
	long syscall_nr;
	uint64_t sp, pc;
};

/* How far a recording has got: for a progress line on a terminal. */
struct record_progress {
	uint64_t elapsed_ns;	/* since sampling began */
	uint64_t duration_ns;	/* 0: until the target exits or *stop */
	uint64_t samples;	/* 0 where the count is not known (the agent's) */
	size_t threads;		/* threads sampled so far (0: not known) */
};

struct record_options {
	const char *event;	/* "cpu" (default), "page-faults", ... */
	uint64_t interval;	/* 0: the event's default; ns for cpu */
	uint64_t duration_ns;	/* 0: until the target exits or *stop */
	unsigned max_depth;	/* 0: 2048 */
	bool per_thread;	/* root every stack in a thread frame (-t) */
	bool simple_names;	/* -s */
	bool lines;		/* --lines: file:line and inlined frames */
	enum cstack_mode cstack;
	/* Set asynchronously (SIGINT) to end the recording early. */
	volatile sig_atomic_t *stop;
	/* wall, offcpu: takes the threads of pid as they are now (called
	 * right before the events are opened); the engine frees the array
	 * and each ips. NULL, or failing: those threads' stacks are unknown
	 * until they next leave a CPU (and a note says so). The engine may
	 * not take them itself: src/capture/ is its sibling. */
	int (*take_threads)(void *arg, pid_t pid, struct engine_thread_start **ret,
			    size_t *ret_n, struct diag *d);
	void *take_threads_arg;
	/* Called about every 100 ms while the recording runs (NULL: not). */
	void (*progress)(void *arg, const struct record_progress *pr);
	void *progress_arg;
};

/* Records pid until the duration passes, the target exits, or *stop is
 * set; then symbolizes with s and returns the profile. When the target is
 * our own child (started by `record -- COMMAND`, held before exec),
 * child_started is called once the events are open so it can be let go;
 * the caller reaps it after engine_record returns.
 * Errors: -ESRCH no such process, -EACCES/-EPERM not permitted, -ENOENT
 * event not supported here, -EINVAL bad option; d says which and the fix. */
int engine_record(pid_t pid, const struct record_options *o,
		  struct symbolizer *s, void (*child_started)(void *arg),
		  void *arg, struct profile **ret, struct diag *d);

/* The event names this host can count, space-separated, into buf. */
const char *engine_available_events(char *buf, unsigned len);

/* True when name is an event the engine knows (available here or not). */
bool engine_event_known(const char *name);

#endif
