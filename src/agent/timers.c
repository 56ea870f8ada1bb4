/* timers: the engine of cpu and itimer — a timer on every thread of the
 * program that signals that very thread: a perf_event (cpu-clock) for
 * cpu, a POSIX CPU-time timer for itimer, which cpu falls back to where
 * perf_events are denied. Threads made through the agent's
 * pthread_create are armed as they start; others are found by a rescan
 * of /proc/self/task every RESCAN_NS. */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/engine.h"
#include "agent/hot/cpu_fds.h"
#include "agent/hot/hot.h"
#include "base/array.h"

#define RESCAN_NS 1000000000ull	/* threads made without pthread_create */

struct armed {
	pid_t tid;
	int fd;		/* cpu: the perf event, else -1 */
	timer_t timer;	/* itimer */
	bool has_timer;
	bool seen;	/* rescans: still in /proc/self/task */
};

/* Touched by new threads too, under lock (never held long), so that a
 * profile being built does not stall pthread_create. */
static struct {
	pthread_mutex_t lock;
	enum event_id event;	/* cpu or itimer while on */
	bool on;
	uint64_t interval;	/* ns */
	bool exclude_kernel;	/* perf_event_paranoid 2: user space only */
	char fallback[384];	/* why cpu became itimer; "" */
	struct armed *armed;
	size_t n, cap;
	unsigned failed;	/* threads we could not arm */
	int error;		/* the last such failure */
	uint64_t last_rescan_ns;
} T = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int perf_open(pid_t tid, uint64_t interval, bool exclude_kernel)
{
	struct perf_event_attr a;
	struct f_owner_ex owner = { F_OWNER_TID, tid };
	int fd, err;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = interval;
	a.disabled = 1;
	a.wakeup_events = 1;
	a.exclude_kernel = exclude_kernel;
	a.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Each overflow disables the event (event_limit 1) and signals the
	 * owner thread with HOT_SIGNAL; the handler refreshes it. */
	if (fcntl(fd, F_SETFL, O_ASYNC) < 0 || fcntl(fd, F_SETSIG, HOT_SIGNAL) < 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) < 0 || ioctl(fd, PERF_EVENT_IOC_RESET, 0) < 0 ||
	    ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* The CPU clock of any thread of this process (glibc's
 * MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)). */
static clockid_t thread_cpu_clock(pid_t tid)
{
	return (clockid_t)((~(unsigned)tid << 3) | 6);
}

static int itimer_open(pid_t tid, uint64_t interval, timer_t *ret)
{
	struct sigevent ev;
	struct itimerspec its;
	timer_t t;

	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = HOT_SIGNAL;
	ev.sigev_value.sival_ptr = &hot; /* how the handler knows it is ours */
	ev._sigev_un._tid = tid;
	if (timer_create(thread_cpu_clock(tid), &ev, &t) < 0)
		return -errno;
	its.it_interval.tv_sec = (time_t)(interval / 1000000000ull);
	its.it_interval.tv_nsec = (long)(interval % 1000000000ull);
	its.it_value = its.it_interval;
	if (timer_settime(t, 0, &its, NULL) < 0) {
		int err = -errno;

		timer_delete(t);
		return err;
	}
	*ret = t;
	return 0;
}

static struct armed *armed_find(pid_t tid)
{
	for (unsigned i = 0; i < T.n; i++)
		if (T.armed[i].tid == tid)
			return &T.armed[i];
	return NULL;
}

/* Under arm_lock. */
static int arm_locked(pid_t tid)
{
	struct armed a = { .tid = tid, .fd = -1, .seen = true };
	uint64_t interval = T.interval;
	int err;

	if (!T.on || armed_find(tid))
		return 0;
	if (T.n == AGENT_MAX_THREADS)
		return -E2BIG;
	if (array_reserve(&T.armed, &T.cap, T.n + 1, sizeof(*T.armed)) < 0)
		return -ENOMEM;
	if (T.event == EVENT_CPU) {
		a.fd = perf_open(tid, interval, T.exclude_kernel);
		if (a.fd < 0)
			return a.fd;
		hot_cpu_fd_set(tid, a.fd);
	} else {
		err = itimer_open(tid, interval, &a.timer);
		if (err < 0)
			return err;
		a.has_timer = true;
	}
	T.armed[T.n++] = a;
	return 0;
}

static void disarm(struct armed *a)
{
	if (a->fd >= 0) {
		hot_cpu_fd_clear(a->tid, a->fd);
		ioctl(a->fd, PERF_EVENT_IOC_DISABLE, 0);
		close(a->fd);
	}
	if (a->has_timer)
		timer_delete(a->timer);
}

static void thread_started(pid_t tid)
{
	int err;

	pthread_mutex_lock(&T.lock);
	err = arm_locked(tid);
	if (err < 0 && err != -ESRCH) {
		T.failed++;
		T.error = err;
	}
	pthread_mutex_unlock(&T.lock);
}

static void thread_exiting(pid_t tid)
{
	struct armed *a;

	pthread_mutex_lock(&T.lock);
	a = armed_find(tid);
	if (a) {
		disarm(a);
		*a = T.armed[--T.n];
	}
	pthread_mutex_unlock(&T.lock);
}

/* Arms threads that appeared without our wrapper; forgets those gone. */
static void rescan(void)
{
	struct agent_thread_list l;

	if (agent_threads_scan(&l) < 0)
		return;
	pthread_mutex_lock(&T.lock);
	for (unsigned i = 0; i < T.n; i++)
		T.armed[i].seen = false;
	for (unsigned i = 0; i < l.n; i++) {
		struct armed *a = armed_find(l.tids[i]);

		if (a)
			a->seen = true;
		else if (arm_locked(l.tids[i]) < 0)
			T.failed++;
	}
	for (unsigned i = 0; i < T.n;) {
		if (!T.armed[i].seen) {
			disarm(&T.armed[i]);
			T.armed[i] = T.armed[--T.n];
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&T.lock);
	agent_thread_list_release(&l);
}

static void disarm_all(void)
{
	pthread_mutex_lock(&T.lock);
	T.on = false;
	for (unsigned i = 0; i < T.n; i++)
		disarm(&T.armed[i]);
	T.n = 0;
	pthread_mutex_unlock(&T.lock);
}

static const char *perf_denied_why(int err, char *buf, size_t len)
{
	long paranoid = -1;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");

	if (f) {
		if (fscanf(f, "%ld", &paranoid) != 1)
			paranoid = -1;
		fclose(f);
	}
	if (err == -EACCES || err == -EPERM)
		snprintf(buf, len, "perf_events denied (%s; kernel.perf_event_paranoid=%ld, or a "
			 "seccomp filter as in many containers)", strerror(-err), paranoid);
	else
		snprintf(buf, len, "perf_event_open failed: %s", strerror(-err));
	return buf;
}

/* Probes perf_events on the calling thread; T.fallback "" when cpu can run. */
static void cpu_probe(void)
{
	int fd;

	T.exclude_kernel = false;
	fd = perf_open(gettid(), 1000000000ull, false);
	if (fd == -EACCES || fd == -EPERM) {
		T.exclude_kernel = true; /* perf_event_paranoid 2: user space only */
		fd = perf_open(gettid(), 1000000000ull, true);
	}
	if (fd >= 0) {
		close(fd);
		T.fallback[0] = '\0';
		return;
	}
	perf_denied_why(fd, T.fallback, sizeof(T.fallback));
}

static int start(const struct agent_options *o, uint64_t interval, enum event_id *effective,
		 struct diag *d)
{
	struct agent_thread_list l = { 0 };
	int err;

	T.fallback[0] = '\0';
	T.failed = 0;
	T.error = 0;
	if (*effective == EVENT_CPU) {
		cpu_probe();
		if (T.fallback[0]) {
			*effective = EVENT_ITIMER;
			agent_log("cpu: %s; falling back to itimer", T.fallback);
		}
	}
	(void)o;
	pthread_mutex_lock(&T.lock);
	T.event = *effective;
	T.interval = interval;
	T.on = true;
	pthread_mutex_unlock(&T.lock);
	T.last_rescan_ns = 0;
	err = agent_threads_scan(&l);
	if (err < 0) {
		disarm_all();
		return diag_set(d, err, "cannot list this process's threads: %s", strerror(-err));
	}
	for (unsigned i = 0; i < l.n; i++)
		thread_started(l.tids[i]);
	agent_thread_list_release(&l);
	return 0;
}

static void tick(uint64_t now)
{
	if (!T.last_rescan_ns)
		T.last_rescan_ns = now;
	if (now - T.last_rescan_ns >= RESCAN_NS) {
		T.last_rescan_ns = now;
		rescan();
	}
}

static void notes(struct profile *p)
{
	if (T.fallback[0])
		profile_add_note(p, "cpu: %s; sampled with itimer (per-thread CPU timers) instead",
				 T.fallback);
	if (T.failed)
		profile_add_note(p, "%u threads could not be sampled: %s", T.failed,
				 strerror(-T.error));
}

/* After an exec that failed (exec.c): SIGPROF was ignored for its
 * duration, so a perf event whose overflow signal was discarded then is
 * disabled and waits for a refresh that would never come. */
static void after_failed_exec(void)
{
	pthread_mutex_lock(&T.lock);
	for (unsigned i = 0; i < T.n; i++)
		if (T.armed[i].fd >= 0)
			ioctl(T.armed[i].fd, PERF_EVENT_IOC_REFRESH, 1);
	pthread_mutex_unlock(&T.lock);
}

static void before_fork(void)
{
	pthread_mutex_lock(&T.lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&T.lock);
}

/* The child's perf events would count the parent's threads: closed here,
 * the events themselves left to the parent. */
static void after_fork_child(void)
{
	T.on = false;
	for (unsigned i = 0; i < T.n; i++)
		if (T.armed[i].fd >= 0) {
			hot_cpu_fd_clear(T.armed[i].tid, T.armed[i].fd);
			close(T.armed[i].fd);
		}
	T.n = 0;
	pthread_mutex_unlock(&T.lock); /* taken in before_fork by this thread */
}

const struct agent_engine agent_engine_timers = {
	.start = start,
	.release = disarm_all,
	.tick = tick,
	.notes = notes,
	.thread_started = thread_started,
	.thread_exiting = thread_exiting,
	.before_fork = before_fork,
	.after_fork_parent = after_fork_parent,
	.after_fork_child = after_fork_child,
	.after_failed_exec = after_failed_exec,
	.signals = true,
};
