/* threaddump: the one model of a thread dump, its text and JSON writers
 * and the reader of that JSON.
 *
 * Two takers fill the model: `nprof stacks PID` from outside the process
 * (src/capture/threads_dump.c: ptrace, or the agent's JSON read back with
 * thread_dump_read_json) and the agent from inside it (src/agent/stacks.c,
 * the control socket's "stacks [json]" and GET /stacks). Both print with
 * the same writers, so the two outputs have one layout and one schema;
 * they differ only in what each taker can know (the agent pauses no
 * thread, ptrace cannot see the agent's slots...). docs/nprof-stacks.1.md
 * describes the text and the JSON.
 *
 * Nothing here stops or signals a thread: the model, the /proc reader of
 * one thread, naming a thread's addresses with a symbolizer, the writers
 * and the reader. Not thread-safe per dump: one thread uses a dump at a
 * time. */
#ifndef NPROF_THREADDUMP_THREADDUMP_H
#define NPROF_THREADDUMP_THREADDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "profile/profile.h" /* enum frame_kind */

/* Bounds. */
#define THREAD_DUMP_MAX_DEPTH 4096	 /* frames per thread */
#define THREAD_DUMP_MAX_THREADS 65536

enum thread_status {
	THREAD_TAKEN,	    /* its stack was taken (stopped and copied, or
			       walked by the thread itself for the agent) */
	THREAD_LIVE,	    /* not stopped (disk wait): regs from the syscall file */
	THREAD_GONE,	    /* exited before its stack was taken */
	THREAD_FAILED,	    /* could not be taken: err says why */
	THREAD_AGENT,	    /* one of the nprof agent's own threads: listed,
			       its stack not taken */
};

/* How the stacks were taken. */
enum thread_dump_method {
	THREAD_DUMP_PTRACE,	/* each thread stopped in turn, from outside */
	THREAD_DUMP_AGENT,	/* each thread's own signal handler, in the
				   process (the agent); no ptrace */
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
	char *name;	     /* function, or "module+0xOFFSET"; NULL until named */
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
				   R S D T t Z X I P, or '?' */
	enum thread_status status;
	int err;		/* THREAD_FAILED: -errno */
	enum thread_sc sc;
	long syscall_nr;	/* THREAD_SC_IN */
	char restart_of[32];	/* syscall_nr is restart_syscall: the call
				   being restarted, as the leaf function names
				   it, or "" */
	uint64_t syscall_args[6];
	uint64_t syscall_sp, syscall_pc; /* THREAD_SC_IN: user sp and pc at
					    the call (not written out) */
	uint64_t cpu_ns;	/* user + system time used */
	uint64_t pause_ns;	/* how long it was stopped (0: never) */
	size_t stack_bytes;	/* bytes of stack copied */
	struct thread_frame *frames; /* leaf first */
	unsigned nframes;
	bool truncated;		/* the walk stopped before the outermost frame */
	char walk_end[64];	/* why, when truncated */
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
	size_t nthreads, cap;
	unsigned ntaken, ngone, nfailed; /* thread_dump_count */
	unsigned missed_new;	/* created during the thread dump, after the
				   last pass */
	unsigned omitted;	/* past the taker's limit on threads: not listed */
	bool process_exited;	/* the process was gone before the end */
};

/* --- the model (threaddump.c) -------------------------------------------- */

struct thread_dump *thread_dump_new(pid_t pid, enum thread_dump_method method);
void thread_dump_free(struct thread_dump *td);

/* Appends a thread with this tid (name "?", state '?', everything else
 * zero), or NULL (out of memory, or THREAD_DUMP_MAX_THREADS). The pointer
 * lasts until the next call. */
struct thread_info *thread_dump_add_thread(struct thread_dump *td, pid_t tid);
struct thread_info *thread_dump_find_thread(struct thread_dump *td, pid_t tid);

/* Frees t's frames. */
void thread_info_clear_frames(struct thread_info *t);

/* Sorts the threads by name, then tid; recounts ntaken (taken or live),
 * ngone and nfailed. */
void thread_dump_sort(struct thread_dump *td);
void thread_dump_count(struct thread_dump *td);

/* comm and exe of /proc/PID: 0, or -ESRCH when there is no such process. */
int thread_dump_read_process(struct thread_dump *td);

/* Fills the /proc part of t (of process pid): name, state, CPU time,
 * system call. 0, or -ESRCH when the thread is gone. */
int thread_info_read_proc(pid_t pid, struct thread_info *t);

/* The same in parts, for a taker that reads many threads: the
 * directory /proc/PID/task open (a descriptor, or -errno: -ESRCH when
 * pid is gone), then from it a thread's name, state and CPU time (its
 * stat and schedstat files: 0, or -ESRCH when the thread is gone), and
 * its system call (its syscall file; t->sc stays THREAD_SC_UNKNOWN when
 * that cannot be read). The ptrace taker reads the system call of a
 * thread it stops from its registers instead, and the file only for a
 * thread it does not stop. */
int thread_dump_open_tasks(pid_t pid);
int thread_info_read_stat_at(int task_dir, struct thread_info *t);
void thread_info_read_syscall_at(int task_dir, struct thread_info *t);

/* One name of an address, as a namer gives it: strings borrowed, valid
 * until the next call; NULL when unknown. */
struct thread_frame_name {
	const char *name, *module, *file;
	uint64_t module_offset;
	enum frame_kind kind;
	unsigned line;
};

#define THREAD_DUMP_NAMES_PER_ADDR 33 /* an address and its inlined calls */

/* Names addr (a pc, or a return address minus 1: the call): up to max
 * names, their number in *ret_n: the function, then the calls inlined
 * into it, outermost first (as proc_syms_lookup_frames gives them; the
 * dump lists them innermost first). 0 or -errno. The takers name with src/symbolize/, which sits
 * on this folder's level and so is reached through this callback. */
typedef int (*thread_dump_namer_fn)(void *arg, uint64_t addr, struct thread_frame_name *ret,
				    unsigned max, unsigned *ret_n);

/* Names every thread's frames from their addresses (frames[].addr, set by
 * the taker; names already there are replaced) with namer. Then names
 * the calls restarted through restart_syscall from the leaf function. 0
 * or -ENOMEM. */
int thread_dump_name_frames(struct thread_dump *td, thread_dump_namer_fn namer, void *arg);


/* "sleeping", "running", "disk wait", "stopped", "traced", "zombie",
 * "idle", ... for a stat state letter. */
const char *thread_state_name(char state);

/* --- system calls (syscall_names.c) --------------------------------------- */

/* The x86-64 name of a system call number, or NULL. */
const char *thread_syscall_name(long nr);
/* The number of a system call name, or -1. */
long thread_syscall_number(const char *name);

/* --- writers (text.c, json_write.c) ---------------------------------------- */

enum thread_dump_text_flags {
	THREAD_DUMP_GROUP = 1 << 0, /* one entry per identical stack, with a count */
	THREAD_DUMP_ADDRS = 1 << 1, /* print addresses */
};

/* 0 or -errno (from the stream). */
int thread_dump_write_text(const struct thread_dump *td, unsigned flags, FILE *f);
int thread_dump_write_json(const struct thread_dump *td, FILE *f);

/* The sentence a failed thread's err gives (text "stack not taken: ...",
 * JSON "error"). */
const char *thread_dump_failure_text(const struct thread_dump *td, const struct thread_info *t);

/* --- the reader (json_read.c) ---------------------------------------------- */

/* Reads what thread_dump_write_json wrote (also the replies of older
 * agents: method "signal", status "no-answer" and "self"), on bytes from
 * another process (fuzzed: tests/fuzz/thread_dump_json_fuzz.c). json need
 * not end in a NUL; unknown keys are skipped whatever their type; missing
 * ones keep their zero values. Bounded: at most THREAD_DUMP_MAX_THREADS
 * threads and THREAD_DUMP_MAX_DEPTH frames each (later frames are read and
 * dropped, the thread marked truncated), strings cut at 1 KiB, nesting at
 * 32. The threads come sorted by name, then tid, and counted. -EPROTO for
 * anything that is not a thread dump (no "threads" array), a thread
 * without a tid, a tid out of range or listed twice; -ENOMEM. */
int thread_dump_read_json(const char *json, size_t len, struct thread_dump **ret);

#endif
