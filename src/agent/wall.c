/* wall: see wall.h. The sampler is an agent thread (never sampled itself,
 * its signals blocked); it owns its thread table alone. */
#include "agent/wall.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/hot/hot.h"

/* A thread that used less CPU than this since the handler last ran on it
 * has not run in between (what it used is the return from the handler). */
#define IDLE_CPU_NS 50000ull

struct wthread {
	pid_t tid;	/* 0: free slot */
	uint64_t last_tick;
	bool sampled;	/* signalled at least once */
	char sent;	/* the state it was in when last signalled */
	bool seen;
};

static struct {
	pthread_t thread;
	bool running;
	atomic_int stop;
	uint64_t interval_ns;
	unsigned per_tick;
	struct wthread *t;	/* AGENT_MAX_THREADS slots; slot = hot.wall_cpu_ns index */
	unsigned *order;	/* used slots, round-robin order */
	unsigned norder, cursor;
	struct agent_wall_stats stats;
	bool have_stats;
} W;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char thread_state(pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* "tid (comm) S ...": the comm may hold spaces and parentheses. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Brings the slot table in line with /proc/self/task. */
static void rescan(uint64_t tick)
{
	struct agent_thread_list l;

	if (agent_threads_scan(&l) < 0)
		return;
	for (unsigned i = 0; i < W.norder; i++)
		W.t[W.order[i]].seen = false;
	for (unsigned i = 0; i < l.n; i++) {
		unsigned free_slot = AGENT_MAX_THREADS, j;

		for (j = 0; j < W.norder; j++)
			if (W.t[W.order[j]].tid == l.tids[i])
				break;
		if (j < W.norder) {
			W.t[W.order[j]].seen = true;
			continue;
		}
		for (unsigned s = 0; s < AGENT_MAX_THREADS; s++)
			if (!W.t[s].tid) {
				free_slot = s;
				break;
			}
		if (free_slot == AGENT_MAX_THREADS)
			break;
		/* Its time before we saw it is unknown: it weighs from here. */
		W.t[free_slot] = (struct wthread){ .tid = l.tids[i], .last_tick = tick - 1,
						   .seen = true };
		hot.wall_cpu_ns[free_slot] = 0;
		W.order[W.norder++] = free_slot;
	}
	for (unsigned i = 0; i < W.norder;) {
		if (!W.t[W.order[i]].seen) {
			W.t[W.order[i]].tid = 0;
			W.order[i] = W.order[--W.norder];
		} else {
			i++;
		}
	}
	if (W.norder > W.stats.threads_max)
		W.stats.threads_max = W.norder;
	if (W.cursor >= W.norder)
		W.cursor = 0;
	agent_thread_list_release(&l);
}

static void visit(unsigned slot, uint64_t tick, unsigned *signalled)
{
	struct wthread *w = &W.t[slot];
	uint64_t ticks = tick - w->last_tick;
	char st = thread_state(w->tid);
	siginfo_t si;

	if (!st)
		return; /* gone; the next rescan drops it */
	if (ticks > 0xffff)
		ticks = 0xffff;
	w->last_tick = tick;
	/* Only a thread that was asleep when signalled goes straight back to
	 * the same wait after the handler; one that was running may have
	 * gone anywhere before it slept, so it is signalled again. */
	if (st != 'R' && w->sampled && w->sent != 'R') {
		struct timespec ts;
		clockid_t clk = (clockid_t)((~(unsigned)w->tid << 3) | 6);

		if (clock_gettime(clk, &ts) == 0) {
			uint64_t cpu = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;

			if (cpu - hot.wall_cpu_ns[slot] < IDLE_CPU_NS) {
				if (hot_push_repeat(w->tid, st, ticks * W.interval_ns))
					W.stats.repeated++;
				return;
			}
		}
	}
	memset(&si, 0, sizeof(si));
	si.si_signo = HOT_SIGNAL;
	si.si_code = SI_QUEUE;
	si.si_pid = hot.pid;
	si.si_uid = getuid();
	si.si_value.sival_ptr = (void *)(uintptr_t)hot_wall_word(slot, st, (unsigned)ticks);
	if (syscall(SYS_rt_tgsigqueueinfo, hot.pid, w->tid, HOT_SIGNAL, &si) < 0) {
		W.stats.send_failed++;
		return;
	}
	w->sampled = true;
	w->sent = st;
	W.stats.signalled++;
	(*signalled)++;
}

static void *sampler(void *arg)
{
	uint64_t next = clock_ns(CLOCK_MONOTONIC), tick = 0, last_scan = 0;

	(void)arg;
	rescan(0);
	while (!atomic_load(&W.stop)) {
		unsigned signalled = 0, visited = 0, limit;
		struct timespec ts;

		tick++;
		W.stats.ticks = tick;
		/* New threads are found once a round, and at least every s. */
		if (W.cursor == 0 || next - last_scan >= 1000000000ull) {
			rescan(tick);
			last_scan = next;
		}
		limit = W.norder < 4 * W.per_tick ? W.norder : 4 * W.per_tick;
		while (visited < limit && signalled < W.per_tick && W.norder) {
			visit(W.order[W.cursor], tick, &signalled);
			visited++;
			if (++W.cursor >= W.norder)
				W.cursor = 0;
		}
		next += W.interval_ns;
		ts.tv_sec = (time_t)(next / 1000000000ull);
		ts.tv_nsec = (long)(next % 1000000000ull);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		if (clock_ns(CLOCK_MONOTONIC) > next + 10 * W.interval_ns)
			next = clock_ns(CLOCK_MONOTONIC); /* we were stopped: no burst */
	}
	return NULL;
}

int agent_wall_start(uint64_t interval_ns, unsigned per_tick, struct diag *d)
{
	int err;

	if (W.running)
		return diag_set(d, -EBUSY, "the wall sampler already runs");
	if (!W.t) {
		W.t = calloc(AGENT_MAX_THREADS, sizeof(*W.t));
		W.order = calloc(AGENT_MAX_THREADS, sizeof(*W.order));
		if (!W.t || !W.order)
			return diag_set(d, -ENOMEM, "out of memory for the wall sampler");
	}
	memset(W.t, 0, AGENT_MAX_THREADS * sizeof(*W.t));
	W.norder = W.cursor = 0;
	memset(&W.stats, 0, sizeof(W.stats));
	W.stats.per_tick = per_tick;
	W.have_stats = true;
	W.interval_ns = interval_ns;
	W.per_tick = per_tick;
	atomic_store(&W.stop, 0);
	err = agent_thread_create(&W.thread, sampler, NULL);
	if (err)
		return diag_set(d, -err, "cannot start the wall sampler thread: %s", strerror(err));
	W.running = true;
	return 0;
}

void agent_wall_stop(void)
{
	if (!W.running)
		return;
	atomic_store(&W.stop, 1);
	pthread_join(W.thread, NULL);
	W.running = false;
}

int agent_wall_get_stats(struct agent_wall_stats *ret)
{
	if (!W.have_stats)
		return -ENOENT;
	*ret = W.stats;
	return 0;
}
