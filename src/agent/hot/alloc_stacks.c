/* alloc_stacks: what the alloc, heap and lock interposers share — the
 * table of sampled stacks, the live set, the sampling maths. Runs inside
 * interposers on the program's threads: no malloc, no locks, no libm
 * (see alloc.h and docs/memory.md). */
#include "agent/hot/alloc.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "agent/hot/hot.h"
#include "base/hash.h"
#include "unwind/walker.h"

struct mem_state mem = { .gate = MEM_GATE_BOOT, .interval = MEM_DEFAULT_INTERVAL,
			 .lock_interval_ns = MEM_DEFAULT_LOCK_NS,
			 .max_depth = MEM_DEFAULT_DEPTH };
__thread struct mem_thread mem_self __attribute__((tls_model("initial-exec")));
_Atomic uint8_t mem_filter[MEM_FILTER];

void mem_gate_change(unsigned set, unsigned clear)
{
	unsigned g = atomic_load(&mem.gate), want;

	do
		want = ((g | set) & ~clear & MEM_GATE_BITS) | ((g & ~MEM_GATE_BITS) + MEM_GATE_GEN);
	while (!atomic_compare_exchange_weak(&mem.gate, &g, want));
}

/* --- maths ----------------------------------------------------------------- */

/* 2^k for -1022 <= k <= 1023, built from the exponent bits. */
static double pow2i(int k)
{
	union { double d; uint64_t u; } v;

	if (k < -1022)
		return 0;
	v.u = (uint64_t)(k + 1023) << 52;
	return v.d;
}

double mem_one_minus_exp_neg(double x)
{
	double r, e, t;
	int k;

	if (x <= 0)
		return 0;
	if (x > 700)
		return 1;
	if (x < 1e-3) /* no cancellation: the series of 1 - e^-x */
		return x * (1 - x * (0.5 - x * (1.0 / 6 - x / 24)));
	/* e^-x = 2^-k e^-r, r = x - k ln2 in [0, ln2) */
	k = (int)(x * 1.4426950408889634);
	r = x - k * 0.6931471805599453;
	e = 1;
	t = 1;
	for (int i = 1; i <= 14; i++) {
		t *= -r / i;
		e += t;
	}
	return 1 - e * pow2i(-k);
}

/* ln u for 0 < u <= 1: u = m 2^e, m in [1, 2); ln m = 2 atanh(s). */
static double ln(double u)
{
	union { double d; uint64_t u; } v = { .d = u };
	int e = (int)((v.u >> 52) & 0x7ff) - 1023;
	double m, s, s2, sum, term;

	v.u = (v.u & ((1ull << 52) - 1)) | (1023ull << 52);
	m = v.d;
	s = (m - 1) / (m + 1);
	s2 = s * s;
	sum = 0;
	term = s;
	for (int i = 1; i <= 21; i += 2) {
		sum += term / i;
		term *= s2;
	}
	return e * 0.6931471805599453 + 2 * sum;
}

uint64_t mem_rand(uint64_t *rng)
{
	uint64_t x = *rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*rng = x;
	return x * 2685821657736338717ull;
}

void mem_rng_seed(uint64_t *rng)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	*rng = hash_u64((uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^
			(uint64_t)(uintptr_t)rng) | 1;
}

int64_t mem_draw_interval(uint64_t *rng, uint64_t mean)
{
	/* u uniform in (0, 1): 53 random bits, never 0 */
	double u = ((double)(mem_rand(rng) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
	double d = -ln(u) * (double)mean;

	if (d > 9.0e18)
		d = 9.0e18;
	return (int64_t)d + 1;
}

/* --- stacks ---------------------------------------------------------------- */

static bool same_ips(const uint64_t *a, const uint64_t *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/* Finds or adds a stack. A slot being written by another thread is
 * passed over (the stack may then be stored twice; the profile builder
 * merges equal stacks). */
static uint32_t stack_intern(const uint64_t *ips, unsigned n, bool truncated, pid_t tid)
{
	uint64_t h = (hash_bytes(ips, n * sizeof(uint64_t), n) ^ hash_u64((uint64_t)tid)) | 1;
	struct mem_stack *tab = mem.stacks;

	if (!tab)
		return 0;
	for (unsigned i = 0; i < 256; i++) {
		uint32_t id = (uint32_t)((h + i) & (MEM_STACKS - 1));
		struct mem_stack *s = &tab[id];
		uint64_t cur = atomic_load_explicit(&s->hash, memory_order_acquire);

		if (id == 0)
			continue; /* the overflow slot */
		if (cur == 0) {
			uint64_t zero = 0;
			unsigned first, used;

			if (!atomic_compare_exchange_strong_explicit(&s->hash, &zero, h,
								     memory_order_acq_rel,
								     memory_order_acquire)) {
				cur = zero;
				goto compare;
			}
			used = atomic_fetch_add_explicit(&mem.nused, 1, memory_order_relaxed);
			if (mem.used && used < MEM_STACKS) /* one per slot: never more */
				atomic_store_explicit(&mem.used[used], id, memory_order_release);
			first = atomic_fetch_add_explicit(&mem.nips, n, memory_order_relaxed);
			if (first + n > MEM_STACK_IPS || first + n < first) {
				s->n = 0; /* ready stays 0: never matched */
				break;
			}
			for (unsigned k = 0; k < n; k++)
				mem.ips[first + k] = ips[k];
			s->n = n;
			s->first = first;
			s->truncated = truncated;
			s->tid = tid;
			atomic_store_explicit(&s->ready, 1, memory_order_release);
			return id;
		}
compare:
		if (cur == h && atomic_load_explicit(&s->ready, memory_order_acquire) &&
		    s->n == n && s->tid == tid && same_ips(mem.ips + s->first, ips, n))
			return id;
	}
	atomic_fetch_add_explicit(&mem.stats.stack_full, 1, memory_order_relaxed);
	return 0;
}

uint32_t mem_stack_here(void *frame)
{
	const uint64_t *fp = frame;
	uint64_t ips[MEM_MAX_DEPTH];
	struct unwind_self_reader reader;
	struct unwind_regs regs;
	struct unwind_info info;
	unsigned max = mem.max_depth ? mem.max_depth : MEM_DEFAULT_DEPTH, n;
	uint64_t began = hot_clock_ns(CLOCK_MONOTONIC);
	pid_t tid = 0;
	uint32_t id;

	if (max > MEM_MAX_DEPTH)
		max = MEM_MAX_DEPTH;
	/* The interposer's frame: [fp] the caller's rbp, [fp + 8] the return
	 * address, fp + 16 the caller's rsp. Start at the call itself. */
	regs.rbp = fp[0];
	regs.rip = fp[1] - 1;
	regs.rsp = (uint64_t)(uintptr_t)frame + 16;
	if (hot_self.stack_hi && regs.rsp >= hot_self.stack_lo && regs.rsp < hot_self.stack_hi)
		unwind_self_reader_init(&reader, regs.rsp, hot_self.stack_hi);
	else
		unwind_self_reader_init(&reader, 0, 0);
	/* Counted in like a signal handler: the module list we walk with is
	 * freed only when no walker runs (agent_modules_refresh). */
	atomic_fetch_add_explicit(&hot.inflight, 1, memory_order_acq_rel);
	n = unwind_walk_cached(&regs, atomic_load_explicit(&hot.mods, memory_order_acquire),
			       &hot_rows, unwind_read_self, &reader, ips, max, &info);
	atomic_fetch_sub_explicit(&hot.inflight, 1, memory_order_acq_rel);
	if (mem.per_thread)
		tid = hot_self.tid ? hot_self.tid : gettid();
	id = stack_intern(ips, n, info.stop != UNWIND_STOP_END, tid);
	atomic_fetch_add_explicit(&hot.stats.sample_ns, hot_clock_ns(CLOCK_MONOTONIC) - began,
				  memory_order_relaxed);
	return id;
}

/* --- live set -------------------------------------------------------------- */

/* One slot of mem_filter up (delta 1) or down (-1), never past 0 or 255;
 * 255 stays (too many blocks there to count: free looks them up). */
static void filter_add(uint64_t addr, int delta)
{
	_Atomic uint8_t *f = &mem_filter[mem_filter_slot(addr)];
	uint8_t c = atomic_load_explicit(f, memory_order_relaxed);

	while (c != 255 && (delta > 0 || c) &&
	       !atomic_compare_exchange_weak_explicit(f, &c, (uint8_t)(c + delta),
						      memory_order_relaxed, memory_order_relaxed))
		;
}

bool mem_live_insert(uint64_t addr, uint64_t size, uint64_t bytes, uint32_t stack)
{
	uint64_t h = hash_u64(addr);
	struct mem_live *tab = mem.live;

	if (!tab || addr <= MEM_LIVE_TOMB)
		return false;
	for (unsigned i = 0; i < MEM_LIVE_PROBES; i++) {
		struct mem_live *e = &tab[(h + i) & (MEM_LIVE - 1)];
		uint64_t cur = atomic_load_explicit(&e->addr, memory_order_relaxed);

		if (cur != MEM_LIVE_EMPTY && cur != MEM_LIVE_TOMB)
			continue;
		if (!atomic_compare_exchange_strong_explicit(&e->addr, &cur, MEM_LIVE_BUSY,
							     memory_order_acquire,
							     memory_order_relaxed))
			continue;
		e->size = size;
		e->bytes = bytes;
		e->stack = stack;
		filter_add(addr, 1);
		atomic_store_explicit(&e->addr, addr, memory_order_release);
		atomic_fetch_add_explicit(&mem.stats.live_blocks, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&mem.stats.live_bytes, (long)bytes, memory_order_relaxed);
		return true;
	}
	atomic_fetch_add_explicit(&mem.stats.live_full, 1, memory_order_relaxed);
	return false;
}

bool mem_live_remove(uint64_t addr, struct mem_live *ret)
{
	uint64_t h = hash_u64(addr);
	struct mem_live *tab = mem.live;

	if (!tab)
		return false;
	/* The common case: no sampled block has this slot. */
	if (!atomic_load_explicit(&mem_filter[mem_filter_slot(addr)], memory_order_relaxed))
		return false;
	for (unsigned i = 0; i < MEM_LIVE_PROBES; i++) {
		struct mem_live *e = &tab[(h + i) & (MEM_LIVE - 1)];
		uint64_t cur = atomic_load_explicit(&e->addr, memory_order_acquire);

		if (cur == MEM_LIVE_EMPTY)
			return false;
		if (cur != addr)
			continue;
		/* Only the thread freeing addr removes it: the fields are ours. */
		if (ret) {
			ret->size = e->size;
			ret->bytes = e->bytes;
			ret->stack = e->stack;
		}
		if (!atomic_compare_exchange_strong_explicit(&e->addr, &cur, MEM_LIVE_TOMB,
							     memory_order_acq_rel,
							     memory_order_relaxed))
			return false; /* the table was reset under us */
		atomic_fetch_sub_explicit(&mem.stats.live_blocks, 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&mem.stats.live_bytes, (long)e->bytes,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&mem.stats.frees_matched, 1, memory_order_relaxed);
		filter_add(addr, -1); /* never below zero, even across a reset */
		return true;
	}
	return false;
}

/* --- lock waits ------------------------------------------------------------ */

void mem_lock_record(void *frame, uint64_t ns)
{
	uint64_t every = mem.lock_interval_ns, weight = ns, count = MEM_ONE;
	struct mem_thread *t = &mem_self;
	int saved = errno;
	uint32_t id;

	if (hot_self.blocked || !ns)
		goto out;
	if (!t->init) {
		mem_rng_seed(&t->rng);
		t->init = 1;
	}
	/* Shorter than the interval: kept with probability ns / interval,
	 * then standing for interval ns and interval / ns waits, so that
	 * both totals stay unbiased. */
	if (every && ns < every) {
		if (mem_rand(&t->rng) % every >= ns)
			goto out;
		weight = every;
		count = MEM_ONE * every / ns;
	}
	id = mem_stack_here(frame);
	atomic_fetch_add_explicit(&mem.stacks[id].lock_ns, weight, memory_order_relaxed);
	atomic_fetch_add_explicit(&mem.stacks[id].lock_count, count, memory_order_relaxed);
	atomic_fetch_add_explicit(&mem.stats.lock_samples, 1, memory_order_relaxed);
out:
	errno = saved;
}
