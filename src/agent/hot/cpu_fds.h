/* cpu_fds: which perf event samples which thread, so that the handler
 * can re-arm one whose overflow signal was lost.
 *
 * The cpu engine's event disables itself at each overflow and the
 * handler re-arms it (PERF_EVENT_IOC_REFRESH). SIGPROF is a standard
 * signal: one sent to a thread that already has a SIGPROF pending is
 * dropped. When that pending one is not the overflow's own (the
 * program's raise or pthread_kill, a thread dump's), the overflow's
 * signal is lost, nothing re-arms the event, and the thread would not
 * be sampled again. So every SIGPROF that is not a cpu sample, while a
 * cpu session runs, re-arms the event of the thread it lands on (a
 * refresh of an armed event only raises its limit: harmless).
 *
 * Slots are indexed by tid (direct-mapped; a thread whose slot another
 * took just goes without). Written by the control side when it arms and
 * disarms (the slot cleared before the fd is closed); read in signal
 * context, only while `hot.active` is set and counted in `inflight`, so
 * that a session's end (which closes the fds after inflight drains)
 * cannot close an fd under a reader. */
#ifndef NPROF_AGENT_HOT_CPU_FDS_H
#define NPROF_AGENT_HOT_CPU_FDS_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#define HOT_CPU_SLOTS 16384

/* atomic: tid << 32 | fd; 0 when none */
extern _Atomic uint64_t hot_cpu_fds[HOT_CPU_SLOTS];

static inline _Atomic uint64_t *hot_cpu_slot(pid_t tid)
{
	return &hot_cpu_fds[(unsigned)tid % HOT_CPU_SLOTS];
}

/* Control side, once fd samples tid. */
static inline void hot_cpu_fd_set(pid_t tid, int fd)
{
	atomic_store_explicit(hot_cpu_slot(tid), (uint64_t)(uint32_t)tid << 32 | (uint32_t)fd,
			      memory_order_release);
}

/* Control side, before closing fd. */
static inline void hot_cpu_fd_clear(pid_t tid, int fd)
{
	uint64_t expect = (uint64_t)(uint32_t)tid << 32 | (uint32_t)fd;

	atomic_compare_exchange_strong_explicit(hot_cpu_slot(tid), &expect, 0,
						memory_order_acq_rel, memory_order_relaxed);
}

/* Signal context: the fd sampling tid, or -1. */
static inline int hot_cpu_fd_get(pid_t tid)
{
	uint64_t w = atomic_load_explicit(hot_cpu_slot(tid), memory_order_acquire);

	return w && (pid_t)(w >> 32) == tid ? (int)(uint32_t)w : -1;
}

#endif
