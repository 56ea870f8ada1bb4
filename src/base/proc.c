#include "base/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/array.h"
#include "base/hex.h"

static ssize_t read_small(int dirfd, const char *path, char *buf, size_t len, bool once)
{
	ssize_t n, got = 0;
	int fd;

	if (!len)
		return -EINVAL;
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((size_t)got < len - 1) {
		n = read(fd, buf + got, len - 1 - (size_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		got += n;
		if (once)
			break;
	}
	close(fd);
	buf[got] = '\0';
	return got;
}

ssize_t proc_read_small(const char *path, char *buf, size_t len)
{
	return read_small(AT_FDCWD, path, buf, len, false);
}

ssize_t proc_read_small_at(int dirfd, const char *path, char *buf, size_t len)
{
	return read_small(dirfd, path, buf, len, true);
}

int proc_read_fd_from(int fd, size_t offset, size_t max, char **ret_buf, size_t *ret_len)
{
	size_t len = 0, cap = 4096;
	char *buf = NULL, *nb;
	int err = -ENOMEM;

	if (cap > max + 1)
		cap = max + 1;
	buf = malloc(cap);
	if (!buf)
		goto out;
	if (offset && lseek(fd, (off_t)offset, SEEK_SET) < 0) {
		err = -errno;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (cap - len < 2) {
			size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;

			err = -EFBIG;
			if (ncap <= cap)
				goto out;
			err = -ENOMEM;
			nb = realloc(buf, ncap);
			if (!nb)
				goto out;
			buf = nb;
			cap = ncap;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	*ret_buf = buf;
	*ret_len = len;
	buf = NULL;
	err = 0;
out:
	free(buf);
	return err;
}

int proc_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = proc_read_fd_from(fd, 0, max, ret_buf, ret_len);
	close(fd);
	return err;
}

/* The path of file of thread tid of process pid (tid 0: the process's
 * own; pid 0: this process) into path (64 bytes). */
static void task_file(char path[64], pid_t pid, pid_t tid, const char *file)
{
	if (pid && tid)
		snprintf(path, 64, "/proc/%d/task/%d/%s", (int)pid, (int)tid, file);
	else if (tid)
		snprintf(path, 64, "/proc/self/task/%d/%s", (int)tid, file);
	else if (pid)
		snprintf(path, 64, "/proc/%d/%s", (int)pid, file);
	else
		snprintf(path, 64, "/proc/self/%s", file);
}

int proc_comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[64], name[64];
	ssize_t n;

	if (!len)
		return -EINVAL;
	task_file(path, pid, tid, "comm");
	n = proc_read_small(path, name, sizeof(name));
	if (n < 0)
		return (int)n;
	name[strcspn(name, "\n")] = '\0';
	snprintf(buf, len, "%s", name);
	return 0;
}

/* The number at *p (a decimal; fields such as tpgid and nice may be
 * negative), past the spaces before it, into *ret and *neg; *p left
 * past it. false when there is none, or it does not fit 64 bits. */
static bool stat_field(const char **p, uint64_t *ret, bool *neg)
{
	const char *s = *p;
	uint64_t v = 0;

	while (*s == ' ')
		s++;
	*neg = *s == '-';
	if (*neg)
		s++;
	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned digit = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - digit) / 10)
			return false;
		v = v * 10 + digit;
	}
	if (*s && *s != ' ' && *s != '\n')
		return false;
	*p = s;
	*ret = v;
	return true;
}

int proc_stat_parse(const char *text, struct proc_stat *ret)
{
	const char *open = strchr(text, '('), *close = strrchr(text, ')'), *p;
	struct proc_stat st = { .comm = "" };
	size_t comm_len;

	if (!open || !close || close < open || close[1] != ' ' || !close[2])
		return -EBADMSG;
	comm_len = (size_t)(close - open - 1);
	if (comm_len >= sizeof(st.comm))
		comm_len = sizeof(st.comm) - 1;
	memcpy(st.comm, open + 1, comm_len);
	st.comm[comm_len] = '\0';
	st.state = close[2];
	p = close + 3;
	for (int field = 4; field <= 31; field++) {
		uint64_t v;
		bool neg;

		if (!stat_field(&p, &v, &neg)) {
			if (field > 22)
				break; /* an old or cut line: what follows is 0 */
			return -EBADMSG;
		}
		switch (field) {
		case 4: st.ppid = (pid_t)v; break;
		case 5: st.pgrp = (pid_t)v; break;
		case 6: st.session = (pid_t)v; break;
		case 9: st.flags = (unsigned)v; break;
		case 14: st.utime = v; break;
		case 15: st.stime = v; break;
		case 19: st.nice = v > 40 ? 0 : neg ? -(long)v : (long)v; break;
		case 20: st.threads = v > UINT32_MAX ? UINT32_MAX : (unsigned)v; break;
		case 22: st.start_ticks = v; break;
		case 31: st.pending = v; break;
		default: break;
		}
	}
	*ret = st;
	return 0;
}

int proc_stat_read_at(int dirfd, const char *path, struct proc_stat *ret)
{
	char buf[1024];
	ssize_t n = read_small(dirfd, path, buf, sizeof(buf), true);

	if (n < 0)
		return (int)n;
	return proc_stat_parse(buf, ret);
}

int proc_stat_read(pid_t pid, pid_t tid, struct proc_stat *ret)
{
	char path[64];

	task_file(path, pid, tid, "stat");
	return proc_stat_read_at(AT_FDCWD, path, ret);
}

int proc_tasks(pid_t pid, size_t max, pid_t **ret, size_t *ret_n)
{
	char path[64];
	pid_t *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *dir;
	int err = 0;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/task");
	dir = opendir(path);
	if (!dir)
		return -errno;
	while (n < max && (de = readdir(dir))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*end || tid <= 0)
			continue;
		if (array_reserve(&v, &cap, n + 1, sizeof(*v)) < 0) {
			err = -ENOMEM;
			break;
		}
		v[n++] = (pid_t)tid;
	}
	closedir(dir);
	if (err < 0) {
		free(v);
		return err;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int proc_maps_read(pid_t pid, char **ret_buf, size_t *ret_len)
{
	char path[64];
	int err;

	task_file(path, pid, 0, "maps");
	err = proc_read_file(path, PROC_MAPS_MAX_BYTES, ret_buf, ret_len);
	return err == -ENOENT ? -ESRCH : err;
}

static bool expect(const char **p, const char *end, char c)
{
	if (*p == end || **p != c)
		return false;
	(*p)++;
	return true;
}

static void skip_blanks(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
}

int proc_maps_line_parse(const char *p, const char *end, struct proc_map_line *ret)
{
	struct proc_map_line l = { 0 };
	uint64_t maj, min;

	if (hex_parse(p, end, 0, &l.start, &p) || !expect(&p, end, '-') ||
	    hex_parse(p, end, 0, &l.end, &p) || !expect(&p, end, ' ') || end - p < 4)
		return -EINVAL;
	memcpy(l.perms, p, sizeof(l.perms));
	p += sizeof(l.perms);
	skip_blanks(&p, end);
	if (hex_parse(p, end, 0, &l.offset, &p))
		return -EINVAL;
	skip_blanks(&p, end);
	if (hex_parse(p, end, 0, &maj, &p) || !expect(&p, end, ':') ||
	    hex_parse(p, end, 0, &min, &p) || maj > UINT32_MAX || min > UINT32_MAX)
		return -EINVAL;
	l.maj = (uint32_t)maj;
	l.min = (uint32_t)min;
	skip_blanks(&p, end);
	/* The inode is decimal. */
	if (p == end || *p < '0' || *p > '9')
		return -EINVAL;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (l.inode > UINT64_MAX / 10 - 1)
			return -EINVAL;
		l.inode = l.inode * 10 + (uint64_t)(*p - '0');
	}
	skip_blanks(&p, end);
	if (l.start >= l.end)
		return -EINVAL;
	l.path = p;
	l.path_len = (size_t)(end - p);
	*ret = l;
	return 0;
}

bool proc_maps_next(const char **pos, const char *end, struct proc_map_line *ret)
{
	while (*pos < end) {
		const char *line = *pos, *nl = memchr(line, '\n', (size_t)(end - line));

		*pos = nl ? nl + 1 : end;
		if (!proc_maps_line_parse(line, nl ? nl : end, ret))
			return true;
	}
	return false;
}

pid_t proc_ns_pid(pid_t pid)
{
	char path[64], *buf = NULL, *line;
	size_t len;
	pid_t nspid = pid;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (proc_read_file(path, 1 << 16, &buf, &len) < 0)
		return pid;
	line = strstr(buf, "\nNSpid:");
	if (line) {
		char *p = line + 7, *end;

		/* The list runs from the outermost namespace to the
		 * process's own; the last number is what it calls itself. */
		for (;;) {
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			if (v > 0)
				nspid = (pid_t)v;
			p = end;
			if (*p == '\n' || !*p)
				break;
		}
	}
	free(buf);
	return nspid;
}

/* --- why access was refused ------------------------------------------------ */

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

int proc_explain_access(pid_t pid, int err, const char *what, enum proc_access mode,
			struct diag *d)
{
	/* Yama, a tracer and seccomp on nprof stand in the way of ptrace
	 * itself; reading a process's maps is the kernel's read check. */
	bool attach = mode == PROC_ACCESS_ATTACH;
	int denied = attach ? -EPERM : -EACCES;
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
	if (attach && seccomp && (err == -EPERM || err == -ENOSYS || err == -EACCES))
		return diag_set(d, -EPERM,
			"%s of PID %d: ptrace denied by a seccomp policy on nprof "
			"(Seccomp: %ld in /proc/self/status); run nprof outside that "
			"sandbox, or allow ptrace and process_vm_readv in its profile "
			"(docker: --cap-add SYS_PTRACE --security-opt seccomp=unconfined)",
			what, (int)pid, seccomp);
	if (attach && tracer && tracer != getpid()) {
		char comm[64] = "?";

		snprintf(path, sizeof(path), "/proc/%ld/comm", tracer);
		if (proc_read_small(path, comm, sizeof(comm)) > 0)
			comm[strcspn(comm, "\n")] = '\0';
		return diag_set(d, -EBUSY,
			"%s of PID %d: it is already traced by PID %ld (%s); "
			"detach that debugger first", what, (int)pid, tracer, comm);
	}
	if (me != 0 && uid >= 0 && (uid_t)uid != me && !have_cap_sys_ptrace())
		return diag_set(d, denied,
			"%s of PID %d: not permitted, it is another user's process (it "
			"belongs to uid %ld and nprof runs as uid %ld); run nprof as that "
			"user or as root", what, (int)pid, uid, (long)me);
	scope = attach ? read_sysctl_long("/proc/sys/kernel/yama/ptrace_scope", -1) : -1;
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
		return diag_set(d, denied,
			"%s of PID %d: nprof runs as root but without CAP_SYS_PTRACE "
			"(a container?); grant it (docker: --cap-add SYS_PTRACE)",
			what, (int)pid);
	/* A process that is not dumpable has its /proc files (not its
	 * directory, which stays its user's) owned by root. */
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!stat(path, &st) && st.st_uid == 0 && uid > 0 && me != 0)
		return diag_set(d, denied,
			"%s of PID %d: the process is not dumpable (setuid, file "
			"capabilities or prctl(PR_SET_DUMPABLE, 0)); run nprof as root",
			what, (int)pid);
	return diag_set(d, err, "%s of PID %d: %s", what, (int)pid, strerror(-err));
}

int proc_maps_explain(pid_t pid, int err, struct diag *d)
{
	if (err == -ESRCH || err == -ENOENT)
		return diag_set(d, -ESRCH, "no process with PID %d", (int)pid);
	if (err == -EACCES || err == -EPERM)
		return proc_explain_access(pid, -EACCES, "reading the memory map", PROC_ACCESS_READ,
					   d);
	return diag_set(d, err, "cannot read the memory map of PID %d: %s", (int)pid,
			strerror(-err));
}
