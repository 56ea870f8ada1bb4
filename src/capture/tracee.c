/* tracee: the ptrace and /proc helpers of the captures of another process
 * (threads_dump.c, coredump.c); see tracee.h. */
#include "capture/tracee.h"
#include "base/proc.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --- threads -------------------------------------------------------------- */

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int tracee_list_tids(pid_t pid, pid_t **ret_tids, size_t *ret_n)
{
	pid_t *v = NULL;
	size_t n = 0;
	int err = proc_tasks(pid, TRACEE_MAX_THREADS, &v, &n);

	if (err < 0)
		return err == -ENOENT ? -ESRCH : err;
	if (!n) {
		free(v);
		return -ESRCH; /* the process exited: its task list is empty */
	}
	qsort(v, n, sizeof(*v), cmp_pid);
	*ret_tids = v;
	*ret_n = n;
	return 0;
}

int tracee_interrupt(pid_t tid)
{
	int status;

	if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0)
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0) {
		int err = -errno;
		/* Seized but not stoppable: it is exiting. Reap its exit
		 * notification if it comes; the kernel drops the tracee
		 * otherwise when it is gone. */
		waitpid(tid, &status, __WALL | WNOHANG);
		return err == -ESRCH ? -ESRCH : err;
	}
	return 0;
}

/* The stop or exit status of a tracee: 0 with *ret_sig, -ESRCH (exited),
 * or 1 (neither: wait again). A signal-delivery stop (event 0, not a
 * SIGTRAP from our interrupt) caught a real signal first: it must be
 * given back. A PTRACE_EVENT_STOP is our interrupt or a group stop,
 * neither of which is a signal to deliver. */
static int stop_status(int status, int *ret_sig)
{
	if (WIFEXITED(status) || WIFSIGNALED(status))
		return -ESRCH;
	if (!WIFSTOPPED(status))
		return 1;
	*ret_sig = (status >> 16) == 0 ? WSTOPSIG(status) : 0;
	return 0;
}

/* Waits for tid's stop: 0 with *ret_sig, or -ESRCH when it exited. */
static int wait_stop(pid_t tid, int *ret_sig)
{
	int status, r;
	pid_t w;

	for (;;) {
		w = waitpid(tid, &status, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno == ECHILD ? -ESRCH : -errno;
		r = stop_status(status, ret_sig);
		if (r <= 0)
			return r;
	}
}

int tracee_stop(pid_t tid, int *ret_sig)
{
	int err = tracee_interrupt(tid);

	return err < 0 ? err : wait_stop(tid, ret_sig);
}

bool tracee_no_children(void)
{
	pid_t *tids = NULL;
	size_t n = 0;
	bool none;

	if (proc_tasks(0, TRACEE_MAX_THREADS, &tids, &n) < 0)
		return false;
	none = n > 0;
	for (size_t i = 0; none && i < n; i++) {
		char path[64], buf[16];

		/* Each thread's children (CONFIG_PROC_CHILDREN): no file, or
		 * a child, and we cannot tell. */
		snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)tids[i]);
		if (proc_read_small(path, buf, sizeof(buf)) != 0)
			none = false;
	}
	free(tids);
	return none;
}

int tracee_wait_next(const pid_t *tids, size_t n, bool only_tracees, size_t *ret_i,
		     int *ret_sig)
{
	siginfo_t si;
	size_t i = 0;

	if (!n)
		return -EINVAL;
	while (only_tracees) {
		int status, r;
		pid_t w = waitpid(-1, &status, __WALL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			break; /* the careful way below says why */
		for (i = 0; i < n && tids[i] != w; i++)
			;
		if (i == n)
			continue; /* a thread no longer waited for */
		r = stop_status(status, ret_sig);
		if (r <= 0) {
			*ret_i = i;
			return r;
		}
	}
	/* Which one is ready, without reaping: waitpid(-1) would also
	 * take the exit of a child of ours (target_files' helper), whose
	 * owner waits for it. */
	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WSTOPPED | __WALL | WNOWAIT) == 0)
			break;
		if (errno != EINTR) {
			si.si_pid = 0;
			break;
		}
	}
	i = 0;
	if (si.si_pid > 0) {
		while (i < n && tids[i] != si.si_pid)
			i++;
	}
	if (si.si_pid <= 0 || i == n)
		i = 0; /* none of ours (or no answer): the first in turn */
	*ret_i = i;
	return wait_stop(tids[i], ret_sig);
}

int tracee_release(pid_t tid, int sig)
{
	if (ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig) < 0)
		return -errno;
	return 0;
}
