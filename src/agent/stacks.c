/* stacks: a thread dump taken from inside the process (/stacks of the HTTP
 * endpoint, "stacks [json]" of the control socket). Each thread's name,
 * state, CPU time and system call come from /proc first; then each is sent
 * the agent's sampling signal carrying a thread-dump slot; the handler
 * (hot/dump.c) walks its own stack into the slot; names come afterwards,
 * here, outside signal context. The result is the model of
 * src/threaddump/, written by its writers: the same text and JSON as
 * `nprof stacks` (which reads this JSON back). Unlike `nprof stacks` by
 * ptrace (src/capture/threads_dump.c) it needs no ptrace permission, but,
 * like the wall engine, the signal interrupts a blocked system call
 * (restarted, or EINTR for nanosleep, poll, epoll_wait, select). The
 * agent's own threads are listed, their stacks not taken. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/hot/hot.h"
#include "base/clock.h"
#include "base/proc.h"
#include "symbolize/symbolize.h"
#include "threaddump/threaddump.h"

#define DUMP_MAX_THREADS 4096
#define DUMP_WAIT_NS 500000000ull /* per batch: a thread that has not answered
				     by then is reported as not answering */

enum dump_status { DS_TAKEN, DS_GONE, DS_NO_ANSWER, DS_AGENT, DS_SELF };

struct dump_thread {
	pid_t tid;
	struct thread_info proc; /* what /proc said before the signal; no frames */
	enum dump_status status;
	bool truncated;
	unsigned n;
	uint64_t *ips; /* leaf first */
};

static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static struct symbolizer *dump_syms; /* under dump_lock; kept: caches by build-id */
static unsigned dump_seq;	     /* under dump_lock */

static int list_threads(struct dump_thread **ret, size_t *ret_n, unsigned *ret_omitted)
{
	struct dump_thread *v;
	pid_t *tids;
	size_t n, kept;
	int err = proc_tasks(0, SIZE_MAX, &tids, &n);

	if (err < 0)
		return err;
	kept = n < DUMP_MAX_THREADS ? n : DUMP_MAX_THREADS;
	v = calloc(kept ? kept : 1, sizeof(*v));
	if (!v) {
		free(tids);
		return -ENOMEM;
	}
	for (size_t i = 0; i < kept; i++)
		v[i].tid = tids[i];
	free(tids);
	*ret_omitted = (unsigned)(n - kept);
	*ret = v;
	*ret_n = kept;
	return 0;
}

static int cmp_tid(const void *a, const void *b)
{
	const struct dump_thread *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

static int slots_get(struct hot_dump_slot **ret)
{
	struct hot_dump_slot *s = atomic_load(&hot.dump);

	if (!s) {
		/* Mapped once, never unmapped: a late handler may still look. */
		s = mmap(NULL, HOT_DUMP_SLOTS * sizeof(*s), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (s == MAP_FAILED)
			return -ENOMEM;
		atomic_store(&hot.dump, s);
	}
	*ret = s;
	return 0;
}

/* Signals up to HOT_DUMP_SLOTS threads (v[0..n)), each with its slot, and
 * collects what their handlers wrote. */
static void take_batch(struct hot_dump_slot *slots, struct dump_thread *v, size_t n)
{
	unsigned seq = ++dump_seq & 0x3fffffff;
	uint64_t deadline;
	bool waiting;

	for (size_t i = 0; i < n; i++) {
		siginfo_t si;

		if (v[i].status != DS_TAKEN)
			continue;
		atomic_store(&slots[i].tag, seq << 2 | HOT_DUMP_ARMED);
		memset(&si, 0, sizeof(si));
		si.si_signo = HOT_SIGNAL;
		si.si_code = SI_QUEUE;
		si.si_pid = getpid();
		si.si_uid = getuid();
		si.si_value.sival_ptr = (void *)(uintptr_t)hot_dump_word((unsigned)i, seq);
		if (syscall(SYS_rt_tgsigqueueinfo, getpid(), v[i].tid, HOT_SIGNAL, &si) < 0) {
			atomic_store(&slots[i].tag, 0);
			v[i].status = DS_GONE;
		}
	}
	deadline = clock_ns(CLOCK_MONOTONIC) + DUMP_WAIT_NS;
	do {
		waiting = false;
		for (size_t i = 0; i < n && !waiting; i++)
			waiting = v[i].status == DS_TAKEN &&
				  atomic_load(&slots[i].tag) != (seq << 2 | HOT_DUMP_DONE);
		if (waiting)
			usleep(200);
	} while (waiting && clock_ns(CLOCK_MONOTONIC) < deadline);
	for (size_t i = 0; i < n; i++) {
		struct hot_dump_slot *s = &slots[i];
		unsigned armed = seq << 2 | HOT_DUMP_ARMED;

		if (v[i].status != DS_TAKEN)
			continue;
		/* Not answered: disarm, unless its handler has just begun. */
		if (atomic_compare_exchange_strong(&s->tag, &armed, 0)) {
			v[i].status = DS_NO_ANSWER;
			continue;
		}
		for (int k = 0; k < 100000 && atomic_load(&s->tag) != (seq << 2 | HOT_DUMP_DONE); k++)
			sched_yield();
		if (atomic_load(&s->tag) != (seq << 2 | HOT_DUMP_DONE)) {
			v[i].status = DS_NO_ANSWER; /* left WRITING: slot seq moves on */
			continue;
		}
		v[i].ips = malloc((s->n ? s->n : 1) * sizeof(uint64_t));
		if (v[i].ips) {
			memcpy(v[i].ips, s->ips, s->n * sizeof(uint64_t));
			v[i].n = s->n;
		}
		v[i].truncated = s->truncated;
		atomic_store(&s->tag, 0);
	}
}

/* thread_dump_name_frames's namer: this process's symbols, one name per
 * address (no inlined calls: the agent keeps its work small). */
static int name_addr(void *arg, uint64_t addr, struct thread_frame_name *ret, unsigned max,
		     unsigned *ret_n)
{
	struct symbol_info si = { 0 };

	(void)max;
	proc_syms_lookup(arg, addr, false, 0, &si);
	ret[0] = (struct thread_frame_name){ si.name, si.module, si.file, si.module_offset,
					     si.kind, si.line };
	*ret_n = 1;
	return 0;
}

/* The model of the dump: what /proc said of each thread, then what its
 * handler walked. */
static int build_dump(struct dump_thread *v, size_t n, unsigned omitted, uint64_t took,
		      int64_t real, struct thread_dump **ret)
{
	struct thread_dump *td = thread_dump_new(getpid(), THREAD_DUMP_AGENT);

	if (!td)
		return -ENOMEM;
	td->time_ns = real;
	td->total_ns = took;
	td->omitted = omitted;
	thread_dump_read_process(td);
	for (size_t i = 0; i < n; i++) {
		struct thread_info *t = thread_dump_add_thread(td, v[i].tid);

		if (!t) {
			thread_dump_free(td);
			return -ENOMEM;
		}
		*t = v[i].proc;
		v[i].proc.frames = NULL;
		switch (v[i].status) {
		case DS_TAKEN:
			t->status = THREAD_TAKEN;
			t->frames = calloc(v[i].n ? v[i].n : 1, sizeof(*t->frames));
			if (!t->frames) {
				thread_dump_free(td);
				return -ENOMEM;
			}
			for (unsigned j = 0; j < v[i].n; j++)
				t->frames[j].addr = v[i].ips[j];
			t->nframes = v[i].n;
			t->truncated = v[i].truncated;
			if (t->truncated)
				snprintf(t->walk_end, sizeof(t->walk_end), "the agent's walk stopped");
			break;
		case DS_GONE: t->status = THREAD_GONE; break;
		case DS_NO_ANSWER: t->status = THREAD_FAILED, t->err = -ETIMEDOUT; break;
		case DS_AGENT:
		case DS_SELF: t->status = THREAD_AGENT; break;
		}
	}
	*ret = td;
	return 0;
}

int agent_stacks_dump(bool json, char **ret_buf, size_t *ret_len, struct diag *d)
{
	struct dump_thread *v = NULL;
	struct hot_dump_slot *slots;
	struct proc_syms *ps = NULL;
	struct thread_dump *td = NULL;
	size_t n = 0, len = 0;
	char *buf = NULL;
	unsigned omitted = 0;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), real = clock_ns(CLOCK_REALTIME), took;
	pid_t self = gettid();
	FILE *f = NULL;
	int err;

	pthread_mutex_lock(&dump_lock);
	err = agent_session_prepare_dump(d);
	if (err < 0)
		goto out;
	err = slots_get(&slots);
	if (err == 0)
		err = list_threads(&v, &n, &omitted);
	if (err < 0) {
		diag_set(d, err, "thread dump: %s", strerror(-err));
		goto out;
	}
	qsort(v, n, sizeof(*v), cmp_tid);
	/* State and system call first: the signal interrupts the call. */
	for (size_t i = 0; i < n; i++) {
		v[i].proc.tid = v[i].tid;
		v[i].proc.state = '?';
		snprintf(v[i].proc.name, sizeof(v[i].proc.name), "?");
		if (thread_info_read_proc(getpid(), &v[i].proc) < 0)
			v[i].status = DS_GONE;
		else if (v[i].tid == self)
			v[i].status = DS_SELF;
		else if (agent_thread_is_own(v[i].tid))
			v[i].status = DS_AGENT;
	}
	for (size_t i = 0; i < n; i += HOT_DUMP_SLOTS)
		take_batch(slots, v + i, n - i < HOT_DUMP_SLOTS ? n - i : HOT_DUMP_SLOTS);
	took = clock_ns(CLOCK_MONOTONIC) - t0;

	err = build_dump(v, n, omitted, took, (int64_t)real, &td);
	if (err < 0) {
		diag_set(d, err, "thread dump: out of memory");
		goto out;
	}
	if (!dump_syms)
		dump_syms = symbolizer_new();
	err = dump_syms ? symbolizer_open_process(dump_syms, getpid(), false, &ps, d) : -ENOMEM;
	if (err < 0) {
		if (!dump_syms)
			diag_set(d, err, "thread dump: out of memory");
		goto out;
	}
	err = thread_dump_name_frames(td, name_addr, ps);
	if (err < 0) {
		diag_set(d, err, "thread dump: out of memory");
		goto out;
	}
	thread_dump_sort(td);
	f = open_memstream(&buf, &len);
	if (!f) {
		err = diag_set(d, -ENOMEM, "thread dump: out of memory");
		goto out;
	}
	err = json ? thread_dump_write_json(td, f) : thread_dump_write_text(td, 0, f);
	if (fclose(f) != 0 || err < 0) {
		f = NULL;
		err = diag_set(d, -ENOMEM, "thread dump: out of memory");
		goto out;
	}
	f = NULL;
	*ret_buf = buf;
	*ret_len = len;
	buf = NULL;
	err = 0;
out:
	proc_syms_free(ps); /* before the unlock: it belongs to dump_syms */
	pthread_mutex_unlock(&dump_lock);
	thread_dump_free(td);
	for (size_t i = 0; i < n; i++)
		free(v[i].ips);
	free(v);
	free(buf);
	return err;
}
