/* switcher: two threads handing a token back and forth through pipes,
 * each doing a fixed amount of work per turn: a target that switches
 * tens of thousands of times a second, for bench/offcpu's slowdown.
 *
 *   switcher [--rounds N] [--work K]
 *
 * "ping" and "pong" each do K turns of a xorshift loop (default 20000, a
 * few tens of microseconds) then pass the token, N times (default 100000).
 * Each pass blocks the passer in read(2): two switches a round. Prints
 * "wall W cpu C" (seconds: the rounds' wall time and the process's CPU
 * time) and "switches S" (context switches of the two threads). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

static long rounds = 100000, work = 20000;
static int to_pong[2], to_ping[2];
static volatile uint64_t sink;

static double clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE static void switcher_work(void)
{
	uint64_t x = 88172645463325252ull;

	for (long i = 0; i < work; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	sink += x;
	KEEP_FRAME();
}

static long switches_of(pid_t tid)
{
	char path[64], line[128];
	long v = 0, n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1 ||
		    sscanf(line, "nonvoluntary_ctxt_switches: %ld", &n) == 1)
			v += n;
	fclose(f);
	return v;
}

static pid_t pong_tid;

static void *pong_main(void *arg)
{
	char c;

	(void)arg;
	pong_tid = gettid();
	for (long i = 0; i < rounds; i++) {
		if (read(to_pong[0], &c, 1) != 1)
			break;
		switcher_work();
		if (write(to_ping[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t pong;
	double w0, c0;
	long s0;
	char c = 'x';

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atol(argv[++i]);
		else if (!strcmp(argv[i], "--work") && i + 1 < argc)
			work = atol(argv[++i]);
		else {
			fprintf(stderr, "usage: switcher [--rounds N] [--work K]\n");
			return 2;
		}
	}
	if (pipe(to_pong) || pipe(to_ping) || pthread_create(&pong, NULL, pong_main, NULL)) {
		perror("switcher");
		return 1;
	}
	pthread_setname_np(pong, "pong");
	while (!pong_tid)
		usleep(100);
	s0 = switches_of(gettid()) + switches_of(pong_tid);
	w0 = clock_s(CLOCK_MONOTONIC);
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	for (long i = 0; i < rounds; i++) {
		switcher_work();
		if (write(to_pong[1], &c, 1) != 1 || read(to_ping[0], &c, 1) != 1)
			break;
	}
	printf("wall %.6f cpu %.6f\n", clock_s(CLOCK_MONOTONIC) - w0,
	       clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
	printf("switches %ld\n", switches_of(gettid()) + switches_of(pong_tid) - s0);
	pthread_join(pong, NULL);
	return 0;
}
