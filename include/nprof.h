/* nprof.h — the C API of libnprof.so, nprof's in-process agent.
 *
 * The agent samples the threads of the process it is loaded into: `cpu`
 * (a per-thread perf_event; falls back to `itimer` where perf_events are
 * denied), `itimer` (per-thread CPU-time timers) and `wall` (every thread
 * at a fixed period, whatever its state). Three ways to use it:
 *
 *   LD_PRELOAD=libnprof.so NPROF_START=event=cpu,file=/tmp/p-%p.html prog
 *   nprof record -e itimer -- prog          (which preloads it)
 *   link with -lnprof and call the functions below
 *
 * Options are one string of key=value pairs separated by commas, the same
 * everywhere (NPROF_START, nprof_start, the control socket):
 *   event=cpu|itimer|wall   interval=10ms   duration=30 (seconds; 0/absent:
 *   until stopped or exit)   file=PATH (%p pid, %t time)   output=FORMAT
 *   (collapsed, flamegraph, pprof, ...; default from the file's extension)
 *   jstackdepth=N   thread (per-thread stacks)   simple   wall_threads=N
 *   title=T   width=PX   height=PX   minwidth=PX   reverse
 *
 * Threads: every function may be called from any thread, never from a
 * signal handler. Each returns 0 or a negative errno; nprof_last_error()
 * then holds a one-line reason. One profile runs at a time (-EBUSY).
 * The agent uses SIGPROF; a program that uses SIGPROF itself keeps
 * receiving its own SIGPROF signals through the agent's handler. */
#ifndef NPROF_H
#define NPROF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NPROF_API_VERSION 1

/* Starts a profile. With duration=, it ends by itself and, with file=,
 * is written then; without, it runs until nprof_stop() or exit (when a
 * file= is given, it is written at exit and at a fatal signal). */
int nprof_start(const char *options);

/* Ends the running profile; writes it to the start's file= if any.
 * The profile stays available to nprof_dump(). -ENOENT: none runs. */
int nprof_stop(void);

/* Writes a profile snapshot: the running profile so far (or, when none
 * runs, the last one that ended) as options say: file= (required) and
 * output=. */
int nprof_dump(const char *options);

/* One line: "idle" or "running event=cpu effective=itimer samples=N
 * weight_ns=W" (W: the time the samples stand for, itimer's merged
 * expirations included). */
int nprof_status(char *buf, size_t len);

/* Serves the control socket (@nprof-agent-PID) that `nprof record PID`
 * and `nprof list` use. Started at load unless NPROF_CONTROL=0. */
int nprof_control_start(void);

/* Serves the HTTP endpoint (docs/agent.md): GET /prof (Hadoop's
 * ProfileServlet parameters; the profile in the body after `duration`),
 * /stacks (a thread dump) and /heap. address is "127.0.0.1:9870",
 * "[::1]:9870" or "9870" (port 0: any free port, logged on stderr); NULL:
 * $NPROF_HTTP, else 127.0.0.1:9870. Loopback only unless
 * NPROF_HTTP_ALLOW_REMOTE=1 (-EACCES). Started at load when NPROF_HTTP
 * is set. -EALREADY when serving.
 * Auth, as for NPROF_HTTP, from $NPROF_HTTP_AUTH when this is called: by
 * default (unset or "token") every request needs a random token (64 hex
 * digits, new at each start) as "Authorization: Bearer TOKEN" or
 * "?token=TOKEN", else 403. The token is written, mode 0600, to
 * http-PID.token in $XDG_RUNTIME_DIR/nprof, /run/user/UID/nprof,
 * /run/nprof (root) or /tmp/nprof-UID, the first whose base is the
 * effective user's; nprof_http_token_path() says which. It is removed
 * by nprof_http_stop() and at exit (not when the process is killed; the
 * next process with that pid replaces it). "none" serves every local
 * user without a token; another value: -EINVAL. Set it with setenv()
 * before the call to choose in code. */
int nprof_http_start(const char *address);

/* Stops it, after any /prof in progress. -ENOENT: not serving. */
int nprof_http_stop(void);

/* The path of the running endpoint's token file into buf, "" when it is
 * served open (NPROF_HTTP_AUTH=none). -ENOENT: not serving; -ERANGE: buf
 * too short (PATH_MAX is enough). */
int nprof_http_token_path(char *buf, size_t len);

/* Heap profiling, switched on and off while the process runs (the
 * StarRocks way; docs/memory.md). Allocations are sampled every
 * interval bytes on average (options "interval=512k", the default) and
 * the sampled blocks still live are kept, so that a heap snapshot
 * (nprof_heap_dump) says which
 * stacks hold how much memory: inuse_space, inuse_objects, alloc_space,
 * alloc_objects (estimates, unbiased). Any allocator the program uses
 * (glibc, jemalloc, tcmalloc, mimalloc) is seen through the interposed
 * malloc family.
 *   nprof_heap_enable: -EALREADY when on.   nprof_heap_disable: -EALREADY
 *   when off.   nprof_heap_status: one line ("heap profiling on since ...,
 *   interval N bytes, N live sampled blocks, N MB estimated in use").
 *   nprof_heap_dump: options file= (required) and output= (dot, pprof,
 *   collapsed, flamegraph, ...); -ENOENT when off. */
int nprof_heap_enable(const char *options);
int nprof_heap_disable(void);
int nprof_heap_status(char *buf, size_t len);
int nprof_heap_dump(const char *options);

/* The reason for the calling thread's last failure, "" when none. */
const char *nprof_last_error(void);

/* "0.1.0" */
const char *nprof_version(void);

#ifdef __cplusplus
}
#endif

#endif
