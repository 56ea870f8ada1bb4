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
#include "agent/engine.h"
#include "agent/hot/hot.h"
#include "base/clock.h"
#include "base/hash.h"
#include "base/proc.h"
#include "base/units.h"

/* A thread that used less CPU than this since the handler last ran on it
 * has not run in between (what it used is the return from the handler). */
#define IDLE_CPU_NS 50000ull

/* hot.wall_cpu_ns[slot] from the moment a signal is sent until its
 * handler has run (and written the thread's CPU time there). */
#define WALL_PENDING UINT64_MAX

/* A sampler this late (and 10 ticks late) was stopped, not delayed. */
#define STOPPED_NS 1000000000ull

/* At most this many repeats are pushed at once for the visits owed to a
 * sample whose signal waited (a stopped thread can owe thousands); the
 * rest are folded into the last one's weight. */
#define MAX_OWED_PUSH 64

struct wthread {
	pid_t tid;	/* 0: free slot */
	uint64_t last_tick;
	bool sampled;	/* signalled at least once */
	char sent;	/* the state it was in when last signalled */
	bool seen;
	/* Visits (and the ticks they stand for) made while its last signal
	 * was still pending: they belong to that signal's sample, the thread
	 * not having moved since. */
	uint64_t owed, owed_ticks;
	char owed_state;
	/* Where it was blocked when last signalled: /proc/self/task/TID/
	 * syscall (number, arguments, sp, pc), hashed; 0 when unknown. */
	uint64_t wait_at;
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

/* The thread's state letter, 0 when it is gone; and whether the agent's
 * signal waits in its own pending set (its stat's fields 3 and 31). */
static char thread_state(pid_t tid, bool *ret_sigprof)
{
	struct proc_stat st;

	*ret_sigprof = false;
	if (proc_stat_read(0, tid, &st) < 0)
		return 0;
	*ret_sigprof = st.pending >> (HOT_SIGNAL - 1) & 1;
	return st.state;
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

/* wait_site() when /proc/self/task/TID/syscall cannot be read (a kernel
 * without it): every wait looks the same, and only the CPU clock tells. */
#define WAIT_UNKNOWN 1

/* Where a blocked thread waits: from its syscall line ("nr a0 a1 a2 a3
 * a4 a5 sp pc"), the hash of the system call, its first argument (the
 * fd, the futex word), and the stack and instruction pointers; 0 when it
 * is not blocked in a system call. The same call from the same frame.
 * The other arguments are left out: a timeout recomputed after EINTR
 * must not look like a new wait (and be interrupted again, and again). */
static uint64_t wait_site(pid_t tid)
{
	char path[64], buf[256], *tok[9], *save = NULL;
	uint64_t h = 0x77616c6c;
	unsigned n = 0;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : WAIT_UNKNOWN; /* ENOENT: the thread is gone */
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return WAIT_UNKNOWN;
	buf[len] = '\0';
	for (char *t = strtok_r(buf, " \n", &save); t && n < 9; t = strtok_r(NULL, " \n", &save))
		tok[n++] = t;
	if (n != 9) /* "-1 sp pc", "running" */
		return 0;
	for (unsigned i = 0; i < 9; i++)
		if (i <= 1 || i >= 7)
			h = hash_bytes(tok[i], strlen(tok[i]), h);
	return h > WAIT_UNKNOWN ? h : h + 2;
}

static uint64_t slot_cpu_ns(unsigned slot)
{
	return __atomic_load_n(&hot.wall_cpu_ns[slot], __ATOMIC_ACQUIRE);
}

/* Pushes the visits owed to the thread's last signalled sample as
 * repeats of it: one sample per visit, as every other visit gives. */
static void pay_owed(struct wthread *w)
{
	uint64_t n = w->owed < MAX_OWED_PUSH ? w->owed : MAX_OWED_PUSH;
	uint64_t each = w->owed_ticks / w->owed;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t ticks = i + 1 < n ? each : w->owed_ticks - each * (n - 1);

		if (hot_push_repeat(w->tid, w->owed_state, ticks * W.interval_ns))
			W.stats.repeated++;
	}
	w->owed = w->owed_ticks = 0;
}

/* May the thread's last stack stand for this tick without a signal? Only
 * if it is blocked exactly where it was when signalled, and has used no
 * CPU since its handler ran. A thread that was running when signalled may
 * have gone anywhere before it blocked; one that woke and blocked
 * elsewhere with next to no CPU in between (a read after a sleep) has a
 * different wait site. */
static bool unmoved(struct wthread *w, unsigned slot, char st)
{
	struct timespec ts;
	clockid_t clk = (clockid_t)((~(unsigned)w->tid << 3) | 6);
	uint64_t cpu;

	if (st == 'R' || !w->sampled || w->sent == 'R' || !w->wait_at)
		return false;
	if (clock_gettime(clk, &ts) != 0)
		return false;
	cpu = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return cpu - slot_cpu_ns(slot) < IDLE_CPU_NS && wait_site(w->tid) == w->wait_at;
}

static void visit(unsigned slot, uint64_t tick, unsigned *signalled)
{
	struct wthread *w = &W.t[slot];
	uint64_t ticks = tick - w->last_tick, before;
	bool queued;
	char st = thread_state(w->tid, &queued);
	siginfo_t si;

	if (!st)
		return; /* gone; the next rescan drops it */
	if (ticks > 0xffff)
		ticks = 0xffff;
	w->last_tick = tick;
	if (w->sampled && slot_cpu_ns(slot) == WALL_PENDING && queued) {
		/* Its last signal waits for the thread to get a CPU (or to
		 * leave an uninterruptible sleep); another would merge with it
		 * and be lost. It has not run since, so its stack then is its
		 * stack now: these visits go to that sample once it is in.
		 * (Not queued yet not handled, it merged with a SIGPROF of the
		 * program's own, which took its place: it is sent again.) */
		w->owed++;
		w->owed_ticks += ticks;
		w->owed_state = st;
		W.stats.owed++;
		return;
	}
	if (w->owed)
		pay_owed(w);
	if (unmoved(w, slot, st)) {
		if (hot_push_repeat(w->tid, st, ticks * W.interval_ns))
			W.stats.repeated++;
		return;
	}
	memset(&si, 0, sizeof(si));
	si.si_signo = HOT_SIGNAL;
	si.si_code = SI_QUEUE;
	si.si_pid = hot.pid;
	si.si_uid = getuid();
	si.si_value.sival_ptr = (void *)(uintptr_t)hot_wall_word(slot, st, (unsigned)ticks);
	w->wait_at = st != 'R' ? wait_site(w->tid) : 0;
	/* Marked before the signal goes: its handler may run at once. */
	before = slot_cpu_ns(slot);
	__atomic_store_n(&hot.wall_cpu_ns[slot], WALL_PENDING, __ATOMIC_RELEASE);
	if (syscall(SYS_rt_tgsigqueueinfo, hot.pid, w->tid, HOT_SIGNAL, &si) < 0) {
		__atomic_store_n(&hot.wall_cpu_ns[slot], before, __ATOMIC_RELEASE);
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
	pthread_setname_np(pthread_self(), "nprof-wall"); /* in thread dumps */
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
		/* Late, the sampler catches up tick by tick: a thread's state
		 * now is the best guess for the ticks it missed, and when the
		 * whole machine stalled (a virtual machine whose host took its
		 * vCPUs away for 100 ms or more) it is exact. Only after a
		 * stop (SIGSTOP, a debugger) is the lost time skipped. */
		if (clock_ns(CLOCK_MONOTONIC) > next + STOPPED_NS &&
		    clock_ns(CLOCK_MONOTONIC) > next + 10 * W.interval_ns)
			next = clock_ns(CLOCK_MONOTONIC);
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

void agent_wall_after_fork(void)
{
	/* The child has no sampler thread to stop or join, and none of the
	 * parent's threads to visit. */
	W.running = false;
	W.norder = W.cursor = 0;
}

int agent_wall_get_stats(struct agent_wall_stats *ret)
{
	if (!W.have_stats)
		return -ENOENT;
	*ret = W.stats;
	return 0;
}

/* --- the engine (engine.h) ------------------------------------------------- */

static int engine_start(const struct agent_options *o, uint64_t interval,
			enum event_id *effective, struct diag *d)
{
	(void)effective;
	return agent_wall_start(interval, o->wall_threads ? o->wall_threads : AGENT_WALL_PER_TICK,
				d);
}

static void engine_notes(struct profile *p)
{
	struct agent_wall_stats ws;
	char buf[32];

	if (agent_wall_get_stats(&ws) == 0)
		profile_add_note(p,
				 "wall: every thread sampled each %s whatever its state, at most %u "
				 "signalled per tick (%u threads seen; %llu samples reused the stack of "
				 "a thread that had not run since)",
				 units_format_ns(W.interval_ns, buf, sizeof(buf)), ws.per_tick,
				 ws.threads_max, (unsigned long long)ws.repeated);
}

const struct agent_engine agent_engine_wall = {
	.start = engine_start,
	.stop = agent_wall_stop,
	.notes = engine_notes,
	.after_fork_child = agent_wall_after_fork,
	.signals = true,
};
