/* proc: the /proc readers every part shares — a small file, a process's
 * or a thread's name, and a process's threads. */
#ifndef NPROF_BASE_PROC_H
#define NPROF_BASE_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* Reads the small file path (a /proc or /sys file) into buf (len bytes,
 * NUL-terminated; what does not fit is left out): its length, or -errno. */
ssize_t proc_read_small(const char *path, char *buf, size_t len);

/* The same for path relative to the directory open as dirfd (openat),
 * with one read(2): for the /proc files made whole at each read, one
 * record each (a thread's stat, schedstat, syscall), whose text a read
 * into a larger buffer returns all of; a thread dump reads two for each
 * of thousands of threads, through its process's /proc/PID/task, and
 * the read that would only say "end of file" is one system call in
 * three. */
ssize_t proc_read_small_at(int dirfd, const char *path, char *buf, size_t len);

/* The name (comm) of thread tid of process pid into buf (len bytes, the
 * newline dropped); pid 0 is this process, tid 0 the process itself. 0,
 * or -errno with buf unchanged (the thread is gone, say). */
int proc_comm(pid_t pid, pid_t tid, char *buf, size_t len);

/* The threads of process pid (0: this one) as /proc/PID/task lists them,
 * at most max, into a malloc'd *ret (free it). 0 or -errno. */
int proc_tasks(pid_t pid, size_t max, pid_t **ret, size_t *ret_n);

#endif
