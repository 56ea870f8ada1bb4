/* alloc: the hot half of the alloc, heap and lock engines — the malloc
 * family and pthread lock interposers (alloc.c, lock.c) and what they
 * share (alloc_stacks.c): the gate they test, a lock-free table of sampled
 * stacks, the live set of sampled blocks, and the sampling maths.
 * docs/memory.md has the design and the maths.
 *
 * Off means off: every interposer loads `mem.gate` and, when none of its
 * bits is set, forwards to the real function (one predictable branch and
 * an indirect call). The gate starts with MEM_GATE_BOOT: the first call
 * resolves the real functions with dlsym(RTLD_NEXT) (the allocation dlsym
 * itself makes is served from a static pool, never given back).
 *
 * On, the common call is cheap too (docs/performance.md): malloc and
 * calloc compare the gate with the one word mem_self.fast and shorten
 * mem_self.left, nothing else; free, with heap on, reads one byte of
 * mem_filter. Everything that needs more (the thread busy inside the
 * agent, an agent thread, a countdown drawn under another gate, booting,
 * probing) keeps mem_self.fast different from the gate, which sends the
 * call to the slow path.
 *
 * Rules (as for the signal path, STYLE 4-8): no malloc of our own, no
 * stdio, no blocking lock; a full table is a counted drop; re-entry is
 * guarded by an initial-exec TLS flag; errno is preserved.
 *
 * Concurrency contract, per field of struct mem_state:
 *   - "control": written by the agent's cold side (heap.c) while the gate
 *     bit that makes interposers read it is clear, and no sampler runs
 *     (hot.inflight drained); read by interposers.
 *   - "atomic": read and written by both sides with atomics.
 *   - Tables are mapped once and never unmapped: a late interposer that
 *     read the gate before it was cleared may still touch them safely. */
#ifndef NPROF_AGENT_HOT_ALLOC_H
#define NPROF_AGENT_HOT_ALLOC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/events.h"

enum mem_gate_bits {
	MEM_GATE_BOOT = 1,	/* real functions not resolved yet */
	MEM_GATE_ALLOC = 2,	/* an alloc session records */
	MEM_GATE_HEAP = 4,	/* heap profiling is on (live set kept) */
	MEM_GATE_LOCK = 8,	/* a lock session records */
	MEM_GATE_PROBE = 16,	/* mem_hook.c asks whether a malloc ahead of the
				   agent's calls it (mem_self.probing) */
	MEM_GATE_POOL = 32,	/* the bootstrap pool gave out a block: free and
				   realloc must tell its blocks apart (never
				   cleared; dlsym seldom allocates) */
};
/* The bits under which an entry point does more than forward to the real
 * function: while none of its bits is set, calls need not reach it at all
 * (mem_hook.c routes the program's calls past it). */
#define MEM_NEEDS_ALLOC (MEM_GATE_BOOT | MEM_GATE_ALLOC | MEM_GATE_HEAP | MEM_GATE_PROBE)
#define MEM_NEEDS_FREE (MEM_GATE_BOOT | MEM_GATE_HEAP | MEM_GATE_PROBE | MEM_GATE_POOL)
#define MEM_NEEDS_REALLOC (MEM_NEEDS_ALLOC | MEM_GATE_POOL)
#define MEM_NEEDS_POOL (MEM_GATE_BOOT | MEM_GATE_POOL) /* malloc_usable_size */
#define MEM_NEEDS_LOCK (MEM_GATE_BOOT | MEM_GATE_LOCK)
/* Above the bits, a generation that mem_gate_change() bumps: a thread's
 * countdown drawn under one gate value is not used under another (an
 * earlier session's interval), even when the bits are the same again. */
#define MEM_GATE_GEN (1u << 8)
#define MEM_GATE_BITS (MEM_GATE_GEN - 1)

#define MEM_STACKS (1u << 16)		/* distinct sampled stacks */
#define MEM_STACK_IPS (1u << 22)	/* addresses over all of them */
#define MEM_LIVE (1u << 20)		/* live sampled blocks */
#define MEM_LIVE_PROBES 64		/* longest probe of the live set */
#define MEM_FILTER_BITS 16
#define MEM_FILTER (1u << MEM_FILTER_BITS)	/* counting filter before the live set: bytes */
#define MEM_MAX_DEPTH 256		/* frames per sample, whatever asked */
#define MEM_DEFAULT_DEPTH 128
#define MEM_ONE 65536ull		/* fixed point for estimated counts */
#define MEM_DEFAULT_INTERVAL EVENT_ALLOC_DEFAULT_BYTES	/* profile/events.h */
#define MEM_DEFAULT_LOCK_NS EVENT_LOCK_DEFAULT_NS

/* One sampled stack. Slot 0 is the overflow stack: samples whose stack
 * did not fit land there, so totals stay right. */
struct mem_stack {
	_Atomic uint64_t hash;	/* 0: empty; set once by the inserter (CAS) */
	atomic_uint ready;	/* 1: n, first, truncated published */
	uint32_t n;		/* ips, leaf first (ips[0] is the caller's pc) */
	uint32_t first;		/* in mem.ips */
	uint32_t truncated;
	int32_t tid;		/* the thread, when kept per thread; else 0 */
	/* Estimated totals: bytes and ns are plain, counts are x MEM_ONE. */
	atomic_ulong alloc_bytes, alloc_objects;	/* alloc session */
	atomic_ulong heap_bytes, heap_objects;		/* since heap enable */
	atomic_ulong lock_ns, lock_count;		/* lock session */
};

/* One live sampled block. addr: 0 empty, 1 being written, 2 removed
 * (tombstone), else the block's address. The other fields are written by
 * the inserter before it publishes addr (release) and not changed until
 * the block is removed. */
#define MEM_LIVE_EMPTY 0
#define MEM_LIVE_BUSY 1
#define MEM_LIVE_TOMB 2
struct mem_live {
	_Atomic uint64_t addr;
	uint64_t size;		/* bytes asked for */
	uint64_t bytes;		/* estimated bytes the sample stands for */
	uint32_t stack;
	uint32_t pad;
};

struct mem_stats {
	atomic_ulong samples;		/* sampled allocations */
	atomic_ulong lock_samples;	/* sampled lock waits */
	atomic_ulong stack_full;	/* stacks that went to the overflow slot */
	atomic_ulong live_full;		/* sampled blocks the live set could not take */
	atomic_long live_blocks;	/* in the live set now */
	atomic_long live_bytes;		/* their estimated bytes */
	atomic_ulong frees_matched;	/* sampled blocks freed or reallocated */
	atomic_ulong pool_bytes;	/* served from the bootstrap pool */
	atomic_ulong pool_failed;	/* bootstrap pool exhausted */
};

struct mem_state {
	atomic_uint gate;		/* atomic: enum mem_gate_bits */
	uint64_t interval;		/* control: mean bytes between samples */
	uint64_t lock_interval_ns;	/* control: waits shorter are sampled */
	unsigned max_depth;		/* control */
	/* control: stacks kept per thread (the tid in the key), for thread
	 * roots; off, the threads of one stack share its slot. */
	unsigned per_thread;
	struct mem_stack *stacks;	/* control: MEM_STACKS, mapped once */
	uint64_t *ips;			/* control: MEM_STACK_IPS, mapped once */
	atomic_uint nips;		/* atomic: used of ips */
	/* The ids of the slots of stacks taken so far, in order, so that a
	 * profile visits those and not the whole table (5 MiB, mostly never
	 * touched). An inserter takes an index (nused), then writes the id:
	 * a reader that finds 0 there passes over a stack being made. */
	_Atomic uint32_t *used;		/* control: MEM_STACKS, mapped once */
	atomic_uint nused;		/* atomic: taken of used */
	struct mem_live *live;		/* control: MEM_LIVE, mapped once */
	struct mem_stats stats;		/* atomic */
};

/* Per thread, touched by that thread only. fast and left first: the
 * common malloc reads both, in one cache line. */
struct mem_thread {
	/* The gate value under which malloc and calloc may count inline:
	 * left was drawn under it, and the thread is not busy, not the
	 * agent's, not probing. 0 (never a gate with a sampling bit): every
	 * call takes the slow path, which sets it again when it may. */
	unsigned fast;
	int busy;		/* inside an interposer (or the agent's own work) */
	int64_t left;		/* bytes until the next sample */
	unsigned drawn;		/* the gate's value (bits and generation, less
				   BOOT and PROBE) left was drawn under; 0: none */
	int in_boot;		/* inside dlsym: allocations come from the pool */
	int init;		/* rng seeded */
	int probing;		/* mem_hook.c's probe runs on this thread... */
	int probe_hit;		/* ...and reached the agent's malloc or free */
	uint64_t rng;
};

/* The real functions, resolved at the first interposed call. */
struct mem_real {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	void (*free)(void *);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
	int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
	int (*rwlock_rdlock)(pthread_rwlock_t *);
	int (*rwlock_tryrdlock)(pthread_rwlock_t *);
	int (*rwlock_timedrdlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
	int (*rwlock_wrlock)(pthread_rwlock_t *);
	int (*rwlock_trywrlock)(pthread_rwlock_t *);
	int (*rwlock_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
};

/* One function the agent forwards to: its name, the agent's own
 * definition of it (NULL for the try-locks, which are not interposed, and
 * in builds that interpose nothing), the slot of mem_real that holds the
 * definition calls are forwarded to, whether it belongs to the malloc
 * family (which mem_hook.c may redirect; the lock functions it leaves),
 * the gate bits under which the agent's definition must see the calls
 * (MEM_NEEDS_*), and what mem_hook_route points the program's PLT slots
 * at while it must: own, or for malloc and calloc a variant that tests
 * the countdown first. */
struct mem_hook {
	const char *name;
	void *own;
	void **real;
	bool alloc;
	unsigned needs;
	void *on;
};

/* Hidden (as -fvisibility=hidden makes their definitions): read
 * PC-relative, not through a GOT slot, which is one load less in every
 * interposer. */
#define MEM_HIDDEN __attribute__((visibility("hidden")))
extern struct mem_state mem MEM_HIDDEN;
extern struct mem_real mem_real MEM_HIDDEN;
extern const struct mem_hook mem_hooks[] MEM_HIDDEN;
extern const unsigned mem_nhooks MEM_HIDDEN;
extern __thread struct mem_thread mem_self __attribute__((tls_model("initial-exec")));

/* Counting filter before the live set, one byte per slot (mem_filter_slot
 * of the address): a sampled block's slot is incremented when it enters
 * the live set and decremented when it leaves; a slot at 255 stays there.
 * 0: no live sampled block has that slot, so free need not look. 64 KiB,
 * mostly in cache, where the live set (32 MiB) is not. Atomic; zeroed by
 * heap.c with the live set. */
extern _Atomic uint8_t mem_filter[MEM_FILTER] MEM_HIDDEN;

static inline uint32_t mem_filter_slot(uint64_t addr)
{
	/* Fibonacci hashing: the top bits of a multiply, so that blocks
	 * aligned alike (pages, 1 MiB) spread over every slot. */
	return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> (64 - MEM_FILTER_BITS));
}

/* The gate's bits set and cleared, and its generation bumped (so that
 * every thread draws its countdown afresh at its next allocation). For
 * the cold side's ALLOC, HEAP and LOCK changes. */
void mem_gate_change(unsigned set, unsigned clear);

/* The agent's own allocations on a program thread (building a profile
 * through the C API): not sampled. Nest. */
static inline void mem_quiet_begin(void)
{
	mem_self.busy++;
	mem_self.fast = 0;
}

static inline void mem_quiet_end(void)
{
	mem_self.busy--; /* fast stays 0: the next call's slow path sets it */
}

/* Resolves the slots of mem_real still empty with dlsym(RTLD_NEXT): the
 * definitions after the agent's (idempotent; on the first interposed
 * call). mem_hook.c may later set the malloc family's to a definition
 * that comes before the agent. */
void mem_boot(void);

#ifndef NPROF_NO_INTERPOSE
/* lock.c's definitions, by hidden aliases (from inside libnprof.so,
 * &pthread_mutex_lock would name whichever definition comes first). */
#define MEM_OWN(name) extern __typeof__(name) own_##name __attribute__((visibility("hidden")))
/* Defines own_NAME as a hidden alias of the agent's NAME, in the file
 * that defines NAME (alloc.c, lock.c). */
#ifdef __clang__
#define MEM_DEFINE_OWN(name) extern __typeof__(name) own_##name \
	__attribute__((alias(#name), visibility("hidden")))
#else /* gcc wants libc's attributes (malloc, nothrow, leaf) on the alias too */
#define MEM_DEFINE_OWN(name) extern __typeof__(name) own_##name \
	__attribute__((alias(#name), visibility("hidden"), copy(name)))
#endif
MEM_OWN(pthread_mutex_lock);
MEM_OWN(pthread_mutex_timedlock);
MEM_OWN(pthread_mutex_clocklock);
MEM_OWN(pthread_rwlock_rdlock);
MEM_OWN(pthread_rwlock_timedrdlock);
MEM_OWN(pthread_rwlock_clockrdlock);
MEM_OWN(pthread_rwlock_wrlock);
MEM_OWN(pthread_rwlock_timedwrlock);
MEM_OWN(pthread_rwlock_clockwrlock);
#endif

/* Walks the stack of the interposer whose frame pointer is frame, from
 * its caller outwards, into ips; interns it. Returns its id in
 * mem.stacks (0: the overflow stack). */
uint32_t mem_stack_here(void *frame);

/* The sampling maths (no libm): 1 - exp(-x) for x >= 0, and an
 * exponential draw with mean `mean` from the thread's generator. */
double mem_one_minus_exp_neg(double x);
int64_t mem_draw_interval(uint64_t *rng, uint64_t mean);
uint64_t mem_rand(uint64_t *rng);
void mem_rng_seed(uint64_t *rng);

/* Live set (heap). Insert never blocks: full is a counted drop. Remove
 * returns the entry it took out (for a failed realloc to put back). */
bool mem_live_insert(uint64_t addr, uint64_t size, uint64_t bytes, uint32_t stack);
bool mem_live_remove(uint64_t addr, struct mem_live *ret);

/* Records one lock wait of ns on the interposer's frame. */
void mem_lock_record(void *frame, uint64_t ns);

#endif
