/* walker: one x86-64 stack walker for both callers, the out-of-process
 * engine (a perf sample's copied user stack and registers) and, later,
 * the agent's signal handler (the live stack of the interrupted thread).
 *
 * Per frame: the module holding the pc (pc - 1 for return addresses),
 * its CFI row, else frame pointers (rbp chain) with sanity checks. Stops
 * at an outermost frame (CFI says the return address is undefined, as
 * _start and clone3 do), a zero return address or rbp, a read fault, a
 * stack pointer that does not grow, or max frames. See docs/unwinding.md.
 *
 * Concurrency contract: unwind_walk, unwind_walk_ex and both readers
 * never allocate, lock, print or touch errno (the self reader saves and
 * restores it) and are async-signal-safe. The module list and its tables
 * must not change during a walk. Every memory access to the stack or to
 * anything a register points at goes through the read function. */
#ifndef NPROF_UNWIND_WALKER_H
#define NPROF_UNWIND_WALKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind/modules.h"
#include "unwind/row_cache.h"

struct unwind_regs {
	uint64_t rip, rsp, rbp;
};

/* Reads len bytes at addr into dst: 0, or -1 when any byte is not
 * readable (dst then undefined). Must be async-signal-safe when the
 * walker runs in a signal handler. */
typedef int (*unwind_read_fn)(void *ctx, uint64_t addr, void *dst, size_t len);

enum unwind_stop {
	UNWIND_STOP_END,	/* outermost frame, or a zero return address */
	UNWIND_STOP_MAX,	/* max frames written */
	UNWIND_STOP_FAULT,	/* a read failed */
	UNWIND_STOP_BAD_SP,	/* the stack pointer did not grow */
	UNWIND_STOP_NO_INFO,	/* no CFI and no usable frame pointer */
};

struct unwind_info {
	enum unwind_stop stop;
	unsigned cfi_frames;	/* steps made with CFI rows */
	unsigned fp_frames;	/* steps made with frame pointers */
	unsigned sig_frames;	/* signal frames crossed */
};

/* Writes at most max addresses to ips, leaf first: ips[0] = regs->rip,
 * the rest are return addresses (name them at addr - 1). Returns the
 * count; *ret_truncated (may be NULL) says whether the walk stopped
 * before the outermost frame. Never fails: a bad frame ends the stack. */
unsigned unwind_walk(const struct unwind_regs *regs, const struct unwind_modules *mods,
		     unwind_read_fn read, void *ctx, uint64_t *ips, unsigned max,
		     bool *ret_truncated);

/* The same, with why it stopped and how (ret_info may be NULL). */
unsigned unwind_walk_ex(const struct unwind_regs *regs, const struct unwind_modules *mods,
			unwind_read_fn read, void *ctx, uint64_t *ips, unsigned max,
			struct unwind_info *ret_info);

/* unwind_walk_ex that looks each pc's row up in rows first and remembers
 * what it finds there (rows may be NULL: no cache). The same stack as
 * unwind_walk_ex; for a caller that walks the same code again and again
 * (the agent: one cache for the process, see unwind/row_cache.h). */
unsigned unwind_walk_cached(const struct unwind_regs *regs, const struct unwind_modules *mods,
			    struct unwind_row_cache *rows, unwind_read_fn read, void *ctx,
			    uint64_t *ips, unsigned max, struct unwind_info *ret_info);

/* perf's x86-64 user register numbers (asm/perf_regs.h). The engine asks
 * for at least these: attr.sample_regs_user = UNWIND_PERF_REGS_MASK. */
#define UNWIND_PERF_REG_BP 6
#define UNWIND_PERF_REG_SP 7
#define UNWIND_PERF_REG_IP 8
#define UNWIND_PERF_REGS_MASK                                         \
	((1ull << UNWIND_PERF_REG_BP) | (1ull << UNWIND_PERF_REG_SP) | \
	 (1ull << UNWIND_PERF_REG_IP))

/* The walker's registers from a PERF_SAMPLE_REGS_USER block: nregs
 * values, one per set bit of mask (attr.sample_regs_user), lowest bit
 * first. -EINVAL: mask lacks bp, sp or ip, or nregs is short. */
int unwind_regs_from_perf(const uint64_t *regs, unsigned nregs, uint64_t mask,
			  struct unwind_regs *ret_regs);

/* (a) A stack copied out of the target: perf's PERF_SAMPLE_STACK_USER
 * gives the bytes from the sample's rsp (base = regs[SP]) and the size
 * actually valid (dyn_size). Reads outside [base, base + len) fault. */
struct unwind_stack_copy {
	uint64_t base;
	const uint8_t *data;
	size_t len;
};

int unwind_read_stack_copy(void *ctx, uint64_t addr, void *dst, size_t len);

/* (b) This process's own memory, for the agent. Reads inside
 * [safe_lo, safe_hi) (the current thread's stack, known to be mapped)
 * are plain loads; anything else goes through process_vm_readv on our
 * own pid, which returns EFAULT for an unmapped address instead of
 * faulting (a syscall, so async-signal-safe). pid is looked up at the
 * first such read and cached: call unwind_self_reader_init again in a
 * forked child. */
struct unwind_self_reader {
	pid_t pid;
	uint64_t safe_lo, safe_hi; /* 0, 0: no shortcut */
	uint64_t syscalls;	   /* reads that needed the syscall */
};

void unwind_self_reader_init(struct unwind_self_reader *r, uint64_t safe_lo,
			     uint64_t safe_hi);
int unwind_read_self(void *ctx, uint64_t addr, void *dst, size_t len);

#endif
