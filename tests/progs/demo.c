/* demo: a small pretend service for `make run` -- a few named worker
 * threads doing recognisable work, so its profile reads at a glance:
 *
 *   "hasher"      handle_request -> checksum_block -> fnv1a_64
 *   "sorter"      rebuild_index  -> sort_records (recursive) -> compare_records
 *   "compressor"  flush_log      -> compress_chunk (a tiny LZ77)
 *   main          accept_loop, mostly asleep (like a listener)
 *
 *   demo [--seconds N]     (default: run until killed)
 *
 * Prints its pid and "ready" on stdout once the workers run. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

static _Atomic int stop;
static volatile uint64_t sink;

/* --- hasher -------------------------------------------------------------- */

NOINLINE static uint64_t fnv1a_64(const unsigned char *p, size_t n)
{
	KEEP_FRAME();
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

NOINLINE static uint64_t checksum_block(const unsigned char *p, size_t n)
{
	uint64_t h = 0;
	for (size_t off = 0; off < n; off += 4096)
		h ^= fnv1a_64(p + off, n - off < 4096 ? n - off : 4096);
	return h;
}

NOINLINE static void handle_request(unsigned char *block, size_t n, unsigned seq)
{
	block[seq % n] ^= (unsigned char)seq;
	sink += checksum_block(block, n);
}

static void *hasher_main(void *arg)
{
	(void)arg;
	size_t n = 1 << 20;
	unsigned char *block = malloc(n);
	for (size_t i = 0; i < n; i++)
		block[i] = (unsigned char)(i * 31);
	for (unsigned seq = 0; !atomic_load(&stop); seq++)
		handle_request(block, n, seq);
	free(block);
	return NULL;
}

/* --- sorter -------------------------------------------------------------- */

struct record {
	uint64_t key;
	char payload[24];
};

NOINLINE static int compare_records(const struct record *a, const struct record *b)
{
	KEEP_FRAME();
	return (a->key > b->key) - (a->key < b->key);
}

/* Our own quicksort rather than libc's qsort, whose frames (built without
 * frame pointers) would cut the stacks short. */
NOINLINE static void sort_records(struct record *r, size_t n)
{
	while (n > 1) {
		struct record pivot = r[(n - 1) / 2], tmp;
		size_t i = 0, j = n - 1;
		for (;;) {
			while (compare_records(&r[i], &pivot) < 0)
				i++;
			while (compare_records(&r[j], &pivot) > 0)
				j--;
			if (i >= j)
				break;
			tmp = r[i];
			r[i] = r[j];
			r[j] = tmp;
			i++;
			j--;
		}
		/* Recurse into the smaller part, loop on the larger. */
		if (j + 1 < n - j - 1) {
			sort_records(r, j + 1);
			r += j + 1;
			n -= j + 1;
		} else {
			sort_records(r + j + 1, n - j - 1);
			n = j + 1;
		}
	}
}

NOINLINE static void rebuild_index(struct record *r, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i++) {
		*seed ^= *seed << 13;
		*seed ^= *seed >> 7;
		*seed ^= *seed << 17;
		r[i].key = *seed;
	}
	sort_records(r, n);
	__asm__ volatile("" ::: "memory"); /* not a tail call: keep the frame */
}

static void *sorter_main(void *arg)
{
	(void)arg;
	size_t n = 100000;
	struct record *r = calloc(n, sizeof *r);
	uint64_t seed = 88172645463325252ull;
	while (!atomic_load(&stop)) {
		rebuild_index(r, n, &seed);
		usleep(2000);
	}
	free(r);
	return NULL;
}

/* --- compressor ---------------------------------------------------------- */

/* A deliberately naive LZ77: for each position, search the last 256 bytes
 * for the longest match. Slow on purpose, which is what makes it hot. */
NOINLINE static size_t compress_chunk(const unsigned char *in, size_t n, unsigned char *out)
{
	KEEP_FRAME();
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		size_t best = 0, dist = 0;
		for (size_t d = 1; d <= 256 && d <= i; d++) {
			size_t l = 0;
			while (l < 255 && i + l < n && in[i + l] == in[i - d + l])
				l++;
			if (l > best) {
				best = l;
				dist = d;
			}
		}
		if (best >= 4) {
			out[o++] = 0xff;
			out[o++] = (unsigned char)(dist - 1);
			out[o++] = (unsigned char)best;
			i += best;
		} else {
			out[o++] = in[i++];
		}
	}
	return o;
}

NOINLINE static void flush_log(unsigned char *log, size_t n, unsigned char *out, unsigned round)
{
	for (size_t i = 0; i < n; i++)
		log[i] = (unsigned char)("GET /index.html 200 "[(i + round) % 20] + (i % 97 == 0));
	sink += compress_chunk(log, n, out);
}

static void *compressor_main(void *arg)
{
	(void)arg;
	size_t n = 64 * 1024;
	unsigned char *log = malloc(n), *out = malloc(3 * n);
	for (unsigned round = 0; !atomic_load(&stop); round++) {
		flush_log(log, n, out, round);
		usleep(1000);
	}
	free(log);
	free(out);
	return NULL;
}

/* --- main ---------------------------------------------------------------- */

NOINLINE static void accept_loop(double seconds)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		usleep(50000);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (seconds > 0 &&
		    (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 >= seconds)
			break;
	}
}

int main(int argc, char **argv)
{
	double seconds = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: demo [--seconds N]\n");
			return 2;
		}
	}
	static const struct {
		const char *name;
		void *(*fn)(void *);
	} workers[] = {
		{ "hasher", hasher_main },
		{ "sorter", sorter_main },
		{ "compressor", compressor_main },
	};
	pthread_t t[3];
	for (int i = 0; i < 3; i++) {
		if (pthread_create(&t[i], NULL, workers[i].fn, NULL)) {
			perror("demo: pthread_create");
			return 1;
		}
		pthread_setname_np(t[i], workers[i].name);
	}
	printf("demo: pid %d\nready\n", (int)getpid());
	fflush(stdout);
	accept_loop(seconds);
	atomic_store(&stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	return 0;
}
