/* threads_zoo: named threads each parked in a known place, for thread
 * dumps and core files (nprof stacks, nprof dump).
 *
 *   threads_zoo [--pool N] [--churn] [--mem MIB] [--deep N]
 *
 *   main          main -> main_wait -> pause()
 *   zoo-reader    reader_main -> block_in_read -> read() on an empty pipe
 *   zoo-sleeper   sleeper_main -> sleep_long -> nanosleep()
 *   zoo-waiter    waiter_main -> wait_on_cond -> pthread_cond_wait() (futex)
 *   zoo-burner    burner_main -> burn_cpu (on CPU, never blocks)
 *   zoo-deep      deep_main -> recurse (N levels, default 100) -> sleep_long
 *   zoo-pool      N threads (default 3), identical stacks:
 *                 pool_main -> pool_wait -> pthread_cond_wait()
 *   zoo-churn     (--churn) creates short-lived threads, each exits at once
 *
 * --mem MIB fills MIB of heap with non-zero bytes (a core file then has
 * that much to copy). A marker string, "NPROF-ZOO-MARKER-<pid>", lives on
 * the heap for dump tests to find.
 *
 * "ready" is printed on stdout once every thread is in place; the burner
 * keeps a counter of its loops in burn_count, which must keep growing (the
 * process keeps running during a dump). SIGUSR1 prints "burn N". */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

static int pipe_fds[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pool_cond = PTHREAD_COND_INITIALIZER;
static volatile unsigned long burn_count;
static volatile int parked;
static int deep_levels = 100;

static void mark_parked(void)
{
	__atomic_add_fetch(&parked, 1, __ATOMIC_SEQ_CST);
}

NOINLINE static void block_in_read(void)
{
	char c;

	KEEP_FRAME();
	mark_parked();
	while (read(pipe_fds[0], &c, 1) != 0)
		;
}

static void *reader_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "zoo-reader");
	block_in_read();
	return NULL;
}

NOINLINE static void sleep_long(void)
{
	struct timespec ts = { 3600, 0 };

	KEEP_FRAME();
	for (;;)
		nanosleep(&ts, NULL);
}

static void *sleeper_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "zoo-sleeper");
	mark_parked();
	sleep_long();
	return NULL;
}

NOINLINE static void wait_on_cond(void)
{
	KEEP_FRAME();
	pthread_mutex_lock(&mu);
	mark_parked();
	for (;;)
		pthread_cond_wait(&never, &mu);
}

static void *waiter_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "zoo-waiter");
	wait_on_cond();
	return NULL;
}

NOINLINE static void burn_cpu(void)
{
	const int n = (int)work_chunk(100000);

	KEEP_FRAME();
	mark_parked();
	for (;;) {
		for (volatile int i = 0; i < n; i++)
			;
		burn_count++;
	}
}

static void *burner_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "zoo-burner");
	burn_cpu();
	return NULL;
}

NOINLINE static int recurse(int n)
{
	KEEP_FRAME();
	if (n <= 1) {
		mark_parked();
		sleep_long();
	}
	{
		int r = recurse(n - 1);

		/* Opaque to the optimizer: no tail call, no loop. */
		__asm__ volatile("" : "+r"(r));
		return r + 1;
	}
}

static void *deep_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "zoo-deep");
	recurse(deep_levels);
	return NULL;
}

NOINLINE static void pool_wait(void)
{
	static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;

	KEEP_FRAME();
	pthread_mutex_lock(&pool_mu);
	mark_parked();
	for (;;)
		pthread_cond_wait(&pool_cond, &pool_mu);
}

static void *pool_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "zoo-pool");
	pool_wait();
	return NULL;
}

static void *churn_child(void *arg)
{
	return arg;
}

static void *churn_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "zoo-churn");
	mark_parked();
	for (;;) {
		pthread_t t;

		if (pthread_create(&t, NULL, churn_child, NULL) == 0)
			pthread_join(t, NULL);
	}
	return NULL;
}

NOINLINE static void main_wait(void)
{
	KEEP_FRAME();
	for (;;)
		pause();
}

static void on_usr1(int sig)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "burn %lu\n", burn_count);

	(void)sig;
	if (write(1, buf, (size_t)n) < 0)
		_exit(1);
}

static void start(void *(*fn)(void *))
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, NULL)) {
		perror("pthread_create");
		exit(1);
	}
	pthread_detach(t);
}

int main(int argc, char **argv)
{
	int pool = 3, churn = 0, want;
	size_t mem_mib = 0;
	char *marker;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pool") && i + 1 < argc)
			pool = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--churn"))
			churn = 1;
		else if (!strcmp(argv[i], "--mem") && i + 1 < argc)
			mem_mib = (size_t)atol(argv[++i]);
		else if (!strcmp(argv[i], "--deep") && i + 1 < argc)
			deep_levels = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: threads_zoo [--pool N] [--churn] [--mem MIB] [--deep N]\n");
			return 2;
		}
	}
	if (pipe(pipe_fds)) {
		perror("pipe");
		return 1;
	}
	signal(SIGUSR1, on_usr1);
	marker = malloc(64);
	snprintf(marker, 64, "NPROF-ZOO-MARKER-%d", (int)getpid());
	if (mem_mib) {
		unsigned char *m = malloc(mem_mib << 20);

		if (!m) {
			perror("malloc");
			return 1;
		}
		for (size_t i = 0; i < mem_mib << 20; i++)
			m[i] = (unsigned char)(i * 131 + 7) | 1;
	}
	start(reader_main);
	start(sleeper_main);
	start(waiter_main);
	start(burner_main);
	start(deep_main);
	for (int i = 0; i < pool; i++)
		start(pool_main);
	want = 5 + pool;
	if (churn) {
		start(churn_main);
		want++;
	}
	while (__atomic_load_n(&parked, __ATOMIC_SEQ_CST) < want)
		usleep(1000);
	usleep(50000); /* let the last ones reach their system call */
	printf("ready %s\n", marker);
	fflush(stdout);
	main_wait();
	return 0;
}
