#include "symbolize/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int procfs_read_fd_from(int fd, size_t offset, size_t max, char **ret_buf,
			size_t *ret_len)
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

int procfs_read_file_from(const char *path, size_t offset, size_t max,
			  char **ret_buf, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = procfs_read_fd_from(fd, offset, max, ret_buf, ret_len);
	close(fd);
	return err;
}

int procfs_read_file(const char *path, size_t max, char **ret_buf,
		     size_t *ret_len)
{
	return procfs_read_file_from(path, 0, max, ret_buf, ret_len);
}

pid_t procfs_ns_pid(pid_t pid)
{
	char path[64], *buf = NULL, *line;
	size_t len;
	pid_t nspid = pid;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (procfs_read_file(path, 1 << 16, &buf, &len) < 0)
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
