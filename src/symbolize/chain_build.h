/* chain_build: chains of addresses into a profile — the one builder of
 * the engine (engine.c) and the agent (build.c, session.c, heap.c), so
 * that every option means the same wherever a profile was recorded:
 * simple names and lines (the symbolizer's flags), a root per thread
 * (-t: [name tid=N], profile_thread_root_name), -j (the outermost
 * frames cut), and the description every profile carries.
 *
 * A stack is built root first: the thread's root, a pseudo-frame the
 * source puts above the addresses ("[unknown stack]"), the addresses
 * from the outermost caller to the leaf (user frames, then the kernel
 * frames the leaf was in), a pseudo-frame below the leaf ("[sleeping]").
 * Each address is named once (frame_cache). A return address points
 * after its call, which may be a function's last instruction, so a
 * return address is named by the byte before it.
 *
 * Not for signal context; one thread builds one profile. */
#ifndef NPROF_SYMBOLIZE_CHAIN_BUILD_H
#define NPROF_SYMBOLIZE_CHAIN_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/chain_table.h"
#include "profile/chain_timeline.h"
#include "profile/events.h"
#include "profile/profile.h"
#include "symbolize/frame_cache.h"
#include "symbolize/symbolize.h"

struct chain_build_options {
	const struct event_def *event; /* its name, interval unit and values */
	const char *command;	/* the target's name; NULL or "": none */
	const char *unwinder;	/* how the chains were walked: "fp", "dwarf" */
	pid_t pid;
	unsigned max_depth;	/* addresses kept per chain, the leaf-most */
	unsigned sym_flags;	/* enum symbolize_flags: SYM_SIMPLE, SYM_LINES */
	bool per_thread;	/* a root frame per thread */
	/* Names a thread that neither its chain nor the profile names yet,
	 * into name ("" when it cannot); NULL: such threads stay nameless. */
	void (*name_thread)(pid_t tid, char *name, size_t len);
};

struct chain_build {
	struct profile *p;	/* the profile being built */
	/* Private. */
	struct proc_syms *ps;	/* not owned */
	struct frame_cache names; /* each address named once */
	uint32_t *frames;	/* one stack's frame ids, root first */
	unsigned max_depth, sym_flags;
	bool per_thread;
	void (*name_thread)(pid_t tid, char *name, size_t len);
};

/* One chain as a stack: its addresses and what goes around them. */
struct chain_build_stack {
	const uint64_t *ips;	/* leaf first: ips[0] the sampled pc (or, from
				   an interposer, the call itself), then return
				   addresses */
	uint32_t n, nkernel;	/* ips[0..nkernel) kernel addresses; ips[nkernel]
				   is where user space was interrupted */
	bool truncated;		/* the walk stopped before the outermost frame */
	pid_t tid;
	const char *thread_name; /* NULL or "": the profile's, else name_thread's */
	const char *root;	/* with thread roots: this root, not [name tid=N] */
	const char *above;	/* a kernel pseudo-frame above the addresses, or NULL */
	const char *leaf;	/* a pseudo-frame below the leaf, or NULL */
	enum frame_kind leaf_kind;
};

/* A new profile of o's event, described (value types, event, interval
 * unit, command, unwinder, pid); addresses named with ps (the caller's,
 * to free after b). 0 or -errno; release b either way. */
int chain_build_open(struct chain_build *b, struct proc_syms *ps,
		     const struct chain_build_options *o);

/* Adds values (the profile's nvalues of them) on stack s; the profile's
 * stack and thread ids into *ret_stack and *ret_thread (either may be
 * NULL). Past max_depth addresses the outermost ones are cut and the
 * stack is truncated. 0 or -errno. */
int chain_build_add(struct chain_build *b, const struct chain_build_stack *s,
		    const int64_t *values, uint32_t *ret_stack, uint32_t *ret_thread);

/* How a source's chain table becomes stacks (chain_build_chains). */
struct chain_look {
	/* Completes s for chain c, number id, of the table (its ips, n,
	 * nkernel, truncated and tid are filled in) and fills its values;
	 * false leaves the chain out, and its events with it. */
	bool (*describe)(void *ctx, uint32_t id, const struct chain *c,
			 struct chain_build_stack *s, int64_t *values);
	/* An event's value in the timeline; NULL: the event's own. */
	uint64_t (*event_value)(void *ctx, const struct chain_event *e);
	void *ctx;
};

/* Adds every chain of t as look describes it, then tl's events (tl may
 * be NULL) on wall time: start_real_ns and start_mono_ns are one moment
 * on the two clocks. 0 or -errno. */
int chain_build_chains(struct chain_build *b, const struct chain_table *t,
		       const struct chain_timeline *tl, uint64_t start_real_ns,
		       uint64_t start_mono_ns, const struct chain_look *look);

/* The profile, now the caller's. */
struct profile *chain_build_take(struct chain_build *b);
void chain_build_release(struct chain_build *b);

#endif
