/* alloc_storm: the agent's alloc, heap and lock engines switched on and
 * off over and over while threads allocate, free, reallocate and lock as
 * fast as they can -- the robustness scenario for those engines: no crash,
 * no hang, no corrupted block, no lost increment. Run it with
 * libnprof.so preloaded: it drives the agent through its C API, found
 * with dlsym, so that the same binary runs under the sanitizer builds.
 *
 *   alloc_storm [--threads N] [--alloc-cycles N] [--heap-cycles N]
 *               [--lock-cycles N] [--dir DIR] [--watchdog SECONDS]
 *
 * Workers (default 4, named "storm"): a table of 256 blocks each; every
 * step picks one at random, checks that the block still holds the byte
 * pattern it was given (whole block), and frees it, reallocates it
 * (checking the kept prefix), or makes a new one with any of malloc,
 * calloc (checked zero), realloc(NULL), reallocarray, posix_memalign,
 * aligned_alloc, memalign, valloc (alignment checked), then fills it.
 * Sizes: mostly under 256 bytes, some up to 8 KiB, a few up to 256 KiB.
 * Every step also increments a plain counter under a mutex all workers
 * share (contended: the lock interposer's slow path), every 16th takes a
 * shared rwlock, and worker 0 starts a short-lived thread every 2048
 * steps (the pthread_create interposer, thread exit). A corrupted
 * block or a lost increment means a broken allocator or a lock that did
 * not exclude. Workers run at nice 10, taking the CPU the main thread
 * leaves.
 *
 * The main thread, meanwhile: alloc sessions started and stopped
 * (nprof_start/nprof_stop, event=alloc, default 1000; every 100th also
 * nprof_dump to DIR), heap profiling enabled and disabled (default 1000;
 * every 50th dumped to DIR and its status read; every 10th with an alloc
 * session started and stopped inside it, both engines on one sampler),
 * then lock sessions (default 200). A watchdog thread ends the process
 * (status 3) if the main thread or any worker makes no progress for
 * --watchdog seconds (default 60): a deadlock fails, it does not hang.
 *
 * Output: "ready", then one line per phase ("alloc 1000 cycles, 0
 * failed, 1.2 s"), then "fds BASE -> NOW", "threads BASE -> NOW" (after
 * the first cycle of each kind, so the agent's own lasting threads and
 * files are in the baseline), "ops N", "corrupt N", "lost N", and
 * "storm ok" or "storm FAILED: REASON". Exit status 0 when ok. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

#define SLOTS 256
#define MAX_THREADS 16

struct api {
	int (*start)(const char *);
	int (*stop)(void);
	int (*dump)(const char *);
	int (*heap_enable)(const char *);
	int (*heap_disable)(void);
	int (*heap_status)(char *, size_t);
	int (*heap_dump)(const char *);
	const char *(*last_error)(void);
};

struct block {
	unsigned char *p;
	size_t size;
	unsigned char tag;
};

/* What went wrong with a block, counted apart to say where to look. */
enum damage { D_CALLOC, D_ALIGN, D_PATTERN, D_REALLOC, D_END, D_KINDS };
static const char *damage_names[D_KINDS] = {
	"calloc not zero", "misaligned or short", "pattern overwritten",
	"realloc lost the prefix", "pattern overwritten at the end",
};

struct worker {
	pthread_t thread;
	unsigned id;
	uint64_t rng;
	unsigned long long increments;
	atomic_ullong ops;
	unsigned long long corrupt[D_KINDS];
	struct block slots[SLOTS];
};

static struct api nprof;
static struct worker workers[MAX_THREADS];
static unsigned nthreads = 4;
static atomic_bool stopping;
static atomic_ullong main_progress;
static const char *_Atomic phase = "setup";
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t shared_rw = PTHREAD_RWLOCK_INITIALIZER;
static unsigned long long shared_counter; /* under shared_lock */
/* Held by worker 0 while a short-lived thread lives, and by main while it
 * counts threads: the count is then the lasting ones. */
static pthread_mutex_t spawn_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long long rw_value; /* under shared_rw */

static uint64_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static size_t pick_size(uint64_t *s)
{
	unsigned r = (unsigned)rnd(s) % 100;

	if (r < 70)
		return 1 + rnd(s) % 256;
	if (r < 97)
		return 257 + rnd(s) % 8000;
	return 8192 + rnd(s) % (256 * 1024);
}

/* The whole block still holds its tag: nobody else wrote into it. */
static bool intact(const struct block *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b->p[i] != b->tag)
			return false;
	return true;
}

static void fill(struct block *b)
{
	memset(b->p, b->tag, b->size);
}

/* A new block for slot b, by one of the malloc family's entry points. */
NOINLINE static void make(struct worker *w, struct block *b)
{
	size_t n = pick_size(&w->rng), asked = (size_t)16 << (rnd(&w->rng) % 6);
	/* Fundamental alignment, or less for a smaller block: jemalloc gives
	 * 8-byte blocks 8-byte alignment, as C allows. */
	size_t align = n < 16 ? 8 : 16;
	void *p = NULL;

	KEEP_FRAME();
	switch (rnd(&w->rng) % 8) {
	case 0:
		p = calloc(1, n);
		for (size_t i = 0; p && i < n; i++) {
			if (((unsigned char *)p)[i]) {
				w->corrupt[D_CALLOC]++;
				break;
			}
		}
		break;
	case 1:
		p = realloc(NULL, n);
		break;
	case 2:
		p = reallocarray(NULL, 1, n);
		break;
	case 3:
		align = asked;
		if (posix_memalign(&p, align, n))
			p = NULL;
		break;
	case 4:
		align = asked;
		n = (n + align - 1) / align * align; /* aligned_alloc wants a multiple */
		p = aligned_alloc(align, n);
		break;
	case 5:
		align = asked;
		p = memalign(align, n);
		break;
	case 6:
		if (rnd(&w->rng) % 16 == 0) {
			p = valloc(n);
			align = 4096;
			break;
		}
		/* fall through */
	default:
		p = malloc(n);
		break;
	}
	if (!p) {
		fprintf(stderr, "alloc_storm: allocating %zu bytes failed\n", n);
		abort();
	}
	if ((uintptr_t)p % align || malloc_usable_size(p) < n)
		w->corrupt[D_ALIGN]++;
	b->p = p;
	b->size = n;
	b->tag = (unsigned char)(1 + rnd(&w->rng) % 255);
	fill(b);
}

NOINLINE static void step(struct worker *w)
{
	struct block *b = &w->slots[rnd(&w->rng) % SLOTS];

	KEEP_FRAME();
	if (!b->p) {
		make(w, b);
		return;
	}
	if (!intact(b, b->size))
		w->corrupt[D_PATTERN]++;
	switch (rnd(&w->rng) % 3) {
	case 0: { /* grow or shrink; the kept prefix must survive */
		size_t n = pick_size(&w->rng), keep = n < b->size ? n : b->size;
		unsigned char *q = rnd(&w->rng) % 2 ? realloc(b->p, n) : reallocarray(b->p, 1, n);

		if (!q)
			abort();
		b->p = q;
		if (!intact(b, keep))
			w->corrupt[D_REALLOC]++;
		b->size = n;
		fill(b);
		break;
	}
	default:
		free(b->p);
		b->p = NULL;
		break;
	}
}

static void *short_lived(void *arg)
{
	void *p[8];

	for (int i = 0; i < 8; i++) {
		p[i] = malloc(64 + (size_t)i * 1000);
		memset(p[i], i, 64);
	}
	for (int i = 0; i < 8; i++)
		free(p[i]);
	return arg;
}

NOINLINE static void *work(void *arg)
{
	struct worker *w = arg;
	pthread_t t;

	KEEP_FRAME();
	pthread_setname_np(pthread_self(), "storm");
	/* Niced: the workers take whatever CPU the main thread leaves, so
	 * that its cycles run at the pace of the agent, not of a scheduler
	 * sharing two cores among five busy threads. */
	setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
	while (!atomic_load_explicit(&stopping, memory_order_relaxed)) {
		unsigned long long n = atomic_load_explicit(&w->ops, memory_order_relaxed);

		step(w);
		pthread_mutex_lock(&shared_lock);
		shared_counter++;
		pthread_mutex_unlock(&shared_lock);
		w->increments++;
		if (n % 16 == 0) {
			if (n % 64 == 0) {
				pthread_rwlock_wrlock(&shared_rw);
				rw_value++;
			} else {
				pthread_rwlock_rdlock(&shared_rw);
				(void)rw_value;
			}
			pthread_rwlock_unlock(&shared_rw);
		}
		if (w->id == 0 && n % 2048 == 2047) {
			pthread_mutex_lock(&spawn_lock);
			if (pthread_create(&t, NULL, short_lived, NULL) == 0)
				pthread_join(t, NULL);
			pthread_mutex_unlock(&spawn_lock);
		}
		atomic_store_explicit(&w->ops, n + 1, memory_order_relaxed);
	}
	for (unsigned i = 0; i < SLOTS; i++) {
		struct block *b = &w->slots[i];

		if (b->p && !intact(b, b->size))
			w->corrupt[D_END]++;
		free(b->p);
	}
	return NULL;
}

/* Ends the process when some thread stops moving: a deadlock fails the
 * test with a reason instead of hanging it. */
static unsigned watchdog_s = 60;

static void *watchdog(void *arg)
{
	unsigned long long last_main = 0, last[MAX_THREADS] = { 0 };
	unsigned still_main = 0, still[MAX_THREADS] = { 0 };

	(void)arg;
	for (;;) {
		sleep(1);
		unsigned long long m = atomic_load(&main_progress);

		still_main = m == last_main ? still_main + 1 : 0;
		last_main = m;
		for (unsigned i = 0; i < nthreads; i++) {
			unsigned long long o = atomic_load(&workers[i].ops);

			still[i] = o == last[i] && !atomic_load(&stopping) ? still[i] + 1 : 0;
			last[i] = o;
			if (still[i] >= watchdog_s) {
				fprintf(stderr, "alloc_storm: watchdog: worker %u made no progress for %u s "
					"(main in %s, step %llu)\n", i, watchdog_s, atomic_load(&phase), m);
				_exit(3);
			}
		}
		if (still_main >= watchdog_s) {
			fprintf(stderr, "alloc_storm: watchdog: the main thread made no progress for %u s "
				"in %s (step %llu)\n", watchdog_s, atomic_load(&phase), m);
			_exit(3);
		}
	}
	return NULL;
}

/* Entries of a /proc directory (for /proc/self/fd, opendir's own fd
 * among them: the same in every count). */
static unsigned count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static unsigned count_threads(void)
{
	unsigned n;

	pthread_mutex_lock(&spawn_lock);
	n = count_dir("/proc/self/task");
	pthread_mutex_unlock(&spawn_lock);
	return n;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A short pause with the engines on, so that samples are taken. */
static void pause_a_little(void)
{
	struct timespec ts = { 0, 200000 };

	nanosleep(&ts, NULL);
}

static unsigned failed;

static void expect(int r, const char *what, unsigned cycle)
{
	atomic_fetch_add(&main_progress, 1);
	if (r == 0)
		return;
	if (failed++ < 5)
		fprintf(stderr, "alloc_storm: %s failed at cycle %u: %s (%d)\n", what, cycle,
			nprof.last_error(), r);
}

static void alloc_cycle(unsigned i, const char *dir)
{
	char opts[4200];

	expect(nprof.start("event=alloc,interval=64k"), "nprof_start(event=alloc)", i);
	pause_a_little();
	expect(nprof.stop(), "nprof_stop (alloc)", i);
	if (i % 100 == 0) {
		snprintf(opts, sizeof(opts), "file=%s/alloc.pb.gz", dir);
		expect(nprof.dump(opts), "nprof_dump (alloc)", i);
	}
}

/* Until every worker has taken steps more steps (at most 20 s): a heap
 * dump holds the live blocks made since heap profiling was enabled, and on
 * a loaded host the workers may not have run at all in a short pause. */
static void wait_for_steps(unsigned long long steps)
{
	unsigned long long from[MAX_THREADS];
	struct timespec ms = { 0, 1000000 };

	for (unsigned i = 0; i < nthreads; i++)
		from[i] = atomic_load(&workers[i].ops);
	for (unsigned t = 0; t < 20000; t++) {
		unsigned behind = 0;

		for (unsigned i = 0; i < nthreads; i++)
			behind += atomic_load(&workers[i].ops) - from[i] < steps;
		if (!behind)
			return;
		nanosleep(&ms, NULL);
	}
}

static void heap_cycle(unsigned i, const char *dir)
{
	char opts[4200], status[512];

	expect(nprof.heap_enable("interval=64k"), "nprof_heap_enable", i);
	pause_a_little();
	if (i % 10 == 0) {
		expect(nprof.start("event=alloc"), "nprof_start(event=alloc) with heap on", i);
		pause_a_little();
		expect(nprof.stop(), "nprof_stop (alloc, heap on)", i);
	}
	if (i % 50 == 0) {
		/* Twice the slots: most blocks made anew, sampled ones among them. */
		wait_for_steps(2 * SLOTS);
		snprintf(opts, sizeof(opts), "file=%s/heap.collapsed,output=collapsed", dir);
		expect(nprof.heap_dump(opts), "nprof_heap_dump", i);
		expect(nprof.heap_status(status, sizeof(status)) || !strstr(status, "on since"),
		       "nprof_heap_status (on)", i);
	}
	expect(nprof.heap_disable(), "nprof_heap_disable", i);
}

static void lock_cycle(unsigned i)
{
	expect(nprof.start("event=lock"), "nprof_start(event=lock)", i);
	pause_a_little();
	expect(nprof.stop(), "nprof_stop (lock)", i);
}

static void run_phase(const char *name, unsigned n, void (*cycle)(unsigned, const char *),
		      const char *dir)
{
	unsigned before = failed;
	double t0 = now_s();

	phase = name;
	for (unsigned i = 1; i <= n; i++)
		cycle(i, dir);
	printf("%s %u cycles, %u failed, %.1f s\n", name, n, failed - before, now_s() - t0);
	fflush(stdout);
}

static void lock_cycle_dir(unsigned i, const char *dir)
{
	(void)dir;
	lock_cycle(i);
}

#define FIND(field, name) \
	(nprof.field = (__typeof__(nprof.field))dlsym(RTLD_DEFAULT, name))

int main(int argc, char **argv)
{
	unsigned alloc_n = 1000, heap_n = 1000, lock_n = 200, fds0, fds1, th0, th1;
	unsigned long long ops = 0, corrupt = 0, increments = 0;
	const char *dir = "/tmp";
	pthread_t dog;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--alloc-cycles") && i + 1 < argc)
			alloc_n = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--heap-cycles") && i + 1 < argc)
			heap_n = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--lock-cycles") && i + 1 < argc)
			lock_n = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--watchdog") && i + 1 < argc)
			watchdog_s = (unsigned)atoi(argv[++i]);
	}
	if (nthreads < 1 || nthreads > MAX_THREADS)
		nthreads = 4;
	if (!FIND(start, "nprof_start") || !FIND(stop, "nprof_stop") || !FIND(dump, "nprof_dump") ||
	    !FIND(heap_enable, "nprof_heap_enable") || !FIND(heap_disable, "nprof_heap_disable") ||
	    !FIND(heap_status, "nprof_heap_status") || !FIND(heap_dump, "nprof_heap_dump") ||
	    !FIND(last_error, "nprof_last_error")) {
		fprintf(stderr, "alloc_storm: the nprof C API is not loaded; run it with "
			"LD_PRELOAD=libnprof.so\n");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	pthread_create(&dog, NULL, watchdog, NULL);
	for (unsigned i = 0; i < nthreads; i++) {
		workers[i].id = i;
		workers[i].rng = 0x9e3779b97f4a7c15ull * (i + 1);
		if (pthread_create(&workers[i].thread, NULL, work, &workers[i])) {
			fprintf(stderr, "alloc_storm: cannot start worker %u\n", i);
			return 1;
		}
	}
	/* One cycle of each kind first: what the agent keeps afterwards (its
	 * control thread, the symbolizer's files) is the baseline. */
	phase = "warm-up";
	alloc_cycle(100, dir);
	heap_cycle(50, dir);
	lock_cycle(0);
	fds0 = count_dir("/proc/self/fd");
	th0 = count_threads();
	run_phase("alloc", alloc_n, alloc_cycle, dir);
	run_phase("heap", heap_n, heap_cycle, dir);
	run_phase("lock", lock_n, lock_cycle_dir, dir);
	fds1 = count_dir("/proc/self/fd");
	th1 = count_threads();
	phase = "joining";
	atomic_store(&stopping, true);
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_join(workers[i].thread, NULL);
		ops += workers[i].ops;
		for (int k = 0; k < D_KINDS; k++) {
			if (workers[i].corrupt[k])
				fprintf(stderr, "alloc_storm: worker %u: %llu blocks: %s\n", i,
					workers[i].corrupt[k], damage_names[k]);
			corrupt += workers[i].corrupt[k];
		}
		increments += workers[i].increments;
	}
	printf("fds %u -> %u\nthreads %u -> %u\nops %llu\ncorrupt %llu\nlost %llu\n", fds0, fds1,
	       th0, th1, ops, corrupt, increments - shared_counter);
	if (failed || corrupt || increments != shared_counter || fds1 != fds0 || th1 != th0) {
		printf("storm FAILED: %u calls failed, %llu corrupt blocks, %llu increments lost, "
		       "fds %u -> %u, threads %u -> %u\n", failed, corrupt,
		       increments - shared_counter, fds0, fds1, th0, th1);
		return 1;
	}
	printf("storm ok\n");
	return 0;
}
