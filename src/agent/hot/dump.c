/* dump: the thread-dump part of the signal handler. Runs on the thread
 * whose stack the thread dump wants, in signal context (scripts/check-hot):
 * walks its stack into the slot the thread taking the thread dump armed
 * for it. See hot.h, and src/agent/stacks.c for the other side. */
#include "agent/hot/hot.h"

#include <ucontext.h>
#include <unistd.h>

#include "unwind/walker.h"

void hot_dump_on_signal(const siginfo_t *si, const void *ucv)
{
	const ucontext_t *uc = ucv;
	uint64_t word = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
	unsigned slot = (unsigned)(word & 0xffff), seq = (unsigned)(word >> 16) & 0x3fffffff;
	struct hot_dump_slot *slots = atomic_load_explicit(&hot.dump, memory_order_acquire);
	unsigned expect = seq << 2 | HOT_DUMP_ARMED;
	struct unwind_self_reader reader;
	struct unwind_regs regs;
	struct unwind_info info;
	struct hot_dump_slot *d;

	if (!slots || slot >= HOT_DUMP_SLOTS)
		return;
	d = &slots[slot];
	/* Only the signal the slot was armed for; a late one finds the tag
	 * changed (the dumper gave up, or reused the slot) and writes nothing. */
	if (!atomic_compare_exchange_strong_explicit(&d->tag, &expect, seq << 2 | HOT_DUMP_WRITING,
						     memory_order_acquire, memory_order_relaxed))
		return;
	regs.rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	regs.rsp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
	regs.rbp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
	if (hot_self.stack_hi && regs.rsp >= hot_self.stack_lo && regs.rsp < hot_self.stack_hi)
		unwind_self_reader_init(&reader, regs.rsp, hot_self.stack_hi);
	else
		unwind_self_reader_init(&reader, 0, 0);
	d->n = (uint16_t)unwind_walk_cached(&regs,
					    atomic_load_explicit(&hot.mods, memory_order_acquire),
					    &hot_rows, unwind_read_self, &reader, d->ips,
					    HOT_DUMP_DEPTH, &info);
	d->truncated = info.stop != UNWIND_STOP_END;
	d->tid = hot_self.tid ? hot_self.tid : gettid();
	atomic_store_explicit(&d->tag, seq << 2 | HOT_DUMP_DONE, memory_order_release);
}
