/* unwinder: the seam between a perf sample and a stack of addresses.
 *
 * The recorder asks the selected unwinder to add what it needs to each
 * event's attr (prepare_attr), parses every PERF_RECORD_SAMPLE into a
 * raw_sample, and hands it to unwind(), which writes the addresses leaf
 * first: the kernel frames (if any) then the user frames. Within each
 * part, ips[first] is the exact interrupted pc and every later entry is a
 * return address (the engine subtracts 1 before naming those).
 *
 * Adding an unwinder (DWARF next) is one new file defining a
 * `const struct unwinder unwinder_x` plus its line in unwinder.c's table;
 * the recorder already parses REGS_USER and STACK_USER when asked for.
 * unwind() runs once per sample on the recording thread: no allocation,
 * no I/O. */
#ifndef NPROF_ENGINE_UNWINDER_H
#define NPROF_ENGINE_UNWINDER_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"
#include "engine/engine.h"

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
};

struct unwound {
	unsigned n;	  /* addresses written */
	unsigned nkernel; /* the first nkernel of them are kernel frames */
	bool truncated;	  /* the walk stopped before the root */
};

struct unwinder {
	const char *name; /* "fp", goes to profile->unwinder */
	/* Adds sample_type bits, regs masks, stack size; max_stack is the
	 * deepest chain wanted (already capped by the sysctl). */
	void (*prepare_attr)(struct perf_event_attr *a, unsigned max_stack);
	/* Per-target state, for unwinders that keep tables (NULL: none). */
	int (*state_new)(pid_t pid, void **ret_state);
	void (*state_free)(void *state);
	/* Writes at most max addresses to ips; 0 or -errno (sample
	 * dropped and counted). */
	int (*unwind)(void *state, const struct raw_sample *s, uint64_t *ips,
		      unsigned max, struct unwound *ret);
};

extern const struct unwinder unwinder_fp;

/* The unwinder for a --cstack mode: auto and fp give fp today; dwarf
 * gives -ENOTSUP with d saying so. */
int unwinder_select(enum cstack_mode mode, const struct unwinder **ret,
		    struct diag *d);

#endif
