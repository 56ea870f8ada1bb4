/* wall_split: a thread that spends its wall-clock time 50% computing, 30%
 * sleeping and 20% blocked in read(2), and measures how long it really
 * spent in each: the ground truth for the wall engine.
 *
 *   wall_split [--seconds N] [--truth FILE]
 *
 * The worker, "wall-worker" (worker_main -> worker_loop -> wall_compute,
 * wall_sleep, wall_read), runs cycles of random length (10-40 ms of wall
 * time) cut 5:3:2 into three phases, in random order:
 *
 *   wall_compute  spins until its part of the cycle has passed on
 *                 CLOCK_MONOTONIC (running, or runnable on a busy machine)
 *   wall_sleep    sleeps in clock_nanosleep until its part has passed
 *   wall_read     blocks in read(2) on a pipe that a helper thread,
 *                 "wall-feeder", writes a byte to when its part has passed
 *
 * Random lengths keep the phases from aliasing with a periodic sampler;
 * random order puts every kind of transition in the run, two blocking
 * calls back to back among them. A sampling signal that interrupts a
 * sleep or a read (EINTR) resumes it to the same deadline. Each function
 * measures CLOCK_MONOTONIC from its entry to its return, and the totals
 * are the truth, in ns of wall time, in split's format:
 *
 *   pid 1234
 *   tid main 1234
 *   tid wall-worker 1235
 *   tid wall-feeder 1236
 *   fn wall_compute 2012345678
 *   fn wall_sleep ...
 *   fn wall_read ...
 *
 * written to FILE at the end (after N seconds, or at SIGTERM or SIGINT),
 * and to FILE.1, FILE.2, ... at each SIGUSR1 (the phase under way counted
 * up to that moment): two snapshots bracket a recording's window. Files
 * are written whole (through a rename). The signals are taken by the main
 * thread with sigtimedwait: no handler runs in the worker.
 *
 * "ready" is printed on stdout once the worker runs. */
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

enum { COMPUTE, SLEEP, READ, NFN };
static const char *fn_names[NFN] = { "wall_compute", "wall_sleep", "wall_read" };
static const unsigned fn_tenths[NFN] = { 5, 3, 2 };

/* The truth, and the phase under way so that a snapshot can count it:
 * written by the worker, read by the main thread, under mu. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t fn_ns[NFN];
static int cur_fn = -1;
static uint64_t cur_start;

static _Atomic int stop;
static _Atomic pid_t worker_tid, feeder_tid;
static int req_pipe[2];	 /* worker -> feeder: the deadline of a read phase */
static int data_pipe[2]; /* feeder -> worker: one byte at that deadline */
static volatile uint64_t sink;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A phase must not end at the moment a stalled machine resumes. When a
 * virtual machine's host takes its vCPUs away (100 ms at once and more,
 * seen on a busy host), nothing runs, the wall sampler neither; it catches
 * up at the resume with the state it finds then, and a phase whose
 * deadline passed meanwhile would be gone by then: the gap, which the
 * truth counts in that phase, would go to the next one. So a phase that
 * sees such a stall of STALL_NS or more runs as long again after it (the
 * truth counting all of it). A stall is told from the thread merely
 * waiting for a CPU by the thread's own accounting: a guest kernel that
 * does not subtract steal time charges a stall to the thread that was
 * running as CPU time, and a sleeper woken late by one did not wait in
 * the run queue. */
#define STALL_NS 5000000ull

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The calling thread's time spent waiting in the run queue (ns). */
static uint64_t runqueue_ns(void)
{
	unsigned long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (f) {
		if (fscanf(f, "%llu %llu", &run, &wait) != 2)
			wait = 0;
		fclose(f);
	}
	return wait;
}

static struct timespec to_timespec(uint64_t ns)
{
	return (struct timespec){ (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
}

static uint64_t phase_begin(int fn)
{
	uint64_t t0 = mono_ns();

	pthread_mutex_lock(&mu);
	cur_fn = fn;
	cur_start = t0;
	pthread_mutex_unlock(&mu);
	return t0;
}

static void phase_end(int fn, uint64_t t0)
{
	uint64_t t1 = mono_ns();

	pthread_mutex_lock(&mu);
	fn_ns[fn] += t1 - t0;
	cur_fn = -1;
	pthread_mutex_unlock(&mu);
}

/* Sleeps until the absolute CLOCK_MONOTONIC time deadline, through
 * EINTR; after a stall (see STALL_NS), as long again. */
static void sleep_until(uint64_t deadline)
{
	for (;;) {
		struct timespec ts = to_timespec(deadline);
		uint64_t queued = runqueue_ns(), late;

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		late = mono_ns() - deadline;
		if (late < STALL_NS || late < runqueue_ns() - queued + STALL_NS)
			return; /* on time, or late for a CPU */
		deadline += 2 * late;
	}
}

NOINLINE static void wall_compute(uint64_t ns)
{
	uint64_t t0 = phase_begin(COMPUTE), x = t0 | 1, end = t0 + ns;
	uint64_t last = t0, last_cpu = thread_cpu_ns(), now, cpu, n = work_chunk(20000);

	for (;;) {
		for (uint64_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		now = mono_ns();
		cpu = thread_cpu_ns();
		/* Tens of microseconds a turn; a gap charged as CPU is a stall. */
		if (now - last >= STALL_NS && 2 * (cpu - last_cpu) >= now - last)
			end = (end > now ? end : now) + (now - last);
		else if (now >= end)
			break;
		last = now;
		last_cpu = cpu;
	}
	sink += x;
	phase_end(COMPUTE, t0);
	KEEP_FRAME();
}

NOINLINE static void wall_sleep(uint64_t ns)
{
	uint64_t t0 = phase_begin(SLEEP);

	sleep_until(t0 + ns);
	phase_end(SLEEP, t0);
	KEEP_FRAME();
}

NOINLINE static void wall_read(uint64_t ns)
{
	uint64_t t0 = phase_begin(READ), deadline = t0 + ns;
	char c;

	if (write(req_pipe[1], &deadline, sizeof(deadline)) != sizeof(deadline)) {
		perror("wall_split: write");
		exit(1);
	}
	while (read(data_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	phase_end(READ, t0);
	KEEP_FRAME();
}

static uint64_t next_random(uint64_t *rng)
{
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return *rng;
}

NOINLINE static void worker_loop(void)
{
	uint64_t rng = 0x9e3779b97f4a7c15ull;

	while (!atomic_load(&stop)) {
		uint64_t cycle = 10000000 + next_random(&rng) % 30000000;
		int order[NFN] = { COMPUTE, SLEEP, READ };

		for (int i = NFN - 1; i > 0; i--) {
			int j = (int)(next_random(&rng) % (uint64_t)(i + 1)), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		for (int i = 0; i < NFN; i++) {
			uint64_t ns = cycle / 10 * fn_tenths[order[i]];

			if (order[i] == COMPUTE)
				wall_compute(ns);
			else if (order[i] == SLEEP)
				wall_sleep(ns);
			else
				wall_read(ns);
		}
	}
	KEEP_FRAME();
}

static void *worker_main(void *arg)
{
	(void)arg;
	atomic_store(&worker_tid, gettid());
	worker_loop();
	close(req_pipe[1]); /* the feeder's read returns 0: it ends */
	return NULL;
}

/* Answers each read phase: waits for its deadline, then writes a byte. */
static void *feeder_main(void *arg)
{
	uint64_t deadline;
	ssize_t n;

	(void)arg;
	atomic_store(&feeder_tid, gettid());
	for (;;) {
		while ((n = read(req_pipe[0], &deadline, sizeof(deadline))) < 0 && errno == EINTR)
			;
		if (n != sizeof(deadline))
			return NULL;
		sleep_until(deadline);
		if (write(data_pipe[1], "x", 1) != 1) {
			perror("wall_split: write");
			exit(1);
		}
	}
}

/* FILE, whole or not at all. */
static int write_truth(const char *path, const uint64_t ns[NFN])
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f) {
		perror(tmp);
		return -1;
	}
	fprintf(f, "pid %d\n", (int)getpid());
	fprintf(f, "tid main %d\n", (int)getpid());
	fprintf(f, "tid wall-worker %d\n", (int)atomic_load(&worker_tid));
	fprintf(f, "tid wall-feeder %d\n", (int)atomic_load(&feeder_tid));
	for (int i = 0; i < NFN; i++)
		fprintf(f, "fn %s %llu\n", fn_names[i], (unsigned long long)ns[i]);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

/* The totals so far, the phase under way counted up to now. */
static void snapshot(uint64_t ret_ns[NFN])
{
	pthread_mutex_lock(&mu);
	memcpy(ret_ns, fn_ns, sizeof(fn_ns));
	if (cur_fn >= 0)
		ret_ns[cur_fn] += mono_ns() - cur_start;
	pthread_mutex_unlock(&mu);
}

int main(int argc, char **argv)
{
	double seconds = 5;
	const char *truth = NULL;
	pthread_t worker, feeder;
	unsigned marks = 0;
	uint64_t end, ns[NFN];
	sigset_t sigs;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--truth") && i + 1 < argc) {
			truth = argv[++i];
		} else {
			fprintf(stderr, "usage: wall_split [--seconds N] [--truth FILE]\n");
			return 2;
		}
	}
	/* Blocked before any thread starts, so that every thread inherits
	 * the mask and only the main thread's sigtimedwait takes them. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	if (pipe(req_pipe) < 0 || pipe(data_pipe) < 0) {
		perror("wall_split: pipe");
		return 1;
	}
	if (pthread_create(&feeder, NULL, feeder_main, NULL) ||
	    pthread_create(&worker, NULL, worker_main, NULL)) {
		perror("wall_split: pthread_create");
		return 1;
	}
	pthread_setname_np(feeder, "wall-feeder");
	pthread_setname_np(worker, "wall-worker");
	while (!atomic_load(&worker_tid) || !atomic_load(&feeder_tid))
		usleep(1000);
	printf("ready\n");
	fflush(stdout);

	end = mono_ns() + (uint64_t)(seconds * 1e9);
	while (mono_ns() < end) {
		struct timespec ts = { 0, 10000000 };
		int sig = sigtimedwait(&sigs, NULL, &ts);
		char path[4096];

		if (sig == SIGTERM || sig == SIGINT)
			break;
		if (sig != SIGUSR1 || !truth)
			continue;
		snapshot(ns);
		snprintf(path, sizeof(path), "%s.%u", truth, ++marks);
		write_truth(path, ns);
	}
	atomic_store(&stop, 1);
	pthread_join(worker, NULL);
	pthread_join(feeder, NULL);
	snapshot(ns);
	if (truth && write_truth(truth, ns) < 0)
		return 1;
	return 0;
}
