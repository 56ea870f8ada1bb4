/* exec: the exec family, interposed, for a process that execs itself
 * (no fork) while a session samples it. A SIGPROF from the session,
 * pending at the exec or sent during it, would reach the new program with
 * SIGPROF's default action and end it; so, while a session's signals may
 * come, SIGPROF is ignored across the exec (hot/signals.h), and the new
 * program starts with it ignored rather than at its default. A failed
 * exec puts the agent's handler back and re-arms the perf events.
 *
 * glibc's execv, execvp, execl... call its internal execve directly, so
 * each is interposed. In a vfork child (sharing the parent's memory), a
 * failed exec re-arms nothing: the session is the parent's. The real
 * functions are resolved at load: an exec in a forked child of a
 * threaded program must not need dlsym. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>

#include "agent/hot/hot.h"
#include "agent/hot/signals.h"
#include "agent/process.h"

#ifndef NPROF_NO_INTERPOSE /* sanitizer builds whose runtime intercepts these */

#define EXPORT __attribute__((visibility("default")))
#define MAX_ARGS 4096 /* execl's arguments, counted on the stack */

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

static struct {
	execve_fn execve;
	execvpe_fn execvpe;
	fexecve_fn fexecve;
	execveat_fn execveat;
} real;

__attribute__((constructor)) static void exec_boot(void)
{
	real.execve = (execve_fn)dlsym(RTLD_NEXT, "execve");
	real.execvpe = (execvpe_fn)dlsym(RTLD_NEXT, "execvpe");
	real.fexecve = (fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
	real.execveat = (execveat_fn)dlsym(RTLD_NEXT, "execveat");
}

/* After the exec returned (it failed): errno kept. */
static void exec_failed(bool ignored)
{
	int e = errno;

	if (ignored) {
		hot_signals_exec_failed();
		if (getpid() == hot.pid) /* not a vfork child */
			agent_session_after_failed_exec();
	}
	errno = e;
}

static int no_real(void)
{
	errno = ENOSYS;
	return -1;
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	bool ignored;
	int r;

	if (!real.execve)
		return no_real();
	ignored = hot_signals_exec_begin();
	r = real.execve(path, argv, envp);
	exec_failed(ignored);
	return r;
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	bool ignored;
	int r;

	if (!real.execvpe)
		return no_real();
	ignored = hot_signals_exec_begin();
	r = real.execvpe(file, argv, envp);
	exec_failed(ignored);
	return r;
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	bool ignored;
	int r;

	if (!real.fexecve)
		return no_real();
	ignored = hot_signals_exec_begin();
	r = real.fexecve(fd, argv, envp);
	exec_failed(ignored);
	return r;
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
		    int flags)
{
	bool ignored;
	int r;

	if (!real.execveat)
		return no_real();
	ignored = hot_signals_exec_begin();
	r = real.execveat(dirfd, path, argv, envp, flags);
	exec_failed(ignored);
	return r;
}

EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

/* execl's arguments, from arg0 to the NULL that ends them, into argv;
 * for execle, the environment that follows. -1 (E2BIG) past MAX_ARGS. */
static int collect(const char *arg0, va_list ap, char **argv, char *const **ret_envp)
{
	size_t n = 0;

	argv[n++] = (char *)arg0;
	while (argv[n - 1]) {
		if (n == MAX_ARGS) {
			errno = E2BIG;
			return -1;
		}
		argv[n++] = va_arg(ap, char *);
	}
	if (ret_envp)
		*ret_envp = va_arg(ap, char *const *);
	return 0;
}

EXPORT int execl(const char *path, const char *arg, ...)
{
	char *argv[MAX_ARGS];
	va_list ap;
	int r;

	va_start(ap, arg);
	r = collect(arg, ap, argv, NULL);
	va_end(ap);
	return r < 0 ? r : execve(path, argv, environ);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	char *argv[MAX_ARGS];
	char *const *envp = NULL;
	va_list ap;
	int r;

	va_start(ap, arg);
	r = collect(arg, ap, argv, &envp);
	va_end(ap);
	return r < 0 ? r : execve(path, argv, envp);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	char *argv[MAX_ARGS];
	va_list ap;
	int r;

	va_start(ap, arg);
	r = collect(arg, ap, argv, NULL);
	va_end(ap);
	return r < 0 ? r : execvpe(file, argv, environ);
}

#endif
