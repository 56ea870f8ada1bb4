/* threads: which threads the agent samples. New threads are seen through
 * pthread_create, which the agent interposes: the start routine runs
 * inside a wrapper that records the thread's stack bounds for the signal
 * handler (hot_self) and lets the session arm it before its first
 * instruction. Threads that existed before, or that were made without
 * pthread_create, come from /proc/self/task. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/hot/alloc.h"
#include "agent/hot/hot.h"
#include "agent/process.h"
#include "base/proc.h"

#define MAX_OWN 32

static pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t own[MAX_OWN]; /* under own_lock */
static unsigned nown;
static pthread_key_t exit_key;
/* Set while the calling thread starts a library's threads for the agent
 * (libmicrohttpd's): those are agent threads too. */
static __thread int own_scope;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
				 void *);

static pthread_create_fn real_pthread_create(void)
{
	static _Atomic(pthread_create_fn) real;
	pthread_create_fn f = atomic_load(&real);

	if (!f) {
		f = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
		atomic_store(&real, f);
	}
	return f;
}

void agent_thread_mark_own(void)
{
	sigset_t set;

	if (hot_self.blocked)
		return; /* already (a thread wrapped twice) */
	hot_self.blocked = 1;
	mem_self.fast = 0; /* its allocations: the slow path, never counted */
	sigemptyset(&set);
	sigaddset(&set, HOT_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_mutex_lock(&own_lock);
	if (nown < MAX_OWN)
		own[nown++] = gettid();
	pthread_mutex_unlock(&own_lock);
}

uint64_t agent_own_threads_cpu_ns(void)
{
	pid_t tids[MAX_OWN];
	unsigned n;
	uint64_t sum = 0;

	pthread_mutex_lock(&own_lock);
	n = nown;
	memcpy(tids, own, n * sizeof(tids[0]));
	pthread_mutex_unlock(&own_lock);
	for (unsigned i = 0; i < n; i++) {
		char path[64], buf[128];

		/* schedstat's first field: the ns the thread ran */
		snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tids[i]);
		if (proc_read_small(path, buf, sizeof(buf)) > 0)
			sum += strtoull(buf, NULL, 10);
	}
	return sum;
}

static void unmark_own(pid_t tid)
{
	pthread_mutex_lock(&own_lock);
	for (unsigned i = 0; i < nown; i++)
		if (own[i] == tid) {
			own[i] = own[--nown];
			break;
		}
	pthread_mutex_unlock(&own_lock);
}

/* In a child after fork: the agent's threads were the parent's (the
 * child has only the thread that forked), and the thread that forked has
 * a new id. */
void agent_threads_after_fork(void)
{
	pthread_mutex_init(&own_lock, NULL);
	nown = 0;
	hot_self.tid = gettid();
}

void agent_threads_own_scope(bool on)
{
	own_scope = on;
}

bool agent_thread_is_own(pid_t tid)
{
	bool yes = false;

	pthread_mutex_lock(&own_lock);
	for (unsigned i = 0; i < nown && !yes; i++)
		yes = own[i] == tid;
	pthread_mutex_unlock(&own_lock);
	return yes;
}

int agent_threads_scan(struct agent_thread_list *ret)
{
	size_t n = 0, kept = 0;
	pid_t *tids = NULL;
	int err = proc_tasks(0, AGENT_MAX_THREADS + 64, &tids, &n); /* + the agent's own */

	ret->tids = NULL;
	ret->n = 0;
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && kept < AGENT_MAX_THREADS; i++)
		if (!agent_thread_is_own(tids[i]))
			tids[kept++] = tids[i];
	ret->tids = tids;
	ret->n = (unsigned)kept;
	return 0;
}

void agent_thread_list_release(struct agent_thread_list *l)
{
	free(l->tids);
	l->tids = NULL;
	l->n = 0;
}

static void on_thread_exit(void *v)
{
	(void)v;
	if (hot_self.blocked) {
		unmark_own(hot_self.tid);
	} else {
		agent_session_thread_exiting(hot_self.tid);
		/* alloc, heap, lock: a thread root names a thread gone. */
		if (mem.per_thread) {
			char name[17] = "";

			if (prctl(PR_GET_NAME, name) == 0)
				agent_build_note_thread(hot_self.tid, name);
		}
	}
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

/* Fills hot_self for the calling thread: its id and its stack. */
static void learn_self(void)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	hot_self.tid = gettid();
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
			hot_self.stack_lo = (uint64_t)(uintptr_t)addr;
			hot_self.stack_hi = (uint64_t)(uintptr_t)addr + size;
		}
		pthread_attr_destroy(&attr);
	}
}

void agent_threads_init_main(void)
{
	pthread_once(&exit_key_once, make_exit_key);
	learn_self();
}

struct start {
	void *(*fn)(void *);
	void *arg;
	bool own; /* an agent thread */
};

static void *thread_main(void *p)
{
	struct start s = *(struct start *)p;

	free(p);
	if (s.own) {
		hot_self.tid = gettid();
		agent_thread_mark_own();
		pthread_setspecific(exit_key, (void *)1); /* unmarked at exit */
		return s.fn(s.arg);
	}
	learn_self();
	/* A non-NULL value makes the key's destructor run at exit, after the
	 * thread's own cleanup handlers, whether it returns or calls
	 * pthread_exit. */
	pthread_setspecific(exit_key, (void *)1);
	agent_session_thread_started(hot_self.tid);
	return s.fn(s.arg);
}

static int create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg,
		  bool own_thread)
{
	pthread_create_fn real = real_pthread_create();
	struct start *s;
	int r;

	if (!real)
		return EAGAIN;
	pthread_once(&exit_key_once, make_exit_key);
	s = malloc(sizeof(*s));
	if (!s) /* Not worth failing the program for: run it unwrapped. */
		return real(t, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	/* Threads that agent threads start (libmicrohttpd's connection
	 * threads) are agent threads. */
	s->own = own_thread || own_scope || hot_self.blocked;
	r = real(t, attr, thread_main, s);
	if (r)
		free(s);
	return r;
}

/* This library's pthread_create itself, whatever the name resolves to
 * (an alias, defined after it below). */
extern __typeof__(pthread_create) own_pthread_create
	__attribute__((visibility("hidden"), nothrow, nonnull(1, 3)));

/* An agent thread: its sampling signal blocked from its first instruction
 * (the mask is inherited, so it is blocked around the creation). */
int agent_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{

	pthread_create_fn first = (pthread_create_fn)dlsym(RTLD_DEFAULT, "pthread_create");
	sigset_t set, old;
	struct start *s;
	int r, saved = own_scope;

	sigfillset(&set);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	if (!first || first == own_pthread_create || first == real_pthread_create()) {
		r = create(t, NULL, fn, arg, true);
	} else if (!(s = malloc(sizeof(*s)))) {
		r = EAGAIN;
	} else {
		/* Something comes before us in the lookup order: a sanitizer's
		 * interceptor in the program. Through it, so that the sanitizer
		 * knows the thread (TSan crashes in one it did not see made). */
		s->fn = fn;
		s->arg = arg;
		s->own = true;
		own_scope = 1;
		r = first(t, NULL, thread_main, s);
		own_scope = saved;
		if (r)
			free(s);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

__attribute__((visibility("default"))) int pthread_create(pthread_t *t,
							  const pthread_attr_t *attr,
							  void *(*fn)(void *), void *arg)
{
	return create(t, attr, fn, arg, false);
}

extern __typeof__(pthread_create) own_pthread_create
	__attribute__((alias("pthread_create"), visibility("hidden"), nothrow, nonnull(1, 3)));
