/* attach_pauses: a process that measures how long each of its threads is
 * held up, and how fast its workers go: the target of bench/attach
 * (nprof attach and heaptrack -p against the same program).
 *
 *   attach_pauses [--workers N] [--duty PCT]
 *
 *   main        an event loop: ppoll() on stdin with a 1 ms tick, as a
 *               server's loop waits on its sockets. nprof attach prefers
 *               such a thread (an idle system call, the main thread first)
 *   worker-I    N of them (4 by default): at every 1 ms tick, slices of
 *               fixed work for PCT % of the tick (25 by default), then
 *               clock_nanosleep() to the next tick. A slice is arithmetic,
 *               a malloc and a free (a ring of 8 live blocks, 16 B-4 KiB)
 *               and an uncontended mutex lock and unlock: the calls an
 *               agent's interposers would sit on, so that hooks left
 *               behind after a detach show in the throughput
 *
 * Each thread keeps the longest time it was held up: the longest gap
 * between two consecutive CLOCK_MONOTONIC readings while working (a slice
 * is a few microseconds), or how late it woke past a tick it slept until.
 * A stopped thread, or one running someone else's code (an injected
 * dlopen), shows it in full. With 4 workers at 25 % the process wants one
 * CPU of two: the workers rarely wait for one another.
 *
 * "ready" is printed on stdout once every thread runs. Each line read on
 * stdin (any text) prints a report of the window since the previous one
 * (or the start) and starts a new window; EOF ends the process:
 *
 *   window T0 T1                       CLOCK_MONOTONIC ns
 *   thread TID NAME SLICES WORK_NS CPU_NS GAP_NS GAP_AT
 *   ...
 *   end
 *
 * SLICES slices done in WORK_NS ns of working time (wall) and CPU_NS of the
 * thread's CPU time in the window; GAP_NS its longest gap, which ended at
 * GAP_AT (CLOCK_MONOTONIC ns; 0 without one). Main has no slices. The
 * work is bounded by time, never by a count sized for one machine. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

#define TICK_NS 1000000ull
#define RING 8
#define MAX_WORKERS 64

struct thread_stat {
	pid_t tid;
	char name[16];
	clockid_t cpu_clock;
	/* Cumulative; written by the thread (relaxed), read by main. */
	uint64_t slices, work_ns;
	/* The window's longest gap: the thread writes it under mu when it
	 * beats max_seen (its own copy), main reads and clears it under mu. */
	pthread_mutex_t mu;
	uint64_t gap_ns, gap_at;
	uint64_t max_seen; /* atomic: main clears it with gap_ns */
	/* The worker's own; read by nobody else. */
	pthread_mutex_t work_mu;
	void *ring[RING];
	uint64_t seed, acc;
};

static struct thread_stat stats[MAX_WORKERS + 1]; /* [0] is main */
static int nworkers = 4, duty = 25;
static int running; /* atomic: workers started */

static uint64_t now_ns(void)
{
	return work_clock_ns(CLOCK_MONOTONIC);
}

/* A gap of held-up time that ended at t. */
static void note_gap(struct thread_stat *s, uint64_t gap, uint64_t t)
{
	if (gap <= __atomic_load_n(&s->max_seen, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&s->mu);
	if (gap > s->gap_ns) {
		s->gap_ns = gap;
		s->gap_at = t;
	}
	__atomic_store_n(&s->max_seen, s->gap_ns, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->mu);
}

/* One slice: a few microseconds of arithmetic, one block of the ring
 * replaced, one lock taken and given back. */
NOINLINE static void slice(struct thread_stat *s)
{
	uint64_t x = s->seed, n = work_chunk(1500);
	unsigned k;

	KEEP_FRAME();
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	k = (unsigned)(x >> 60) % RING;
	free(s->ring[k]);
	s->ring[k] = malloc((size_t)16 << ((x >> 40) % 9)); /* 16 B .. 4 KiB */
	if (s->ring[k])
		*(volatile char *)s->ring[k] = (char)x;
	pthread_mutex_lock(&s->work_mu);
	s->acc += x;
	pthread_mutex_unlock(&s->work_mu);
	s->seed = x;
}

static void *worker_main(void *arg)
{
	struct thread_stat *s = arg;
	uint64_t work = TICK_NS * (uint64_t)duty / 100, tick, t;
	struct timespec ts;

	s->tid = (pid_t)syscall(SYS_gettid);
	pthread_getcpuclockid(pthread_self(), &s->cpu_clock);
	pthread_setname_np(pthread_self(), s->name);
	__atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
	tick = now_ns();
	for (;;) {
		uint64_t start, last, end = tick + work, done = 0;

		t = now_ns();
		if (t > tick)
			note_gap(s, t - tick, t); /* woke late */
		start = last = t;
		while (last < end) {
			slice(s);
			t = now_ns();
			note_gap(s, t - last, t);
			last = t;
			done++;
		}
		__atomic_store_n(&s->slices, s->slices + done, __ATOMIC_RELAXED);
		__atomic_store_n(&s->work_ns, s->work_ns + (last - start), __ATOMIC_RELAXED);
		/* Missed ticks (held up past them) are skipped, not caught up. */
		do
			tick += TICK_NS;
		while (tick <= last);
		ts.tv_sec = (time_t)(tick / 1000000000ull);
		ts.tv_nsec = (long)(tick % 1000000000ull);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	return NULL;
}

static uint64_t cpu_ns(struct thread_stat *s)
{
	struct timespec ts;

	if (clock_gettime(s->cpu_clock, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The window's report, on stdout in one write; then a new window. */
static void report(uint64_t *window_start, uint64_t *base_slices, uint64_t *base_work,
		   uint64_t *base_cpu)
{
	static char buf[128 * (MAX_WORKERS + 4)];
	uint64_t t = now_ns();
	size_t n = 0;

	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "window %llu %llu\n",
			      (unsigned long long)*window_start, (unsigned long long)t);
	for (int i = 0; i <= nworkers; i++) {
		struct thread_stat *s = &stats[i];
		uint64_t sl = __atomic_load_n(&s->slices, __ATOMIC_RELAXED);
		uint64_t wk = __atomic_load_n(&s->work_ns, __ATOMIC_RELAXED);
		uint64_t cpu = cpu_ns(s), gap, at;

		pthread_mutex_lock(&s->mu);
		gap = s->gap_ns;
		at = s->gap_at;
		s->gap_ns = s->gap_at = 0;
		__atomic_store_n(&s->max_seen, 0, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&s->mu);
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				      "thread %d %s %llu %llu %llu %llu %llu\n", (int)s->tid, s->name,
				      (unsigned long long)(sl - base_slices[i]),
				      (unsigned long long)(wk - base_work[i]),
				      (unsigned long long)(cpu - base_cpu[i]), (unsigned long long)gap,
				      (unsigned long long)at);
		base_slices[i] = sl;
		base_work[i] = wk;
		base_cpu[i] = cpu;
	}
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "end\n");
	if (write(1, buf, n) != (ssize_t)n)
		_exit(1);
	*window_start = t;
}

/* The event loop: a 1 ms tick, stdin's lines as requests. */
NOINLINE static void main_loop(void)
{
	static uint64_t base_slices[MAX_WORKERS + 1], base_work[MAX_WORKERS + 1],
		base_cpu[MAX_WORKERS + 1];
	struct thread_stat *s = &stats[0];
	struct pollfd pfd = { .fd = 0, .events = POLLIN };
	uint64_t tick = now_ns() + TICK_NS, window_start = now_ns();
	char line[256];

	KEEP_FRAME();
	for (;;) {
		uint64_t t = now_ns(), left = tick > t ? tick - t : 0;
		struct timespec ts = { (time_t)(left / 1000000000ull), (long)(left % 1000000000ull) };
		int r = ppoll(&pfd, 1, &ts, NULL);

		t = now_ns();
		if (r < 0 && errno != EINTR)
			_exit(3);
		if (t > tick)
			note_gap(s, t - tick, t);
		if (r > 0) {
			ssize_t n = read(0, line, sizeof(line));

			if (n <= 0)
				exit(0);
			report(&window_start, base_slices, base_work, base_cpu);
			t = now_ns(); /* the report's own time is not a pause */
			tick = t + TICK_NS;
			continue;
		}
		while (tick <= t)
			tick += TICK_NS;
	}
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--workers") && i + 1 < argc)
			nworkers = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--duty") && i + 1 < argc)
			duty = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: attach_pauses [--workers N] [--duty PCT]\n");
			return 2;
		}
	}
	if (nworkers < 1 || nworkers > MAX_WORKERS || duty < 1 || duty > 100) {
		fprintf(stderr, "attach_pauses: --workers takes 1 to %d, --duty 1 to 100\n",
			MAX_WORKERS);
		return 2;
	}
	stats[0].tid = getpid();
	snprintf(stats[0].name, sizeof(stats[0].name), "main");
	pthread_getcpuclockid(pthread_self(), &stats[0].cpu_clock);
	pthread_mutex_init(&stats[0].mu, NULL);
	for (int i = 1; i <= nworkers; i++) {
		pthread_t t;

		snprintf(stats[i].name, sizeof(stats[i].name), "worker-%d", i - 1);
		pthread_mutex_init(&stats[i].mu, NULL);
		pthread_mutex_init(&stats[i].work_mu, NULL);
		stats[i].seed = (uint64_t)i * 0x9e3779b97f4a7c15ull;
		if (pthread_create(&t, NULL, worker_main, &stats[i])) {
			perror("pthread_create");
			return 1;
		}
		pthread_detach(t);
	}
	while (__atomic_load_n(&running, __ATOMIC_SEQ_CST) < nworkers)
		usleep(1000);
	printf("ready %d threads\n", nworkers + 1);
	fflush(stdout);
	main_loop();
	return 0;
}
