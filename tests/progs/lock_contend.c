/* lock_contend: threads that fight over one pthread mutex and one rwlock
 * and measure, themselves, how long they waited — the ground truth for
 * the lock test.
 *
 *   lock_contend [--seconds N] [--threads N] [--truth FILE]
 *
 * N threads "contender" run worker -> contend_mutex: lock the mutex
 * (timing pthread_mutex_lock when a try-lock finds it taken, which is
 * what the agent counts as a wait), hold it 100-300 us spinning, unlock; and
 * every other round worker -> contend_rwlock: take the rwlock for
 * writing (timing pthread_rwlock_wrlock) and hold it 500 us, or for
 * reading (timing pthread_rwlock_rdlock) and hold it 50 us. A writer holds
 * the rwlock longer than anyone holds the mutex, so the thread that
 * leaves the mutex next finds it taken: the rwlock's waits add up to a
 * large total even on an idle machine, where the mutex queue would
 * otherwise let only one thread at a time reach it (a total of a few
 * waits is too few to hold a sampled profile to 15%). Truth lines:
 *   fn contend_mutex WAIT_NS ACQUISITIONS
 *   fn contend_rwlock WAIT_NS ACQUISITIONS */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progs.h"

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static atomic_ullong mutex_wait, mutex_n, rw_wait, rw_n;
static double seconds = 2;

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void spin(uint64_t ns)
{
	uint64_t end = now() + ns;

	while (now() < end)
		;
}

NOINLINE static void contend_mutex(unsigned *seed)
{
	uint64_t t0, t1;

	KEEP_FRAME();
	/* A wait is a contended acquisition, as the agent defines it: a free
	 * lock costs nothing, even if this thread is preempted around it. */
	t0 = t1 = 0;
	if (pthread_mutex_trylock(&mutex) != 0) {
		t0 = now();
		pthread_mutex_lock(&mutex);
		t1 = now();
	}
	spin(100000 + (uint64_t)(rand_r(seed) % 200000));
	pthread_mutex_unlock(&mutex);
	atomic_fetch_add(&mutex_wait, t1 - t0);
	atomic_fetch_add(&mutex_n, 1);
}

NOINLINE static void contend_rwlock(unsigned *seed)
{
	uint64_t t0, t1;
	bool write = rand_r(seed) % 2;

	KEEP_FRAME();
	t0 = t1 = 0;
	if ((write ? pthread_rwlock_trywrlock(&rwlock)
		   : pthread_rwlock_tryrdlock(&rwlock)) != 0) {
		t0 = now();
		if (write)
			pthread_rwlock_wrlock(&rwlock);
		else
			pthread_rwlock_rdlock(&rwlock);
		t1 = now();
	}
	spin(write ? 500000 : 50000);
	pthread_rwlock_unlock(&rwlock);
	atomic_fetch_add(&rw_wait, t1 - t0);
	atomic_fetch_add(&rw_n, 1);
}

NOINLINE static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
	uint64_t end = now() + (uint64_t)(seconds * 1e9);

	KEEP_FRAME();
	pthread_setname_np(pthread_self(), "contender");
	for (unsigned i = 0; now() < end; i++) {
		if (i % 2 == 1)
			contend_rwlock(&seed);
		else
			contend_mutex(&seed);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *truth = NULL;
	unsigned n = 4;
	pthread_t t[64];
	FILE *f;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			n = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth = argv[++i];
	}
	if (n < 1 || n > 64)
		n = 4;
	printf("ready\n");
	fflush(stdout);
	for (unsigned i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	if (truth && (f = fopen(truth, "w"))) {
		fprintf(f, "fn contend_mutex %llu %llu\n", (unsigned long long)mutex_wait,
			(unsigned long long)mutex_n);
		fprintf(f, "fn contend_rwlock %llu %llu\n", (unsigned long long)rw_wait,
			(unsigned long long)rw_n);
		fclose(f);
	}
	return 0;
}
