/* offcpu: see offcpu.h. */
#include "engine/offcpu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"

struct offcpu_thread {
	pid_t tid;
	bool off;	/* off a CPU since `since`, at stack in state */
	char state;
	uint32_t stack;
	uint64_t since;
};

void offcpu_init(struct offcpu *o, uint64_t start_ns, offcpu_span_fn on_span, void *ctx)
{
	memset(o, 0, sizeof(*o));
	o->start_ns = start_ns;
	o->on_span = on_span;
	o->ctx = ctx;
	id_index_init(&o->thread_index);
}

void offcpu_release(struct offcpu *o)
{
	if (!o)
		return;
	free(o->queue);
	free(o->threads);
	id_index_release(&o->thread_index);
	memset(o, 0, sizeof(*o));
}

static int thread_match(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct offcpu_thread *)ctx)[id].tid == *(const pid_t *)key;
}

/* The thread, added (on a CPU) when new; NULL when memory ran out. */
static struct offcpu_thread *thread_get(struct offcpu *o, pid_t tid)
{
	uint64_t h = hash_u64((uint64_t)tid);
	uint32_t id = id_index_find(&o->thread_index, h, thread_match, o->threads, &tid);

	if (id != ID_NONE)
		return &o->threads[id];
	if (array_reserve(&o->threads, &o->threads_cap, o->nthreads + 1, sizeof(*o->threads)) < 0 ||
	    id_index_insert(&o->thread_index, h, (uint32_t)o->nthreads) < 0)
		return NULL;
	o->threads[o->nthreads] = (struct offcpu_thread){ .tid = tid };
	return &o->threads[o->nthreads++];
}

int offcpu_thread_begin(struct offcpu *o, pid_t tid, bool on_cpu, char state, uint32_t stack)
{
	struct offcpu_thread *t = thread_get(o, tid);

	if (!t)
		return -ENOMEM;
	t->off = !on_cpu;
	t->state = state;
	t->stack = stack;
	t->since = o->start_ns;
	return 0;
}

static void span_end(struct offcpu *o, struct offcpu_thread *t, uint64_t end)
{
	struct offcpu_span s = { t->tid, t->stack, t->state, t->since, 0 };

	t->off = false;
	if (end <= t->since)
		return;
	s.ns = end - t->since;
	o->on_span(o->ctx, &s);
}

static void account(struct offcpu *o, const struct offcpu_switch *sw)
{
	struct offcpu_thread *t = thread_get(o, sw->tid);

	if (!t) {
		o->unpaired++;
		return;
	}
	if (sw->kind == OFFCPU_IN) {
		/* An in while on a CPU: its out was lost (or the thread is
		 * new, or began on a CPU): nothing to close. */
		if (t->off)
			span_end(o, t, sw->time_ns);
		return;
	}
	if (t->off) {
		/* An out while off: the in between was lost, and with it
		 * when that span ended. */
		t->off = false;
		o->unpaired++;
	}
	if (sw->state == 'X' || sw->state == 'Z')
		return; /* the thread's last switch */
	t->off = true;
	t->state = sw->state;
	t->stack = sw->stack;
	t->since = sw->time_ns > o->start_ns ? sw->time_ns : o->start_ns;
}

int offcpu_add(struct offcpu *o, const struct offcpu_switch *sw)
{
	if (o->nqueue >= OFFCPU_MAX_QUEUE) {
		/* Account what is older than some queued switch now:
		 * bounded memory over exact pairing across rings drained
		 * very late. */
		size_t before = o->nqueue;

		offcpu_flush(o, o->queue[o->nqueue / 2].time_ns);
		o->early += before - o->nqueue;
	}
	if (array_reserve(&o->queue, &o->queue_cap, o->nqueue + 1, sizeof(*o->queue)) < 0) {
		o->unpaired++;
		return -ENOMEM;
	}
	o->queue[o->nqueue] = *sw;
	o->queue[o->nqueue].seq = o->seq++;
	o->nqueue++;
	return 0;
}

static int cmp_switch(const void *a, const void *b)
{
	const struct offcpu_switch *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	/* seq wraps after 4 G switches; ties that far apart do not meet. */
	return (x->seq > y->seq) - (x->seq < y->seq);
}

void offcpu_flush(struct offcpu *o, uint64_t before_ns)
{
	size_t n = 0;

	if (!o->nqueue)
		return;
	qsort(o->queue, o->nqueue, sizeof(*o->queue), cmp_switch);
	while (n < o->nqueue && o->queue[n].time_ns < before_ns)
		account(o, &o->queue[n++]);
	memmove(o->queue, o->queue + n, (o->nqueue - n) * sizeof(*o->queue));
	o->nqueue -= n;
}

void offcpu_finish(struct offcpu *o, uint64_t end_ns)
{
	offcpu_flush(o, UINT64_MAX);
	for (size_t i = 0; i < o->nthreads; i++)
		if (o->threads[i].off)
			span_end(o, &o->threads[i], end_ns);
}

struct remainder {
	uint64_t rem;
	size_t i;
};

static int cmp_remainder(const void *a, const void *b)
{
	const struct remainder *x = a, *y = b;

	if (x->rem != y->rem)
		return x->rem > y->rem ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

int offcpu_apportion(const uint64_t *ns, size_t n, uint64_t unit, uint64_t *ret_samples)
{
	struct remainder *r;
	uint64_t total = 0, whole = 0, want;

	if (!n)
		return 0;
	if (!unit)
		unit = 1;
	r = malloc(n * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		total += ns[i];
		ret_samples[i] = ns[i] / unit;
		whole += ret_samples[i];
		r[i] = (struct remainder){ ns[i] % unit, i };
	}
	/* Each stack's floor leaves less than one unit each: at most n
	 * units to hand out. */
	want = total / unit + (total % unit >= unit - unit / 2);
	qsort(r, n, sizeof(*r), cmp_remainder);
	for (size_t k = 0; k < n && whole < want; k++, whole++)
		ret_samples[r[k].i]++;
	free(r);
	return 0;
}
