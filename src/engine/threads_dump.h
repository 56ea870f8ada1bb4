/* threads_dump: a thread dump of a running process, taken from outside
 * with ptrace (nprof stacks; the daemon's "Stacks" button).
 *
 * Per thread, one at a time: read its name, state, CPU time and the system
 * call it is blocked in from /proc/PID/task/TID/{comm,stat,schedstat,
 * syscall}; seize it (PTRACE_SEIZE), interrupt it (PTRACE_INTERRUPT), wait
 * for the stop, copy its registers and its stack from rsp to the end of
 * the stack mapping (bounded), detach. The pause is that window only, a
 * few tens of microseconds; the unwinding (DWARF CFI, src/unwind/) and
 * the naming happen after the thread is running again. A blocking system
 * call interrupted this way is restarted by the kernel when the thread
 * resumes (nanosleep with the time left), as under gdb.
 *
 * Nothing here stops the whole process (no SIGSTOP): if nprof dies while
 * a thread is seized the kernel detaches it and it runs on.
 *
 * Threads in uninterruptible sleep (D) are not seized (the interrupt
 * would wait for the sleep to end): their sp and pc come from the syscall
 * file and their stack is read while they sleep in the kernel, which
 * leaves their user stack alone.
 *
 * What changes during the thread dump is reported, never fatal: threads
 * that exit before their turn (status THREAD_GONE), threads created
 * during the thread dump (taken in a later pass, up to three passes; later
 * ones are counted in missed_new), the process exiting (process_exited).
 *
 * Not thread-safe: one thread uses a thread-dump call and its symbolizer
 * at a time. Uses waitpid() on the target's threads, which are then this
 * process's tracees: callers must not reap with waitpid(-1, ...) from
 * another thread while a thread dump runs. */
#ifndef NPROF_ENGINE_THREADS_DUMP_H
#define NPROF_ENGINE_THREADS_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/user.h>

#include "base/diag.h"
#include "profile/profile.h" /* enum frame_kind */

struct symbolizer;
struct unwind_cache;

/* Defaults and bounds. */
#define THREAD_DUMP_DEPTH 256		    /* frames per thread */
#define THREAD_DUMP_MAX_DEPTH 4096
#define THREAD_DUMP_STACK_BYTES (512u << 10) /* copied per thread, at most */
#define THREAD_DUMP_MAX_THREADS 65536
#define THREAD_DUMP_PASSES 3		    /* rescans for threads created meanwhile */

struct thread_dump_options {
	unsigned max_depth;	     /* 0: THREAD_DUMP_DEPTH */
	size_t max_stack_bytes;	     /* 0: THREAD_DUMP_STACK_BYTES */
	unsigned sym_flags;	     /* SYM_* (symbolize.h); SYM_LINES adds
					file:line and inlined frames */
	struct symbolizer *sym;	     /* NULL: a private one for this call */
	struct unwind_cache *cache;  /* NULL: a private one for this call */
};

enum thread_status {
	THREAD_TAKEN,	    /* stopped, copied, released */
	THREAD_LIVE,	    /* not stopped (disk wait): regs from the syscall file */
	THREAD_GONE,	    /* exited before its stack was taken */
	THREAD_FAILED,	    /* could not be taken: err says why */
	THREAD_AGENT,	    /* (thread dumps by the agent) one of the
			       agent's own threads: listed, its stack not
			       taken */
};

/* How the stacks were taken. */
enum thread_dump_method {
	THREAD_DUMP_PTRACE,	/* thread_dump_take: each thread stopped in turn */
	THREAD_DUMP_AGENT,	/* thread_dump_take_agent: each thread's own
				   signal handler, in the process; no ptrace */
};

/* What /proc/PID/task/TID/syscall said. */
enum thread_sc {
	THREAD_SC_UNKNOWN,  /* not readable */
	THREAD_SC_ON_CPU,   /* "running": on a CPU or about to be */
	THREAD_SC_USER,	    /* "-1 ...": stopped in user space, no syscall */
	THREAD_SC_IN,	    /* blocked in system call syscall_nr */
};

struct thread_frame {
	uint64_t addr;	     /* the pc (leaf) or a return address */
	char *name;	     /* function, or "module+0xOFFSET" */
	char *module;	     /* path as mapped, or NULL */
	uint64_t module_offset;
	enum frame_kind kind;	/* FRAME_INLINED: inlined into the next frame */
	char *file;		/* SYM_LINES: source file, or NULL */
	unsigned line;		/* SYM_LINES: line, or 0 */
};

struct thread_info {
	pid_t tid;
	char name[64];		/* comm */
	char state;		/* stat letter before the thread dump:
				   R S D T t Z X I P */
	enum thread_status status;
	int err;		/* THREAD_FAILED: -errno */
	enum thread_sc sc;
	long syscall_nr;	/* THREAD_SC_IN */
	const char *restart_of;	/* syscall_nr is restart_syscall: the call
				   being restarted, as the leaf function names
				   it (after an earlier ptrace stop interrupted
				   poll, nanosleep...), or NULL (static) */
	uint64_t syscall_args[6];
	uint64_t cpu_ns;	/* user + system time used */
	uint64_t pause_ns;	/* how long it was stopped (0: never) */
	size_t stack_bytes;	/* bytes of stack copied */
	struct user_regs_struct regs; /* THREAD_TAKEN: at the stop */
	struct thread_frame *frames; /* leaf first */
	unsigned nframes;
	bool truncated;		/* the walk stopped before the outermost frame */
	const char *walk_end;	/* why, when truncated (static string) */
};

struct thread_dump {
	pid_t pid;
	enum thread_dump_method method;
	char comm[64];
	char *exe;		/* /proc/PID/exe target, or NULL */
	int64_t time_ns;	/* CLOCK_REALTIME at the start */
	uint64_t total_ns;	/* the whole call */
	uint64_t pause_max_ns, pause_sum_ns; /* over the stopped threads */
	struct thread_info *threads; /* sorted by name, then tid */
	size_t nthreads;
	unsigned ntaken, ngone, nfailed;
	unsigned missed_new;	/* created during the thread dump, after the
				   last pass */
	bool process_exited;	/* the process was gone before the end */
};

/* Takes a thread dump of pid: the stacks of every thread. Fails (-errno,
 * d says why and what to do) only when nothing can be taken: no such
 * process (-ESRCH), not permitted (-EPERM: another user's process, Yama,
 * seccomp, already traced), out of memory. A process that exits midway
 * gives what was taken. */
int thread_dump_take(pid_t pid, const struct thread_dump_options *o,
		     struct thread_dump **ret, struct diag *d);
void thread_dump_free(struct thread_dump *td);

/* With the agent (libnprof.so in pid, src/agent/stacks.c): no ptrace at
 * all. Reads every thread's name, state, CPU time and system call from
 * /proc (as thread_dump_take does), then calls capture, which must return
 * the agent's JSON thread dump (the reply to the control socket's
 * "stacks json": per thread tid, status, truncated and frames[].addr,
 * leaf first) in a malloc'd buffer; then names the addresses here, with
 * o's symbolizer and flags, so the result reads exactly like a thread
 * dump taken with ptrace (method THREAD_DUMP_AGENT, every pause_ns 0).
 * The agent's own function names are used only when this process cannot
 * read pid's maps. Threads the agent did not answer for are THREAD_FAILED
 * (-ETIMEDOUT); its own threads THREAD_AGENT. Fails with capture's error,
 * -ESRCH (no such process) or -EPROTO (a reply that is not a thread dump). */
typedef int (*thread_dump_capture_fn)(pid_t pid, void *arg, char **ret_json,
				      size_t *ret_len, struct diag *d);
int thread_dump_take_agent(pid_t pid, const struct thread_dump_options *o,
			   thread_dump_capture_fn capture, void *arg,
			   struct thread_dump **ret, struct diag *d);

/* The reader thread_dump_take_agent uses on the agent's JSON: pure, on
 * bytes from another process (fuzzed: tests/fuzz/agent_stacks_json_fuzz.c).
 * json need not end in a NUL. Keeps per thread its tid, status, truncated
 * and frames' addr, function and module; skips anything else. Bounded: at
 * most THREAD_DUMP_MAX_THREADS threads and THREAD_DUMP_MAX_DEPTH frames
 * each (later frames are read and dropped, the thread marked truncated),
 * strings cut at 1 KiB, nesting at 32. -EPROTO for anything that is not a
 * thread dump, a tid out of range or listed twice; -ENOMEM. */
struct thread_dump_agent_frame {
	uint64_t addr;
	char *function, *module; /* or NULL */
};

struct thread_dump_agent_thread {
	pid_t tid;
	char status[16];	/* "taken", "gone", "agent", "self", "no-answer", ... */
	bool truncated;
	struct thread_dump_agent_frame *frames; /* leaf first */
	unsigned n, cap;
};

int thread_dump_agent_parse(const char *json, size_t len,
			    struct thread_dump_agent_thread **ret, size_t *ret_n);
void thread_dump_agent_free(struct thread_dump_agent_thread *v, size_t n);

/* "sleeping", "running", "disk wait", "stopped", "traced", "zombie",
 * "idle", ... for a stat state letter. */
const char *thread_state_name(char state);

/* The x86-64 name of a system call number, or NULL. */
const char *thread_syscall_name(long nr);

enum thread_dump_text_flags {
	THREAD_DUMP_GROUP = 1 << 0, /* one entry per identical stack, with a count */
	THREAD_DUMP_ADDRS = 1 << 1, /* print addresses */
};

/* Writers. 0 or -errno (from the stream). */
int thread_dump_write_text(const struct thread_dump *td, unsigned flags, FILE *f);
int thread_dump_write_json(const struct thread_dump *td, FILE *f);

/* --- shared with coredump.c --------------------------------------------- */

/* The one-line reason ptrace (or /proc access needing it) was refused for
 * pid, with the fix: seccomp on nprof, another user's process, Yama's
 * ptrace_scope, a process already traced, missing CAP_SYS_PTRACE, a
 * non-dumpable process. Returns err. */
int thread_dump_explain_access(pid_t pid, int err, const char *what,
			       struct diag *d);

/* The thread ids of pid (sorted), from /proc/PID/task. -ESRCH when gone. */
int thread_dump_list_tids(pid_t pid, pid_t **ret_tids, size_t *ret_n);

/* Seizes tid and waits until it is stopped. On success *ret_sig is the
 * signal to give back at release (a signal-delivery stop caught it), or
 * 0. -ESRCH: the thread exited; -EPERM: not permitted. */
int thread_dump_stop(pid_t tid, int *ret_sig);

/* Releases a thread stopped by thread_dump_stop. */
int thread_dump_release(pid_t tid, int sig);

uint64_t thread_dump_now_ns(void); /* CLOCK_MONOTONIC */

#endif
