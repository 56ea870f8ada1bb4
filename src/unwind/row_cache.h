/* row_cache: the CFI row found for a pc, remembered, so that a walker that
 * meets the same return addresses again (an allocation profiler's samples
 * of one call site, a CPU profile's hot loop) skips the two binary searches
 * of a step: the module holding the pc and its row. Those were 60 % of an
 * allocation sample's walk (docs/performance.md, "Allocation profiling").
 *
 * One table for the whole process, shared by every thread and by signal
 * handlers, rather than one per thread: a per-thread one would be
 * initial-exec TLS (the only kind a signal handler may touch), and
 * `nprof attach` loads the agent with dlopen, where all such TLS must fit
 * the few hundred bytes glibc keeps spare for it (the agent already takes
 * 600). Threads of one program also meet the same call sites.
 *
 * Direct-mapped by a hash of the pc; an entry is (generation, pc, row)
 * behind a sequence number (a seqlock per entry): odd while a writer fills
 * it. A reader that sees it odd, or changed across its reads, counts a
 * miss; a writer that finds it odd (another thread's write, or the write a
 * signal handler interrupted on this thread) does not wait and leaves it.
 * So lookups and inserts never block, allocate or touch errno, and are
 * async-signal-safe. Entries are keyed by the module list's generation
 * (unwind_modules.generation): rows cached under a list are never served
 * for another, so a list rebuilt after dlopen or dlclose starts with every
 * entry a miss, without anyone clearing the table. The row pointers stay
 * valid as long as that list's tables do, which is as long as a walk may
 * use that list. NULL is cached too: "no row here, use frame pointers".
 *
 * Inline, as cfi_table_find is, so that the walker's object and the
 * agent's hot objects reference nothing outside themselves (the agent's
 * hot-symbol check, scripts/check-hot). */
#ifndef NPROF_UNWIND_ROW_CACHE_H
#define NPROF_UNWIND_ROW_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "unwind/cfi.h"

/* 32 bytes each: 32 KiB in all. The allocation benchmark's samples meet
 * a dozen pcs; a service's CPU profile a few thousand hot ones. */
#define UNWIND_ROW_CACHE_BITS 10
#define UNWIND_ROW_CACHE_SLOTS (1u << UNWIND_ROW_CACHE_BITS)

struct unwind_row_slot {
	atomic_ulong seq;		/* odd while written; +2 per write */
	atomic_ulong generation;	/* of the module list; 0: empty */
	atomic_ulong pc;		/* the pc looked up (pc - 1 after a call) */
	_Atomic(const struct cfi_row *) row; /* NULL: no row, frame pointers */
};

/* Zero-initialised (static storage, or memset) is empty. */
struct unwind_row_cache {
	struct unwind_row_slot slots[UNWIND_ROW_CACHE_SLOTS];
};

static inline struct unwind_row_slot *unwind_row_cache_slot(struct unwind_row_cache *c,
							    uint64_t pc)
{
	/* Fibonacci hashing: the top bits of pc × 2⁶⁴/φ. Call sites a few
	 * bytes apart land in different slots. */
	return &c->slots[(pc * 0x9e3779b97f4a7c15ull) >> (64 - UNWIND_ROW_CACHE_BITS)];
}

/* Whether c holds pc under generation (then *ret_row is its row, maybe
 * NULL). Never waits: an entry being written is a miss. */
static inline bool unwind_row_cache_get(struct unwind_row_cache *c, uint64_t generation,
					uint64_t pc, const struct cfi_row **ret_row)
{
	struct unwind_row_slot *s = unwind_row_cache_slot(c, pc);
	unsigned long seq = atomic_load_explicit(&s->seq, memory_order_acquire);
	unsigned long gen, at;
	const struct cfi_row *row;

	if (seq & 1)
		return false;
	gen = atomic_load_explicit(&s->generation, memory_order_relaxed);
	at = atomic_load_explicit(&s->pc, memory_order_relaxed);
	row = atomic_load_explicit(&s->row, memory_order_relaxed);
	/* Orders the loads above before the check below: if they saw any
	 * part of a later write, the check sees that write's odd seq or
	 * later. */
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&s->seq, memory_order_relaxed) != seq || gen != generation ||
	    at != pc || !generation)
		return false;
	*ret_row = row;
	return true;
}

/* Remembers row for pc under generation, replacing whatever the slot
 * held; does nothing when another write of the slot is under way. */
static inline void unwind_row_cache_put(struct unwind_row_cache *c, uint64_t generation,
					uint64_t pc, const struct cfi_row *row)
{
	struct unwind_row_slot *s = unwind_row_cache_slot(c, pc);
	unsigned long seq = atomic_load_explicit(&s->seq, memory_order_relaxed);

	if ((seq & 1) ||
	    !atomic_compare_exchange_strong_explicit(&s->seq, &seq, seq + 1, memory_order_relaxed,
						     memory_order_relaxed))
		return;
	/* The stores below are not seen before the odd seq by a reader
	 * that then checks seq (its acquire fence pairs with this one). */
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&s->generation, generation, memory_order_relaxed);
	atomic_store_explicit(&s->pc, pc, memory_order_relaxed);
	atomic_store_explicit(&s->row, row, memory_order_relaxed);
	atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}

#endif
