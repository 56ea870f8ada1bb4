#include "base/target_files.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/proc.h"

#define MAX_GROUPS 64

enum helper_op { OP_OPEN = 1, OP_INSTALL = 2 };

/* One request to the helper: the op, then one or two NUL-terminated paths
 * (OP_INSTALL: the temporary name, then the final one); OP_INSTALL
 * carries the source descriptor. */
struct request {
	uint32_t op;
	char paths[2 * PATH_MAX];
};

struct target_files {
	pid_t pid;
	bool privileged;
	uid_t uid;
	gid_t gid;
	gid_t groups[MAX_GROUPS];
	int ngroups;

	pthread_mutex_t lock; /* the helper below, its socket and rq */
	pid_t helper;	      /* 0: none yet; -1: it failed, do not retry */
	int sock;
	unsigned installs;    /* names the temporary files */
	struct request rq;    /* the request being sent (8 KiB: not on a stack) */
};

/* ---- the process's identity ------------------------------------------------- */

/* The first number of a status line ("Uid:\tR\tE\tS\tFS"), and all four. */
static int read_ids(const char *buf, const char *key, unsigned ids[4])
{
	const char *line = strstr(buf, key);

	if (!line || sscanf(line + strlen(key), "%u %u %u %u", &ids[0], &ids[1], &ids[2],
			    &ids[3]) != 4)
		return -EINVAL;
	return 0;
}

/* The id files are opened with: the fs id when it is not root's (the one
 * the kernel checks files with), else the first other that is not. */
static unsigned acting_id(const unsigned ids[4])
{
	static const int order[] = { 3, 1, 0, 2 };

	for (int i = 0; i < 4; i++)
		if (ids[order[i]])
			return ids[order[i]];
	return 0;
}

static int read_identity(struct target_files *t)
{
	char path[64], buf[4096];
	unsigned uids[4], gids[4];
	const char *g;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)t->pid);
	n = proc_read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (read_ids(buf, "\nUid:", uids) < 0 || read_ids(buf, "\nGid:", gids) < 0)
		return -EINVAL;
	t->uid = acting_id(uids);
	t->gid = acting_id(gids);
	/* A process whose every uid is root's lives in a world root made:
	 * no user chose its mounts. */
	t->privileged = geteuid() == 0 && t->uid != 0 && t->pid != getpid();
	g = strstr(buf, "\nGroups:");
	if (g) {
		char *end;

		g += 8;
		while (t->ngroups < MAX_GROUPS) {
			unsigned long v = strtoul(g, &end, 10);

			if (end == g)
				break;
			t->groups[t->ngroups++] = (gid_t)v;
			g = end;
		}
	}
	return 0;
}

struct target_files *target_files_new(pid_t pid)
{
	struct target_files *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return NULL;
	t->pid = pid;
	t->sock = -1;
	err = read_identity(t);
	if (err < 0) {
		free(t);
		errno = err == -ENOENT ? ESRCH : -err;
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

bool target_files_privileged(const struct target_files *t)
{
	return t->privileged;
}

uid_t target_files_uid(const struct target_files *t)
{
	return t->uid;
}

/* ---- regular files only ------------------------------------------------------ */

/* Reopens, read-only, the O_PATH descriptor fd of a regular file (whose
 * stat is st): O_PATH opened nothing, so a device's open never ran. */
static int reopen_regular(int fd, const struct stat *st)
{
	char self[64];
	int r;

	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	r = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	return r < 0 ? -errno : r;
}

/* The regular file at path (from dirfd, or absolute), read-only;
 * inode checked when ino is not 0. */
static int open_regular_at(int dirfd, const char *path, int flags, uint64_t ino)
{
	struct stat st;
	int fd = openat(dirfd, path, O_PATH | O_CLOEXEC | flags), r;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (ino && (uint64_t)st.st_ino != ino)
		r = -ESTALE;
	else
		r = reopen_regular(fd, &st);
	close(fd);
	return r;
}

int target_files_open_host(const char *path, bool nofollow)
{
	return open_regular_at(AT_FDCWD, path, nofollow ? O_NOFOLLOW : 0, 0);
}

/* ---- the helper -------------------------------------------------------------- */

/* What the helper child runs: async-signal-safe calls only (it is forked
 * from a process that may have threads). */

/* Makes m carry the descriptor fd (when not -1), in cbuf. */
static void attach_fd(struct msghdr *m, char (*cbuf)[CMSG_SPACE(sizeof(int))], int fd)
{
	struct cmsghdr *c;

	if (fd < 0)
		return;
	memset(cbuf, 0, sizeof(*cbuf));
	m->msg_control = cbuf;
	m->msg_controllen = sizeof(*cbuf);
	c = CMSG_FIRSTHDR(m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
}

static int helper_reply(int sock, int err, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	int32_t v = err;
	struct iovec iov = { &v, sizeof(v) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	attach_fd(&m, &cbuf, fd);
	return sendmsg(sock, &m, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* Opens path as the helper's user: O_PATH first, so a FIFO or a device
 * is refused before anything opened it. */
static int helper_open(const char *path)
{
	struct stat st;
	int fd = open(path, O_PATH | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
	} else {
		/* Not through /proc/self: the process's world may have no
		 * /proc, or one its user mounted. The file is regular, so
		 * opening it again by its name could only race with a rename:
		 * check it is still the same inode. */
		struct stat again;

		r = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (r >= 0 && (fstat(r, &again) < 0 || again.st_dev != st.st_dev ||
			       again.st_ino != st.st_ino)) {
			close(r);
			r = -ESTALE;
		} else if (r < 0) {
			r = -errno;
		} else {
			fcntl(r, F_SETFL, 0);
		}
	}
	close(fd);
	return r;
}

static int helper_install(int src, const char *tmp, const char *path)
{
	char buf[65536];
	off_t off = 0;
	ssize_t n;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644), err = 0;

	if (fd < 0)
		return -errno;
	while ((n = pread(src, buf, sizeof(buf), off)) > 0) {
		if (write(fd, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
		off += n;
	}
	if (n < 0 || fchmod(fd, 0644) < 0)
		err = errno ? -errno : -EIO;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* The request's descriptor, if it carries one. */
static int received_fd(struct msghdr *m)
{
	struct cmsghdr *c = CMSG_FIRSTHDR(m);
	int fd = -1;

	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* The n bytes at p hold a NUL-terminated string: its length + 1, else 0. */
static size_t string_in(const char *p, size_t n)
{
	size_t len = strnlen(p, n);

	return len && len < n ? len + 1 : 0;
}

static void helper_serve(int sock)
{
	static struct request rq;

	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { &rq, sizeof(rq) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
		size_t data, first, second = 0;
		int src, fd = -1, err = -EINVAL;

		/* The end of the socket: nprof is done (or gone). */
		if (n <= 0)
			_exit(0);
		src = received_fd(&m);
		data = (size_t)n > sizeof(rq.op) ? (size_t)n - sizeof(rq.op) : 0;
		first = string_in(rq.paths, data);
		if (first)
			second = string_in(rq.paths + first, data - first);
		if (rq.op == OP_OPEN && first)
			err = fd = helper_open(rq.paths);
		else if (rq.op == OP_INSTALL && second && src >= 0)
			err = helper_install(src, rq.paths, rq.paths + first);
		if (src >= 0)
			close(src);
		helper_reply(sock, err < 0 ? err : 0, fd);
		if (fd >= 0)
			close(fd);
	}
}

/* Closes every descriptor but keep (the socket), at 3 after this. */
static int keep_only(int keep)
{
	if (keep != 3 && dup2(keep, 3) < 0)
		return -1;
	return (int)syscall(SYS_close_range, 4u, ~0u, 0u);
}

/* In the child: enter the process's root, become its user, serve. Raw
 * system calls for the ids: each applies to this (only) thread. */
static void helper_main(const struct target_files *t, int rootfd, int sock)
{
	sigset_t all;

	/* Its user may signal it: nothing but SIGKILL and SIGSTOP reach it
	 * (a stop is ended by the caller's timeout). Not dumpable: its user
	 * cannot ptrace it or read its memory, a copy of ours. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		_exit(1);
	if (fchdir(rootfd) < 0 || chroot(".") < 0 || chdir("/") < 0)
		_exit(1);
	close(rootfd);
	if (keep_only(sock) < 0)
		_exit(1);
	if (syscall(SYS_setgroups, (size_t)t->ngroups, t->groups) < 0 ||
	    syscall(SYS_setresgid, t->gid, t->gid, t->gid) < 0 ||
	    syscall(SYS_setresuid, t->uid, t->uid, t->uid) < 0)
		_exit(1);
	/* setresuid away from root cleared every capability; make sure. */
	if (geteuid() == 0 || getuid() == 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(1);
	helper_serve(3);
	_exit(0);
}

/* Starts the helper, the lock held. */
static int helper_start(struct target_files *t)
{
	struct timeval tv = { TARGET_FILES_TIMEOUT_MS / 1000, (TARGET_FILES_TIMEOUT_MS % 1000) * 1000 };
	char root[64];
	int sv[2], rootfd, err;
	pid_t child;

	if (t->helper > 0)
		return 0;
	if (t->helper < 0)
		return -EIO;
	snprintf(root, sizeof(root), "/proc/%d/root", (int)t->pid);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		err = -errno;
		close(rootfd);
		return err;
	}
	child = fork();
	if (child == 0) {
		close(sv[0]);
		helper_main(t, rootfd, sv[1]);
	}
	err = child < 0 ? -errno : 0;
	close(rootfd);
	close(sv[1]);
	if (err < 0) {
		close(sv[0]);
		t->helper = -1;
		return err;
	}
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	t->helper = child;
	t->sock = sv[0];
	return 0;
}

static void helper_stop(struct target_files *t)
{
	if (t->helper > 0) {
		kill(t->helper, SIGKILL);
		waitpid(t->helper, NULL, 0);
	}
	if (t->sock >= 0)
		close(t->sock);
	t->sock = -1;
}

/* One request and its answer, the lock held; *ret_fd the descriptor
 * the answer carried (or -1). A helper that died or stalled is ended
 * and not started again. */
static int helper_call(struct target_files *t, size_t len, int send_fd, int *ret_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &t->rq, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	int32_t v;
	ssize_t n;
	int err = helper_start(t);

	*ret_fd = -1;
	if (err < 0)
		return err;
	attach_fd(&m, &cbuf, send_fd);
	if (sendmsg(t->sock, &m, MSG_NOSIGNAL) < 0)
		goto broken;
	iov.iov_base = &v;
	iov.iov_len = sizeof(v);
	m = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	n = recvmsg(t->sock, &m, MSG_CMSG_CLOEXEC);
	if (n != (ssize_t)sizeof(v))
		goto broken;
	*ret_fd = received_fd(&m);
	if (v < 0 && *ret_fd >= 0) {
		close(*ret_fd);
		*ret_fd = -1;
	}
	return v < 0 ? v : 0;
broken:
	err = errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -EIO;
	helper_stop(t);
	t->helper = -1;
	return err;
}

static size_t put_path(struct request *rq, size_t at, const char *path)
{
	size_t n = strlen(path) + 1;

	if (at + n > sizeof(rq->paths))
		return 0;
	memcpy(rq->paths + at, path, n);
	return at + n;
}

static int helper_open_path(struct target_files *t, const char *path)
{
	size_t len;
	int fd = -1, err;

	pthread_mutex_lock(&t->lock);
	t->rq.op = OP_OPEN;
	len = put_path(&t->rq, 0, path);
	err = len ? helper_call(t, sizeof(t->rq.op) + len, -1, &fd) : -ENAMETOOLONG;
	pthread_mutex_unlock(&t->lock);
	if (err == 0 && fd < 0)
		err = -EIO;
	return err < 0 ? err : fd;
}

/* ---- the calls ----------------------------------------------------------------- */

/* path through /proc/PID/root, with our own rights (not privileged). */
static int rooted_open(const struct target_files *t, const char *path, uint64_t ino)
{
	char rooted[PATH_MAX + 32];

	if (path[0] != '/' ||
	    snprintf(rooted, sizeof(rooted), "/proc/%d/root%s", (int)t->pid, path) >=
		    (int)sizeof(rooted))
		return -EINVAL;
	return open_regular_at(AT_FDCWD, rooted, 0, ino);
}

int target_files_open(struct target_files *t, const char *path)
{
	if (!path || path[0] != '/')
		return -EINVAL;
	if (!t->privileged)
		return rooted_open(t, path, 0);
	return helper_open_path(t, path);
}

int target_files_open_mapped(struct target_files *t, uint64_t start, uint64_t end,
			     uint64_t ino, const char *path)
{
	char mf[96];
	struct stat st;
	int fd;

	/* map_files needs CAP_SYS_ADMIN (root has it): the mapping's own
	 * file, whatever name it now has in the process's world, and the
	 * only way to a deleted file or a memfd. */
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)t->pid,
		 start, end);
	fd = open_regular_at(AT_FDCWD, mf, 0, ino);
	if (fd >= 0 || !path || path[0] != '/')
		return fd;
	if (!t->privileged)
		return rooted_open(t, path, ino);
	/* The mapping is gone (a library unloaded since its record): its
	 * path, as its user, if it is still that inode. */
	fd = helper_open_path(t, path);
	if (fd >= 0 && ino && (fstat(fd, &st) < 0 || (uint64_t)st.st_ino != ino)) {
		close(fd);
		fd = -ESTALE;
	}
	return fd;
}

int target_files_install(struct target_files *t, int src, const char *path)
{
	char tmp[PATH_MAX];
	size_t len;
	int fd = -1, err;

	if (!path || path[0] != '/')
		return -EINVAL;
	if (!t->privileged) {
		/* Our own rights: the path through /proc/PID/root. */
		char there[PATH_MAX + 32], tmp_there[PATH_MAX + 64];

		snprintf(there, sizeof(there), "/proc/%d/root%s", (int)t->pid, path);
		snprintf(tmp_there, sizeof(tmp_there), "%s.%d", there, (int)getpid());
		return helper_install(src, tmp_there, there);
	}
	pthread_mutex_lock(&t->lock);
	snprintf(tmp, sizeof(tmp), "%s.%d.%u", path, (int)getpid(), t->installs++);
	t->rq.op = OP_INSTALL;
	len = put_path(&t->rq, 0, tmp);
	len = len ? put_path(&t->rq, len, path) : 0;
	err = len ? helper_call(t, sizeof(t->rq.op) + len, src, &fd) : -ENAMETOOLONG;
	pthread_mutex_unlock(&t->lock);
	if (fd >= 0)
		close(fd);
	return err;
}

void target_files_free(struct target_files *t)
{
	if (!t)
		return;
	helper_stop(t);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
