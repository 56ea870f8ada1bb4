/* signals: the program's SIGPROF action, kept beside the agent's handler
 * (see signals.h). The interposers are hot code: sigaction() is
 * async-signal-safe, so the program may call it from its own handlers,
 * and scripts/check-hot holds this file to async-signal-safe calls. */
#include "agent/hot/signals.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "agent/hot/hot.h"

#define EXPORT __attribute__((visibility("default")))

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef __sighandler_t (*signal_fn)(int, __sighandler_t);

static struct {
	atomic_int lock;	/* atomic: writers, with every signal blocked */
	atomic_uint seq;	/* atomic: odd while app is written */
	atomic_int owned;	/* atomic: the agent's handler is installed */
	atomic_int expect;	/* atomic: a session's signals may come */
	struct sigaction app;	/* writers under lock; the handler reads it with seq */
	void (*handler)(int, siginfo_t *, void *); /* under lock; set once */
} S;

static _Atomic(sigaction_fn) real_sigaction_fn;
#ifndef NPROF_NO_INTERPOSE
static _Atomic(signal_fn) real_signal_fn;
#endif

/* The sigaction that comes after ours. Resolved at load (below), so
 * that no signal handler is the first to ask; dlsym otherwise. */
static sigaction_fn real_sigaction(void)
{
	sigaction_fn f = atomic_load_explicit(&real_sigaction_fn, memory_order_acquire);

	if (!f) {
#ifdef NPROF_NO_INTERPOSE
		f = sigaction; /* the sanitizer's, which must see every handler */
#else
		f = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
#endif
		atomic_store_explicit(&real_sigaction_fn, f, memory_order_release);
	}
	return f;
}

/* Blocking every signal first means the handler never runs on a thread
 * that holds the lock, so neither it (SA_RESETHAND) nor the program's
 * own handler (calling sigaction) can wait here for its own thread. */
static void writers_lock(sigset_t *ret_saved)
{
	sigset_t all;
	int expect = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, ret_saved);
	while (!atomic_compare_exchange_weak_explicit(&S.lock, &expect, 1, memory_order_acquire,
						      memory_order_relaxed)) {
		expect = 0;
		__builtin_ia32_pause();
	}
}

static void writers_unlock(const sigset_t *saved)
{
	int e = errno;

	atomic_store_explicit(&S.lock, 0, memory_order_release);
	pthread_sigmask(SIG_SETMASK, saved, NULL);
	errno = e;
}

/* Under the writers' lock. */
static void app_write(const struct sigaction *a)
{
	atomic_fetch_add_explicit(&S.seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	memcpy(&S.app, a, sizeof(*a));
	atomic_fetch_add_explicit(&S.seq, 1, memory_order_release);
}

/* Any thread, any context. A writer is on another thread (see
 * writers_lock) and a few instructions from done, so the retry ends. */
static void app_read(struct sigaction *ret)
{
	for (;;) {
		unsigned s = atomic_load_explicit(&S.seq, memory_order_acquire);

		if (!(s & 1)) {
			memcpy(ret, &S.app, sizeof(*ret));
			atomic_thread_fence(memory_order_acquire);
			if (atomic_load_explicit(&S.seq, memory_order_relaxed) == s)
				return;
		}
		__builtin_ia32_pause();
	}
}

static bool is_handler(const struct sigaction *a)
{
	return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

/* The agent's action while the program's is app: the program's handler,
 * called from ours, runs with the mask and on the stack it asked for. */
static void ours_for(const struct sigaction *app, struct sigaction *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->sa_sigaction = S.handler;
	ret->sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&ret->sa_mask);
	if (is_handler(app)) {
		ret->sa_mask = app->sa_mask;
		ret->sa_flags |= app->sa_flags & SA_ONSTACK;
	}
}

int hot_signals_install(void (*handler)(int, siginfo_t *, void *))
{
	sigaction_fn real = real_sigaction();
	struct sigaction prev, sa;
	sigset_t saved;
	int err = 0;

	if (!real)
		return -ENOSYS;
	writers_lock(&saved);
	if (atomic_load_explicit(&S.owned, memory_order_relaxed))
		goto out;
	S.handler = handler;
	if (real(HOT_SIGNAL, NULL, &prev) < 0) {
		err = -errno;
		goto out;
	}
	ours_for(&prev, &sa);
	if (real(HOT_SIGNAL, &sa, NULL) < 0) {
		err = -errno;
		goto out;
	}
	app_write(&prev);
	atomic_store_explicit(&S.owned, 1, memory_order_release);
out:
	writers_unlock(&saved);
	return err;
}

/* SA_RESETHAND: the program's action becomes the default before its
 * handler runs, as the kernel would do it. */
static void app_reset(const struct sigaction *was)
{
	sigaction_fn real = real_sigaction();
	struct sigaction dfl, cur, sa;
	sigset_t saved;

	writers_lock(&saved);
	memcpy(&cur, &S.app, sizeof(cur));
	if (cur.sa_handler == was->sa_handler && (cur.sa_flags & SA_RESETHAND)) {
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&dfl.sa_mask);
		ours_for(&dfl, &sa);
		if (real)
			real(HOT_SIGNAL, &sa, NULL);
		app_write(&dfl);
	}
	writers_unlock(&saved);
}

void hot_signals_chain(int sig, siginfo_t *si, void *uc)
{
	struct sigaction a;

	app_read(&a);
	if (!is_handler(&a))
		return;
	if (a.sa_flags & SA_RESETHAND)
		app_reset(&a);
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, si, uc);
	else
		a.sa_handler(sig);
}

void hot_signals_after_fork(void)
{
	unsigned s = atomic_load_explicit(&S.seq, memory_order_relaxed);

	atomic_store_explicit(&S.lock, 0, memory_order_relaxed);
	atomic_store_explicit(&S.seq, s + (s & 1), memory_order_relaxed);
	atomic_store_explicit(&S.expect, 0, memory_order_relaxed);
}

void hot_signals_expect(bool on)
{
	atomic_store_explicit(&S.expect, on, memory_order_release);
}

bool hot_signals_exec_begin(void)
{
	sigaction_fn real = real_sigaction();
	struct sigaction ign;
	sigset_t saved;
	bool done = false;

	if (!real || !atomic_load_explicit(&S.owned, memory_order_acquire) ||
	    !atomic_load_explicit(&S.expect, memory_order_acquire))
		return false;
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	writers_lock(&saved);
	done = real(HOT_SIGNAL, &ign, NULL) == 0;
	writers_unlock(&saved);
	return done;
}

void hot_signals_exec_failed(void)
{
	sigaction_fn real = real_sigaction();
	struct sigaction app, sa;
	sigset_t saved;

	writers_lock(&saved);
	memcpy(&app, &S.app, sizeof(app));
	ours_for(&app, &sa);
	if (real)
		real(HOT_SIGNAL, &sa, NULL);
	writers_unlock(&saved);
}

#ifndef NPROF_NO_INTERPOSE
static signal_fn real_signal(void)
{
	signal_fn f = atomic_load_explicit(&real_signal_fn, memory_order_acquire);

	if (!f) {
		f = (signal_fn)dlsym(RTLD_NEXT, "signal");
		atomic_store_explicit(&real_signal_fn, f, memory_order_release);
	}
	return f;
}

/* sigaction for SIGPROF once the agent's handler is in: the program's
 * record is read and written, the agent's handler stays (its mask
 * following the program's). Before: straight through. */
static int app_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigaction_fn real = real_sigaction();
	struct sigaction prev, sa;
	sigset_t saved;
	int r = 0;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (sig != HOT_SIGNAL)
		return real(sig, act, old);
	writers_lock(&saved);
	if (!atomic_load_explicit(&S.owned, memory_order_acquire)) {
		r = real(sig, act, old);
		goto out;
	}
	memcpy(&prev, &S.app, sizeof(prev));
	if (act) {
		ours_for(act, &sa);
		r = real(sig, &sa, NULL);
		if (r < 0)
			goto out;
		app_write(act);
	}
	if (old)
		*old = prev;
out:
	writers_unlock(&saved);
	return r;
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return app_sigaction(sig, act, old);
}

/* glibc's signal(): BSD semantics (SA_RESTART, the signal blocked in its
 * handler), the previous handler returned. */
EXPORT __sighandler_t signal(int sig, __sighandler_t handler)
{
	struct sigaction act, old;

	if (sig != HOT_SIGNAL) {
		signal_fn real = real_signal();

		if (!real) {
			errno = ENOSYS;
			return SIG_ERR;
		}
		return real(sig, handler);
	}
	if (handler == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	sigemptyset(&act.sa_mask);
	sigaddset(&act.sa_mask, sig);
	act.sa_flags = SA_RESTART;
	if (app_sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* Resolved before main: the first call may come from a signal handler,
 * where dlsym cannot run. */
__attribute__((constructor)) static void signals_boot(void)
{
	real_sigaction();
	real_signal();
}
#endif
