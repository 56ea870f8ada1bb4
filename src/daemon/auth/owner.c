/* owner: who can change a path, which file a process runs, what a pid
 * file names. */
#include "daemon/auth/owner.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PID_FILE_MAX 31

const char *owner_user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *p = NULL;
	char pwbuf[4096];

	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &p) == 0 && p)
		snprintf(buf, len, "user %s", p->pw_name);
	else
		snprintf(buf, len, "uid %u", (unsigned)uid);
	return buf;
}

/* Why who (root or uid) does not hold st, named path, into why; 0 when
 * it does. */
static int held(const char *path, const struct stat *st, uid_t uid, char *why, size_t whylen)
{
	char who[96];

	if (st->st_uid == 0 || st->st_uid == uid)
		return 0;
	snprintf(why, whylen, "%s is %s's", path, owner_user_name(st->st_uid, who, sizeof(who)));
	return -EPERM;
}

int owner_path_held(const char *path, uid_t uid, char *resolved, struct stat *ret_st,
		    char *why, size_t whylen)
{
	char real[PATH_MAX];
	struct stat st, parent;
	size_t len;
	int r;

	if (!realpath(path, real))
		return -errno;
	len = strlen(real);
	if (lstat("/", &parent) < 0)
		return -errno;
	if ((r = held("/", &parent, uid, why, whylen)) < 0)
		return r;
	if (len < 2) {
		snprintf(why, whylen, "/ is not a regular file");
		return -EPERM;
	}
	/* Each longer prefix that ends a component, the whole path last. */
	for (size_t end = 1; end <= len; end++) {
		char c = real[end];

		if (end < len && c != '/')
			continue;
		real[end] = '\0';
		if (lstat(real, &st) < 0) {
			r = -errno;
			real[end] = c;
			return r;
		}
		if ((r = held(real, &st, uid, why, whylen)) < 0)
			return r;
		/* Who may replace this entry: whoever may write its directory. */
		if ((parent.st_mode & (S_IWGRP | S_IWOTH)) &&
		    !((parent.st_mode & S_ISVTX) && st.st_uid == 0)) {
			snprintf(why, whylen, (parent.st_mode & S_ISVTX)
				 ? "%s is not root's, in a sticky directory writable by %s: anyone "
				   "could have made it first"
				 : "%s can be replaced by other users (its directory is writable by %s)",
				 real, parent.st_mode & S_IWOTH ? "all" : "its group");
			return -EPERM;
		}
		if (end == len ? !S_ISREG(st.st_mode) : !S_ISDIR(st.st_mode)) {
			snprintf(why, whylen, "%s is not a %s", real,
				 end == len ? "regular file" : "directory");
			return -EPERM;
		}
		real[end] = c;
		parent = st;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, whylen, "%s is writable by %s", real,
			 st.st_mode & S_IWOTH ? "all" : "its group");
		return -EPERM;
	}
	if (resolved)
		memcpy(resolved, real, len + 1);
	if (ret_st)
		*ret_st = st;
	return 0;
}

int owner_runs_file(const char *proc_root, pid_t pid, const struct stat *st)
{
	char path[PATH_MAX];
	struct stat exe;

	if ((size_t)snprintf(path, sizeof(path), "%s/%d/exe", proc_root, (int)pid) >= sizeof(path))
		return -ENAMETOOLONG;
	if (stat(path, &exe) < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return exe.st_dev == st->st_dev && exe.st_ino == st->st_ino;
}

int owner_program_held(pid_t pid, const char *path, uid_t uid, char *why, size_t whylen)
{
	struct stat st, held;
	int r;

	if (!path[0] || stat(path, &st) < 0) {
		snprintf(why, whylen, "pid %d's program %s cannot be read", (int)pid, path);
		return -EPERM;
	}
	r = owner_runs_file("/proc", pid, &st);
	if (r == 0) {
		snprintf(why, whylen, "pid %d shows the path %s but runs another file (a mount "
			 "namespace of its own shows it there)", (int)pid, path);
		return -EPERM;
	}
	if (r < 0)
		return r;
	r = owner_path_held(path, uid, NULL, &held, why, whylen);
	if (r == 0 && (held.st_dev != st.st_dev || held.st_ino != st.st_ino)) {
		snprintf(why, whylen, "%s changed while nprofd looked at it", path);
		r = -EPERM;
	}
	return r;
}

int owner_pid_file(const char *path, pid_t *ret_pid)
{
	char buf[PID_FILE_MAX + 2];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), r = -EBADMSG;
	struct stat st;
	long long pid = 0;
	ssize_t n;
	size_t i = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		goto out;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		r = -errno;
		goto out;
	}
	if (n > PID_FILE_MAX)
		goto out;
	for (; i < (size_t)n && buf[i] >= '0' && buf[i] <= '9' && pid <= INT_MAX; i++)
		pid = pid * 10 + (buf[i] - '0');
	if (i == 0 || pid <= 0 || pid > INT_MAX || (i < (size_t)n && !(buf[i] == '\n' &&
								      i + 1 == (size_t)n)))
		goto out;
	*ret_pid = (pid_t)pid;
	r = 0;
out:
	close(fd);
	return r;
}
