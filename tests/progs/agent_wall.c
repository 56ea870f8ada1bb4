/* agent_wall: four threads in four states for the wall-clock engine.
 *
 *   agent_wall [--seconds N] [--truth FILE]
 *
 *   "burner"   burns CPU in burn_cpu                      (running)
 *   "sleeper"  sleeps in nanosleep from nap_forever       (sleeping)
 *   "waiter"   waits on a condition variable in wait_cond (sleeping, futex)
 *   "reader"   blocks in read(2) on a pipe in read_pipe   (sleeping)
 * the main thread waits for the end in pthread_join (join_all), and a
 * timer thread ends the run after N seconds or at SIGTERM.
 *
 * Every thread lives the whole run, so each of the six should get the
 * same share of wall time (1/6), whatever it does. Sleeps and reads are retried on EINTR
 * (a wall sample interrupts them). FILE gets "tid NAME TID" lines.
 * "ready" is printed once all threads run. */
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

static _Atomic int stop;
static _Atomic int started;
static pid_t tids[4];
static const char *names[4] = { "burner", "sleeper", "waiter", "reader" };
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int pipefd[2];
static volatile uint64_t sink;

NOINLINE static void burn_cpu(void)
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

NOINLINE static void nap_forever(void)
{
	while (!atomic_load(&stop)) {
		struct timespec ts = { 0, 200000000 };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	KEEP_FRAME();
}

NOINLINE static void wait_cond(void)
{
	pthread_mutex_lock(&mu);
	while (!atomic_load(&stop))
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	KEEP_FRAME();
}

NOINLINE static void read_pipe(void)
{
	char c;

	while (read(pipefd[0], &c, 1) < 0 && errno == EINTR)
		;
	KEEP_FRAME();
}

static void *thread_main(void *arg)
{
	int i = (int)(intptr_t)arg;

	tids[i] = gettid();
	pthread_setname_np(pthread_self(), names[i]);
	atomic_fetch_add(&started, 1);
	switch (i) {
	case 0: burn_cpu(); break;
	case 1: nap_forever(); break;
	case 2: wait_cond(); break;
	case 3: read_pipe(); break;
	}
	return NULL;
}

NOINLINE static void join_all(pthread_t *t)
{
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	KEEP_FRAME();
}

static void on_term(int sig)
{
	(void)sig;
	atomic_store(&stop, 1);
}

static void *timer_main(void *arg)
{
	double secs = *(double *)arg;

	/* Ends the run after secs, or sooner at SIGTERM (which sets stop). */
	for (double t = 0; t < secs && !atomic_load(&stop); t += 0.05) {
		struct timespec ts = { 0, 50000000 };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	atomic_store(&stop, 1);
	pthread_mutex_lock(&mu);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	if (write(pipefd[1], "x", 1) < 0)
		return NULL;
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = 5;
	const char *truth = NULL;
	pthread_t t[4], timer;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			secs = atof(argv[++i]);
		else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth = argv[++i];
	}
	signal(SIGTERM, on_term);
	if (pipe(pipefd) < 0)
		return 1;
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i);
	while (atomic_load(&started) < 4)
		usleep(1000);
	if (truth) {
		FILE *f = fopen(truth, "w");

		if (f) {
			fprintf(f, "pid %d\ntid main %d\n", (int)getpid(), (int)getpid());
			for (int i = 0; i < 4; i++)
				fprintf(f, "tid %s %d\n", names[i], (int)tids[i]);
			fclose(f);
		}
	}
	printf("ready\n");
	fflush(stdout);
	pthread_create(&timer, NULL, timer_main, &secs);
	join_all(t);
	pthread_join(timer, NULL);
	return 0;
}
