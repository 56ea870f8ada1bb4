/* sched_switch: the kernel's sched:sched_switch tracepoint, as the engine
 * samples it for off-CPU time (docs/engine.md, "Wall and off-CPU time"):
 * its perf config (the tracepoint id, from tracefs) and where its raw
 * record keeps prev_state (from the tracepoint's format file, not
 * assumed), and the state letter a raw record says the thread left in. */
#ifndef NPROF_ENGINE_SCHED_SWITCH_H
#define NPROF_ENGINE_SCHED_SWITCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"

struct sched_switch_format {
	uint64_t id;		/* attr.config for PERF_TYPE_TRACEPOINT */
	unsigned state_offset;	/* prev_state in the raw record */
	unsigned state_size;	/* 4 or 8 */
	bool mounted;		/* tracefs was not mounted: this process mounted it */
};

/* Reads the id and the format from tracefs (/sys/kernel/tracing, else
 * /sys/kernel/debug/tracing). Where tracefs is not mounted (a freshly
 * booted host: only a tool that needs it mounts it), root mounts it at
 * /sys/kernel/tracing as perf does, and says so in ret->mounted (of every load after).
 * -EACCES when tracefs is not ours to read (it is root's: 0700), or not
 * mounted and not ours to mount; -ENOENT when the kernel has no such
 * tracepoint; -EPROTO when the format has no usable prev_state; d says
 * which, and what to do. */
int sched_switch_load(struct sched_switch_format *ret, struct diag *d);

/* Parses a format file's text (len bytes, need not end in a NUL): the
 * field line "field:long prev_state;\toffset:32;\tsize:8;...". Fuzzed
 * (tests/fuzz/sched_format_fuzz.c). 0 or -EPROTO. */
int sched_switch_parse_format(const char *text, size_t len, struct sched_switch_format *ret);

/* The state a raw record (len bytes) says the thread left the CPU in, as
 * /proc's letters: 'R' runnable (preempted, or yielded), 'S', 'D', 'T',
 * 't', 'X' (exiting: dead or zombie); '?' when the record is too short. */
char sched_switch_state(const struct sched_switch_format *f, const void *raw, size_t len);

#endif
