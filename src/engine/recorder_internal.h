/* What the recorder's three files share: its private state and the
 * functions one file calls in another. recorder.c runs a recording,
 * recorder_attach.c opens events on threads, recorder_read.c turns the
 * records into the chain table. Not for use outside src/engine/. */
#ifndef NPROF_ENGINE_RECORDER_INTERNAL_H
#define NPROF_ENGINE_RECORDER_INTERNAL_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"
#include "base/id_index.h"
#include "engine/offcpu.h"
#include "engine/perf_ring.h"
#include "engine/recorder.h"
#include "engine/sched_switch.h"

#define POLL_MS 100		/* how promptly *stop is noticed */
/* A record's time is taken before it is written into its ring: after a
 * drain, switches this much older than its start are surely all read. */
#define OFFCPU_MARGIN_NS 2000000ull
#define MAX_RESCANS 64		/* /proc/PID/task passes; inherit covers the rest */
#define MAX_CPUS 8192
#define RING_BYTES (128u << 10)	/* per CPU, for ~100 samples/s per thread */
#define RING_BYTES_FAST (512u << 10)
#define RING_BYTES_MIN (8u << 10)

struct open_event {
	int fd;
	uint64_t id;	/* PERF_EVENT_IOC_ID; what samples carry */
	pid_t tid;	/* the thread it was opened on */
	bool sched;	/* the sched_switch event, parsed by sched_attr */
};

struct recorder_private {
	struct recorder_config c;
	const struct unwinder *unwinder;
	void *unwind_state;
	struct perf_event_attr attr; /* template for every open */
	/* Off-CPU: the sched_switch tracepoint; opened beside attr (wall),
	 * or as attr itself (offcpu: then has_sched_attr is false). */
	struct sched_switch_format sched;
	struct perf_event_attr sched_attr;
	bool has_sched_attr;
	struct offcpu off;	/* spans, fed by the reader */
	pid_t pid;
	int pidfd;		/* readable when the target exits; -1 if none */
	int *cpus;
	unsigned ncpus;
	struct perf_ring **rings; /* per CPU index; owned by its first event */
	size_t ring_want;
	struct open_event *events;
	size_t nevents, events_cap;
	struct id_index event_index;  /* id -> events[] */
	pid_t *opened;		      /* threads opened directly */
	size_t nopened, opened_cap;
	struct id_index opened_index;
	struct id_index thread_index; /* tid -> r->threads[] */
	size_t threads_cap;
	uint64_t *scratch;	      /* unwinder output, max_stack entries */
	uint64_t start_mono;
};

/* sample_id_all trailer for our sample_type: TID, TIME, IDENTIFIER. */
struct id_trailer {
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id;
};

/* recorder.c */
int recorder_read_small_file(const char *path, char *buf, size_t len);

/* recorder_attach.c: probing the event, opening it on threads. */
void recorder_raise_nofile(void);
int recorder_online_cpus(struct recorder_private *p);
void recorder_make_attr(struct recorder *r, bool kernel,
			struct perf_event_attr *a);
int recorder_probe(struct recorder *r, struct diag *d);
/* wall: p->sched_attr, the sched_switch event opened beside p->attr
 * (without the side-band records p->attr brings); nothing for others. */
void recorder_make_sched_beside(struct recorder *r);
size_t recorder_ring_fit(size_t want, unsigned ncpus);
int recorder_open_thread(struct recorder *r, pid_t tid, bool *ret_gone,
			 struct diag *d);
int recorder_scan_threads(struct recorder *r, unsigned *ret_new,
			  struct diag *d);
struct raw_thread *recorder_thread_get(struct recorder *r, pid_t tid);
void recorder_thread_set_name(struct recorder *r, pid_t tid,
			      const char *name);
bool recorder_keep_record(struct recorder *r, uint64_t id, pid_t tid);
const struct open_event *recorder_event_of(const struct recorder *r, uint64_t id);

/* recorder_read.c: the records, parsed and aggregated. */
void recorder_drain_all(struct recorder *r);
/* The off-CPU spans' sink: adds a span to its chain and the timeline. */
void recorder_on_span(void *ctx, const struct offcpu_span *s);
/* Aggregates an address chain of thread tid (kind RAW_OFFCPU in state)
 * without counting a sample; its chain id, or ID_NONE. */
uint32_t recorder_offcpu_stack(struct recorder *r, pid_t tid, char state, bool unknown,
			       const uint64_t *ips, unsigned n, unsigned nkernel, bool truncated);

#endif
