/* heap_sites: three allocation sites of distinctive block sizes, the
 * ground truth for the alloc and heap scenarios the agent is held to:
 * bytes and objects per site within 10%
 * (tests/integration/agent_heap_sites.sh).
 *
 *   heap_sites [--truth FILE] [--control FIFO]
 *
 *   site_small_1k   100 MiB in 1 KiB blocks (102400), all freed
 *   site_big_64k    300 MiB in 64 KiB blocks (4800), all freed, on a
 *                   thread of its own ("big_64k")
 *   site_live_48m   48 MiB in 48 KiB blocks (1024), kept live
 *
 * The freed sites allocate 4 MiB, then free it, and again, so that the
 * process never holds more than 4 MiB of them and the profiler's live
 * set sees blocks come and go in numbers.
 *
 * Without --control: runs the sites, writes the truth, frees the live
 * blocks and exits. With --control FIFO: prints "ready", then reads one
 * command a line from FIFO and prints "done COMMAND" when it has run it
 * (the truth file rewritten first):
 *   sites   run the three sites (a second time adds 48 MiB more live)
 *   free    free every live block of site_live_48m
 *   exit    free what is held and exit
 *
 * Truth lines: "site NAME ALLOC_BYTES ALLOC_OBJECTS LIVE_BYTES LIVE_OBJECTS",
 * allocation totals since the start and what is held now. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

#define MIB (1024ull * 1024)
#define SMALL 1024
#define BIG (64 * 1024)
#define LIVE (48 * 1024)
#define BATCH (4 * MIB)

enum { S_SMALL, S_BIG, S_LIVE, NSITES };
static const char *names[NSITES] = { "site_small_1k", "site_big_64k", "site_live_48m" };
static struct { unsigned long long ab, ao, lb, lo; } truth[NSITES];
static const char *truth_path;
static void **live;
static size_t nlive, live_cap;

/* Writes the block and lets it escape, so that the compiler cannot drop
 * a malloc/free pair whose memory is never read. */
static void touch(void *p, size_t n)
{
	if (!p)
		abort();
	memset(p, 0x5a, n < 64 ? n : 64);
	__asm__ volatile("" ::"r"(p) : "memory");
}

/* total bytes in blocks of size, BATCH bytes held at a time, all freed.
 * Its own frame, under the site's: the tests sum the stacks through a
 * site, so the array of pointers counts too (as the truth does). */
NOINLINE static void churn(int site, size_t size, unsigned long long total)
{
	size_t per = BATCH / size;
	void **held = calloc(per, sizeof(*held));

	KEEP_FRAME();
	if (!held)
		abort();
	truth[site].ab += per * sizeof(*held);
	truth[site].ao++;
	for (unsigned long long done = 0; done < total; done += per * size) {
		for (size_t i = 0; i < per; i++) {
			held[i] = malloc(size);
			touch(held[i], size);
		}
		for (size_t i = 0; i < per; i++)
			free(held[i]);
		truth[site].ab += per * size;
		truth[site].ao += per;
	}
	free(held);
}

NOINLINE static void site_small_1k(void)
{
	KEEP_FRAME();
	churn(S_SMALL, SMALL, 100 * MIB);
	__asm__ volatile(""); /* not a tail call: the site keeps its frame */
}

NOINLINE static void *site_big_64k(void *arg)
{
	KEEP_FRAME();
	(void)arg;
	pthread_setname_np(pthread_self(), "big_64k");
	churn(S_BIG, BIG, 300 * MIB);
	return NULL;
}

NOINLINE static void site_live_48m(void)
{
	size_t n = 48 * MIB / LIVE;

	KEEP_FRAME();
	/* The array of pointers is the program's, not the site's: made
	 * outside it (realloc below) so the site holds exactly 48 MiB. */
	for (size_t i = 0; i < n; i++) {
		void *p = malloc(LIVE);

		touch(p, LIVE);
		live[nlive++] = p;
		truth[S_LIVE].ab += LIVE;
		truth[S_LIVE].ao++;
		truth[S_LIVE].lb += LIVE;
		truth[S_LIVE].lo++;
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
	for (int i = 0; i < NSITES; i++)
		fprintf(f, "site %s %llu %llu %llu %llu\n", names[i], truth[i].ab, truth[i].ao,
			truth[i].lb, truth[i].lo);
	fclose(f);
}

static void run_sites(void)
{
	pthread_t t;

	if (nlive + 48 * MIB / LIVE > live_cap) {
		live_cap = nlive + 48 * MIB / LIVE;
		live = realloc(live, live_cap * sizeof(*live));
		if (!live)
			abort();
	}
	site_small_1k();
	if (pthread_create(&t, NULL, site_big_64k, NULL) || pthread_join(t, NULL))
		abort();
	site_live_48m();
}

static void free_live(void)
{
	for (size_t i = 0; i < nlive; i++)
		free(live[i]);
	nlive = 0;
	truth[S_LIVE].lb = 0;
	truth[S_LIVE].lo = 0;
}

/* Reads lines from the fifo: opened read-write, so that the writers
 * (echo CMD > FIFO) coming and going never make it read end-of-file. */
static int serve(const char *fifo)
{
	char line[64];
	FILE *f;
	int fd = open(fifo, O_RDWR);

	if (fd < 0 || !(f = fdopen(fd, "r"))) {
		fprintf(stderr, "heap_sites: cannot open %s: %s\n", fifo, strerror(errno));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, "sites")) {
			run_sites();
		} else if (!strcmp(line, "free")) {
			free_live();
		} else if (!strcmp(line, "exit")) {
			free_live();
			break;
		} else {
			fprintf(stderr, "heap_sites: unknown command '%s'; use sites, free or exit\n",
				line);
			continue;
		}
		write_truth();
		printf("done %s\n", line);
		fflush(stdout);
	}
	fclose(f);
	printf("done exit\n");
	free(live);
	return 0;
}

int main(int argc, char **argv)
{
	const char *fifo = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth_path = argv[++i];
		else if (!strcmp(argv[i], "--control") && i + 1 < argc)
			fifo = argv[++i];
	}
	if (fifo)
		return serve(fifo);
	run_sites();
	write_truth();
	free_live();
	free(live);
	return 0;
}
