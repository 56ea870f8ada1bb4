/* fork_workers: a service that forks its workers and does not exec, for
 * tests/integration/agent_wrapper.sh.
 *
 *   fork_workers [--workers N] [--seconds S]
 *
 * Forks N workers (default 2); each burns S seconds (default 1) of its
 * own CPU time in worker_burn and exits 0. The parent only waits for them
 * (it records nothing under a cpu profile) and exits 0 when every worker
 * did. Prints "worker PID" for each worker, then "done". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

static volatile uint64_t sink;

NOINLINE static void worker_burn(double seconds)
{
	uint64_t end = work_clock_ns(CLOCK_THREAD_CPUTIME_ID) + (uint64_t)(seconds * 1e9);
	uint64_t x = 88172645463325252ull;

	while (work_clock_ns(CLOCK_THREAD_CPUTIME_ID) < end) {
		for (uint64_t i = work_chunk(20000); i; i--) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		sink = x;
	}
}

int main(int argc, char **argv)
{
	int workers = 2, failed = 0;
	double seconds = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--workers") && i + 1 < argc)
			workers = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: fork_workers [--workers N] [--seconds S]\n");
			return 2;
		}
	}
	for (int i = 0; i < workers; i++) {
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			worker_burn(seconds);
			exit(0);
		}
		printf("worker %d\n", (int)pid);
	}
	for (int i = 0; i < workers; i++) {
		int status;

		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	}
	printf("done\n");
	return failed ? 1 : 0;
}
