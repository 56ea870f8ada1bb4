/* proc: the /proc readers every part shares, each once — a small file,
 * a whole one, a process's or a thread's name and stat, its threads, its
 * maps (read whole, each line parsed here: symbolize/maps.h keeps the
 * sorted table, unwind/modules.h the code mappings), its namespace pid,
 * and the one sentence saying why reading its maps or tracing it was
 * refused. */
#ifndef NPROF_BASE_PROC_H
#define NPROF_BASE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"

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

/* Reads all of the file open as fd from offset on (a /proc file reports
 * size 0, so this reads to EOF) into a NUL-terminated malloc'd *ret_buf.
 * -EFBIG past max bytes; other errors as lseek(2) and read(2) give them.
 * The offset serves files that only grow (a perf map read again). */
int proc_read_fd_from(int fd, size_t offset, size_t max, char **ret_buf, size_t *ret_len);

/* The same for all of path; errors also as open(2) gives them. */
int proc_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len);

/* The name (comm) of thread tid of process pid into buf (len bytes, the
 * newline dropped); pid 0 is this process, tid 0 the process itself. 0,
 * or -errno with buf unchanged (the thread is gone, say). */
int proc_comm(pid_t pid, pid_t tid, char *buf, size_t len);

/* The fields of a /proc/PID/stat or /proc/PID/task/TID/stat line that
 * nprof reads (proc(5) numbers them from 1). */
struct proc_stat {
	char comm[64];		/* 2: between the first '(' and the last ')' */
	char state;		/* 3: R, S, D, T, t, Z, ... */
	pid_t ppid, pgrp, session; /* 4, 5, 6 */
	unsigned flags;		/* 9: the kernel's PF_* */
	uint64_t utime, stime;	/* 14, 15: clock ticks */
	long nice;		/* 19 */
	unsigned threads;	/* 20 */
	uint64_t start_ticks;	/* 22: clock ticks after boot */
	uint64_t pending;	/* 31: pending signals, bit N-1 for signal N (a
				 * task's stat: the thread's own); 0 when the
				 * line stops before it */
};

/* Parses a stat line (NUL-terminated): 0, or -EBADMSG when it is not
 * one (the name may hold spaces and parentheses: it ends at the last
 * ')'; a field from 3 to 22 is missing or not a number). */
int proc_stat_parse(const char *text, struct proc_stat *ret);

/* Reads and parses the stat of thread tid of process pid (tid 0: the
 * process's own; pid 0: this process): 0, or -errno (-ENOENT: gone). */
int proc_stat_read(pid_t pid, pid_t tid, struct proc_stat *ret);

/* The same for path relative to the directory open as dirfd (a
 * process's /proc/PID/task: "TID/stat"), in one read. */
int proc_stat_read_at(int dirfd, const char *path, struct proc_stat *ret);

/* The threads of process pid (0: this one) as /proc/PID/task lists them,
 * at most max, into a malloc'd *ret (free it). 0 or -errno. */
int proc_tasks(pid_t pid, size_t max, pid_t **ret, size_t *ret_n);

/* The most of a /proc/PID/maps file a reader takes (a process can map
 * hundreds of thousands of regions). */
#define PROC_MAPS_MAX_BYTES (256u << 20)

/* Reads the /proc/PID/maps of pid (0: this process's) whole, at most
 * PROC_MAPS_MAX_BYTES, into a malloc'd, NUL-terminated *ret_buf (free
 * it) of *ret_len bytes: 0, or -errno: -ESRCH when the process is gone,
 * -EACCES or -EPERM when it is not this process's to read, -EFBIG past
 * the bound. */
int proc_maps_read(pid_t pid, char **ret_buf, size_t *ret_len);

/* One line of /proc/PID/maps, or a mapping's first line in smaps:
 * "start-end perms offset maj:min inode   path". */
struct proc_map_line {
	uint64_t start, end;	/* [start, end), start below end */
	uint64_t offset;	/* the file offset of start */
	uint64_t inode;
	uint32_t maj, min;	/* the file's device */
	char perms[4];		/* "r-xp": r, w, x or '-', then p (private) or s (shared) */
	const char *path;	/* in the text, path_len bytes and no NUL after them:
				 * the file's name, "[heap]", "[vdso]", ... */
	size_t path_len;	/* 0: anonymous memory */
};

/* Parses the line [p, end) (its newline left out; the text need not end
 * in a NUL): 0, or -EINVAL when it is not one (a field missing or out of
 * range, an empty range). The path is what follows the inode and its
 * padding, as the kernel wrote it: " (deleted)" and all. */
int proc_maps_line_parse(const char *p, const char *end, struct proc_map_line *ret);

/* The next line of maps text at *pos (before end) that parses, into
 * *ret, and *pos past it: true; false at the end. Lines that are not
 * one are passed over. */
bool proc_maps_next(const char **pos, const char *end, struct proc_map_line *ret);

/* What was refused: reading a process's files that the kernel guards
 * with ptrace's read check (maps, smaps, mem, environ), or ptrace
 * itself (attaching: stopping its threads, reading their registers). */
enum proc_access { PROC_ACCESS_READ, PROC_ACCESS_ATTACH };

/* The one-line reason access of that mode to pid was refused, naming the
 * cause and the fix ("WHAT of PID N: cause; fix"): another user's
 * process, nprof as root without CAP_SYS_PTRACE (a container), a process
 * that is not dumpable; for an attach also a seccomp policy on nprof, a
 * process already traced, Yama's ptrace_scope (which restricts only
 * attaching). "no process with PID N" when it is gone. Returns the error
 * for the caller to pass on: -ESRCH, -EBUSY (traced), -EPERM (-EACCES
 * for a read) for a cause found, else err. */
int proc_explain_access(pid_t pid, int err, const char *what, enum proc_access mode,
			struct diag *d);

/* The one line for err from reading the memory map of pid
 * (proc_maps_read, or its smaps): "no process with PID N" (-ESRCH), why
 * reading it is not permitted (proc_explain_access: -EACCES), or the
 * error itself. Returns the error for the caller to pass on. */
int proc_maps_explain(pid_t pid, int err, struct diag *d);

/* The innermost namespace pid of pid (the last NSpid in its status), or
 * pid itself when that cannot be read. */
pid_t proc_ns_pid(pid_t pid);

#endif
