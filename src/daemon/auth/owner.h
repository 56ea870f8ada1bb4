/* owner: whose a service is, from facts another user cannot forge — who
 * can change a file and the directories above it, which file a process
 * really runs, which process a supervisor's pid file names — for what
 * nprofd does as root on a user's word: a restart through a service's
 * restart_command (docs/nprofd.conf.5.md, [service NAME]). A path a
 * process shows, a command line, a unit's name are what the user chose:
 * never enough on their own. */
#ifndef NPROF_DAEMON_OWNER_H
#define NPROF_DAEMON_OWNER_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Whether nobody but root and uid can change what path names: its links
 * resolved (realpath), each directory on the way and the file itself
 * owned by root or uid, and writable by nobody else — but for a sticky
 * directory writable by all (/tmp), whose entry on the way must then be
 * root's, since anyone may make an entry of their own there. 0, with the
 * file's stat in *ret_st and the resolved path in resolved (PATH_MAX
 * bytes; either may be NULL); -EPERM with the reason in why (naming the
 * path at fault); another -errno when path cannot be resolved or read. */
int owner_path_held(const char *path, uid_t uid, char *resolved, struct stat *ret_st,
		    char *why, size_t whylen);

/* Whether process pid (under proc_root) runs the file st describes: its
 * /proc/PID/exe is that device and inode. The path the kernel shows for
 * it proves nothing: a mount namespace of the process's own can show any
 * file at any path. 1, 0, or -errno (-ESRCH when it has gone). */
int owner_runs_file(const char *proc_root, pid_t pid, const struct stat *st);

/* Whether process pid runs the program at path (the path it shows, on
 * this host), which nobody but root (and uid, when uid is not 0) can
 * change, nor the directories above it: a program root installed, or one
 * of uid's own. 0; -EPERM with the reason in why; another -errno (-ESRCH
 * when the process has gone). */
int owner_program_held(pid_t pid, const char *path, uid_t uid, char *why, size_t whylen);

/* The pid a pid file holds (decimal digits, then a newline at most:
 * runit's supervise/pid, a daemon's PIDFILE), the file opened without
 * following a last link and regular, at most 31 bytes. 0, -EBADMSG when
 * it holds no pid, or another -errno. */
int owner_pid_file(const char *path, pid_t *ret_pid);

/* A user's name ("uid N" when it has none), into buf. */
const char *owner_user_name(uid_t uid, char *buf, size_t len);

#endif
