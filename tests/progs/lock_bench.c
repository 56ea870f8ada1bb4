/* lock_bench: a fixed amount of contended locking, for bench/alloc-overhead's
 * lock rows (what the agent's lock engine costs a program that fights over
 * locks; tests/progs/lock_contend runs for a fixed time instead, for the
 * lock test's ground truth).
 *
 *   lock_bench [--threads T] [--scale N]
 *
 * T threads (default 4) each run 10 000 rounds per --scale of: a critical
 * section of fixed work on shared state under one pthread mutex — or,
 * every eighth round, under one rwlock, for writing or (every other time)
 * for reading — then as much work outside it. With more threads than
 * CPUs many acquisitions find the lock taken and wait in futex.
 * Prints "wall W cpu C": its own measure of the work, as
 * tests/progs/alloc_bench. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progs.h"

#define MAX_THREADS 64
#define ROUNDS_PER_SCALE 10000ul
/* Multiply-xor rounds inside and outside the lock, some 10-25 us each
 * depending on the core: long enough that a contended acquisition (futex
 * wait and wake, a few us) is a small part of the CPU time, so that how
 * many acquisitions happen to be contended from run to run moves it
 * little; short enough that there are tens of thousands of them. */
#define CS_WORK 10000
#define OUTSIDE_WORK 10000

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static uint64_t shared_state = 1; /* under mutex or rwlock (written) */
static unsigned long rounds = ROUNDS_PER_SCALE;
static volatile uint64_t sink;

static double clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t mix(uint64_t x, int n)
{
	for (int i = 0; i < n; i++)
		x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull + (uint64_t)i;
	return x;
}

NOINLINE static void locked_mutex(void)
{
	KEEP_FRAME();
	pthread_mutex_lock(&mutex);
	shared_state = mix(shared_state, CS_WORK);
	pthread_mutex_unlock(&mutex);
}

NOINLINE static uint64_t locked_rwlock(int write)
{
	uint64_t v;

	KEEP_FRAME();
	if (write) {
		pthread_rwlock_wrlock(&rwlock);
		shared_state = mix(shared_state, CS_WORK);
		v = shared_state;
	} else {
		pthread_rwlock_rdlock(&rwlock);
		v = mix(shared_state, CS_WORK);
	}
	pthread_rwlock_unlock(&rwlock);
	return v;
}

NOINLINE static void *contend_main(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg + 1;

	KEEP_FRAME();
	for (unsigned long i = 0; i < rounds; i++) {
		if (i % 8 == 7)
			x += locked_rwlock(i % 16 == 7);
		else
			locked_mutex();
		x = mix(x, OUTSIDE_WORK);
	}
	sink += x;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[MAX_THREADS];
	unsigned long scale = 1;
	int threads = 4;
	double w0, c0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--scale") && i + 1 < argc)
			scale = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: lock_bench [--threads T] [--scale N]\n");
			return 2;
		}
	}
	if (threads < 1 || threads > MAX_THREADS || scale < 1) {
		fprintf(stderr, "lock_bench: --threads 1..%d, --scale 1 or more\n", MAX_THREADS);
		return 2;
	}
	rounds = ROUNDS_PER_SCALE * scale;
	w0 = clock_s(CLOCK_MONOTONIC);
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, contend_main, (void *)(uintptr_t)i) != 0) {
			fprintf(stderr, "lock_bench: pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("wall %.6f cpu %.6f\n", clock_s(CLOCK_MONOTONIC) - w0,
	       clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
	return 0;
}
