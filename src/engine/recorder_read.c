/* Reading: perf records parsed by our sample_type, unwound and
 * aggregated by (thread, kind, address chain) in a chain table, with the
 * switch, comm, fork and mmap records that keep the thread table and the
 * modules current. See recorder_internal.h. */
#include "engine/recorder_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/id_index.h"
#include "engine/perf_ring.h"
#include "profile/events.h"

/* Parses a sample by a's sample_type; -EBADMSG when it is cut short. */
static int parse_sample(const struct perf_event_attr *a,
			const struct perf_event_header *h,
			struct raw_sample *s)
{
	const uint64_t *w = (const uint64_t *)(h + 1);
	const uint64_t *end = (const uint64_t *)((const char *)h + h->size);
	uint64_t t = a->sample_type;

#define NEED(k)                                              \
	do {                                                 \
		if ((uint64_t)(end - w) < (uint64_t)(k))     \
			return -EBADMSG;                     \
	} while (0)
	memset(s, 0, sizeof(*s));
	if (t & PERF_SAMPLE_IDENTIFIER) {
		NEED(1);
		s->id = *w++;
	}
	if (t & PERF_SAMPLE_IP) {
		NEED(1);
		s->ip = *w++;
	}
	if (t & PERF_SAMPLE_TID) {
		uint32_t pt[2];

		NEED(1);
		memcpy(pt, w++, sizeof(pt));
		s->pid = pt[0];
		s->tid = pt[1];
	}
	if (t & PERF_SAMPLE_TIME) {
		NEED(1);
		s->time = *w++;
	}
	if (t & PERF_SAMPLE_ADDR)
		w++;
	if (t & PERF_SAMPLE_ID)
		w++;
	if (t & PERF_SAMPLE_STREAM_ID)
		w++;
	if (t & PERF_SAMPLE_CPU)
		w++;
	if (t & PERF_SAMPLE_PERIOD) {
		NEED(1);
		s->period = *w++;
	}
	if (t & (PERF_SAMPLE_READ | PERF_SAMPLE_BRANCH_STACK))
		return -EBADMSG; /* never requested */
	if (t & PERF_SAMPLE_CALLCHAIN) {
		NEED(1);
		s->nr = *w++;
		NEED(s->nr);
		s->callchain = w;
		w += s->nr;
	}
	if (t & PERF_SAMPLE_RAW) {
		uint32_t size;

		/* u32 size, then size bytes; the two padded to 8 bytes. */
		NEED(1);
		memcpy(&size, w, sizeof(size));
		NEED(((uint64_t)size + 4 + 7) / 8);
		s->raw = (const uint8_t *)w + 4;
		s->raw_size = size;
		w += ((uint64_t)size + 4 + 7) / 8;
	}
	if (t & PERF_SAMPLE_REGS_USER) {
		NEED(1);
		s->regs_abi = *w++;
		if (s->regs_abi) {
			s->nregs = (unsigned)__builtin_popcountll(
				a->sample_regs_user);
			NEED(s->nregs);
			s->regs = w;
			w += s->nregs;
		}
	}
	if (t & PERF_SAMPLE_STACK_USER) {
		NEED(1);
		s->stack_size = *w++;
		if (s->stack_size) {
			NEED(s->stack_size / 8 + 1);
			s->stack = (const uint8_t *)w;
			w += s->stack_size / 8;
			s->stack_dyn_size = *w++;
		}
	}
#undef NEED
	return 0;
}

/* The per-sample work: one hash of the chain and, for a chain seen
 * before, two additions (count samples, 0 or 1). Returns the chain's id,
 * or ID_NONE when the tables are full. */
static uint32_t aggregate_n(struct recorder *r, const struct chain_key *k,
			    uint64_t period, unsigned count)
{
	uint32_t id;

	if (chain_table_add(&r->chains, k, count, period, &id) < 0) {
		r->stats.table_full++;
		return ID_NONE;
	}
	r->stats.samples += count;
	return id;
}

static uint32_t aggregate(struct recorder *r, const struct chain_key *k, uint64_t period)
{
	return aggregate_n(r, k, period, 1);
}

uint32_t recorder_offcpu_stack(struct recorder *r, pid_t tid, char state, bool unknown,
			       const uint64_t *ips, unsigned n, unsigned nkernel, bool truncated)
{
	struct chain_key k = { .ips = ips, .n = n, .nkernel = nkernel, .tid = tid,
			       .kind = RAW_OFFCPU, .state = state, .truncated = truncated,
			       .flags = unknown ? RAW_UNKNOWN_STACK : 0 };

	return aggregate_n(r, &k, 0, 0);
}

void recorder_on_span(void *ctx, const struct offcpu_span *s)
{
	struct recorder *r = ctx;

	if (s->stack == ID_NONE || s->stack >= r->chains.nchains)
		return;
	r->chains.chains[s->stack].weight += s->ns;
	chain_timeline_add(&r->timeline, s->start_ns, s->stack, s->ns);
}

/* A sched_switch sample: where and in which state the thread left the
 * CPU; its span opens here (offcpu.c) and closes at its switch-in. */
static void on_switch_out(struct recorder *r, const struct raw_sample *s,
			  const struct unwound *u)
{
	struct recorder_private *p = r->priv;
	struct offcpu_switch sw = { .time_ns = s->time, .tid = (pid_t)s->tid,
				    .kind = OFFCPU_OUT, .stack = ID_NONE };
	char state = sched_switch_state(&p->sched, s->raw, s->raw_size);

	/* The scheduler's R (preempted, or yielded): runnable, waiting
	 * for a CPU; the wall state frames keep 'R' for running. */
	sw.state = state == 'R' ? EVENT_STATE_RUNNABLE : state;
	if (state != 'X') {
		struct chain_key k = { .ips = p->scratch, .n = u->n, .nkernel = u->nkernel,
				       .tid = (pid_t)s->tid, .kind = RAW_OFFCPU,
				       .state = sw.state, .truncated = u->truncated };

		sw.stack = aggregate(r, &k, 0);
		if (sw.stack == ID_NONE)
			return;
	}
	offcpu_add(&p->off, &sw);
}

static void on_sample(struct recorder *r, const struct perf_event_header *h)
{
	struct recorder_private *p = r->priv;
	struct raw_sample s;
	struct unwound u;
	struct chain_key k;
	uint32_t id;

	const struct open_event *ev;
	const struct perf_event_attr *a = &p->attr;

	/* The identifier comes first whatever the sample_type: it says
	 * which event (and so which layout) this is. */
	if (h->size >= sizeof(*h) + 8 && p->has_sched_attr) {
		uint64_t ident;

		memcpy(&ident, h + 1, sizeof(ident));
		ev = recorder_event_of(r, ident);
		if (ev && ev->sched)
			a = &p->sched_attr;
	}
	if (parse_sample(a, h, &s) < 0 || r->switch_records)
		return;
	if ((pid_t)s.pid != p->pid) {
		r->stats.other_process++;
		return;
	}
	if (!recorder_keep_record(r, s.id, (pid_t)s.tid))
		return;
	if (p->unwinder->unwind(p->unwind_state, &s, p->scratch, r->max_stack,
				&u) < 0) {
		r->stats.unwind_failed++;
		return;
	}
	if (u.truncated) {
		r->stats.truncated++;
		r->stats.truncated_by[u.end < UNWOUND_NEND ? u.end : UNWOUND_FAULT]++;
	}
	if (r->offcpu && (a->sample_type & PERF_SAMPLE_RAW)) {
		on_switch_out(r, &s, &u);
		return;
	}
	k = (struct chain_key){ .ips = p->scratch, .n = u.n, .nkernel = u.nkernel,
				.tid = (pid_t)s.tid, .kind = RAW_SAMPLE, .truncated = u.truncated };
	id = aggregate(r, &k, s.period);
	if (id != ID_NONE)
		chain_timeline_add(&r->timeline, s.time, id, 1);
}

static const struct id_trailer *trailer(const struct perf_event_header *h,
					size_t body)
{
	if (h->size < sizeof(*h) + body + sizeof(struct id_trailer))
		return NULL;
	return (const void *)((const char *)h + h->size -
			      sizeof(struct id_trailer));
}

static void on_switch(struct recorder *r, const struct perf_event_header *h)
{
	const struct id_trailer *t = trailer(h, 0);
	struct chain_key k = { 0 };
	uint32_t id;

	if (r->offcpu && t && !(h->misc & PERF_RECORD_MISC_SWITCH_OUT)) {
		struct offcpu_switch sw = { .time_ns = t->time, .tid = (pid_t)t->tid,
					    .kind = OFFCPU_IN };

		/* Back on a CPU: closes the span its switch-out opened. */
		if ((pid_t)t->pid == r->priv->pid && recorder_keep_record(r, t->id, (pid_t)t->tid))
			offcpu_add(&r->priv->off, &sw);
		return;
	}
	if (!r->switch_records || !t || !(h->misc & PERF_RECORD_MISC_SWITCH_OUT))
		return;
	if ((pid_t)t->pid != r->priv->pid) {
		r->stats.other_process++;
		return;
	}
	if (!recorder_keep_record(r, t->id, (pid_t)t->tid))
		return;
	k.tid = (pid_t)t->tid;
	k.kind = h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT
			 ? RAW_SWITCH_PREEMPT
			 : RAW_SWITCH_VOLUNTARY;
	id = aggregate(r, &k, 1);
	if (id != ID_NONE)
		chain_timeline_add(&r->timeline, t->time, id, 1);
}

/* A NUL-terminated string starting at s inside the record, or NULL. */
static const char *record_string(const struct perf_event_header *h,
				 const char *s)
{
	const char *end = (const char *)h + h->size;

	return s < end && memchr(s, '\0', (size_t)(end - s)) ? s : NULL;
}

static void on_comm(struct recorder *r, const struct perf_event_header *h)
{
	const uint32_t *pt = (const void *)(h + 1);
	const char *name = record_string(h, (const char *)(pt + 2));

	if (h->size < sizeof(*h) + 8 || !name || (pid_t)pt[0] != r->priv->pid)
		return;
	recorder_thread_set_name(r, (pid_t)pt[1], name);
	if ((pid_t)pt[1] == r->priv->pid && (h->misc & PERF_RECORD_MISC_COMM_EXEC)) {
		const struct unwinder *u = r->priv->unwinder;

		snprintf(r->comm, sizeof(r->comm), "%s", name);
		/* A new address space: its mappings follow as records. */
		if (u->on_exec && r->priv->unwind_state)
			u->on_exec(r->priv->unwind_state);
	}
}

static void on_fork(struct recorder *r, const struct perf_event_header *h)
{
	const uint32_t *f = (const void *)(h + 1); /* pid ppid tid ptid */
	struct raw_thread *child;
	const char *parent;

	if (h->size < sizeof(*h) + 16 || (pid_t)f[0] != r->priv->pid)
		return;
	/* A new thread is named after its creator until it renames
	 * itself (which sends a COMM record). */
	parent = recorder_thread_name(r, (pid_t)f[3]);
	child = recorder_thread_get(r, (pid_t)f[2]);
	if (child && !child->name[0] && parent[0])
		snprintf(child->name, sizeof(child->name), "%s", parent);
}

static void on_mmap(struct recorder *r, const struct perf_event_header *h)
{
	struct recorder_private *p = r->priv;
	const char *b = (const char *)(h + 1);
	struct mapping m = { 0 };
	uint32_t pid;
	uint64_t addr, len;
	size_t fixed = h->type == PERF_RECORD_MMAP2 ? 64 : 32;

	if (h->size < sizeof(*h) + fixed)
		return;
	memcpy(&pid, b, 4);
	if ((pid_t)pid != p->pid ||
	    (!p->c.on_mapping && !(p->unwinder->on_mapping && p->unwind_state)))
		return;
	memcpy(&addr, b + 8, 8);
	memcpy(&len, b + 16, 8);
	memcpy(&m.pgoff, b + 24, 8);
	m.start = addr;
	m.end = addr + len;
	if (h->type == PERF_RECORD_MMAP2) {
		if (!(h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
			memcpy(&m.maj, b + 32, 4);
			memcpy(&m.min, b + 36, 4);
			memcpy(&m.inode, b + 40, 8);
		}
		memcpy(&m.prot, b + 56, 4);
	} else {
		m.prot = (h->misc & PERF_RECORD_MISC_MMAP_DATA) ? PROT_READ
								: PROT_READ | PROT_EXEC;
	}
	m.path = record_string(h, b + fixed);
	if (!m.path)
		return;
	r->stats.mappings++;
	if (p->unwinder->on_mapping && p->unwind_state)
		p->unwinder->on_mapping(p->unwind_state, &m);
	if (p->c.on_mapping)
		p->c.on_mapping(p->c.ctx, &m);
}

static void on_record(void *ctx, const struct perf_event_header *h)
{
	struct recorder *r = ctx;
	const uint64_t *w = (const uint64_t *)(h + 1);

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		on_sample(r, h);
		break;
	case PERF_RECORD_SWITCH:
		on_switch(r, h);
		break;
	case PERF_RECORD_COMM:
		on_comm(r, h);
		break;
	case PERF_RECORD_FORK:
		on_fork(r, h);
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		on_mmap(r, h);
		break;
	case PERF_RECORD_LOST: /* id, lost */
		if (h->size >= sizeof(*h) + 16)
			r->stats.lost += w[1];
		break;
	case PERF_RECORD_LOST_SAMPLES: /* lost */
		if (h->size >= sizeof(*h) + 8)
			r->stats.lost += w[0];
		break;
	case PERF_RECORD_THROTTLE:
		r->stats.throttled++;
		break;
	default:
		break;
	}
}

void recorder_drain_all(struct recorder *r)
{
	struct recorder_private *p = r->priv;

	for (unsigned ci = 0; ci < p->ncpus; ci++)
		if (p->rings[ci])
			perf_ring_drain(p->rings[ci], on_record, r);
}
