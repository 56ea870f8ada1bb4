/* agent: the cold half of libnprof.so — sessions, threads, the control
 * thread — behind include/nprof.h. The hot half (signal handler, sample
 * stripes) is src/agent/hot/.
 *
 * A session is one profile being recorded: agent_session_start arms an
 * engine (cpu, itimer or wall) on every thread, the control thread drains
 * the stripes into an aggregation by stack every AGENT_TICK_MS, and
 * agent_session_stop disarms, drains what is left and builds a profile
 * (symbolized in process, outside signal context). One session at a time.
 *
 * Concurrency: every agent_session_* function takes the session mutex,
 * so the C API, the control thread and exit handlers may call them from
 * any thread, but never from a signal handler. */
#ifndef NPROF_AGENT_AGENT_H
#define NPROF_AGENT_AGENT_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "base/diag.h"
#include "output/output.h"
#include "profile/events.h"
#include "profile/profile.h"
#include "symbolize/chain_build.h"
#include "symbolize/symbolize.h"

#define AGENT_TICK_MS 50
#define AGENT_MAX_THREADS 32768		/* threads tracked per process */
#define AGENT_MAX_STACKS (1u << 20)	/* distinct stacks per session */
#define AGENT_MAX_IPS (1u << 25)	/* addresses kept per session */
#define AGENT_WALL_PER_TICK 16		/* default threads signalled per wall tick */

/* What a session records and, when it ends by itself, where it goes.
 * The text form ("event=cpu,interval=10ms,file=/tmp/p-%p.html") is what
 * NPROF_START, nprof_start() and the control socket take. */
struct agent_options {
	enum event_id event;
	uint64_t interval_ns;	/* 0: the event's default (profile/events.c) */
	uint64_t interval_bytes; /* alloc, heap: mean bytes between samples; 0: default */
	char interval_text[32];	/* as given: read again when event= comes after it */
	uint64_t duration_ns;	/* 0: until stopped or the process exits */
	unsigned max_depth;	/* 0: 2048 */
	unsigned wall_threads;	/* 0: AGENT_WALL_PER_TICK */
	bool per_thread;	/* thread frames as roots */
	bool simple;		/* simple names */
	bool have_format;
	enum output_format format;
	char file[PATH_MAX];	/* "" : none; %p pid, %t time */
	char title[128];
	struct output_options out;
	bool quiet;		/* no stderr line saying where the file went */
	/* Started by NPROF_START (set by the code, not the text): the file's
	 * name follows the tree rule of profile_file.c, a forked child
	 * records itself too, and the end is announced on stderr. */
	bool from_start_env;
};


/* Parses "k=v,k=v"; unknown keys and bad values fail with -EINVAL and d
 * naming the key and what it accepts. o is reset to defaults first. */
int agent_options_parse(const char *text, struct agent_options *o, struct diag *d);

/* One key (val NULL when the key came alone) on top of o; -EINVAL with d
 * naming the key and what it accepts. */
int agent_options_set(struct agent_options *o, const char *key, const char *val,
		      struct diag *d);


/* --- sessions (session.c) --- */

/* -EBUSY when one runs. On cpu, a perf_event refusal falls back to itimer
 * and the profile carries a note saying why. */
int agent_session_start(const struct agent_options *o, struct diag *d);
/* agent_session_start, also giving the session's id (for
 * agent_session_end). */
int agent_session_begin(const struct agent_options *o, uint64_t *ret_id, struct diag *d);
/* Ends session id and returns its profile (caller frees); -ESTALE when
 * that session is no longer the one running (someone else stopped it). */
int agent_session_end(uint64_t id, struct profile **ret, struct diag *d);
/* Before a thread dump: the signal handler installed and the module list
 * current, with or without a session. */
int agent_session_prepare_dump(struct diag *d);
/* Ends the running session; its profile is returned (caller frees) or,
 * with ret NULL, written to the options' file. -ENOENT: none runs. */
int agent_session_stop(struct profile **ret, struct diag *d);
/* The profile so far, the session continuing. */
int agent_session_snapshot(struct profile **ret, struct diag *d);
/* Drains stripes, rescans threads, notices dlopen, ends a session whose
 * duration passed (writing its file). Called by the control thread. */
void agent_session_tick(void);
/* The running session's options and event in effect, false when none. */
bool agent_session_info(struct agent_options *ret_o, enum event_id *ret_effective,
			uint64_t *ret_samples);
/* What the running session's samples stand for so far, in ns (cpu,
 * itimer: CPU time, merged timer expirations included; wall: wall time). */
uint64_t agent_session_weight_ns(void);
/* At exit or a fatal signal: stop and write the file, if there is one. */
void agent_session_finish(const char *why);

/* --- building profiles (build.c) --- */

/* Every event's profile is built with chain_build (symbolize/chain_build.h),
 * the engine's builder too; build holds it, ps names this process. */
struct agent_build {
	struct chain_build build;
	struct proc_syms *ps;
};

/* A new profile of event e in b->build.p, described as every agent
 * profile is (command, pid, unwinder); o gives simple and thread (NULL:
 * neither). On failure d says why; close b either way. */
int agent_build_open(struct agent_build *b, struct symbolizer *syms, enum event_id e,
		     const struct agent_options *o, struct diag *d);
void agent_build_close(struct agent_build *b);
/* Remembers the names of the threads alive now, for profiles built after
 * they are gone (called by the control thread while thread roots are
 * asked of alloc, heap or lock). */
void agent_build_note_threads(void);
/* The same for one thread (at its exit). */
void agent_build_note_thread(pid_t tid, const char *name);

/* --- profile files (profile_file.c) --- */

/* Writes p as o says (format from output= or the file's extension; the
 * file from o->file). 0 or -errno, d says which file and why. */
int agent_write_profile(const struct profile *p, const struct agent_options *o,
			struct diag *d);
/* The same, giving the path written (len bytes at path). */
int agent_write_profile_path(const struct profile *p, const struct agent_options *o,
			     char *path, size_t len, struct diag *d);
/* NPROF_START at load: marks o as from the environment and sets the
 * file this process of the tree writes (the first claims the name, the
 * others insert their pid). */
void agent_profile_file_claim(struct agent_options *o);
/* fork(): the parent notes it started a process; the child of an
 * NPROF_START session takes its own name. */
void agent_profile_file_forked(void);
void agent_profile_file_fork_child(struct agent_options *o);
/* A session with a file ended: write p, or not when it is empty and
 * another process of the tree may have written one; say where. */
void agent_profile_file_finish(const struct profile *p, const struct agent_options *o);

/* --- threads (threads.c) --- */

struct agent_thread_list {
	pid_t *tids;
	unsigned n;
};

/* This process's threads from /proc/self/task, agent threads left out.
 * 0 or -errno. */
int agent_threads_scan(struct agent_thread_list *ret);
void agent_thread_list_release(struct agent_thread_list *l);

/* Records the calling (main) thread's stack for the handler; at load. */
void agent_threads_init_main(void);

/* Starts one of the agent's own threads: never sampled, every signal
 * blocked in it (so process-directed signals go to the target's). */
int agent_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

/* Marks the calling thread as the agent's own: never sampled, and its
 * sampling signal blocked. */
void agent_thread_mark_own(void);
/* The CPU the agent's own threads (those marked) have used, in ns, as
 * the kernel accounts it (schedstat); a thread that ended no longer
 * counts. */
uint64_t agent_own_threads_cpu_ns(void);
/* While on, threads the calling thread creates are the agent's own (for
 * starting a library's threads, with every signal blocked around it). */
void agent_threads_own_scope(bool on);
bool agent_thread_is_own(pid_t tid);

/* Called in each new thread (pthread_create wrapper) so the session can
 * arm it, and when it exits so it can disarm. */
void agent_session_thread_started(pid_t tid);
void agent_session_thread_exiting(pid_t tid);

/* --- control thread (control.c) --- */

/* Starts the control thread and its socket (@nprof-agent-PID, abstract).
 * Idempotent. 0 or -errno. */
int agent_control_start(struct diag *d);
/* Asks the control thread to run agent_session_tick soon. */
void agent_control_wake(void);

/* The abstract socket name of pid's agent ("\0nprof-agent-PID"). */
#define AGENT_SOCKET_PREFIX "nprof-agent-"

/* --- thread dump (stacks.c) and HTTP endpoint (http.c) --- */

/* Dumps every thread's stack, as text (like jstack) or JSON, into a
 * malloc'd buffer. The sampling signal, carrying a dump slot, makes each
 * thread walk its own stack (hot/dump.c); names come after. 0 or -errno. */
int agent_stacks_dump(bool json, char **ret_buf, size_t *ret_len, struct diag *d);

/* Serves /prof, /stacks and /heap on addr ("127.0.0.1:9870", "[::1]:0",
 * "9870"); a non-loopback address only with NPROF_HTTP_ALLOW_REMOTE=1;
 * a token required unless NPROF_HTTP_AUTH=none (http_auth.h).
 * -EALREADY when serving. 0 or -errno, d saying why. */
int agent_http_start(const char *addr, struct diag *d);
int agent_http_stop(void);
/* "127.0.0.1:9870" (the port bound), or -ENOENT when not serving. */
int agent_http_address(char *buf, size_t len);
/* The token file's path, "" when served open; -ENOENT when not serving,
 * -ERANGE when len is too short. */
int agent_http_token_path(char *buf, size_t len);

/* One reply of the HTTP endpoint. body is malloc'd; http.c frees it. */
struct agent_http_reply {
	int status;		  /* 200, 400, ... */
	const char *content_type; /* a static string */
	char *body;
	size_t len;
};

/* /heap?action=enable|disable|status|dump[&output=FORMAT]: defined by the
 * heap engine (src/agent/heap.c). action, output and interval
 * are the query's values (NULL when absent); fill r, body malloc'd. Weak: without
 * a heap engine in the build, /heap answers 501. Runs on an HTTP
 * connection thread (an agent thread), never in a signal handler. */
__attribute__((weak)) int agent_heap_http(const char *action, const char *output,
					  const char *interval, struct agent_http_reply *r);

/* --- alloc, heap and lock (heap.c; the hot half is hot/alloc.h) --- */

/* Heap profiling, on and off while the process runs: enable (interval:
 * mean bytes between samples, 0 for 512 KiB; -EALREADY when on), disable,
 * a status line, and the in-use profile (inuse_space, inuse_objects,
 * alloc_space, alloc_objects; -ENOENT when off). 0 or -errno. */
int agent_heap_enable(uint64_t interval, bool per_thread, struct diag *d);
int agent_heap_disable(struct diag *d);
/* With no alloc, heap or lock engine on: the call sites pointed at the
 * agent put back as they were (mem_hook_uninstall). Returns how many. */
unsigned agent_mem_unhook(void);
/* At load, when the agent's definitions come first: the program's calls
 * of the interposed functions routed straight to the real ones while no
 * engine needs them (mem_hook_route); every engine change routes again. */
void agent_mem_route(void);
void agent_heap_status(char *buf, size_t len);
int agent_heap_profile(const struct agent_options *o, struct profile **ret,
		       struct diag *d);
bool agent_heap_active(void);
/* Heap profiling is on and keeps its stacks apart per thread (enable -t). */
bool agent_heap_per_thread(void);
/* The control socket's `heap ACTION [OPTIONS]`: a text reply in text, or,
 * for dump, a profile to send in *ret (caller frees) with *ret_o. */
int agent_heap_request(const char *action, const char *options, char *text, size_t len,
		       struct profile **ret, struct agent_options *ret_o, struct diag *d);

/* Sessions of alloc, heap and lock (session.c calls these): start turns
 * the interposers' gate bit on, stop turns it off; the profile is built
 * from the table of sampled stacks. */
int agent_mem_session_start(const struct agent_options *o, struct diag *d);
void agent_mem_session_stop(void);
/* The control thread's tick, session or not (heap.c). */
void agent_mem_tick(uint64_t now_mono_ns);
int agent_mem_session_profile(enum event_id e, const struct agent_options *o,
			      uint64_t start_real_ns, uint64_t duration_ns, const char *ended,
			      struct profile **ret, struct diag *d);
/* session.c: keeps the walker's module list current while heap profiling
 * runs outside a session (force: rebuild now). */
int agent_modules_update(bool force, struct diag *d);

void agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* At load: keep a copy of stderr for agent_log, should the program close it. */
void agent_log_keep_stderr(void);

#endif
