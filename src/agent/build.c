/* build: the one profile builder of the agent. Every agent event (cpu,
 * itimer, wall from session.c; alloc, heap, lock from heap.c) turns its
 * stacks of addresses into a profile here, so that every output option
 * means the same for all of them: simple names (simple), a
 * [name tid=N] root per thread (thread), the description every agent
 * profile carries. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/hot/hot.h"
#include "base/proc.h"

int agent_build_open(struct agent_build *b, struct symbolizer *syms, enum event_id e,
		     const struct agent_options *o, struct diag *d)
{
	char comm[16] = "";
	int err;

	memset(b, 0, sizeof(*b));
	frame_cache_init(&b->names);
	b->simple = o && o->simple;
	b->per_thread = o && o->per_thread;
	b->p = profile_new();
	b->frames = calloc(HOT_MAX_DEPTH + 4, sizeof(*b->frames));
	if (!b->p || !b->frames)
		return diag_set(d, -ENOMEM, "building the profile: out of memory");
	err = profile_set_value_types(b->p, event_defs[e].values, event_defs[e].nvalues);
	if (err < 0)
		return diag_set(d, err, "building the profile: %s", strerror(-err));
	proc_comm(0, 0, comm, sizeof(comm));
	b->p->event = profile_intern_string(b->p, event_name(e));
	b->p->interval_unit = profile_intern_string(b->p, event_defs[e].interval_unit);
	b->p->unwinder = profile_intern_string(b->p, "dwarf");
	b->p->command = comm[0] ? profile_intern_string(b->p, comm) : NULL;
	b->p->pid = getpid();
	return symbolizer_open_process(syms, getpid(), false, &b->ps, d);
}

/* One frame per address: the agent never asks for lines, so no address
 * brings inlined frames with it. */
static int frame_for(struct agent_build *b, uint64_t addr, uint32_t *ret)
{
	uint32_t ids[SYM_MAX_FRAMES_PER_ADDR];
	unsigned n;
	int err = frame_cache_get(&b->names, b->ps, b->p, addr, false,
				  b->simple ? SYM_SIMPLE : 0, ids, &n);

	if (err < 0)
		return err;
	*ret = ids[0];
	return 0;
}

static int pseudo(struct profile *p, const char *name, enum frame_kind kind, uint32_t *ret)
{
	struct frame f = { .name = name, .kind = kind };

	return profile_intern_frame(p, &f, ret);
}

/* Names of threads seen alive, for thread roots of threads gone by the
 * time the profile is built (alloc, heap and lock keep no thread table
 * of their own): the latest SEEN_MAX, oldest overwritten first. */
#define SEEN_MAX 1024
static struct {
	pthread_mutex_t lock;
	pid_t tid[SEEN_MAX];
	char name[SEEN_MAX][16];
	unsigned next;
} seen = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void seen_name(pid_t tid, char *name, size_t len)
{
	pthread_mutex_lock(&seen.lock);
	for (unsigned i = 0; i < SEEN_MAX; i++)
		if (seen.tid[i] == tid) {
			snprintf(name, len, "%s", seen.name[i]);
			break;
		}
	pthread_mutex_unlock(&seen.lock);
}

void agent_build_note_thread(pid_t tid, const char *name)
{
	unsigned slot;

	if (!name[0])
		return;
	pthread_mutex_lock(&seen.lock);
	for (slot = 0; slot < SEEN_MAX && seen.tid[slot] != tid; slot++)
		;
	if (slot == SEEN_MAX)
		slot = seen.next++ % SEEN_MAX;
	seen.tid[slot] = tid;
	snprintf(seen.name[slot], sizeof(seen.name[slot]), "%s", name);
	pthread_mutex_unlock(&seen.lock);
}

void agent_build_note_threads(void)
{
	struct agent_thread_list l;

	if (agent_threads_scan(&l) < 0)
		return;
	for (unsigned i = 0; i < l.n; i++) {
		char name[16] = "";

		proc_comm(0, l.tids[i], name, sizeof(name));
		agent_build_note_thread(l.tids[i], name);
	}
	agent_thread_list_release(&l);
}

/* The thread tid, named: name, else its comm now, else the name it had
 * when last seen alive. */
static int thread_for(struct agent_build *b, pid_t tid, const char *name, uint32_t *ret)
{
	char comm[16] = "";
	int err = profile_intern_thread(b->p, tid, name, ret);

	if (err < 0 || b->p->threads[*ret].name[0])
		return err;
	proc_comm(0, tid, comm, sizeof(comm));
	if (!comm[0])
		seen_name(tid, comm, sizeof(comm));
	return comm[0] ? profile_intern_thread(b->p, tid, comm, ret) : 0;
}

int agent_build_add(struct agent_build *b, const struct agent_build_stack *s,
		    const int64_t *values, uint32_t *ret_stack, uint32_t *ret_thread)
{
	uint32_t depth = 0, stack, thread;
	int err = thread_for(b, s->tid, s->thread_name, &thread);

	if (err < 0)
		return err;
	if (b->per_thread) {
		const char *name = b->p->threads[thread].name;
		char root[64];

		if (s->root)
			snprintf(root, sizeof(root), "%s", s->root);
		else
			profile_thread_root_name(root, sizeof(root), name, s->tid);
		err = pseudo(b->p, root, FRAME_THREAD, &b->frames[depth++]);
		if (err < 0)
			return err;
	}
	if (s->n > HOT_MAX_DEPTH)
		return -EINVAL;
	for (uint32_t i = s->n; i-- > 0;) {
		/* ips[0] is the sampled pc (or, from an interposer, the call
		 * itself); the rest are return addresses: name the call, the
		 * byte before. */
		err = frame_for(b, i ? s->ips[i] - 1 : s->ips[i], &b->frames[depth++]);
		if (err < 0)
			return err;
	}
	if (s->leaf) {
		err = pseudo(b->p, s->leaf, s->leaf_kind, &b->frames[depth++]);
		if (err < 0)
			return err;
	}
	err = profile_intern_stack(b->p, b->frames, depth, s->truncated, &stack);
	if (err < 0)
		return err;
	if (ret_stack)
		*ret_stack = stack;
	if (ret_thread)
		*ret_thread = thread;
	return profile_add_sample(b->p, stack, thread, values);
}

struct profile *agent_build_take(struct agent_build *b)
{
	struct profile *p = b->p;

	b->p = NULL;
	return p;
}

void agent_build_close(struct agent_build *b)
{
	profile_free(b->p);
	proc_syms_free(b->ps);
	free(b->frames);
	frame_cache_release(&b->names);
	memset(b, 0, sizeof(*b));
}
