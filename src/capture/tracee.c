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

/* The value of a "Key:\tvalue" line of a status file, or NULL. */
static const char *status_field(const char *status, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = status; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == ':') {
			p += kl + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			return p;
		}
	return NULL;
}

static long status_long(const char *status, const char *key, long dflt)
{
	const char *v = status_field(status, key);

	return v ? strtol(v, NULL, 10) : dflt;
}

/* --- why access was refused ------------------------------------------------ */

static long read_sysctl_long(const char *path, long dflt)
{
	char buf[32];

	if (proc_read_small(path, buf, sizeof(buf)) <= 0)
		return dflt;
	return strtol(buf, NULL, 10);
}

static bool have_cap_sys_ptrace(void)
{
	char status[4096];
	const char *v;

	if (proc_read_small("/proc/self/status", status, sizeof(status)) <= 0)
		return false;
	v = status_field(status, "CapEff");
	return v && (strtoull(v, NULL, 16) >> 19) & 1; /* CAP_SYS_PTRACE */
}

static bool is_descendant(pid_t pid)
{
	pid_t self = getpid();
	char path[64], status[4096];

	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		if (proc_read_small(path, status, sizeof(status)) <= 0)
			return false;
		pid = (pid_t)status_long(status, "PPid", 0);
		if (pid == self)
			return true;
	}
	return false;
}

int tracee_explain_access(pid_t pid, int err, const char *what,
			       struct diag *d)
{
	char path[64], status[4096], self[4096];
	long seccomp = 0, tracer = 0, uid = -1, scope;
	uid_t me = geteuid();
	struct stat st;

	if (proc_read_small("/proc/self/status", self, sizeof(self)) > 0)
		seccomp = status_long(self, "Seccomp", 0);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (proc_read_small(path, status, sizeof(status)) < 0)
		return diag_set(d, -ESRCH, "no process with PID %d", (int)pid);
	tracer = status_long(status, "TracerPid", 0);
	{
		const char *v = status_field(status, "Uid");

		if (v)
			uid = strtol(v, NULL, 10);
	}
	if (seccomp && (err == -EPERM || err == -ENOSYS || err == -EACCES))
		return diag_set(d, -EPERM,
			"%s of PID %d: ptrace denied by a seccomp policy on nprof "
			"(Seccomp: %ld in /proc/self/status); run nprof outside that "
			"sandbox, or allow ptrace and process_vm_readv in its profile "
			"(docker: --cap-add SYS_PTRACE --security-opt seccomp=unconfined)",
			what, (int)pid, seccomp);
	if (tracer && tracer != getpid()) {
		char comm[64] = "?";

		snprintf(path, sizeof(path), "/proc/%ld/comm", tracer);
		if (proc_read_small(path, comm, sizeof(comm)) > 0)
			comm[strcspn(comm, "\n")] = '\0';
		return diag_set(d, -EBUSY,
			"%s of PID %d: it is already traced by PID %ld (%s); "
			"detach that debugger first", what, (int)pid, tracer, comm);
	}
	if (me != 0 && uid >= 0 && (uid_t)uid != me && !have_cap_sys_ptrace())
		return diag_set(d, -EPERM,
			"%s of PID %d: not permitted, the process belongs to uid %ld "
			"and nprof runs as uid %ld; run nprof as that user or as root",
			what, (int)pid, uid, (long)me);
	scope = read_sysctl_long("/proc/sys/kernel/yama/ptrace_scope", -1);
	if (scope == 3)
		return diag_set(d, -EPERM,
			"%s of PID %d: ptrace is disabled on this host "
			"(kernel.yama.ptrace_scope=3, which only a reboot undoes)",
			what, (int)pid);
	if (scope == 2 && !have_cap_sys_ptrace())
		return diag_set(d, -EPERM,
			"%s of PID %d: kernel.yama.ptrace_scope=2 allows ptrace only "
			"with CAP_SYS_PTRACE; run nprof as root (or setcap "
			"cap_sys_ptrace+ep on it)", what, (int)pid);
	if (scope == 1 && !have_cap_sys_ptrace() && !is_descendant(pid))
		return diag_set(d, -EPERM,
			"%s of PID %d: kernel.yama.ptrace_scope=1 lets a process trace "
			"only its own descendants; run nprof as root, give it "
			"CAP_SYS_PTRACE, or set sysctl kernel.yama.ptrace_scope=0",
			what, (int)pid);
	if (me == 0 && !have_cap_sys_ptrace())
		return diag_set(d, -EPERM,
			"%s of PID %d: nprof runs as root but without CAP_SYS_PTRACE "
			"(a container?); grant it (docker: --cap-add SYS_PTRACE)",
			what, (int)pid);
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (!stat(path, &st) && st.st_uid == 0 && uid > 0 && me != 0)
		return diag_set(d, -EPERM,
			"%s of PID %d: the process is not dumpable (setuid, file "
			"capabilities or prctl(PR_SET_DUMPABLE, 0)); run nprof as root",
			what, (int)pid);
	return diag_set(d, err, "%s of PID %d: %s", what, (int)pid, strerror(-err));
}

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
