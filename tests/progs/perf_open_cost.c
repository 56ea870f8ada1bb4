/* perf_open_cost: what the kernel charges for the first perf event bound
 * to a task, which every profiler that records a process pays before its
 * first sample (bench/record-overhead's "time beyond the duration").
 *
 *   perf_open_cost PID [ROUNDS]
 *
 * Each round waits 1.5 s (the kernel turns its scheduler hooks off a
 * second after the last task-bound event closes), then opens one
 * cpu-clock event on PID (pid PID, any CPU) and times perf_event_open:
 * when no other task-bound event is open on the host, the kernel turns
 * the hooks on and waits for an RCU grace period (account_event in
 * kernel/events/core.c), which on a VM takes milliseconds. Then, with
 * that event held, a second one on PID: the cost of an open alone.
 * Prints one line per round and the medians:
 *   "first 8.412 ms, then 0.021 ms"
 *   "median: first 8.4 ms, then 0.02 ms (ROUNDS rounds)"
 * A host where another tool holds a task-bound event all along pays the
 * first cost never: then both figures are the open alone. */
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* A disabled cpu-clock sampling event on pid: its fd, or -1. */
static int open_event(pid_t pid)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = 10000000;
	a.disabled = 1;
	a.exclude_kernel = 1; /* allowed to every user at paranoid 2 */
	return (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, 0);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	pid_t pid = argc > 1 ? (pid_t)atoi(argv[1]) : 0;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	double first[64], then[64];

	if (pid <= 0 || rounds <= 0 || rounds > 64) {
		fprintf(stderr, "usage: perf_open_cost PID [ROUNDS, 1-64]\n");
		return 2;
	}
	for (int i = 0; i < rounds; i++) {
		double t0, t1, t2;
		int a, b;

		usleep(1500000);
		t0 = now_ms();
		a = open_event(pid);
		t1 = now_ms();
		b = open_event(pid);
		t2 = now_ms();
		if (a < 0 || b < 0) {
			perror("perf_event_open");
			return 1;
		}
		close(b);
		close(a);
		first[i] = t1 - t0;
		then[i] = t2 - t1;
		printf("first %.3f ms, then %.3f ms\n", first[i], then[i]);
		fflush(stdout);
	}
	qsort(first, (size_t)rounds, sizeof(double), cmp);
	qsort(then, (size_t)rounds, sizeof(double), cmp);
	printf("median: first %.1f ms, then %.2f ms (%d rounds)\n", first[rounds / 2],
	       then[rounds / 2], rounds);
	return 0;
}
