/* late_thread: threads that start while a recording is already running.
 *
 *   late_thread [--spawn-after S] [--seconds N] [--truth FILE]
 *
 * The main thread burns in early_work from the start. After S seconds it
 * starts a thread named "latecomer" (late_thread_main -> late_work), which
 * after another S/2 seconds starts its own child "grandchild"
 * (grandchild_main -> grandchild_work): a thread created by a thread that
 * was itself created during the recording. Everything stops after N
 * seconds (or at SIGTERM/SIGINT); the truth file names the thread ids:
 *
 *   tid latecomer 1235
 *   tid grandchild 1236
 *
 * "ready" is printed on stdout at start, "spawned" when the latecomer runs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "progs.h"

static double spawn_after = 1, end_time;
static _Atomic pid_t late_tid, grand_tid;
static volatile uint64_t sink;
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t mix(uint64_t x, uint64_t k)
{
	uint64_t n = work_chunk(200000);

	for (uint64_t i = 0; i < n; i++)
		x = (x ^ (x >> 7)) * 0x9e3779b97f4a7c15ull + k;
	return x;
}

NOINLINE static void early_work(double until)
{
	uint64_t x = 1;
	while (now() < until && !stop)
		x = mix(x, 1);
	sink += x;
}

NOINLINE static void late_work(double until)
{
	uint64_t x = 2;
	while (now() < until && !stop)
		x = mix(x, 2);
	sink += x;
}

NOINLINE static void grandchild_work(double until)
{
	uint64_t x = 3;
	while (now() < until && !stop)
		x = mix(x, 3);
	sink += x;
}

static void *grandchild_main(void *arg)
{
	(void)arg;
	atomic_store(&grand_tid, (pid_t)syscall(SYS_gettid));
	grandchild_work(end_time);
	return NULL;
}

static void *late_thread_main(void *arg)
{
	(void)arg;
	atomic_store(&late_tid, (pid_t)syscall(SYS_gettid));
	printf("spawned\n");
	fflush(stdout);
	late_work(now() + spawn_after / 2);
	pthread_t g;
	if (pthread_create(&g, NULL, grandchild_main, NULL) == 0) {
		pthread_setname_np(g, "grandchild");
		late_work(end_time);
		pthread_join(g, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = 5;
	const char *truth = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--spawn-after") && i + 1 < argc)
			spawn_after = atof(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth = argv[++i];
		else {
			fprintf(stderr, "usage: late_thread [--spawn-after S] [--seconds N] [--truth FILE]\n");
			return 2;
		}
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	double start = now();
	end_time = start + seconds;
	printf("ready\n");
	fflush(stdout);

	early_work(start + spawn_after);
	pthread_t t;
	if (pthread_create(&t, NULL, late_thread_main, NULL)) {
		perror("late_thread: pthread_create");
		return 1;
	}
	pthread_setname_np(t, "latecomer");
	early_work(end_time);
	pthread_join(t, NULL);

	if (truth) {
		FILE *f = fopen(truth, "w");
		if (!f) {
			perror(truth);
			return 1;
		}
		fprintf(f, "tid latecomer %d\n", (int)late_tid);
		fprintf(f, "tid grandchild %d\n", (int)grand_tid);
		fclose(f);
	}
	return 0;
}
