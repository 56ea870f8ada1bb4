/* lock: pthread mutex and rwlock acquisition, interposed. Off: one test
 * of the gate, then the real function. On: a try-lock first (an
 * uncontended acquisition costs only that); when it reports EBUSY the
 * real, blocking call is timed with CLOCK_MONOTONIC (vDSO) and the wait
 * recorded on the caller's stack, weighted by nanoseconds waited
 * (mem_lock_record samples waits shorter than the interval). */
#include "agent/hot/alloc.h"

#include <errno.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define SLOW __attribute__((noinline, cold))
#define G_LOCK MEM_NEEDS_LOCK

#ifndef NPROF_NO_INTERPOSE /* sanitizer builds whose runtime intercepts these */
static inline bool lock_on(void)
{
	return atomic_load_explicit(&mem.gate, memory_order_relaxed) & G_LOCK;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Resolved, and recording? (The boot bit alone: resolve, then forward.) */
static bool recording(void)
{
	unsigned g = atomic_load_explicit(&mem.gate, memory_order_relaxed);

	if (g & MEM_GATE_BOOT) {
		mem_boot();
		g = atomic_load_explicit(&mem.gate, memory_order_relaxed);
	}
	return (g & MEM_GATE_LOCK) && !mem_self.busy;
}

enum lock_op {
	L_MUTEX, L_MUTEX_TIMED, L_MUTEX_CLOCK, L_RD, L_RD_TIMED, L_RD_CLOCK,
	L_WR, L_WR_TIMED, L_WR_CLOCK,
};

static int call(enum lock_op op, void *l, clockid_t c, const struct timespec *ts)
{
	switch (op) {
	case L_MUTEX: return mem_real.mutex_lock(l);
	case L_MUTEX_TIMED: return mem_real.mutex_timedlock(l, ts);
	case L_MUTEX_CLOCK: return mem_real.mutex_clocklock(l, c, ts);
	case L_RD: return mem_real.rwlock_rdlock(l);
	case L_RD_TIMED: return mem_real.rwlock_timedrdlock(l, ts);
	case L_RD_CLOCK: return mem_real.rwlock_clockrdlock(l, c, ts);
	case L_WR: return mem_real.rwlock_wrlock(l);
	case L_WR_TIMED: return mem_real.rwlock_timedwrlock(l, ts);
	case L_WR_CLOCK: return mem_real.rwlock_clockwrlock(l, c, ts);
	}
	return EINVAL;
}

static int try(enum lock_op op, void *l)
{
	if (op <= L_MUTEX_CLOCK)
		return mem_real.mutex_trylock(l);
	if (op <= L_RD_CLOCK)
		return mem_real.rwlock_tryrdlock(l);
	return mem_real.rwlock_trywrlock(l);
}

SLOW static int lock_slow(enum lock_op op, void *l, clockid_t c, const struct timespec *ts,
			  void *frame)
{
	uint64_t t0, t1;
	int r;

	if (!recording())
		return call(op, l, c, ts);
	r = try(op, l);
	if (r != EBUSY)
		return r;
	t0 = now_ns();
	r = call(op, l, c, ts);
	t1 = now_ns();
	mem_self.busy = 1;
	mem_lock_record(frame, t1 - t0);
	mem_self.busy = 0;
	return r;
}

EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	if (LIKELY(!lock_on()))
		return mem_real.mutex_lock(m);
	return lock_slow(L_MUTEX, m, 0, NULL, __builtin_frame_address(0));
}

EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *ts)
{
	if (LIKELY(!lock_on()))
		return mem_real.mutex_timedlock(m, ts);
	return lock_slow(L_MUTEX_TIMED, m, 0, ts, __builtin_frame_address(0));
}

EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t c, const struct timespec *ts)
{
	if (LIKELY(!lock_on()))
		return mem_real.mutex_clocklock(m, c, ts);
	return lock_slow(L_MUTEX_CLOCK, m, c, ts, __builtin_frame_address(0));
}

EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	if (LIKELY(!lock_on()))
		return mem_real.rwlock_rdlock(l);
	return lock_slow(L_RD, l, 0, NULL, __builtin_frame_address(0));
}

EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *ts)
{
	if (LIKELY(!lock_on()))
		return mem_real.rwlock_timedrdlock(l, ts);
	return lock_slow(L_RD_TIMED, l, 0, ts, __builtin_frame_address(0));
}

EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t c,
				      const struct timespec *ts)
{
	if (LIKELY(!lock_on()))
		return mem_real.rwlock_clockrdlock(l, c, ts);
	return lock_slow(L_RD_CLOCK, l, c, ts, __builtin_frame_address(0));
}

EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	if (LIKELY(!lock_on()))
		return mem_real.rwlock_wrlock(l);
	return lock_slow(L_WR, l, 0, NULL, __builtin_frame_address(0));
}

EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *ts)
{
	if (LIKELY(!lock_on()))
		return mem_real.rwlock_timedwrlock(l, ts);
	return lock_slow(L_WR_TIMED, l, 0, ts, __builtin_frame_address(0));
}

EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t c,
				      const struct timespec *ts)
{
	if (LIKELY(!lock_on()))
		return mem_real.rwlock_clockwrlock(l, c, ts);
	return lock_slow(L_WR_CLOCK, l, c, ts, __builtin_frame_address(0));
}

/* The agent's own definitions, by hidden aliases (alloc.h, MEM_OWN). */
MEM_DEFINE_OWN(pthread_mutex_lock);
MEM_DEFINE_OWN(pthread_mutex_timedlock);
MEM_DEFINE_OWN(pthread_mutex_clocklock);
MEM_DEFINE_OWN(pthread_rwlock_rdlock);
MEM_DEFINE_OWN(pthread_rwlock_timedrdlock);
MEM_DEFINE_OWN(pthread_rwlock_clockrdlock);
MEM_DEFINE_OWN(pthread_rwlock_wrlock);
MEM_DEFINE_OWN(pthread_rwlock_timedwrlock);
MEM_DEFINE_OWN(pthread_rwlock_clockwrlock);
#endif
