/* mem_hook: callers of the malloc family (and, after an attach, of the
 * lock functions) pointed at the agent when another definition comes
 * before it in the search order. See mem_hook.c and
 * docs/memory.md. */
#ifndef NPROF_AGENT_MEM_HOOK_H
#define NPROF_AGENT_MEM_HOOK_H

struct mem_hook_result {
	unsigned slots;		/* GOT slots pointed at the agent by this call */
	unsigned failed;	/* slots that could not be written */
	char first[64];		/* the module whose definitions came first ("": none) */
};

/* When a malloc family other than the agent's comes first in the search
 * order and is an allocator, not a wrapper that forwards to the agent
 * (probed once): makes it the one the agent forwards to, then rewrites,
 * in every loaded module but the agent and the allocator, the GOT slots
 * (JUMP_SLOT, GLOB_DAT) of each name of the family that hold the
 * allocator's definition, or a lazy-binding stub, to the agent's own.
 * Idempotent; does nothing when the agent's definitions come first (the
 * usual LD_PRELOAD=libnprof.so). One caller at a time (heap.c's lock).
 * 0, or -ENOTSUP off x86-64. */
int mem_hook_install(struct mem_hook_result *ret);

/* Puts back every slot mem_hook_install pointed at the agent that still
 * holds the agent's function, in modules still loaded (`nprof detach`:
 * the process back to its cost before the attach). Returns how many.
 * Under heap.c's lock, with no engine of the family on. */
unsigned mem_hook_uninstall(void);

/* When the agent's own definitions come first (LD_PRELOAD=libnprof.so):
 * points every loaded module's PLT slots (JUMP_SLOT) of each interposed
 * function at the agent's definition if the gate value g has one of the
 * bits it tests (hot/alloc.h, MEM_NEEDS_*), else straight at the real
 * one, so that calls nothing needs to see cost nothing. Call it with the
 * gate's bits before they are set (with the union of old and new), and
 * again after bits are cleared. Idempotent. Under heap.c's lock, with the
 * real functions resolved (mem_boot). 0; -EPERM when a slot could not be
 * written; -ENOTSUP off x86-64. */
int mem_hook_route(unsigned g);

#endif
