/* split: two threads burn CPU in three functions in a 60/30/10 split and
 * measure, per function, the CPU time they really spent there.
 *
 *   split [--seconds N | --cpu-seconds N] [--truth FILE] [--ratio A:B:C]
 *
 * The main thread (main -> run_main_thread -> burn_quantum -> burn_*) and a
 * second thread named "burner" (worker_main -> worker_loop -> burn_quantum
 * -> burn_*) each run cycles of CPU in burn_sixty, burn_thirty and burn_ten
 * in exactly the ratio 6:3:1, cycles of random length (4-16 ms) cut into
 * random pieces of 0.5-2 ms in random order. Random lengths keep the
 * schedule from aliasing with a periodic sampler; exact ratios per cycle
 * mean any window of the run has the split, even if the two threads get
 * unequal CPU. Each burn_* measures its own thread CPU time
 * (CLOCK_THREAD_CPUTIME_ID) and the totals are the ground truth, written to
 * FILE on exit -- also when ended early by SIGTERM or SIGINT (as
 * `nprof record -d N -- split ...` ends its command):
 *
 *   pid 1234
 *   tid main 1234
 *   tid burner 1235
 *   fn burn_sixty 3012345678      (ns of CPU, both threads)
 *   fn burn_thirty ...
 *   fn burn_ten ...
 *   stalled 0                     (see STALL_NS: not in any fn)
 *
 * Each SIGUSR1 also writes the totals so far to FILE.1, FILE.2, ... (whole,
 * through a rename): a test brackets a recording with two of them and
 * holds the profile to the difference, the truth of that very window.
 * The totals grow with every few tens of microseconds burnt, so a snapshot
 * is exact to that.
 *
 * --ratio A:B:C changes the 6:3:1 (whole numbers, one of them at least 1):
 * `--ratio 1:1:1` then `--ratio 6:1:1` is a known change of profile, for
 * nprof diff's test.
 *
 * --cpu-seconds N ends the run once the two threads have burnt N seconds
 * of CPU in the three functions, however long the host makes that take:
 * a recording of the whole run then holds a known number of samples.
 *
 * "ready" is printed on stdout once both threads are burning. */
#define _GNU_SOURCE
#include <inttypes.h>
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

enum { SIXTY, THIRTY, TEN, NFN };
static const char *fn_names[NFN] = { "burn_sixty", "burn_thirty", "burn_ten" };
static _Atomic uint64_t fn_ns[NFN];
static _Atomic uint64_t stalled_ns; /* see STALL_NS */
static _Atomic int stop;
static _Atomic int burning;
static _Atomic pid_t burner_tid; /* read by the timer thread too */
static int64_t ratio[NFN] = { 6, 3, 1 }; /* set before the threads start */
static volatile uint64_t sink;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A few tens of microseconds of arithmetic the compiler cannot drop. */
static inline uint64_t spin(uint64_t x, uint64_t k)
{
	uint64_t n = work_chunk(50000);

	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		x += k;
	}
	return x;
}

/* More CPU time than this in one turn of a burner's loop (tens of
 * microseconds of arithmetic, and maybe a sampling handler) is time the
 * thread did not run: a virtual machine whose kernel does not subtract
 * steal time charges the thread that was on a vCPU for the time the host
 * took that vCPU away (seen here: 100 ms at once on a busy host). No
 * sampler runs meanwhile, so it is left out of the truth, and counted on
 * its own ("stalled NS"). */
#define STALL_NS 5000000ull

/* Adds to fn's total the CPU time since *last, and moves *last to now. */
static inline uint64_t account(int fn, uint64_t *last)
{
	uint64_t t = thread_cpu_ns(), d = t - *last;

	atomic_fetch_add_explicit(d < STALL_NS ? &fn_ns[fn] : &stalled_ns, d,
				  memory_order_relaxed);
	*last = t;
	return t;
}

/* The three burners are identical but for their names; each is its own
 * noinline function so its frames are its own. They return the CPU time
 * they spent, measured from inside so the time of the clock reads counts,
 * and add it to their total as they go (a SIGUSR1 snapshot sees it). */
NOINLINE static uint64_t burn_sixty(uint64_t ns, uint64_t *x)
{
	uint64_t t0 = thread_cpu_ns(), t = t0;
	do { *x = spin(*x, 60); } while (account(SIXTY, &t) - t0 < ns);
	__asm__ volatile("" ::: "memory");
	return t - t0;
}

NOINLINE static uint64_t burn_thirty(uint64_t ns, uint64_t *x)
{
	uint64_t t0 = thread_cpu_ns(), t = t0;
	do { *x = spin(*x, 30); } while (account(THIRTY, &t) - t0 < ns);
	__asm__ volatile("" ::: "memory");
	return t - t0;
}

NOINLINE static uint64_t burn_ten(uint64_t ns, uint64_t *x)
{
	uint64_t t0 = thread_cpu_ns(), t = t0;
	do { *x = spin(*x, 10); } while (account(TEN, &t) - t0 < ns);
	__asm__ volatile("" ::: "memory");
	return t - t0;
}

static uint64_t next_random(uint64_t *rng)
{
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return *rng;
}

/* One cycle: CPU for burn_sixty, burn_thirty and burn_ten in exactly the
 * ratio 6:3:1, cut into pieces of 0.5-2 ms handed out in random order from
 * a per-thread xorshift generator. Exact budgets make every window of a few
 * cycles keep the 60/30/10 split, so a recording of part of the run can be
 * held to the whole run's truth; random pieces keep the schedule from
 * aliasing with a periodic sampler. */
NOINLINE static void burn_quantum(uint64_t *rng, uint64_t *x)
{
	/* The cycle's length is random too (4-16 ms): a fixed one would
	 * alias with samplers whose period is in thread CPU time (10 ms by
	 * default), putting every sample at the same phase of the cycle. */
	int64_t unit = 400000 + (int64_t)(next_random(rng) % 1200000);
	int64_t left[NFN] = { ratio[SIXTY] * unit, ratio[THIRTY] * unit, ratio[TEN] * unit };

	while (left[SIXTY] > 0 || left[THIRTY] > 0 || left[TEN] > 0) {
		int64_t total = (left[SIXTY] > 0 ? left[SIXTY] : 0) +
				(left[THIRTY] > 0 ? left[THIRTY] : 0) +
				(left[TEN] > 0 ? left[TEN] : 0);
		/* Pick in proportion to what is left, so the pieces of each
		 * function spread over the whole cycle. */
		int64_t pick = (int64_t)(next_random(rng) % (uint64_t)total);
		int fn = SIXTY;
		for (; fn < TEN; fn++) {
			int64_t l = left[fn] > 0 ? left[fn] : 0;
			if (pick < l)
				break;
			pick -= l;
		}
		int64_t ns = 500000 + (int64_t)((next_random(rng) >> 8) % 1500000);
		if (ns > left[fn])
			ns = left[fn];
		uint64_t spent = fn == SIXTY  ? burn_sixty((uint64_t)ns, x)
				 : fn == THIRTY ? burn_thirty((uint64_t)ns, x)
						: burn_ten((uint64_t)ns, x);
		left[fn] -= (int64_t)spent;
	}
}

NOINLINE static void worker_loop(uint64_t seed)
{
	uint64_t rng = seed, x = seed * 3 + 1;
	while (!atomic_load(&stop))
		burn_quantum(&rng, &x);
	sink += x;
}

static void *worker_main(void *arg)
{
	(void)arg;
	atomic_store(&burner_tid, (pid_t)syscall(SYS_gettid));
	atomic_fetch_add(&burning, 1);
	worker_loop(0x9e3779b97f4a7c15ull);
	return NULL;
}

NOINLINE static void run_main_thread(void)
{
	uint64_t rng = 0xd1b54a32d192ed03ull, x = 7;
	while (!atomic_load(&stop))
		burn_quantum(&rng, &x);
	sink += x;
}

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop, 1);
}

/* FILE, whole or not at all: written to FILE.tmp and renamed, so a test
 * that sees FILE sees all of it. */
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
	fprintf(f, "tid burner %d\n", (int)atomic_load(&burner_tid));
	for (int i = 0; i < NFN; i++)
		fprintf(f, "fn %s %llu\n", fn_names[i], (unsigned long long)ns[i]);
	fprintf(f, "stalled %llu\n", (unsigned long long)atomic_load(&stalled_ns));
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

static const char *truth_path;
static uint64_t run_ns, run_cpu_ns;

/* The CPU burnt in the three functions so far, both threads. */
static uint64_t burnt_ns(void)
{
	uint64_t sum = 0;

	for (int i = 0; i < NFN; i++)
		sum += atomic_load(&fn_ns[i]);
	return sum;
}

/* Ends the run after the requested wall time (or CPU time), from a third, idle thread,
 * so neither burner has to look at the wall clock. It also takes the
 * SIGUSR1s (blocked in every thread, so only its sigtimedwait sees them)
 * and writes each snapshot: no stdio in a signal handler. */
static void *timer_main(void *arg)
{
	uint64_t end = mono_ns() + run_ns;
	unsigned marks = 0;
	sigset_t usr1;

	(void)arg;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	while ((run_cpu_ns ? burnt_ns() < run_cpu_ns : mono_ns() < end) && !atomic_load(&stop)) {
		struct timespec ts = { 0, 10000000 };
		uint64_t now[NFN];
		char path[4096];

		if (sigtimedwait(&usr1, NULL, &ts) != SIGUSR1 || !truth_path)
			continue;
		for (int i = 0; i < NFN; i++)
			now[i] = atomic_load(&fn_ns[i]);
		snprintf(path, sizeof(path), "%s.%u", truth_path, ++marks);
		write_truth(path, now);
	}
	atomic_store(&stop, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = 5;
	const char *truth = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--cpu-seconds") && i + 1 < argc)
			run_cpu_ns = (uint64_t)(atof(argv[++i]) * 1e9);
		else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth = argv[++i];
		else if (!strcmp(argv[i], "--ratio") && i + 1 < argc &&
			 sscanf(argv[++i], "%" SCNd64 ":%" SCNd64 ":%" SCNd64,
				&ratio[SIXTY], &ratio[THIRTY], &ratio[TEN]) == 3 &&
			 ratio[SIXTY] >= 0 && ratio[THIRTY] >= 0 && ratio[TEN] >= 0 &&
			 ratio[SIXTY] + ratio[THIRTY] + ratio[TEN] > 0 &&
			 ratio[SIXTY] + ratio[THIRTY] + ratio[TEN] <= 100)
			continue;
		else {
			fprintf(stderr, "usage: split [--seconds N | --cpu-seconds N] [--truth FILE] "
				"[--ratio A:B:C]\n");
			return 2;
		}
	}

	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* Blocked here, before any thread starts, so every thread inherits
	 * it and only the timer's sigtimedwait takes SIGUSR1. */
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);

	truth_path = truth;
	run_ns = (uint64_t)(seconds * 1e9);
	pthread_t worker, timer;
	if (pthread_create(&worker, NULL, worker_main, NULL) ||
	    pthread_create(&timer, NULL, timer_main, NULL)) {
		perror("split: pthread_create");
		return 1;
	}
	pthread_setname_np(worker, "burner");
	pthread_setname_np(timer, "timer");
	while (!atomic_load(&burning))
		usleep(1000);
	printf("ready\n");
	fflush(stdout);

	run_main_thread();
	pthread_join(worker, NULL);
	pthread_join(timer, NULL);

	if (truth) {
		uint64_t total[NFN];

		for (int i = 0; i < NFN; i++)
			total[i] = atomic_load(&fn_ns[i]);
		if (write_truth(truth, total) < 0)
			return 1;
	}
	return 0;
}
