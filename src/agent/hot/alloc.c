/* alloc: the malloc family, interposed. Each entry point forwards to the
 * real allocator (whatever dlsym(RTLD_NEXT) finds: glibc, or jemalloc,
 * tcmalloc, mimalloc loaded by the program) and, while alloc or heap
 * profiling is on, samples by bytes: a per-thread countdown drawn from an
 * exponential distribution with mean mem.interval; the allocation that
 * takes it to zero or below is sampled and stands for S / (1 - e^(-S/T))
 * bytes and 1 / (1 - e^(-S/T)) objects (docs/memory.md). With heap on,
 * sampled blocks enter the live set and leave it when freed or moved.
 *
 * Re-entry: mem_self.busy is set while we are inside the real allocator,
 * so an entry point it calls itself (valloc -> memalign, ...) forwards
 * without counting again; mem_self.fast is 0 meanwhile, so that malloc
 * and calloc take their slow path, which sees busy. */
#include "agent/hot/alloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/hot/hot.h"

#define EXPORT __attribute__((visibility("default")))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define SLOW __attribute__((noinline, cold))

/* The bits that take an entry point off its fast path, and those that
 * make the slow path sample. */
#define G_ALLOC MEM_NEEDS_ALLOC
#define G_FREE MEM_NEEDS_FREE
#define G_REALLOC MEM_NEEDS_REALLOC
#define G_SAMPLE (MEM_GATE_ALLOC | MEM_GATE_HEAP)
#define PAGE 4096 /* x86-64, as the walker; valloc fallbacks only */

struct mem_real mem_real;

void mem_boot(void)
{
	struct mem_thread *t = &mem_self;
	int saved = errno;

	if (t->in_boot)
		return;
	t->in_boot = 1;
	for (unsigned i = 0; i < mem_nhooks; i++)
		if (!__atomic_load_n(mem_hooks[i].real, __ATOMIC_ACQUIRE))
			__atomic_store_n(mem_hooks[i].real, dlsym(RTLD_NEXT, mem_hooks[i].name),
					 __ATOMIC_RELEASE);
	t->in_boot = 0;
	if (mem_real.malloc && mem_real.free && mem_real.calloc && mem_real.realloc)
		atomic_fetch_and_explicit(&mem.gate, ~(unsigned)MEM_GATE_BOOT,
					  memory_order_release);
	errno = saved;
}

/* A sanitizer build whose runtime intercepts the malloc family
 * (NPROF_NO_INTERPOSE, the TSan one) has none of what follows: the pool,
 * the sampling and the entry points. */
#ifndef NPROF_NO_INTERPOSE
static inline unsigned gate(void)
{
	return atomic_load_explicit(&mem.gate, memory_order_relaxed);
}

/* The bits that stop a thread from counting inline whatever it is doing. */
#define G_UNSTEADY (MEM_GATE_BOOT | MEM_GATE_PROBE)

/* --- the bootstrap pool ------------------------------------------------------
 * dlsym may allocate (its error state) before the real allocator is
 * known: those few blocks come from here and are never freed. Each block
 * has a 16-byte header holding its size. */
#define POOL_BYTES (1u << 20)
static alignas(64) unsigned char pool[POOL_BYTES];
static atomic_size_t pool_used;

static bool in_pool(const void *p)
{
	return (const unsigned char *)p >= pool && (const unsigned char *)p < pool + POOL_BYTES;
}

static void *pool_alloc(size_t n, size_t align)
{
	size_t need, off, start;

	if (align < 16)
		align = 16;
	if (n > POOL_BYTES || align > 4096)
		goto full;
	need = n + 16 + align;
	off = atomic_fetch_add_explicit(&pool_used, need, memory_order_relaxed);
	if (off + need > POOL_BYTES)
		goto full;
	start = (off + 16 + align - 1) & ~(align - 1);
	*(size_t *)(void *)(pool + start - 16) = n;
	atomic_fetch_add_explicit(&mem.stats.pool_bytes, n, memory_order_relaxed);
	/* Before the block is out: whoever frees it must look. */
	if (!(gate() & MEM_GATE_POOL))
		atomic_fetch_or_explicit(&mem.gate, MEM_GATE_POOL, memory_order_seq_cst);
	return pool + start; /* .bss: already zero */
full:
	atomic_fetch_add_explicit(&mem.stats.pool_failed, 1, memory_order_relaxed);
	errno = ENOMEM;
	return NULL;
}

static size_t pool_size(const void *p)
{
	return *(const size_t *)(const void *)((const unsigned char *)p - 16);
}

/* True when the caller must serve itself from the pool: we are inside
 * dlsym, or nothing could be resolved. */
static bool booting(void)
{
	if (!(gate() & MEM_GATE_BOOT))
		return false;
	mem_boot();
	return mem_self.in_boot || !mem_real.malloc;
}

/* --- sampling ------------------------------------------------------------------ */

/* A new block p of size n, made by the interposer whose frame is frame,
 * with the gate g (which has ALLOC or HEAP). Called with busy set. */
static void account(void *p, size_t n, void *frame, unsigned g)
{
	struct mem_thread *t = &mem_self;
	unsigned steady = g & ~(unsigned)G_UNSTEADY;
	double q;
	uint64_t bytes, objects, mean = mem.interval;
	uint32_t id;
	int saved;

	if (!p || !n || hot_self.blocked)
		return;
	/* First time, or the gate changed since this thread's countdown was
	 * drawn (a session or enable, maybe with another interval): what is
	 * left of a draw for another mean would bias the estimates (a
	 * countdown drawn for 64 MiB, kept at 32 KiB, skips ~64 MiB), so
	 * draw afresh; this allocation is then sampled with p(n) as any.
	 * (For the same mean the draw changes nothing: memoryless.) */
	if (t->drawn != steady) {
		saved = errno;
		if (!t->init) {
			mem_rng_seed(&t->rng);
			t->init = 1;
		}
		t->drawn = steady;
		t->left = mem_draw_interval(&t->rng, mean);
		errno = saved;
	}
	/* As the fast path does (unsigned: left is positive here, and an
	 * n past INT64_MAX ends the countdown). */
	if ((uint64_t)t->left > n) {
		t->left -= (int64_t)n;
		return;
	}
	saved = errno;
	t->left = mem_draw_interval(&t->rng, mean);
	q = mem_one_minus_exp_neg((double)n / (double)mean);
	if (q < 1e-300)
		q = 1e-300;
	bytes = (uint64_t)((double)n / q + 0.5);
	objects = (uint64_t)((double)MEM_ONE / q + 0.5);
	id = mem_stack_here(frame);
	atomic_fetch_add_explicit(&mem.stats.samples, 1, memory_order_relaxed);
	if (g & MEM_GATE_ALLOC) {
		atomic_fetch_add_explicit(&mem.stacks[id].alloc_bytes, bytes, memory_order_relaxed);
		atomic_fetch_add_explicit(&mem.stacks[id].alloc_objects, objects,
					  memory_order_relaxed);
	}
	if (g & MEM_GATE_HEAP) {
		atomic_fetch_add_explicit(&mem.stacks[id].heap_bytes, bytes, memory_order_relaxed);
		atomic_fetch_add_explicit(&mem.stacks[id].heap_objects, objects,
					  memory_order_relaxed);
		mem_live_insert((uint64_t)(uintptr_t)p, n, bytes, id);
	}
	errno = saved;
}

/* A slow path that set busy is done: malloc and calloc may count inline
 * again, under gate g, if this thread's countdown was drawn under it and
 * nothing else needs the slow path. */
static void done(unsigned g)
{
	struct mem_thread *t = &mem_self;

	t->busy = 0;
	if (!(g & G_UNSTEADY) && t->drawn == g && !hot_self.blocked)
		t->fast = g;
}

/* A slow path enters the real allocator: nothing counted inline until
 * done(). */
static void enter(void)
{
	mem_self.busy = 1;
	mem_self.fast = 0;
}

/* Takes p out of the live set before it goes back to the allocator (after,
 * another thread could be given the same address and sample it). */
static bool forget(void *p, struct mem_live *ret)
{
	int saved;
	bool found;

	if (!p)
		return false;
	saved = errno;
	found = mem_live_remove((uint64_t)(uintptr_t)p, ret);
	errno = saved;
	return found;
}

/* --- the entry points ------------------------------------------------------------
 * Each: one test of the gate, then the real function. The slow path gets
 * the entry point's own frame so the stack starts at its caller. */

SLOW static void *malloc_slow(size_t n, void *frame)
{
	unsigned g;
	void *p;

	if (booting())
		return pool_alloc(n, 16);
	g = gate();
	if (UNLIKELY(g & MEM_GATE_PROBE) && mem_self.probing) {
		mem_self.probe_hit = 1;
		return mem_real.malloc(n);
	}
	if (mem_self.busy || !(g & G_SAMPLE))
		return mem_real.malloc(n);
	enter();
	p = mem_real.malloc(n);
	account(p, n, frame, g);
	done(g);
	return p;
}

/* With alloc or heap on, most allocations only shorten this thread's
 * countdown: done here, inline, so that only the sampled few (and the
 * first after a gate change, the busy, the agent's threads, booting or
 * probing: mem_self.fast says) pay for the call into the slow path,
 * which does the same in account(). One compare of a thread-local word
 * with the gate already loaded, one of the countdown; unsigned, as
 * account's: left is positive whenever fast is set. */
static inline bool counted_down(unsigned g, size_t n)
{
	struct mem_thread *t = &mem_self;
	uint64_t left = (uint64_t)t->left;

	if (UNLIKELY(t->fast != g) || UNLIKELY(left <= n))
		return false;
	t->left = (int64_t)(left - n);
	return true;
}

EXPORT void *malloc(size_t n)
{
	unsigned g = gate();

	if (LIKELY(!(g & G_ALLOC)) || LIKELY(counted_down(g, n)))
		return mem_real.malloc(n);
	return malloc_slow(n, __builtin_frame_address(0));
}

/* What mem_hook_route gives the program's PLT slots of malloc while
 * alloc or heap is on: the same as malloc, the countdown tested first
 * (fast equals the gate only when it has a sampling bit), then nothing
 * on. The exported malloc tests nothing on first: calls through a GOT
 * slot or a kept pointer meet it whatever is on, and mostly nothing is. */
static void *malloc_on(size_t n)
{
	unsigned g = gate();

	if (LIKELY(counted_down(g, n)) || !(g & G_ALLOC))
		return mem_real.malloc(n);
	return malloc_slow(n, __builtin_frame_address(0));
}

SLOW static void *calloc_slow(size_t k, size_t n, void *frame)
{
	unsigned g;
	size_t total;
	void *p;

	if (booting()) {
		if (__builtin_mul_overflow(k, n, &total)) {
			errno = ENOMEM;
			return NULL;
		}
		return pool_alloc(total, 16);
	}
	g = gate();
	if (mem_self.busy || !(g & G_SAMPLE))
		return mem_real.calloc(k, n);
	enter();
	p = mem_real.calloc(k, n);
	if (!__builtin_mul_overflow(k, n, &total))
		account(p, total, frame, g);
	done(g);
	return p;
}

EXPORT void *calloc(size_t k, size_t n)
{
	unsigned g = gate();
	size_t total;

	if (LIKELY(!(g & G_ALLOC)) ||
	    (!__builtin_mul_overflow(k, n, &total) && LIKELY(counted_down(g, total))))
		return mem_real.calloc(k, n);
	return calloc_slow(k, n, __builtin_frame_address(0));
}

/* calloc's, as malloc_on. */
static void *calloc_on(size_t k, size_t n)
{
	unsigned g = gate();
	size_t total;

	if ((!__builtin_mul_overflow(k, n, &total) && LIKELY(counted_down(g, total))) ||
	    !(g & G_ALLOC))
		return mem_real.calloc(k, n);
	return calloc_slow(k, n, __builtin_frame_address(0));
}

SLOW static void free_slow(void *p)
{
	if (in_pool(p))
		return; /* bootstrap blocks are never given back */
	if (gate() & MEM_GATE_BOOT) {
		mem_boot();
		if (!mem_real.free)
			return;
	}
	if (UNLIKELY(gate() & MEM_GATE_PROBE) && mem_self.probing)
		mem_self.probe_hit = 1;
	if (gate() & MEM_GATE_HEAP)
		forget(p, NULL);
	mem_real.free(p);
}

/* With heap on, a block that was not sampled (nearly all) is told by
 * one byte of mem_filter, read inline: the live set is looked up in the
 * slow path only when that byte says a sampled block may be there. */
EXPORT void free(void *p)
{
	unsigned g = gate();

	if (LIKELY(!(g & G_FREE)) ||
	    (LIKELY(!(g & (G_FREE & ~MEM_GATE_HEAP))) &&
	     !atomic_load_explicit(&mem_filter[mem_filter_slot((uint64_t)(uintptr_t)p)],
				   memory_order_relaxed)))
		return mem_real.free(p);
	free_slow(p);
}

/* realloc and reallocarray: the old block leaves the live set; the new
 * one is sampled like a new allocation of its size. A failed call leaves
 * the old block where it was. */
static void *realloc_common(void *p, size_t n, void *frame, void *(*real)(void *, size_t))
{
	struct mem_live old;
	bool moved = false;
	unsigned g = gate();
	void *q;

	if (mem_self.busy || !(g & G_SAMPLE))
		return real(p, n);
	enter();
	if (g & MEM_GATE_HEAP)
		moved = forget(p, &old);
	q = real(p, n);
	if (!q && n && moved)
		mem_live_insert((uint64_t)(uintptr_t)p, old.size, old.bytes, old.stack);
	else
		account(q, n, frame, g);
	done(g);
	return q;
}

static void *pool_realloc(void *p, size_t n)
{
	void *q = mem_real.malloc(n);
	size_t old = pool_size(p);

	if (q)
		memcpy(q, p, old < n ? old : n);
	return q;
}

SLOW static void *realloc_slow(void *p, size_t n, void *frame)
{
	if (booting()) {
		void *q = pool_alloc(n, 16);

		if (q && p)
			memcpy(q, p, pool_size(p) < n ? pool_size(p) : n);
		return q;
	}
	if (in_pool(p))
		return pool_realloc(p, n);
	return realloc_common(p, n, frame, mem_real.realloc);
}

EXPORT void *realloc(void *p, size_t n)
{
	if (LIKELY(!(gate() & G_REALLOC)))
		return mem_real.realloc(p, n);
	return realloc_slow(p, n, __builtin_frame_address(0));
}

/* An allocator without reallocarray: the overflow check, then realloc. */
static void *reallocarray_by_realloc(void *p, size_t k, size_t n)
{
	size_t total;

	if (__builtin_mul_overflow(k, n, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return mem_real.realloc(p, total);
}

SLOW static void *reallocarray_slow(void *p, size_t k, size_t n, void *frame)
{
	size_t total;
	struct mem_live old;
	bool moved = false;
	unsigned g;
	void *q;

	if (__builtin_mul_overflow(k, n, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if (booting() || in_pool(p))
		return realloc_slow(p, total, frame);
	g = gate();
	if (mem_self.busy || !(g & G_SAMPLE))
		return mem_real.reallocarray ? mem_real.reallocarray(p, k, n)
					     : reallocarray_by_realloc(p, k, n);
	enter();
	if (g & MEM_GATE_HEAP)
		moved = forget(p, &old);
	q = mem_real.reallocarray ? mem_real.reallocarray(p, k, n)
				  : reallocarray_by_realloc(p, k, n);
	if (!q && total && moved)
		mem_live_insert((uint64_t)(uintptr_t)p, old.size, old.bytes, old.stack);
	else
		account(q, total, frame, g);
	done(g);
	return q;
}

EXPORT void *reallocarray(void *p, size_t k, size_t n)
{
	if (LIKELY(!(gate() & G_REALLOC)) && mem_real.reallocarray)
		return mem_real.reallocarray(p, k, n);
	return reallocarray_slow(p, k, n, __builtin_frame_address(0));
}

/* The aligned family: one slow path, told which function to call. */
enum aligned_kind { A_POSIX, A_ALIGNED, A_MEMALIGN, A_VALLOC, A_PVALLOC };

static void *aligned_real(enum aligned_kind kind, size_t align, size_t n, int *ret_err)
{
	void *p = NULL;

	switch (kind) {
	case A_POSIX:
		*ret_err = mem_real.posix_memalign(&p, align, n);
		return *ret_err ? NULL : p;
	case A_ALIGNED:
		return mem_real.aligned_alloc(align, n);
	case A_MEMALIGN:
		return mem_real.memalign(align, n);
	case A_VALLOC:
		return mem_real.valloc ? mem_real.valloc(n)
				       : mem_real.memalign(PAGE, n);
	case A_PVALLOC:
		return mem_real.pvalloc ? mem_real.pvalloc(n)
					: mem_real.memalign(PAGE, (n + PAGE - 1) & ~(size_t)(PAGE - 1));
	}
	return NULL;
}

SLOW static void *aligned_slow(enum aligned_kind kind, size_t align, size_t n, int *ret_err,
			       void *frame)
{
	unsigned g;
	void *p;

	*ret_err = 0;
	if (booting()) {
		if (kind == A_VALLOC || kind == A_PVALLOC)
			align = PAGE;
		p = pool_alloc(n, align);
		if (!p)
			*ret_err = ENOMEM;
		return p;
	}
	g = gate();
	if (mem_self.busy || !(g & G_SAMPLE))
		return aligned_real(kind, align, n, ret_err);
	enter();
	p = aligned_real(kind, align, n, ret_err);
	account(p, n, frame, g);
	done(g);
	return p;
}

EXPORT int posix_memalign(void **ret, size_t align, size_t n)
{
	int err = 0;
	void *p;

	if (LIKELY(!(gate() & G_ALLOC)))
		return mem_real.posix_memalign(ret, align, n);
	p = aligned_slow(A_POSIX, align, n, &err, __builtin_frame_address(0));
	if (!err)
		*ret = p;
	return err;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	int err;

	if (LIKELY(!(gate() & G_ALLOC)))
		return mem_real.aligned_alloc(align, n);
	return aligned_slow(A_ALIGNED, align, n, &err, __builtin_frame_address(0));
}

EXPORT void *memalign(size_t align, size_t n)
{
	int err;

	if (LIKELY(!(gate() & G_ALLOC)))
		return mem_real.memalign(align, n);
	return aligned_slow(A_MEMALIGN, align, n, &err, __builtin_frame_address(0));
}

EXPORT void *valloc(size_t n)
{
	int err;

	if (LIKELY(!(gate() & G_ALLOC)) && mem_real.valloc)
		return mem_real.valloc(n);
	return aligned_slow(A_VALLOC, 0, n, &err, __builtin_frame_address(0));
}

EXPORT void *pvalloc(size_t n)
{
	int err;

	if (LIKELY(!(gate() & G_ALLOC)) && mem_real.pvalloc)
		return mem_real.pvalloc(n);
	return aligned_slow(A_PVALLOC, 0, n, &err, __builtin_frame_address(0));
}

/* Interposed for the pool's blocks only: the rest are the allocator's. */
EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (in_pool(p))
		return pool_size(p);
	if (UNLIKELY(gate() & MEM_GATE_BOOT))
		mem_boot();
	return mem_real.malloc_usable_size ? mem_real.malloc_usable_size(p) : 0;
}

/* The agent's own definitions, by hidden aliases: see MEM_OWN. */
MEM_DEFINE_OWN(malloc);
MEM_DEFINE_OWN(calloc);
MEM_DEFINE_OWN(realloc);
MEM_DEFINE_OWN(reallocarray);
MEM_DEFINE_OWN(free);
MEM_DEFINE_OWN(posix_memalign);
MEM_DEFINE_OWN(aligned_alloc);
MEM_DEFINE_OWN(memalign);
MEM_DEFINE_OWN(valloc);
MEM_DEFINE_OWN(pvalloc);
MEM_DEFINE_OWN(malloc_usable_size);
#undef OWN
#define OWNED(name) (void *)&own_##name
#define ON(fn) (void *)&fn
#else
#define OWNED(name) NULL
#define ON(fn) NULL
#endif
#define ALLOC_ON(field, name, needs, on) \
	{ #name, OWNED(name), (void **)&mem_real.field, true, needs, on }
#define ALLOC(field, name, needs) ALLOC_ON(field, name, needs, OWNED(name))
#define LOCK(field, name) \
	{ #name, OWNED(name), (void **)&mem_real.field, false, MEM_NEEDS_LOCK, OWNED(name) }
#define PLAIN(field, name) { #name, NULL, (void **)&mem_real.field, false, 0, NULL }

/* Each entry point's `needs` are the bits its fast path tests above. */
const struct mem_hook mem_hooks[] = {
	ALLOC_ON(malloc, malloc, MEM_NEEDS_ALLOC, ON(malloc_on)),
	ALLOC_ON(calloc, calloc, MEM_NEEDS_ALLOC, ON(calloc_on)),
	ALLOC(realloc, realloc, MEM_NEEDS_REALLOC),
	ALLOC(reallocarray, reallocarray, MEM_NEEDS_REALLOC),
	ALLOC(free, free, MEM_NEEDS_FREE),
	ALLOC(posix_memalign, posix_memalign, MEM_NEEDS_ALLOC),
	ALLOC(aligned_alloc, aligned_alloc, MEM_NEEDS_ALLOC),
	ALLOC(memalign, memalign, MEM_NEEDS_ALLOC),
	ALLOC(valloc, valloc, MEM_NEEDS_ALLOC),
	ALLOC(pvalloc, pvalloc, MEM_NEEDS_ALLOC),
	ALLOC(malloc_usable_size, malloc_usable_size, MEM_NEEDS_POOL),
	LOCK(mutex_lock, pthread_mutex_lock),
	PLAIN(mutex_trylock, pthread_mutex_trylock),
	LOCK(mutex_timedlock, pthread_mutex_timedlock),
	LOCK(mutex_clocklock, pthread_mutex_clocklock),
	LOCK(rwlock_rdlock, pthread_rwlock_rdlock),
	PLAIN(rwlock_tryrdlock, pthread_rwlock_tryrdlock),
	LOCK(rwlock_timedrdlock, pthread_rwlock_timedrdlock),
	LOCK(rwlock_clockrdlock, pthread_rwlock_clockrdlock),
	LOCK(rwlock_wrlock, pthread_rwlock_wrlock),
	PLAIN(rwlock_trywrlock, pthread_rwlock_trywrlock),
	LOCK(rwlock_timedwrlock, pthread_rwlock_timedwrlock),
	LOCK(rwlock_clockwrlock, pthread_rwlock_clockwrlock),
};
const unsigned mem_nhooks = sizeof(mem_hooks) / sizeof(mem_hooks[0]);
