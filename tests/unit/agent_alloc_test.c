/* agent_alloc: the sampling maths of the alloc/heap/lock interposers
 * (hot/alloc_stacks.c) against libm, the exponential draw's mean, the
 * unbiasedness of the S/(1-exp(-S/T)) weights in a simulation, and the
 * live set (insert, remove, the counting filter). This binary links the
 * agent objects, so its own mallocs go through the interposers too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/hot/alloc.h"
#include "test.h"

static void test_maths(void)
{
	double worst = 0;
	uint64_t rng;
	double sum = 0;
	int n = 200000;

	for (double x = 1e-9; x < 50; x *= 1.07) {
		double want = -expm1(-x), got = mem_one_minus_exp_neg(x);
		double rel = fabs(got - want) / want;

		if (rel > worst)
			worst = rel;
	}
	CHECK(worst < 1e-9, "1 - exp(-x) within 1e-9 of libm over 1e-9..50 (worst %.2g)", worst);
	CHECK(mem_one_minus_exp_neg(0) == 0 && mem_one_minus_exp_neg(1000) == 1, "the ends");
	mem_rng_seed(&rng);
	for (int i = 0; i < n; i++)
		sum += (double)mem_draw_interval(&rng, 524288);
	CHECK(fabs(sum / n / 524288 - 1) < 0.01, "exponential draws average the mean (%.4f x)",
	      sum / n / 524288);
}

/* The sampler as alloc.c runs it, on a stream of known sizes. */
static void test_unbiased(void)
{
	static const size_t sizes[] = { 17, 4099, 65537, 1048583 };
	double est_bytes[4] = { 0 }, est_objs[4] = { 0 }, true_bytes[4] = { 0 };
	uint64_t rng, t = 4096;
	int64_t left;
	unsigned long objs[4] = { 0 };

	mem_rng_seed(&rng);
	left = mem_draw_interval(&rng, t);
	for (int i = 0; i < 400000; i++) {
		int k = i % 7 == 0 ? 3 : i % 5 == 0 ? 2 : i % 2 ? 1 : 0;
		double q;

		true_bytes[k] += (double)sizes[k];
		objs[k]++;
		left -= (int64_t)sizes[k];
		if (left > 0)
			continue;
		left = mem_draw_interval(&rng, t);
		q = mem_one_minus_exp_neg((double)sizes[k] / (double)t);
		est_bytes[k] += (double)sizes[k] / q;
		est_objs[k] += 1 / q;
	}
	for (int k = 0; k < 4; k++) {
		double eb = est_bytes[k] / true_bytes[k], eo = est_objs[k] / (double)objs[k];
		/* 4 standard errors of a Poisson count of expected samples */
		double tol = fmax(0.02, 4 / sqrt(true_bytes[k] / (double)t));

		CHECK(fabs(eb - 1) < tol && fabs(eo - 1) < tol,
		      "size %zu: estimated bytes x%.3f, objects x%.3f of the truth (+-%.3f)",
		      sizes[k], eb, eo, tol);
	}
}

static void test_live(void)
{
	struct mem_live got;
	static struct mem_live *live;

	live = calloc(MEM_LIVE, sizeof(*live));
	mem.live = live;
	CHECK(mem_live_insert(0x1000, 4099, 8000, 7), "insert");
	CHECK(!mem_live_remove(0x2000, NULL), "an address never inserted is not found");
	CHECK(mem_live_remove(0x1000, &got) && got.size == 4099 && got.bytes == 8000 &&
	      got.stack == 7, "remove returns what was inserted");
	CHECK(!mem_live_remove(0x1000, NULL), "and only once");
	for (uint64_t a = 1; a <= 5000; a++)
		mem_live_insert(a << 12, a, a, 1);
	CHECK(atomic_load(&mem.stats.live_blocks) == 5000, "5000 live blocks (%ld)",
	      atomic_load(&mem.stats.live_blocks));
	for (uint64_t a = 1; a <= 5000; a += 2)
		mem_live_remove(a << 12, NULL);
	CHECK(atomic_load(&mem.stats.live_blocks) == 2500, "2500 after freeing half");
	mem.live = NULL;
}

int main(void)
{
	void *p = malloc(100); /* through the interposer: resolves and forwards */

	CHECK(p != NULL, "malloc works through the interposer");
	free(p);
	test_maths();
	test_unbiased();
	test_live();
	return test_done();
}
