/* profile: the model every source fills and every writer reads.
 *
 * A profile is a set of samples; each sample is a stack (interned frames,
 * root first), the thread it ran on, and one or more values (samples and
 * nanoseconds; bytes and objects; ...). Frames, stacks, threads and strings
 * are interned: equal ones share one id, so a profile of a million samples
 * over a thousand distinct stacks stays small. Samples with the same stack
 * and thread are merged as they are added.
 *
 * No I/O happens here. Not thread-safe: one writer fills a profile, then
 * any number of readers read it. Ids are dense indexes into the public
 * arrays below, which readers may walk directly but must not modify. */
#ifndef NPROF_PROFILE_PROFILE_H
#define NPROF_PROFILE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/id_index.h"

#define PROFILE_MAX_VALUES 4
#define PROFILE_MAX_NOTES 16

enum frame_kind {
	FRAME_USER,	/* code in the main executable */
	FRAME_LIBRARY,	/* code in a shared library */
	FRAME_KERNEL,
	FRAME_INLINED,	/* a function inlined into its caller's frame */
	FRAME_JIT,	/* code named by a /tmp/perf-PID.map */
	FRAME_THREAD,	/* a root pseudo-frame: a thread (-t), a process, a host */
	FRAME_UNKNOWN,	/* no symbol: the name is "module+0xOFFSET" */
};

struct frame {
	const char *name;   /* function name, demangled; never NULL */
	const char *module; /* path of the ELF module, or NULL */
	const char *file;   /* source file, or NULL when unknown */
	uint32_t line;	    /* 0 when unknown */
	enum frame_kind kind;
	/* An address in the module (file offset) of one instruction of this
	 * frame, for formats that want one (pprof). Not part of the frame's
	 * identity: the first one interned is kept. 0 when unknown. */
	uint64_t address;
};

/* A module the profile's frames refer to, for formats that list them. */
struct module {
	const char *path;
	const char *build_id; /* lowercase hex, or NULL */
};

/* One sample in time order, for formats that keep the timeline (JFR). */
struct sample_event {
	uint64_t time_ns; /* CLOCK_REALTIME */
	uint32_t stack;
	uint32_t thread;
	int64_t value;	  /* value 0 of the sample */
};

struct stack {
	uint32_t first;	 /* index of the first frame id in profile.stack_frames */
	uint32_t depth;
	bool truncated;	 /* the unwinder gave up before the root */
};

struct thread {
	pid_t tid;
	const char *name; /* the latest name seen; "" when unknown */
};

struct sample {
	uint32_t stack;
	uint32_t thread;
	int64_t values[PROFILE_MAX_VALUES];
};

struct value_type {
	const char *type; /* "samples", "cpu", "alloc_space", ... */
	const char *unit; /* "count", "nanoseconds", "bytes" */
};

/* What went less than perfectly, so every output can say how far to trust
 * it. Each counter is zero when nothing degraded. */
struct profile_degraded {
	uint64_t lost_samples;	     /* dropped by the kernel or the agent */
	uint64_t truncated_stacks;   /* samples whose unwinding stopped early */
	uint64_t unsymbolized_frames;/* distinct frames without a symbol */
};

struct profile {
	/* Description, set by the source before or after adding samples. */
	const char *event;	/* "cpu", "page-faults", ... */
	uint64_t interval;	/* the sampling interval, in interval_unit */
	const char *interval_unit; /* "nanoseconds", "events", "bytes" */
	struct value_type value_types[PROFILE_MAX_VALUES];
	unsigned nvalues;
	uint64_t start_ns;	/* CLOCK_REALTIME at start */
	uint64_t duration_ns;
	pid_t pid;
	const char *command;	/* the target's name, or NULL */
	const char *unwinder;	/* how stacks were produced: "fp", "dwarf" */
	bool target_exited;	/* the target exited before the end */
	struct profile_degraded degraded;
	const char *notes[PROFILE_MAX_NOTES]; /* one line each, for people */
	unsigned nnotes;

	/* Interned data; ids index these arrays. */
	struct frame *frames;
	size_t nframes;
	uint32_t *stack_frames; /* every stack's frame ids, root first */
	size_t nstack_frames;
	struct stack *stacks;
	size_t nstacks;
	struct thread *threads;
	size_t nthreads;
	struct sample *samples;
	size_t nsamples;
	struct module *modules;
	size_t nmodules;
	/* The timeline: at most max_events, later ones counted in
	 * events_dropped. Sources fill it only when max_events > 0. */
	struct sample_event *events;
	size_t nevents, max_events;
	uint64_t events_dropped;

	/* Private to profile.c. */
	struct profile_private *priv;
};

struct profile *profile_new(void);
void profile_free(struct profile *p);

/* Returns a copy of s owned by the profile, equal strings shared. NULL in,
 * NULL out; NULL with errno ENOMEM when out of memory. */
const char *profile_intern_string(struct profile *p, const char *s);

/* Declares the values every sample carries, in order. Call once, before
 * adding samples. Returns 0 or -EINVAL (more than PROFILE_MAX_VALUES). */
int profile_set_value_types(struct profile *p, const struct value_type *types,
			    unsigned n);

/* Adds a one-line note for the reader ("kernel frames omitted: ...").
 * Notes past PROFILE_MAX_NOTES are dropped. Returns 0 or -errno. */
int profile_add_note(struct profile *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Interns a frame (strings are copied); writes its id. 0 or -ENOMEM. */
int profile_intern_frame(struct profile *p, const struct frame *f,
			 uint32_t *ret_id);

/* Interns a stack of frame ids, frames[0] the root (outermost caller).
 * 0 or -ENOMEM. */
int profile_intern_stack(struct profile *p, const uint32_t *frames,
			 uint32_t depth, bool truncated, uint32_t *ret_id);

/* The thread with this tid, created when new; a non-NULL, non-empty name
 * replaces the one known. 0 or -ENOMEM. */
int profile_intern_thread(struct profile *p, pid_t tid, const char *name,
			  uint32_t *ret_id);

/* The name of a thread's root pseudo-frame (FRAME_THREAD, -t):
 * "[NAME tid=TID]", or "[tid=TID]" when name is NULL or empty. The engine,
 * the agent and the JFR writer and reader all name roots with it, so a
 * root is recognized wherever it was made. Written into buf as snprintf
 * writes (buf may be NULL when len is 0); returns the length it needs. */
int profile_thread_root_name(char *buf, size_t len, const char *name, pid_t tid);

/* The roots above a thread's, for a profile of several processes (a
 * service's workers) or hosts (a cluster's): "[NAME pid=PID]" ("[pid=PID]"
 * without a name) and "[host NAME]". As profile_thread_root_name. */
int profile_process_root_name(char *buf, size_t len, const char *name, pid_t pid);
int profile_host_root_name(char *buf, size_t len, const char *host);

/* Whether the len bytes at s are a root's name (any of the three above):
 * how a reader of a format without frame kinds tells FRAME_THREAD. */
bool profile_is_root_name(const char *s, size_t len);

/* Adds values (nvalues of them) to the sample (stack, thread), merging
 * with an existing one. 0 or -ENOMEM. */
int profile_add_sample(struct profile *p, uint32_t stack, uint32_t thread,
		       const int64_t *values);

/* Records a module's build-id (hex); the path is interned. Idempotent.
 * 0 or -ENOMEM. */
int profile_intern_module(struct profile *p, const char *path,
			  const char *build_id, uint32_t *ret_id);

/* Appends to the timeline when it is enabled (max_events > 0); past the
 * limit counts a drop. 0 or -ENOMEM. */
int profile_add_event(struct profile *p, uint64_t time_ns, uint32_t stack,
		      uint32_t thread, int64_t value);

/* The frame ids of a stack, root first. */
static inline const uint32_t *profile_stack_frames(const struct profile *p,
						   uint32_t stack)
{
	/* A profile of empty stacks has no frame storage at all. */
	return p->stack_frames ? p->stack_frames + p->stacks[stack].first : NULL;
}

/* The index in p->samples of the sample (stack, thread), or UINT32_MAX
 * when there is none. */
uint32_t profile_find_sample(const struct profile *p, uint32_t stack,
			     uint32_t thread);

/* Sum of value index v over all samples. */
int64_t profile_total(const struct profile *p, unsigned v);

#endif
