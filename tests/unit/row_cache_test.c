/* row_cache: the walker's cache of CFI rows by pc (unwind/row_cache.h).
 * Hits give back what was put; a pc put under one module list generation
 * is a miss under any other (a list rebuilt after dlopen, or changed by
 * unwind_modules_add); a slot taken by another pc, or being written, is a
 * miss, never a wrong row. Walks with the cache give the stacks walks
 * without it give: a synthetic one, and this test's own stack from inside
 * libc's qsort (no frame pointers there: only CFI rows get through).
 * Last, threads writing colliding pcs while another reads: every hit must
 * be the row put for that pc (checked on every read, however many races
 * the host happens to produce). */
#include "unwind/cfi.h"
#include "unwind/modules.h"
#include "unwind/row_cache.h"
#include "unwind/unwind_table.h"
#include "unwind/walker.h"
#include "test.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES 128

static struct unwind_row_cache cache;

static struct cfi_row mkrow(uint32_t start, enum cfi_cfa_kind cfa, int32_t off, int rip,
			    enum cfi_rbp_kind rbp, int16_t rbp_off)
{
	return (struct cfi_row){ start, off, rbp_off, -8, (uint8_t)(cfa | rip << 3 | rbp << 5) };
}

static void put64(uint8_t *stk, uint64_t base, uint64_t addr, uint64_t v)
{
	memcpy(stk + (addr - base), &v, 8);
}

/* A pc other than pc whose slot is pc's. */
static uint64_t colliding_pc(uint64_t pc)
{
	for (uint64_t other = pc + 1;; other++)
		if (unwind_row_cache_slot(&cache, other) == unwind_row_cache_slot(&cache, pc))
			return other;
}

static void test_get_put(void)
{
	static const struct cfi_row rows[2];
	const struct cfi_row *row = &rows[1];
	uint64_t other;

	memset(&cache, 0, sizeof(cache));
	CHECK(!unwind_row_cache_get(&cache, 1, 0x401000, &row) && row == &rows[1],
	      "empty: a miss, the out-parameter untouched");
	CHECK(!unwind_row_cache_get(&cache, 0, 0, &row),
	      "an all-zero slot is not a hit for generation 0 and pc 0");

	unwind_row_cache_put(&cache, 7, 0x401000, &rows[0]);
	row = NULL;
	CHECK(unwind_row_cache_get(&cache, 7, 0x401000, &row) && row == &rows[0],
	      "hit: the row put for that pc and generation");
	CHECK(!unwind_row_cache_get(&cache, 7, 0x401001, &row), "another pc: a miss");
	CHECK(!unwind_row_cache_get(&cache, 8, 0x401000, &row),
	      "another generation (a new module list): a miss");

	unwind_row_cache_put(&cache, 7, 0x402000, NULL);
	row = &rows[1];
	CHECK(unwind_row_cache_get(&cache, 7, 0x402000, &row) && row == NULL,
	      "\"no row here\" (frame pointers) is cached too");

	/* Direct-mapped: a pc of the same slot replaces the first. */
	other = colliding_pc(0x401000);
	unwind_row_cache_put(&cache, 7, other, &rows[1]);
	CHECK(!unwind_row_cache_get(&cache, 7, 0x401000, &row),
	      "a pc whose slot another pc took since: a miss");
	CHECK(unwind_row_cache_get(&cache, 7, other, &row) && row == &rows[1],
	      "... and that other pc hits");

	/* A slot being written (odd seq: another thread's write, or the one
	 * a signal handler interrupted) is a miss, and a second writer
	 * leaves it alone rather than wait. */
	atomic_fetch_add(&unwind_row_cache_slot(&cache, other)->seq, 1);
	CHECK(!unwind_row_cache_get(&cache, 7, other, &row), "a slot being written: a miss");
	unwind_row_cache_put(&cache, 7, 0x401000, &rows[0]);
	atomic_fetch_add(&unwind_row_cache_slot(&cache, other)->seq, 1);
	CHECK(unwind_row_cache_get(&cache, 7, other, &row) && row == &rows[1],
	      "a put into a slot being written did nothing");
}

/* The synthetic stack of unwind_test (CFI, then frame pointers, then an
 * outermost row), walked with and without the cache, and again after the
 * module list changed under the same addresses. */
static void test_walk_synthetic(void)
{
	static uint8_t stk[4096];
	const uint64_t B = 0x70000000, S = B + 0x100;
	struct cfi_row rows[] = {
		mkrow(0x000, CFI_CFA_RSP, 16, CFI_RIP_AT_CFA, CFI_RBP_AT_CFA, -24),
		mkrow(0x100, CFI_CFA_NONE, 0, 0, 0, 0), /* no CFI: frame pointers */
		mkrow(0x200, CFI_CFA_RSP, 8, CFI_RIP_UNDEFINED, 0, 0), /* _start */
		mkrow(0x300, CFI_CFA_NONE, 0, 0, 0, 0),
	};
	/* The same code seen by another list: its first function says
	 * "outermost" where the first said "return address at CFA - 8". */
	struct cfi_row rows2[] = {
		mkrow(0x000, CFI_CFA_RSP, 8, CFI_RIP_UNDEFINED, 0, 0),
		mkrow(0x300, CFI_CFA_NONE, 0, 0, 0, 0),
	};
	struct cfi_table ct = { .base = 0x10000, .n = 4, .rows = rows };
	struct cfi_table ct2 = { .base = 0x10000, .n = 2, .rows = rows2 };
	struct unwind_table ut = { .cfi = &ct }, ut2 = { .cfi = &ct2 };
	struct unwind_modules m, m2;
	struct unwind_stack_copy sc = { B, stk, sizeof(stk) };
	struct unwind_regs regs = { 0x10010, S, S + 0x40 };
	struct unwind_info info, cinfo;
	uint64_t ips[16], cips[16], gen;
	unsigned n, cn, hits = 0;
	const struct cfi_row *row;

	memset(&cache, 0, sizeof(cache));
	memset(stk, 0, sizeof(stk));
	put64(stk, B, S + 8, 0x10150);
	put64(stk, B, S + 0x40, 0);
	put64(stk, B, S + 0x48, 0x10250);
	unwind_modules_init(&m);
	CHECK(m.generation != 0, "an initialised module list has a generation");
	unwind_modules_add(&m, 0x10000, 0x10300, 0, &ut);

	n = unwind_walk_ex(&regs, &m, unwind_read_stack_copy, &sc, ips, 16, &info);
	cn = unwind_walk_cached(&regs, &m, &cache, unwind_read_stack_copy, &sc, cips, 16,
				&cinfo);
	CHECK(n == 3 && cn == n && !memcmp(ips, cips, n * sizeof(*ips)) &&
	      cinfo.stop == UNWIND_STOP_END && cinfo.cfi_frames == 1 && cinfo.fp_frames == 1,
	      "first walk with the cache (all misses): the walk without it (%u, %u frames)", n,
	      cn);
	for (unsigned i = 0; i < n; i++)
		hits += unwind_row_cache_get(&cache, m.generation, i ? ips[i] - 1 : ips[i], &row);
	CHECK(hits == n, "each pc of the walk is cached under the list's generation (%u of %u)",
	      hits, n);
	cn = unwind_walk_cached(&regs, &m, &cache, unwind_read_stack_copy, &sc, cips, 16,
				&cinfo);
	CHECK(cn == n && !memcmp(ips, cips, n * sizeof(*ips)) && cinfo.cfi_frames == 1 &&
	      cinfo.fp_frames == 1 && cinfo.stop == UNWIND_STOP_END,
	      "second walk (all hits): the same stack, the same steps");

	/* Another list over the same addresses: its rows, not the cached. */
	unwind_modules_init(&m2);
	unwind_modules_add(&m2, 0x10000, 0x10300, 0, &ut2);
	CHECK(m2.generation != m.generation, "another list, another generation");
	cn = unwind_walk_cached(&regs, &m2, &cache, unwind_read_stack_copy, &sc, cips, 16,
				&cinfo);
	CHECK(cn == 1 && cinfo.stop == UNWIND_STOP_END,
	      "a new list's walk uses its own rows, not those cached under the old (%u)", cn);

	/* A list changed in place (the engine adds a module it saw mapped)
	 * takes a new generation too. */
	gen = m.generation;
	unwind_modules_add(&m, 0x20000, 0x21000, 0, NULL);
	CHECK(m.generation != gen && m.generation != m2.generation,
	      "unwind_modules_add gives the list a new generation");
	CHECK(!unwind_row_cache_get(&cache, m.generation, 0x10010, &row),
	      "... under which nothing is cached yet");

	/* A list zeroed without init: walks work, nothing is cached. */
	unwind_modules_release(&m2);
	memset(&cache, 0, sizeof(cache));
	m2.n = 0;
	m2.generation = 0;
	cn = unwind_walk_cached(&regs, &m2, &cache, unwind_read_stack_copy, &sc, cips, 16,
				&cinfo);
	hits = 0;
	for (unsigned i = 0; i < UNWIND_ROW_CACHE_SLOTS; i++)
		hits += atomic_load(&cache.slots[i].generation) != 0;
	CHECK(cn >= 1 && hits == 0, "generation 0: nothing cached");
	unwind_modules_release(&m);
}

/* This test's own stack from inside qsort's comparator: libc has no frame
 * pointers, so the walk is CFI rows (cached) from the comparator to main. */
static struct unwind_modules self_mods;
static uint64_t q_ips[3][MAX_FRAMES];
static unsigned q_n[3];
static struct unwind_info q_info[3];
static int q_walked;

static __attribute__((noinline)) int cmp_walk(const void *a, const void *b)
{
	if (!q_walked) {
		uint64_t rip, rsp, rbp;
		struct unwind_self_reader r;
		struct unwind_regs regs;

		q_walked = 1;
		__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
				 : "=r"(rip), "=r"(rsp), "=r"(rbp)::"memory");
		regs = (struct unwind_regs){ rip, rsp, rbp };
		/* No shortcut: every read is the system call, whose errno
		 * the reader keeps. */
		unwind_self_reader_init(&r, 0, 0);
		q_n[0] = unwind_walk_ex(&regs, &self_mods, unwind_read_self, &r, q_ips[0],
					MAX_FRAMES, &q_info[0]);
		for (int i = 1; i < 3; i++)
			q_n[i] = unwind_walk_cached(&regs, &self_mods, &cache, unwind_read_self, &r,
						    q_ips[i], MAX_FRAMES, &q_info[i]);
	}
	return *(const int *)a - *(const int *)b;
}

static __attribute__((noinline)) void test_walk_self(void)
{
	struct unwind_cache *tables = unwind_cache_new();
	int v[8] = { 5, 3, 7, 1, 8, 2, 6, 4 };
	int err;

	memset(&cache, 0, sizeof(cache));
	unwind_modules_init(&self_mods);
	err = tables ? unwind_modules_from_maps(&self_mods, tables, 0) : -ENOMEM;
	CHECK(err == 0, "modules from /proc/self/maps (%d)", err);
	qsort(v, 8, sizeof(v[0]), cmp_walk);
	CHECK(q_n[0] > 3 && q_info[0].stop == UNWIND_STOP_END && q_info[0].cfi_frames > 2,
	      "the walk from qsort's comparator is complete, by CFI (%u frames, %u cfi)",
	      q_n[0], q_info[0].cfi_frames);
	for (int i = 1; i < 3; i++)
		CHECK(q_n[i] == q_n[0] && !memcmp(q_ips[i], q_ips[0], q_n[0] * sizeof(uint64_t)) &&
		      q_info[i].stop == q_info[0].stop &&
		      q_info[i].cfi_frames == q_info[0].cfi_frames &&
		      q_info[i].fp_frames == q_info[0].fp_frames,
		      "walk %d with the cache (%s): the walk without it", i,
		      i == 1 ? "misses" : "hits");
	unwind_modules_release(&self_mods);
	unwind_cache_free(tables);
}

/* Writers put pcs that share a few slots, each with its own row; the
 * reader checks that whatever hits is that pc's row. */
#define RACE_PCS 8
#define RACE_ROUNDS 200000
static uint64_t race_pc[RACE_PCS];
static struct cfi_row race_rows[RACE_PCS];

static void *race_writer(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;

	for (unsigned i = 0; i < RACE_ROUNDS; i++, k = (k + 3) % RACE_PCS)
		unwind_row_cache_put(&cache, 42, race_pc[k], &race_rows[k]);
	return NULL;
}

static void test_race(void)
{
	pthread_t w[2];
	unsigned long reads = 0, hits = 0, wrong = 0;
	const struct cfi_row *row;

	memset(&cache, 0, sizeof(cache));
	/* Two slots, four pcs each. */
	race_pc[0] = 0x400000;
	race_pc[1] = 0x500000;
	for (unsigned i = 2; i < RACE_PCS; i++)
		race_pc[i] = colliding_pc(race_pc[i - 2]);
	for (unsigned i = 0; i < 2; i++)
		pthread_create(&w[i], NULL, race_writer, (void *)(uintptr_t)i);
	for (unsigned i = 0; i < 2 * RACE_ROUNDS; i++) {
		unsigned k = i % RACE_PCS;

		reads++;
		if (!unwind_row_cache_get(&cache, 42, race_pc[k], &row))
			continue;
		hits++;
		wrong += row != &race_rows[k];
	}
	for (unsigned i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	CHECK(wrong == 0, "racing writers: no hit gave another pc's row (%lu hits of %lu reads)",
	      hits, reads);
	unwind_row_cache_put(&cache, 42, race_pc[0], &race_rows[0]);
	CHECK(unwind_row_cache_get(&cache, 42, race_pc[0], &row) && row == &race_rows[0],
	      "after the race, every slot is free: a put is seen");
}

int main(void)
{
	test_get_put();
	test_walk_synthetic();
	test_walk_self();
	test_race();
	return test_done();
}
