/* alloc_primes: allocates blocks of distinctive prime sizes from known
 * stacks, through every entry point of the malloc family, and writes what
 * it allocated and what it still holds, per function — the ground truth
 * for the alloc and heap tests.
 *
 *   alloc_primes [--scale N] [--truth FILE] [--wait]
 *
 *   main -> run_all -> make_a      malloc(4099)            all kept
 *                   -> make_b      calloc(1, 12289)        all freed
 *                   -> make_c      posix_memalign(64, 65537) in a thread
 *                                  "alloc_worker": half kept
 *                   -> make_d      malloc(1009) then realloc(.., 100003),
 *                                  aligned_alloc(64, 32771), memalign(
 *                                  4096, 8191): all kept
 *                   -> make_e      reallocarray(NULL, 7, 3001): all freed
 *
 * Truth lines: "fn NAME ALLOC_BYTES ALLOC_OBJECTS LIVE_BYTES LIVE_OBJECTS"
 * (realloc counts as an allocation of its new size, its old block as
 * freed, as the profiler counts it).
 *
 * With --wait: prints "ready", waits for SIGUSR1, allocates, writes the
 * truth, prints "allocated", waits for SIGUSR1, frees three quarters of
 * make_a's blocks (the truth file rewritten), prints "freed", then waits
 * for SIGTERM. Without: allocates, writes the truth, frees everything
 * and exits. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

enum { A, B, C, D, E, NFN };
static const char *names[NFN] = { "make_a", "make_b", "make_c", "make_d", "make_e" };
static struct { unsigned long long ab, ao, lb, lo; } truth[NFN];
static unsigned scale = 1;
static const char *truth_path;
static void **held_a, **held_c, **held_d;
static size_t n_a, n_c, n_d;
static volatile sig_atomic_t go;

static void note_alloc(int fn, size_t n, int live)
{
	truth[fn].ab += n;
	truth[fn].ao++;
	if (live) {
		truth[fn].lb += n;
		truth[fn].lo++;
	}
}

/* Writes the block and lets it escape, so that the compiler cannot drop
 * a malloc/free pair whose memory is never read. */
static void touch(void *p, size_t n)
{
	memset(p, 0x5a, n < 64 ? n : 64);
	__asm__ volatile("" ::"r"(p) : "memory");
}

NOINLINE static void make_a(void)
{
	KEEP_FRAME();
	n_a = 8000u * scale;
	held_a = calloc(n_a, sizeof(*held_a)); /* counted under make_a too */
	note_alloc(A, n_a * sizeof(*held_a), 1);
	for (size_t i = 0; i < n_a; i++) {
		held_a[i] = malloc(4099);
		touch(held_a[i], 4099);
		note_alloc(A, 4099, 1);
	}
}

NOINLINE static void make_b(void)
{
	KEEP_FRAME();
	for (unsigned i = 0; i < 3000u * scale; i++) {
		char *p = calloc(1, 12289);

		touch(p, 12289);
		note_alloc(B, 12289, 0);
		free(p);
	}
}

NOINLINE static void *make_c(void *arg)
{
	KEEP_FRAME();
	(void)arg;
	pthread_setname_np(pthread_self(), "alloc_worker"); /* prctl: no allocation */
	n_c = 600u * scale;
	held_c = NULL;
	for (size_t i = 0; i < n_c; i++) {
		void *p = NULL;

		if (posix_memalign(&p, 64, 65537))
			abort();
		touch(p, 65537);
		if (i % 2) {
			note_alloc(C, 65537, 0);
			free(p);
		} else {
			note_alloc(C, 65537, 1);
			if (!held_c)
				held_c = malloc(n_c * sizeof(*held_c)); /* not counted: see below */
			held_c[i / 2] = p;
		}
	}
	return NULL;
}

NOINLINE static void make_d(void)
{
	KEEP_FRAME();
	n_d = 3 * 300u * scale;
	held_d = malloc(n_d * sizeof(*held_d));
	note_alloc(D, n_d * sizeof(*held_d), 1);
	for (size_t i = 0; i < n_d; i += 3) {
		char *p = malloc(1009);

		note_alloc(D, 1009, 0); /* moved by the realloc: freed */
		p = realloc(p, 100003);
		touch(p, 100003);
		note_alloc(D, 100003, 1);
		held_d[i] = p;
		held_d[i + 1] = aligned_alloc(64, 32832); /* a multiple of 64: 32771 rounded */
		note_alloc(D, 32832, 1);
		held_d[i + 2] = memalign(4096, 8191);
		note_alloc(D, 8191, 1);
	}
}

NOINLINE static void make_e(void)
{
	KEEP_FRAME();
	for (unsigned i = 0; i < 2000u * scale; i++) {
		char *p = reallocarray(NULL, 7, 3001);

		touch(p, 21007);
		note_alloc(E, 21007, 0);
		free(p);
	}
}

static void write_truth(void)
{
	FILE *f;

	if (!truth_path)
		return;
	f = fopen(truth_path, "w");
	if (!f)
		return;
	for (int i = 0; i < NFN; i++)
		fprintf(f, "fn %s %llu %llu %llu %llu\n", names[i], truth[i].ab, truth[i].ao,
			truth[i].lb, truth[i].lo);
	fclose(f);
}

NOINLINE static void run_all(void)
{
	pthread_t t;

	KEEP_FRAME();
	make_a();
	make_b();
	pthread_create(&t, NULL, make_c, NULL);
	pthread_join(t, NULL);
	make_d();
	make_e();
}

static void on_usr1(int sig)
{
	(void)sig;
	go++;
}

static void wait_go(int n)
{
	sigset_t none;

	sigemptyset(&none);
	while (go < n)
		sigsuspend(&none);
}

int main(int argc, char **argv)
{
	bool wait = false;
	sigset_t block;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--scale") && i + 1 < argc)
			scale = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth_path = argv[++i];
		else if (!strcmp(argv[i], "--wait"))
			wait = true;
	}
	signal(SIGUSR1, on_usr1);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, NULL);
	if (wait) {
		printf("ready\n");
		fflush(stdout);
		wait_go(1);
	}
	run_all();
	/* held_c's own array was malloc'd from make_c: count it there. */
	note_alloc(C, n_c * sizeof(*held_c), 1);
	write_truth();
	if (!wait) {
		for (size_t i = 0; i < n_a; i++)
			free(held_a[i]);
		for (size_t i = 0; i < n_c / 2; i++)
			free(held_c[i]);
		for (size_t i = 0; i < n_d; i++)
			free(held_d[i]);
		free(held_a);
		free(held_c);
		free(held_d);
		return 0;
	}
	printf("allocated\n");
	fflush(stdout);
	wait_go(2);
	for (size_t i = 0; i < n_a; i++) {
		if (i % 4) {
			free(held_a[i]);
			held_a[i] = NULL;
			truth[A].lb -= 4099;
			truth[A].lo--;
		}
	}
	write_truth();
	printf("freed\n");
	fflush(stdout);
	for (;;)
		pause();
}
