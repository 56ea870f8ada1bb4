/* build: how the agent opens a profile. Every agent event (cpu, itimer,
 * wall from session.c; alloc, heap, lock from heap.c) builds its profile
 * with chain_build, the builder the engine uses too, opened here with
 * what every agent profile carries: this process, unwound by DWARF, the
 * options' simple names and thread roots, and the names of threads gone
 * by the time the profile is built. */
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

/* A thread the profile has no name for: its comm now, else the name it
 * had when last seen alive. */
static void name_thread(pid_t tid, char *name, size_t len)
{
	proc_comm(0, tid, name, len);
	if (!name[0])
		seen_name(tid, name, len);
}

int agent_build_open(struct agent_build *b, struct symbolizer *syms, enum event_id e,
		     const struct agent_options *o, struct diag *d)
{
	char comm[16] = "";
	const struct chain_build_options bo = {
		.event = &event_defs[e], .command = comm, .unwinder = "dwarf", .pid = getpid(),
		.max_depth = HOT_MAX_DEPTH, .sym_flags = o && o->simple ? SYM_SIMPLE : 0,
		.per_thread = o && o->per_thread, .name_thread = name_thread,
	};
	int err;

	memset(b, 0, sizeof(*b));
	proc_comm(0, 0, comm, sizeof(comm));
	err = symbolizer_open_process(syms, getpid(), false, &b->ps, d);
	if (err < 0)
		return err;
	err = chain_build_open(&b->build, b->ps, &bo);
	if (err == -ENOMEM)
		return diag_set(d, err, "building the profile: out of memory");
	if (err < 0)
		return diag_set(d, err, "building the profile: %s", strerror(-err));
	return 0;
}

void agent_build_close(struct agent_build *b)
{
	chain_build_release(&b->build);
	proc_syms_free(b->ps);
	b->ps = NULL;
}
