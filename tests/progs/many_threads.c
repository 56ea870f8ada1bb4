/* many_threads: a crowd of lightly busy threads, for bench/agent-overhead's
 * resident-memory row (the memory the agent adds to a 100-thread process).
 *
 *   many_threads [--threads N] [--busy-us U] [--period-ms P]
 *
 * N threads (default 100) each burn U microseconds of their own CPU time
 * (default 100) in crowd_work every P milliseconds (default 100), so the
 * process uses about N*U/P of one CPU (0.1 by default): every thread is
 * armed and now and then sampled, as in a service, without loading the
 * host. "ready" is printed once every thread runs; the process ends
 * normally (exit status 0, so an agent writes its profile) when its stdin
 * is closed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

#define MAX_THREADS 4096

static atomic_int stop, running;
static long busy_ns = 100000, period_ns = 100000000;
static volatile uint64_t sink;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

NOINLINE static void crowd_work(uint64_t *x)
{
	uint64_t end = thread_cpu_ns() + (uint64_t)busy_ns, n = work_chunk(1000);

	KEEP_FRAME();
	while (thread_cpu_ns() < end)
		for (uint64_t i = 0; i < n; i++)
			*x = (*x ^ (*x >> 31)) * 0xbf58476d1ce4e5b9ull + i;
}

NOINLINE static void *crowd_main(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg;
	/* Spread the wakeups over the period, not all at once. */
	struct timespec first = { 0, (long)((uint64_t)(uintptr_t)arg * 7919u % (uint64_t)period_ns) };
	struct timespec period = { period_ns / 1000000000, period_ns % 1000000000 };

	KEEP_FRAME();
	atomic_fetch_add(&running, 1);
	nanosleep(&first, NULL);
	while (!atomic_load(&stop)) {
		crowd_work(&x);
		nanosleep(&period, NULL); /* EINTR (a sampling signal) is fine */
	}
	sink += x;
	return NULL;
}

int main(int argc, char **argv)
{
	static pthread_t t[MAX_THREADS];
	int n = 100;
	char buf[256];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--busy-us") && i + 1 < argc)
			busy_ns = atol(argv[++i]) * 1000;
		else if (!strcmp(argv[i], "--period-ms") && i + 1 < argc)
			period_ns = atol(argv[++i]) * 1000000;
		else {
			fprintf(stderr, "usage: many_threads [--threads N] [--busy-us U] "
					"[--period-ms P]\n");
			return 2;
		}
	}
	if (n < 1 || n > MAX_THREADS || busy_ns < 0 || period_ns < 1000000) {
		fprintf(stderr, "many_threads: --threads 1..%d, --period-ms 1 or more\n",
			MAX_THREADS);
		return 2;
	}
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, crowd_main, (void *)(uintptr_t)(i + 1)) != 0) {
			fprintf(stderr, "many_threads: pthread_create failed at thread %d\n", i);
			return 1;
		}
	while (atomic_load(&running) < n)
		usleep(1000);
	printf("ready\n");
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
