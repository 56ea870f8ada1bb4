/* inject: a function called inside another, running process, as if one of
 * its threads had called it — how `nprof attach` makes a process dlopen
 * the agent.
 *
 * One thread is stopped with ptrace (preferably one waiting in a system
 * call, so that it holds no lock of the C library), and its stack gets a
 * copy of the string argument and, above the call, a signal frame made
 * from its own registers, floating-point state and signal mask. The thread
 * is pointed at the function with a return address of rt_sigreturn: when
 * the function returns, the kernel restores every register from the frame,
 * and an interrupted system call restarts as it would have. The call runs
 * at full speed: the thread stays traced only to catch a crash (which is
 * undone) and is stopped again only to see that it returned — back in its
 * system call above the frame, or c->done says so — and then let go. If
 * nprof dies meanwhile, the kernel detaches it and it still finishes and
 * restores itself. No memory of the process is changed except stack below
 * its stack pointer. x86-64 only. */
#ifndef NPROF_INJECT_INJECT_H
#define NPROF_INJECT_INJECT_H

#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"

/* How long a call may run before it is left to finish on its own. */
#define INJECT_CALL_TIMEOUT_NS (10ull * 1000000000ull)

struct inject_call {
	uint64_t func;	    /* the function's address in the process */
	const char *string; /* copied to the thread's stack: the first argument */
	uint64_t arg1;	    /* the second argument */
	uint64_t sigreturn; /* `mov $15, %rax; syscall` in the process (libc's) */
	/* Optional: whether the call has done its work (the agent answers on
	 * its socket), asked every millisecond while it runs untraced. */
	int (*done)(void *ctx, pid_t pid);
	void *done_ctx;
};

struct inject_report {
	pid_t tid;	     /* the thread that made the call */
	long syscall;	     /* the system call it waited in, -1 when none */
	uint64_t setup_ns;   /* stopped while nprof wrote the frame */
	uint64_t call_ns;    /* then making the call, until its frame returned */
	int finished;	     /* 1: the call returned; 0: left to finish alone */
};

/* Calls c->func(copy of c->string, c->arg1) on a thread of pid and waits
 * until it returns (at most INJECT_CALL_TIMEOUT_NS). The function's return
 * value is not known: the caller checks what the call did. Returns 0, or
 * -errno with one line in d: the process gone, ptrace refused (and why),
 * no thread with room on its stack, the call crashed (it is then undone:
 * the thread's registers are put back). */
int inject_call(pid_t pid, const struct inject_call *c, struct inject_report *r,
		struct diag *d);

#endif
