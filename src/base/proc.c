#include "base/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"

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

int proc_comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[64], name[64];
	ssize_t n;

	if (!len)
		return -EINVAL;
	if (pid && tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	else if (tid)
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	else if (pid)
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/comm");
	n = proc_read_small(path, name, sizeof(name));
	if (n < 0)
		return (int)n;
	name[strcspn(name, "\n")] = '\0';
	snprintf(buf, len, "%s", name);
	return 0;
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
