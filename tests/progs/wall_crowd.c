/* wall_crowd: 200 threads, most of them asleep or blocked, a few busy:
 * a service's thread pool for the wall engine, whose signals per tick are
 * capped (wall_threads) while every thread must still get its share.
 *
 *   wall_crowd [--seconds N] [--threads T] [--busy B] [--nappers P]
 *
 * Threads "crowd-000" .. "crowd-199" (by default: T 200, B 4, P 98), all
 * living the whole run:
 *   crowd-000..003  burn CPU in crowd_burn                        (running)
 *   crowd-004..101  sleep in crowd_nap, nanosleep of 50-500 ms at random,
 *                   so each now and then wakes and sleeps again   (sleeping)
 *   crowd-102..199  wait on one condition variable in crowd_wait  (sleeping)
 * The main thread waits for the end in sigtimedwait: after N seconds
 * (default 30), or at SIGTERM or SIGINT; it then joins every thread in
 * crowd_join and the process exits with status 0. --threads 201 --busy 1
 * --nappers 0 is one busy thread among 200 that never wake. Sleeps interrupted by
 * a sampling signal (EINTR) are resumed. "ready" is printed once all 200
 * threads run. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

#define MAX_THREADS 4096

static int nthreads = 200, nbusy = 4, nnap = 98;

static _Atomic int stop, started;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile uint64_t sink;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

NOINLINE static void crowd_burn(void)
{
	uint64_t x = 88172645463325252ull, n = work_chunk(100000);

	while (!atomic_load(&stop)) {
		for (uint64_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		sink += x;
	}
	KEEP_FRAME();
}

NOINLINE static void crowd_nap(uint64_t seed)
{
	uint64_t rng = seed * 0x9e3779b97f4a7c15ull | 1;

	while (!atomic_load(&stop)) {
		long ms;
		struct timespec ts;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		ms = 50 + (long)(rng % 451);
		ts = (struct timespec){ ms / 1000, ms % 1000 * 1000000 };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	KEEP_FRAME();
}

NOINLINE static void crowd_wait(void)
{
	pthread_mutex_lock(&mu);
	while (!atomic_load(&stop))
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	KEEP_FRAME();
}

static void *thread_main(void *arg)
{
	int i = (int)(intptr_t)arg;
	char name[16];

	snprintf(name, sizeof(name), "crowd-%03d", i);
	pthread_setname_np(pthread_self(), name);
	atomic_fetch_add(&started, 1);
	if (i < nbusy)
		crowd_burn();
	else if (i < nbusy + nnap)
		crowd_nap((uint64_t)i);
	else
		crowd_wait();
	return NULL;
}

NOINLINE static void crowd_join(pthread_t *t)
{
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	KEEP_FRAME();
}

int main(int argc, char **argv)
{
	static pthread_t t[MAX_THREADS];
	double seconds = 30;
	uint64_t end;
	sigset_t sigs;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			nthreads = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--busy") && i + 1 < argc) {
			nbusy = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--nappers") && i + 1 < argc) {
			nnap = atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: wall_crowd [--seconds N] [--threads T] [--busy B] "
				"[--nappers P]\n");
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || nbusy < 0 || nnap < 0) {
		fprintf(stderr, "wall_crowd: --threads 1..%d, --busy and --nappers >= 0\n",
			MAX_THREADS);
		return 2;
	}
	/* Blocked in every thread (inherited): only the timer below takes
	 * them, with sigtimedwait. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	for (int i = 0; i < nthreads; i++) {
		int err = pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i);

		if (err) {
			fprintf(stderr, "wall_crowd: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	while (atomic_load(&started) < nthreads)
		usleep(1000);
	printf("ready\n");
	fflush(stdout);

	end = mono_ns() + (uint64_t)(seconds * 1e9);
	for (uint64_t now; (now = mono_ns()) < end;) {
		struct timespec ts = { (time_t)((end - now) / 1000000000u),
				       (long)((end - now) % 1000000000u) };

		if (sigtimedwait(&sigs, NULL, &ts) > 0)
			break; /* SIGTERM or SIGINT */
	}
	atomic_store(&stop, 1);
	pthread_mutex_lock(&mu);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	crowd_join(t);
	return 0;
}
