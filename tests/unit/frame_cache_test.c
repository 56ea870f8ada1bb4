/* frame_cache_test: each distinct address named once, as profile frames.
 *
 * Addresses of this very process go through a frame cache and, for
 * comparison, straight through proc_syms_lookup_frames: the cache gives
 * the same frames (names, kinds, lines), outermost first; asking again
 * gives the same ids without touching the profile; the same address as
 * a kernel one is another entry; thousands of addresses (past the
 * initial sizes of its tables) all stay right; with SYM_LINES an
 * address inside an inlined function gives several frames, and the
 * slices of such addresses stay apart; the module is interned once. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/frame_cache.h"
#include "test.h"

volatile int sink;

__attribute__((noinline)) int frame_cache_test_target(int x);
__attribute__((noinline)) int frame_cache_test_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

static inline __attribute__((always_inline)) int fc_inlined_leaf(int x)
{
	int y = x * x + 3;

	sink += y;
	sink ^= y >> 2;
	return y;
}

__attribute__((noinline)) int frame_cache_test_outer(int x);
__attribute__((noinline)) int frame_cache_test_outer(int x)
{
	int r = 0;

	for (int i = 0; i < x; i++)
		r += fc_inlined_leaf(i + sink);
	sink = r;
	return r;
}

static int (*volatile keep[])(int) = { frame_cache_test_target,
				       frame_cache_test_outer };

/* Frame ids of addr must name what a direct lookup names. */
static int same_as_lookup(struct proc_syms *ps, const struct profile *p,
			  uint64_t addr, bool kernel, unsigned flags,
			  const uint32_t *ids, unsigned n)
{
	struct symbol_info si[SYM_MAX_FRAMES_PER_ADDR];
	unsigned m = 0;

	if (proc_syms_lookup_frames(ps, addr, kernel, flags, si,
				    SYM_MAX_FRAMES_PER_ADDR, &m) < 0 || m != n)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		const struct frame *f;

		if (ids[i] >= p->nframes)
			return 0;
		f = &p->frames[ids[i]];
		if (strcmp(f->name, si[i].name) || f->kind != si[i].kind ||
		    f->line != si[i].line || !f->file != !si[i].file ||
		    (f->file && strcmp(f->file, si[i].file)) ||
		    !f->module != !si[i].module ||
		    (f->module && strcmp(f->module, si[i].module)))
			return 0;
	}
	return 1;
}

static int has_module(const struct profile *p, const char *path)
{
	int n = 0;

	for (size_t i = 0; i < p->nmodules; i++)
		if (!strcmp(p->modules[i].path, path))
			n++;
	return n;
}

static void test_basic(struct proc_syms *ps)
{
	struct profile *p = profile_new();
	struct frame_cache c;
	uint32_t out[SYM_MAX_FRAMES_PER_ADDR], again[SYM_MAX_FRAMES_PER_ADDR];
	uint64_t addr = (uint64_t)(uintptr_t)keep[0] + 1;
	unsigned n = 0, n2 = 0;
	size_t nframes, nmodules;
	int err;

	frame_cache_init(&c);
	CHECK(c.nkeys == 0 && c.nframes == 0, "init: empty");
	err = frame_cache_get(&c, ps, p, addr, false, 0, out, &n);
	CHECK(err == 0 && n == 1, "one address: one frame (%d, %u)", err, n);
	CHECK(n == 1 && out[0] < p->nframes &&
	      !strcmp(p->frames[out[0]].name, "frame_cache_test_target"),
	      "one address: named");
	CHECK(same_as_lookup(ps, p, addr, false, 0, out, n),
	      "one address: as proc_syms_lookup_frames names it");
	CHECK(n == 1 && p->frames[out[0]].module &&
	      has_module(p, p->frames[out[0]].module) == 1,
	      "one address: its module interned");
	nframes = p->nframes;
	nmodules = p->nmodules;

	memset(again, 0xff, sizeof(again));
	err = frame_cache_get(&c, ps, p, addr, false, 0, again, &n2);
	CHECK(err == 0 && n2 == n && again[0] == out[0],
	      "again: the same frame id");
	CHECK(p->nframes == nframes && p->nmodules == nmodules,
	      "again: the profile untouched");
	CHECK_UINT(c.nkeys, ==, 1, "again: one entry");

	/* Another address in the same function: another entry, same frame. */
	err = frame_cache_get(&c, ps, p, addr + 1, false, 0, again, &n2);
	CHECK(err == 0 && n2 == 1 && again[0] == out[0] && c.nkeys == 2,
	      "next byte: another entry, the same frame");

	/* The same number as a kernel address: another entry. */
	err = frame_cache_get(&c, ps, p, addr, true, 0, again, &n2);
	CHECK(err == 0 && n2 >= 1 && c.nkeys == 3, "kernel: another entry");
	CHECK(n2 >= 1 && again[0] != out[0],
	      "kernel: not the user frame (%s)",
	      again[0] < p->nframes ? p->frames[again[0]].name : "?");
	CHECK(same_as_lookup(ps, p, addr, true, 0, again, n2),
	      "kernel: as proc_syms_lookup_frames names it");
	err = frame_cache_get(&c, ps, p, addr, false, 0, again, &n2);
	CHECK(err == 0 && n2 == 1 && again[0] == out[0] && c.nkeys == 3,
	      "user again after kernel: the user frame");

	/* An address nothing maps: still a frame, and cached. */
	err = frame_cache_get(&c, ps, p, 0x10, false, 0, out, &n);
	CHECK(err == 0 && n == 1 && out[0] < p->nframes,
	      "unmapped: a frame (%s)",
	      n && out[0] < p->nframes ? p->frames[out[0]].name : "?");
	nframes = p->nframes;
	err = frame_cache_get(&c, ps, p, 0x10, false, 0, again, &n2);
	CHECK(err == 0 && n2 == 1 && again[0] == out[0] && p->nframes == nframes &&
	      c.nkeys == 4, "unmapped: cached");

	frame_cache_release(&c);
	CHECK(c.nkeys == 0 && c.nframes == 0 && !c.keys && !c.frames,
	      "release: empty");
	frame_cache_init(&c);
	err = frame_cache_get(&c, ps, p, addr, false, 0, again, &n2);
	CHECK(err == 0 && n2 == 1 &&
	      !strcmp(p->frames[again[0]].name, "frame_cache_test_target"),
	      "a new cache on the same profile works");
	frame_cache_release(&c);
	profile_free(p);
}

/* Thousands of addresses: every byte from the start of this program's
 * functions on, user and kernel. */
static void test_many(struct proc_syms *ps)
{
	enum { N = 6000 };
	struct profile *p = profile_new();
	struct frame_cache c;
	uint32_t (*ids)[2] = calloc(N, sizeof(*ids));
	uint64_t base = (uint64_t)(uintptr_t)keep[0] & ~0xfffull;
	uint32_t out[SYM_MAX_FRAMES_PER_ADDR];
	size_t bad_first = 0, bad_same = 0, bad_again = 0, nframes;
	unsigned n;
	int err = 0;

	if (!ids)
		abort();
	frame_cache_init(&c);
	for (unsigned i = 0; i < N; i++) {
		uint64_t addr = base + i;

		if (frame_cache_get(&c, ps, p, addr, false, 0, out, &n) < 0 ||
		    n != 1)
			err = 1;
		ids[i][0] = out[0];
		if (!same_as_lookup(ps, p, addr, false, 0, out, n))
			bad_first++;
	}
	CHECK(!err, "many: %d addresses, one frame each", N);
	CHECK_UINT(bad_first, ==, 0, "many: each named as a direct lookup names it");
	CHECK_UINT(c.nkeys, ==, N, "many: one entry each");
	CHECK_UINT(c.nframes, ==, N, "many: one frame id each in the cache");
	CHECK_UINT(p->nframes, <, N / 2,
		   "many: the profile interns each function once (%zu frames)",
		   p->nframes);
	nframes = p->nframes;

	/* Kernel twins of the same numbers: N more entries. */
	for (unsigned i = 0; i < N; i++) {
		if (frame_cache_get(&c, ps, p, base + i, true, 0, out, &n) < 0 ||
		    n < 1)
			err = 1;
		ids[i][1] = out[0];
	}
	CHECK(!err, "many: kernel twins");
	CHECK_UINT(c.nkeys, ==, 2 * N, "many: kernel twins are entries of their own");

	nframes = p->nframes;
	for (unsigned i = N; i-- > 0;) {
		uint32_t k[SYM_MAX_FRAMES_PER_ADDR];

		if (frame_cache_get(&c, ps, p, base + i, false, 0, out, &n) < 0 ||
		    n != 1 || out[0] != ids[i][0])
			bad_again++;
		if (frame_cache_get(&c, ps, p, base + i, true, 0, k, &n) < 0 ||
		    n < 1 || k[0] != ids[i][1])
			bad_again++;
		if (!same_as_lookup(ps, p, base + i, false, 0, out, 1))
			bad_same++;
	}
	CHECK_UINT(bad_again, ==, 0, "many: asked again backwards, the same ids");
	CHECK_UINT(bad_same, ==, 0, "many: still named right");
	CHECK_UINT(p->nframes, ==, nframes, "many: no new frames the second time");
	CHECK_UINT(c.nkeys, ==, 2 * N, "many: no new entries");
	CHECK(c.keys_cap >= c.nkeys && c.frames_cap >= c.nframes,
	      "many: tables grew to hold them");
	frame_cache_release(&c);
	profile_free(p);
	free(ids);
}

/* SYM_LINES: 5000 bytes from the start of this program's code, then the
 * bytes of frame_cache_test_outer, some in the inlined fc_inlined_leaf:
 * slices of one and several frames, past the initial table sizes, must
 * not mix. */
static void test_lines(struct proc_syms *ps)
{
	enum { FILL = 5000, SPAN = 512, N = FILL + SPAN };
	struct profile *p = profile_new();
	struct frame_cache c;
	uint64_t *addrs = calloc(N, sizeof(*addrs));
	uint32_t (*first)[SYM_MAX_FRAMES_PER_ADDR] = calloc(N, sizeof(*first));
	unsigned *nfirst = calloc(N, sizeof(*nfirst));
	uint32_t out[SYM_MAX_FRAMES_PER_ADDR];
	unsigned n, multi = 0, leaf_ok = 0, bad = 0, bad_again = 0;
	size_t nframes, total = 0;

	if (!addrs || !first || !nfirst)
		abort();
	/* Distinct addresses: the fill skips the span of outer. */
	for (unsigned i = 0; i < SPAN; i++)
		addrs[FILL + i] = (uint64_t)(uintptr_t)keep[1] + i;
	for (uint64_t i = 0, a = (uint64_t)(uintptr_t)keep[0] & ~0xfffull;
	     i < FILL; a++)
		if (a < addrs[FILL] || a >= addrs[FILL] + SPAN)
			addrs[i++] = a;
	frame_cache_init(&c);
	for (unsigned i = 0; i < N; i++) {
		if (frame_cache_get(&c, ps, p, addrs[i], false, SYM_LINES,
				    first[i], &nfirst[i]) < 0 || nfirst[i] < 1 ||
		    nfirst[i] > SYM_MAX_FRAMES_PER_ADDR) {
			bad++;
			nfirst[i] = 0;
			continue;
		}
		total += nfirst[i];
		if (!same_as_lookup(ps, p, addrs[i], false, SYM_LINES, first[i],
				    nfirst[i]))
			bad++;
		if (i >= FILL && nfirst[i] >= 2) {
			const struct frame *o = &p->frames[first[i][0]];
			const struct frame *l = &p->frames[first[i][nfirst[i] - 1]];

			multi++;
			if (!strcmp(o->name, "frame_cache_test_outer") &&
			    !strcmp(l->name, "fc_inlined_leaf") &&
			    l->kind == FRAME_INLINED && l->line > 0)
				leaf_ok++;
		}
	}
	CHECK_UINT(bad, ==, 0, "lines: every address as a direct lookup names it");
	CHECK_UINT(multi, >, 0, "lines: addresses with inlined frames (%u)", multi);
	CHECK_UINT(leaf_ok, ==, multi,
		   "lines: outer first, the inlined leaf last");
	CHECK_UINT(c.nframes, ==, total, "lines: the cache holds every slice");
	CHECK_UINT(c.nframes, >, 4096, "lines: more frame ids than at first");
	nframes = p->nframes;
	for (unsigned i = N; i-- > 0;) {
		if (frame_cache_get(&c, ps, p, addrs[i], false, SYM_LINES, out,
				    &n) < 0 || n != nfirst[i] ||
		    memcmp(out, first[i], n * sizeof(*out)))
			bad_again++;
	}
	CHECK_UINT(bad_again, ==, 0, "lines: asked again, the same slices");
	CHECK_UINT(p->nframes, ==, nframes, "lines: no new frames");
	CHECK_UINT(c.nkeys, ==, N, "lines: one entry per address");
	frame_cache_release(&c);
	profile_free(p);
	free(addrs);
	free(first);
	free(nfirst);
}

int main(void)
{
	struct symbolizer *s = symbolizer_new();
	struct proc_syms *ps = NULL;
	struct frame_cache c;
	int err;

	CHECK(s != NULL, "symbolizer");
	if (!s)
		return test_done();
	err = symbolizer_open_process(s, getpid(), false, &ps, NULL);
	CHECK(err == 0 && ps, "open this process (%d)", err);
	if (!ps)
		return test_done();
	frame_cache_init(&c);
	frame_cache_release(&c);
	CHECK(c.nkeys == 0 && c.index.count == 0, "release of an unused cache");
	test_basic(ps);
	test_many(ps);
	test_lines(ps);
	proc_syms_free(ps);
	symbolizer_free(s);
	(void)keep;
	return test_done();
}
