/* threads_dump: taking a thread dump of a running process from outside
 * it (nprof stacks; the daemon's "Stacks" button), into the model of
 * src/threaddump/threaddump.h, which also writes it.
 *
 * By ptrace (thread_dump_take), per thread: read its name, state and CPU
 * time from /proc/PID/task/TID/{stat,schedstat}; seize it (PTRACE_SEIZE),
 * interrupt it (PTRACE_INTERRUPT); once it has stopped, copy its
 * registers (the system call it was blocked in is orig_rax and the
 * argument registers) and its stack from rsp to the end of the stack
 * mapping (bounded), detach. Up to THREAD_DUMP_WINDOW threads are asked to
 * stop at once and each is taken as soon as its stop is reported, so the
 * waits for each to get a CPU overlap; each thread's pause is its own
 * interrupt to detach, tens of microseconds on an idle host. A pass of
 * THREAD_DUMP_AHEAD_MIN threads or more has their /proc files read on a
 * thread of its own, ahead of the stops (the threads are stopped and
 * waited for by the calling thread alone, their tracer). The
 * unwinding (DWARF CFI, src/unwind/) and the naming happen after the
 * thread is running again. A blocking system call interrupted this way is
 * restarted by the kernel when the thread resumes (nanosleep with the
 * time left), as under gdb.
 *
 * Nothing here stops the whole process (no SIGSTOP): if nprof dies while
 * a thread is seized the kernel detaches it and it runs on.
 *
 * Threads in uninterruptible sleep (D) are not seized (the interrupt
 * would wait for the sleep to end): their system call, sp and pc come
 * from the syscall file and their stack is read while they sleep in the
 * kernel, which leaves their user stack alone.
 *
 * What changes during the thread dump is reported, never fatal: threads
 * that exit before their turn (status THREAD_GONE), threads created
 * during the thread dump (taken in a later pass, up to three passes; later
 * ones are counted in missed_new), the process exiting (process_exited).
 *
 * Not thread-safe: one thread uses a thread-dump call and its symbolizer
 * at a time. Uses waitpid() and waitid(WNOWAIT) on the target's threads
 * (tracee.h). */
#ifndef NPROF_CAPTURE_THREADS_DUMP_H
#define NPROF_CAPTURE_THREADS_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/diag.h"
#include "threaddump/threaddump.h"

struct symbolizer;
struct unwind_cache;

/* Defaults and bounds. */
#define THREAD_DUMP_DEPTH 256		    /* frames per thread */
#define THREAD_DUMP_STACK_BYTES (512u << 10) /* copied per thread, at most */
#define THREAD_DUMP_PASSES 3		    /* rescans for threads created meanwhile */
#define THREAD_DUMP_WINDOW 8		    /* threads asked to stop at a time */
#define THREAD_DUMP_AHEAD_MIN 32	    /* threads in a pass for /proc to be read
					       on a thread of its own */

struct thread_dump_options {
	unsigned max_depth;	     /* 0: THREAD_DUMP_DEPTH */
	size_t max_stack_bytes;	     /* 0: THREAD_DUMP_STACK_BYTES */
	unsigned sym_flags;	     /* SYM_* (symbolize.h); SYM_LINES adds
					file:line and inlined frames */
	struct symbolizer *sym;	     /* NULL: a private one for this call */
	struct unwind_cache *cache;  /* NULL: a private one for this call */
	bool addresses_only;	     /* frames keep their addresses, unnamed
					(a caller that names them itself) */
};

/* Takes a thread dump of pid: the stacks of every thread. Fails (-errno,
 * d says why and what to do) only when nothing can be taken: no such
 * process (-ESRCH), not permitted (-EPERM: another user's process, Yama,
 * seccomp, already traced), out of memory. A process that exits midway
 * gives what was taken. */
int thread_dump_take(pid_t pid, const struct thread_dump_options *o,
		     struct thread_dump **ret, struct diag *d);

/* With the agent (libnprof.so in pid, src/agent/stacks.c): no ptrace at
 * all. Reads every thread's name, state, CPU time and system call from
 * /proc (as thread_dump_take does), then calls capture, which must return
 * the agent's JSON thread dump (the reply to the control socket's
 * "stacks json": thread_dump_write_json's, read back with
 * thread_dump_read_json) in a malloc'd buffer; then names the addresses
 * here, with o's symbolizer and flags, so the result reads exactly like a
 * thread dump taken with ptrace (method THREAD_DUMP_AGENT, every pause_ns
 * 0). The agent's own names are used only when this process cannot read
 * pid's maps. What /proc said before the agent's signal disturbed the
 * threads wins over what the agent read. Fails with capture's error,
 * -ESRCH (no such process) or -EPROTO (a reply that is not a thread
 * dump). */
typedef int (*thread_dump_capture_fn)(pid_t pid, void *arg, char **ret_json,
				      size_t *ret_len, struct diag *d);
int thread_dump_take_agent(pid_t pid, const struct thread_dump_options *o,
			   thread_dump_capture_fn capture, void *arg,
			   struct thread_dump **ret, struct diag *d);

#endif
