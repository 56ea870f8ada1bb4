/* tracee: what the point-in-time captures of another process (thread
 * dumps by ptrace, threads_dump.h; core files, coredump.h) share: listing
 * its threads, stopping one with ptrace and letting it go (why ptrace was
 * refused is base/proc.h's proc_explain_access).
 *
 * tracee_stop and tracee_wait_next wait on the threads with waitpid():
 * callers must not reap with waitpid(-1, ...) from another thread while a
 * capture runs. */
#ifndef NPROF_CAPTURE_TRACEE_H
#define NPROF_CAPTURE_TRACEE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>


#define TRACEE_MAX_THREADS 65536 /* listed at most */

/* The thread ids of pid (sorted), from /proc/PID/task. -ESRCH when gone. */
int tracee_list_tids(pid_t pid, pid_t **ret_tids, size_t *ret_n);

/* Seizes tid and waits until it is stopped. On success *ret_sig is the
 * signal to give back at release (a signal-delivery stop caught it), or
 * 0. -ESRCH: the thread exited; -EPERM: not permitted. */
int tracee_stop(pid_t tid, int *ret_sig);

/* Releases a thread stopped by tracee_stop or reported stopped by
 * tracee_wait_next. */
int tracee_release(pid_t tid, int sig);

/* Several threads stopped at once, each released as soon as it is
 * taken: tracee_interrupt seizes tid and asks it to stop without
 * waiting (0, -ESRCH: it exited, -EPERM: not permitted); a thread blocked
 * in the kernel stops only once it gets a CPU again, so asking a few
 * before waiting overlaps those waits. tracee_wait_next waits until one
 * of tids[0..n) (each interrupted) has stopped or exited: its index in
 * *ret_i, and 0 with *ret_sig as tracee_stop gives it, or -ESRCH when
 * it exited (it is then no longer traced). It reaps nothing but those
 * threads: it looks first without reaping (waitid with WNOWAIT), and
 * should another child of this process be the one ready, waits for
 * tids[0] alone; with only_tracees (tracee_no_children said so, and none
 * was made since) it reaps what waitpid(-1) reports. */
int tracee_interrupt(pid_t tid);
int tracee_wait_next(const pid_t *tids, size_t n, bool only_tracees, size_t *ret_i,
		     int *ret_sig);

/* Whether this process has no child process at all (each of its threads'
 * /proc/self/task/TID/children is empty): then, while it makes none, a
 * thread it traces is the only thing waitpid(-1) can report, and
 * tracee_wait_next with only_tracees true waits with one system call
 * instead of two. false when it cannot tell. */
bool tracee_no_children(void);


#endif
