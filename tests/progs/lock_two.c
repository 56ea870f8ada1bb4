/* lock_two: four threads contending on mutex A, whose critical sections
 * are long (2 ms), and rarely on mutex B, each timing its own waits --
 * the ground truth for the lock scenario the agent is held to: the lock
 * profile must give A at least 90% of the delay, with the waiting
 * functions on the stacks.
 *
 *   lock_two [--seconds N] [--truth FILE]
 *
 * Threads "contender" run worker -> wait_on_a in a loop: lock A, hold it
 * 2 ms asleep (asleep, so the run costs little CPU on a busy machine:
 * waits are what is measured), unlock, pause 0.2 ms. Twice in the run, B is contended
 * once, on purpose and briefly: thread 0 locks B (worker -> hold_b) and
 * keeps it until a waiter shows in the mutex word, then 1 ms more, while
 * thread 1, after its next round on A, runs worker -> wait_on_b and
 * blocks on it. So B is seen waited on, whatever the timing, and its
 * waits stay bounded: ~1 ms twice against seconds on A (contention left
 * to chance grows with every late wake-up on an overloaded machine, and
 * with it B's share).
 *
 * A wait is a contended acquisition, as the agent defines it: a try-lock
 * that finds the mutex taken, then the timed pthread_mutex_lock.
 *
 * Truth lines: "fn NAME WAIT_NS CONTENDED ACQUISITIONS" for wait_on_a and
 * wait_on_b. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progs.h"

#define THREADS 4
#define BURSTS 2

struct lock_truth {
	atomic_ullong wait_ns, contended, acquired;
};

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t b = PTHREAD_MUTEX_INITIALIZER;
static struct lock_truth truth_a, truth_b;
static uint64_t start_ns, end_ns;
static atomic_uint b_held;	/* the burst thread 0 holds B for; 0: none */

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void hold(long ns)
{
	struct timespec ts = { 0, ns };

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts))
		;
}

/* Locks m, timing the wait if it is contended. */
static void lock_timed(pthread_mutex_t *m, struct lock_truth *t)
{
	uint64_t t0, t1;

	if (pthread_mutex_trylock(m) != 0) {
		t0 = now();
		pthread_mutex_lock(m);
		t1 = now();
		atomic_fetch_add(&t->wait_ns, t1 - t0);
		atomic_fetch_add(&t->contended, 1);
	}
	atomic_fetch_add(&t->acquired, 1);
}

NOINLINE static void wait_on_a(void)
{
	KEEP_FRAME();
	lock_timed(&a, &truth_a);
	hold(2000000);
	pthread_mutex_unlock(&a);
}

NOINLINE static void wait_on_b(void)
{
	KEEP_FRAME();
	lock_timed(&b, &truth_b);
	pthread_mutex_unlock(&b);
}

/* Thread 0's side of a burst: B held until someone waits for it (glibc's
 * mutex word is 2 then; at most 1 s), then 1 ms. */
NOINLINE static void hold_b(unsigned burst)
{
	uint64_t give_up = now() + 1000000000ull;

	KEEP_FRAME();
	lock_timed(&b, &truth_b);
	atomic_store(&b_held, burst);
	while (__atomic_load_n(&b.__data.__lock, __ATOMIC_ACQUIRE) < 2 && now() < give_up)
		sched_yield();
	hold(1000000);
	atomic_store(&b_held, 0);
	pthread_mutex_unlock(&b);
}

NOINLINE static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, burst = 0, seen = 0;

	KEEP_FRAME();
	pthread_setname_np(pthread_self(), "contender");
	for (uint64_t t = now(); t < end_ns; t = now()) {
		wait_on_a();
		/* glibc's mutex is not fair: a thread that unlocks and locks
		 * again at once keeps A while the waiter it woke is still
		 * waking, and can starve the others for the whole run (thread
		 * 0 then never gets to hold B). A pause outside the lock hands
		 * A to the woken waiter. */
		hold(200000);
		/* Bursts at 1/3 and 2/3 of the run. */
		if (id == 0 && burst < BURSTS &&
		    t >= start_ns + (end_ns - start_ns) * (burst + 1) / (BURSTS + 1))
			hold_b(++burst);
		if (id == 1 && atomic_load(&b_held) > seen) {
			seen = atomic_load(&b_held);
			wait_on_b();
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	double seconds = 2;
	pthread_t t[THREADS];
	FILE *f;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			path = argv[++i];
	}
	printf("ready\n");
	fflush(stdout);
	start_ns = now();
	end_ns = start_ns + (uint64_t)(seconds * 1e9);
	for (unsigned i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i))
			abort();
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	if (path && (f = fopen(path, "w"))) {
		fprintf(f, "fn wait_on_a %llu %llu %llu\n", (unsigned long long)truth_a.wait_ns,
			(unsigned long long)truth_a.contended, (unsigned long long)truth_a.acquired);
		fprintf(f, "fn wait_on_b %llu %llu %llu\n", (unsigned long long)truth_b.wait_ns,
			(unsigned long long)truth_b.contended, (unsigned long long)truth_b.acquired);
		fclose(f);
	}
	return 0;
}
