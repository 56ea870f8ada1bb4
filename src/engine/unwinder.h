/* unwinder: the seam between a perf sample and a stack of addresses.
 *
 * The recorder asks the selected unwinder to add what it needs to each
 * event's attr (prepare_attr), parses every PERF_RECORD_SAMPLE into a
 * raw_sample, and hands it to unwind(), which writes the addresses leaf
 * first: the kernel frames (if any) then the user frames. Within each
 * part, ips[first] is the exact interrupted pc and every later entry is a
 * return address (the engine subtracts 1 before naming those).
 *
 * Two unwinders: "fp" (unwind_fp.c: the kernel's callchain, which walks
 * frame pointers) and "dwarf" (unwind_dwarf.c: the kernel callchain's
 * kernel part, then src/unwind/'s CFI walker over the user stack and
 * registers each sample carries). Adding one is one file defining a
 * `const struct unwinder unwinder_x` plus its line in unwinder.c's table.
 *
 * Everything runs on the recording thread, in record order: on_mapping
 * and on_exec between samples (they may allocate and read files),
 * unwind() once per sample (no allocation, no I/O). */
#ifndef NPROF_ENGINE_UNWINDER_H
#define NPROF_ENGINE_UNWINDER_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"
#include "engine/engine.h"
#include "symbolize/symbolize.h" /* struct mapping only */

struct unwind_modules;

/* One PERF_RECORD_SAMPLE, pointing into the ring buffer copy. */
struct raw_sample {
	uint64_t id;		/* PERF_SAMPLE_IDENTIFIER: the opened event */
	uint64_t ip, time, period;
	uint32_t pid, tid;
	uint64_t nr;		/* callchain entries, context markers included */
	const uint64_t *callchain;
	/* PERF_SAMPLE_REGS_USER / STACK_USER, when prepare_attr asked. */
	uint64_t regs_abi;	/* PERF_SAMPLE_REGS_ABI_*; 0: none */
	const uint64_t *regs;	/* one per bit of attr.sample_regs_user */
	unsigned nregs;
	uint64_t stack_size;	/* bytes at stack, copied from the user sp */
	const uint8_t *stack;
	uint64_t stack_dyn_size;/* bytes of stack actually valid */
	const uint8_t *raw;	/* PERF_SAMPLE_RAW: a tracepoint's record */
	uint32_t raw_size;
};

/* Why a stack ends where it does. Every reason but COMPLETE makes the
 * stack truncated: it stopped before the outermost frame. */
enum unwound_end {
	UNWOUND_COMPLETE,  /* the outermost frame (_start, clone3), or fp's
			      chain ended (fp cannot tell which) */
	UNWOUND_DEPTH,	   /* max frames (-j, kernel.perf_event_max_stack) */
	UNWOUND_COPY_END,  /* the walk needed stack beyond the copied bytes */
	UNWOUND_FAULT,	   /* a read inside the copy failed / bad pointer */
	UNWOUND_NO_INFO,   /* no CFI row and no usable frame pointer */
	UNWOUND_BAD_SP,	   /* the stack pointer did not grow */
	UNWOUND_NO_REGS,   /* the sample carried no 64-bit user registers */
	UNWOUND_NEND
};

struct unwound {
	unsigned n;	  /* addresses written */
	unsigned nkernel; /* the first nkernel of them are kernel frames */
	bool truncated;	  /* the walk stopped before the root */
	uint8_t end;	  /* enum unwound_end */
};

struct unwinder {
	const char *name; /* "fp" or "dwarf", goes to profile->unwinder */
	/* User frames come from our own walk, so only -j limits them, not
	 * kernel.perf_event_max_stack (which still caps kernel frames). */
	bool own_user_walk;
	/* Data bytes per CPU ring this unwinder wants (samples carry a
	 * stack copy); 0: the recorder's default. */
	size_t ring_bytes;
	/* Adds sample_type bits, regs masks, stack size; max_stack is the
	 * deepest kernel chain wanted (already capped by the sysctl). */
	void (*prepare_attr)(struct perf_event_attr *a, unsigned max_stack);
	/* Per-target state, for unwinders that keep tables (NULL: none).
	 * state_new fails when the target cannot be unwound this way, and
	 * is quick: it runs before the events are enabled. state_load then
	 * builds the tables, once the events run and before the first read
	 * (NULL: nothing to build), so that sampling starts first. */
	int (*state_new)(pid_t pid, void **ret_state, struct diag *d);
	void (*state_load)(void *state);
	void (*state_free)(void *state);
	/* An executable mapping the target made (PERF_RECORD_MMAP2), and
	 * an exec that replaced its address space (NULL: not needed). */
	void (*on_mapping)(void *state, const struct mapping *m);
	void (*on_exec)(void *state);
	/* Writes at most max addresses to ips; 0 or -errno (sample
	 * dropped and counted). */
	int (*unwind)(void *state, const struct raw_sample *s, uint64_t *ips,
		      unsigned max, struct unwound *ret);
};

extern const struct unwinder unwinder_fp;
extern const struct unwinder unwinder_dwarf;

/* The dwarf unwinder's current module list (tests, diagnostics). */
const struct unwind_modules *unwinder_dwarf_modules(const void *state);

/* Bytes of user stack each dwarf sample copies (docs/engine.md). */
#define UNWIND_DWARF_STACK_BYTES (16u << 10)

/* The unwinder for a --cstack mode: fp gives fp; dwarf and auto give
 * dwarf where the walker works (x86-64), else dwarf is -ENOTSUP and auto
 * gives fp. engine_record falls back from auto's dwarf to fp when the
 * target cannot be unwound with DWARF (state_new or the probe fails). */
int unwinder_select(enum cstack_mode mode, const struct unwinder **ret,
		    struct diag *d);

#endif
