/* procfs: small, bounded reads of /proc files and friends for the
 * symbolizer. */
#ifndef NPROF_SYMBOLIZE_PROCFS_H
#define NPROF_SYMBOLIZE_PROCFS_H

#include <stddef.h>
#include <sys/types.h>

/* Reads all of path (a /proc file reports size 0, so this reads to EOF)
 * into a NUL-terminated malloc'd buffer. -EFBIG past max bytes; other
 * errors as open(2) and read(2) give them. */
int procfs_read_file(const char *path, size_t max, char **ret_buf,
		     size_t *ret_len);

/* Like procfs_read_file, from offset on (for files that only grow). */
int procfs_read_file_from(const char *path, size_t offset, size_t max,
			  char **ret_buf, size_t *ret_len);

/* The same for a file already open; reads from offset to EOF. */
int procfs_read_fd_from(int fd, size_t offset, size_t max, char **ret_buf,
			size_t *ret_len);

/* The innermost namespace pid of pid (the last NSpid in its status), or
 * pid itself when that cannot be read. */
pid_t procfs_ns_pid(pid_t pid);

#endif
