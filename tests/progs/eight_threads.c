/* eight_threads: named threads blocked in functions of their own, for the
 * thread-dump and core-file tests (nprof stacks, nprof dump:
 * tests/integration/stacks_eight.sh) and the 200-thread benchmark.
 *
 *   eight_threads [--threads N] [--watchdog]
 *
 *   main          main -> main_wait -> sigsuspend()
 *   poller-I      poller_main -> wait_in_poll -> poll() on an empty pipe
 *                 (N/2 of them, I = 0..N/2-1)
 *   waiter-I      waiter_main -> wait_for_work -> pthread_cond_wait()
 *                 (futex; the other N/2)
 *   watchdog      (--watchdog) wakes every millisecond (clock_nanosleep,
 *                 relative) and keeps the longest gap between two wakeups:
 *                 how long the process, or this thread, was held up
 *
 * N is 8 by default: four pollers, four waiters. Every blocked thread
 * retries when a signal interrupts its wait (an agent's sampling signal
 * makes poll() return EINTR), so it stays where it is.
 *
 * "ready" is printed on stdout once every thread is in place. Signals
 * (only the main thread takes them; the others block them):
 *   SIGUSR1  prints "alive N" (N counts the SIGUSR1s) and, with
 *            --watchdog, "gap NS" with the longest gap since the last
 *            SIGUSR1 (or the start), which starts over
 *   SIGUSR2  wakes everyone: a byte on the pipe (the pollers return) and
 *            a broadcast (the waiters return); each prints "woke NAME",
 *            then the process exits when all have. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

static int pipe_fds[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cond = PTHREAD_COND_INITIALIZER;
static int work_ready;
static volatile int parked, woke;
static volatile sig_atomic_t got_usr1, got_usr2;
static int watchdog_on;
static uint64_t gap_max;  /* atomic: the watchdog's longest gap, ns */
static uint64_t gap_reset; /* atomic: 1 asks the watchdog to start over */

static void mark_parked(void)
{
	__atomic_add_fetch(&parked, 1, __ATOMIC_SEQ_CST);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0 && write(1, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1) < 0)
		_exit(1);
}

static void thread_done(void)
{
	char name[16] = "?";

	pthread_getname_np(pthread_self(), name, sizeof(name));
	say("woke %s\n", name);
	__atomic_add_fetch(&woke, 1, __ATOMIC_SEQ_CST);
}

/* Blocks in poll() until the pipe has a byte (SIGUSR2). */
NOINLINE static void wait_in_poll(void)
{
	struct pollfd pfd = { .fd = pipe_fds[0], .events = POLLIN };

	KEEP_FRAME();
	mark_parked();
	for (;;) {
		int n = poll(&pfd, 1, -1);

		if (n > 0)
			break;
		if (n < 0 && errno != EINTR)
			_exit(3);
	}
	__asm__ volatile("" ::: "memory"); /* no tail call into the caller */
}

static void *poller_main(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "poller-%d", (int)(intptr_t)arg);
	pthread_setname_np(pthread_self(), name);
	wait_in_poll();
	thread_done();
	return NULL;
}

/* Waits on the condition variable until there is work (SIGUSR2). */
NOINLINE static void wait_for_work(void)
{
	KEEP_FRAME();
	pthread_mutex_lock(&mu);
	mark_parked();
	while (!work_ready)
		pthread_cond_wait(&work_cond, &mu);
	pthread_mutex_unlock(&mu);
	__asm__ volatile("" ::: "memory");
}

static void *waiter_main(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "waiter-%d", (int)(intptr_t)arg);
	pthread_setname_np(pthread_self(), name);
	wait_for_work();
	thread_done();
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wakes every millisecond; the longest gap between two wakeups is what
 * any stop of this thread (or of the whole process) cost it. */
NOINLINE static void watch_gaps(void)
{
	const struct timespec ms = { 0, 1000000 };
	uint64_t last = now_ns();

	KEEP_FRAME();
	mark_parked();
	for (;;) {
		uint64_t t, gap, cur;

		clock_nanosleep(CLOCK_MONOTONIC, 0, &ms, NULL);
		t = now_ns();
		gap = t - last;
		last = t;
		if (__atomic_exchange_n(&gap_reset, 0, __ATOMIC_SEQ_CST)) {
			__atomic_store_n(&gap_max, 0, __ATOMIC_SEQ_CST);
			continue; /* this gap straddles the reset */
		}
		cur = __atomic_load_n(&gap_max, __ATOMIC_RELAXED);
		while (gap > cur &&
		       !__atomic_compare_exchange_n(&gap_max, &cur, gap, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			;
	}
}

static void *watchdog_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "watchdog");
	watch_gaps();
	return NULL;
}

/* With SIGUSR1 and SIGUSR2 blocked except inside sigsuspend: none is
 * lost between a check and the wait. */
NOINLINE static void main_wait(int nthreads, const sigset_t *waitmask)
{
	unsigned long alive = 0;

	KEEP_FRAME();
	for (;;) {
		sigsuspend(waitmask);
		if (got_usr1) {
			got_usr1 = 0;
			say("alive %lu\n", ++alive);
			if (watchdog_on) {
				uint64_t g = __atomic_load_n(&gap_max, __ATOMIC_SEQ_CST);

				__atomic_store_n(&gap_reset, 1, __ATOMIC_SEQ_CST);
				say("gap %llu\n", (unsigned long long)g);
			}
		}
		if (got_usr2) {
			got_usr2 = 0;
			if (write(pipe_fds[1], "x", 1) != 1)
				_exit(4);
			pthread_mutex_lock(&mu);
			work_ready = 1;
			pthread_cond_broadcast(&work_cond);
			pthread_mutex_unlock(&mu);
			while (__atomic_load_n(&woke, __ATOMIC_SEQ_CST) < nthreads)
				usleep(1000);
			say("all woke\n");
			exit(0);
		}
	}
}

static void on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

static void on_usr2(int sig)
{
	(void)sig;
	got_usr2 = 1;
}

static void start(void *(*fn)(void *), intptr_t arg)
{
	pthread_attr_t a;
	pthread_t t;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 256 << 10); /* 200 threads stay small */
	if (pthread_create(&t, &a, fn, (void *)arg)) {
		perror("pthread_create");
		exit(1);
	}
	pthread_attr_destroy(&a);
	pthread_detach(t);
}

int main(int argc, char **argv)
{
	int nthreads = 8, want;
	struct sigaction sa;
	sigset_t block, old;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--watchdog"))
			watchdog_on = 1;
		else {
			fprintf(stderr, "usage: eight_threads [--threads N] [--watchdog]\n");
			return 2;
		}
	}
	if (nthreads < 2 || nthreads > 10000) {
		fprintf(stderr, "eight_threads: --threads takes 2 to 10000\n");
		return 2;
	}
	if (pipe(pipe_fds)) {
		perror("pipe");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	/* Only main takes SIGUSR1 and SIGUSR2: the threads inherit them
	 * blocked. */
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	for (int i = 0; i < nthreads / 2; i++)
		start(poller_main, i);
	for (int i = 0; i < nthreads - nthreads / 2; i++)
		start(waiter_main, i);
	want = nthreads;
	if (watchdog_on) {
		start(watchdog_main, 0);
		want++;
	}
	while (__atomic_load_n(&parked, __ATOMIC_SEQ_CST) < want)
		usleep(1000);
	usleep(50000); /* let the last ones reach their system call */
	__atomic_store_n(&gap_reset, 1, __ATOMIC_SEQ_CST);
	say("ready %d threads\n", want + 1);
	main_wait(nthreads, &old);
	return 0;
}
