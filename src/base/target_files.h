/* target_files: the files of another process's world — its root, its
 * mount namespace — opened with no more rights than that process's user
 * has.
 *
 * nprof run by root (for itself, or by nprofd for an admin) reads the
 * files of other users' processes: their libraries for symbols and
 * unwind tables, their debug files and perf maps, and for `nprof attach`
 * it puts the agent where the process can load it. A path in such a
 * process's world (/proc/PID/root/...) resolves through mounts, bind
 * mounts and symlinks its user chose (`unshare -Urm` gives any user a
 * mount namespace of their own): root opening, creating, renaming or
 * deleting by such a path could be made to write into /etc, read a
 * root-only file, block for ever on a FIFO, or set a device going.
 *
 * So, when the caller is root and the process is not root's:
 *  - a mapped file is opened by the kernel's own link to the mapping
 *    (/proc/PID/map_files/START-END), which names no path, and checked
 *    to be the inode the maps name;
 *  - any other path of the process's world is opened (or written) by a
 *    helper child that has entered the process's root and dropped to
 *    its user and groups (no capabilities, not dumpable, no new
 *    privileges), which hands back the descriptor.
 * When the caller is the process's user, or the process is root's, paths
 * are opened directly through /proc/PID/root: nothing is gained there.
 *
 * Every open is of a regular file only (a FIFO or a device is refused
 * before it is opened, through O_PATH), read-only. A helper that does not
 * answer within TARGET_FILES_TIMEOUT_MS is killed (its user can stop it).
 *
 * Thread-safe: calls may come from several threads; the helper serves one
 * at a time. */
#ifndef NPROF_BASE_TARGET_FILES_H
#define NPROF_BASE_TARGET_FILES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define TARGET_FILES_TIMEOUT_MS 5000

struct target_files;

/* The world of process pid. NULL with errno set (ESRCH: no such
 * process; EACCES: its status is not readable). The helper is made only
 * when first needed. */
struct target_files *target_files_new(pid_t pid);

/* Ends the helper, if any. Accepts NULL. */
void target_files_free(struct target_files *t);

/* Whether this caller has more rights than the process's user (root for
 * another user's process): paths of its world then go through the
 * helper. */
bool target_files_privileged(const struct target_files *t);

/* The uid whose rights the process's files are opened with. */
uid_t target_files_uid(const struct target_files *t);

/* A read-only descriptor (O_CLOEXEC) of the regular file at path
 * (absolute) as the process sees it; -errno (-EINVAL for a file that is
 * not regular). */
int target_files_open(struct target_files *t, const char *path);

/* A read-only descriptor of the file the process maps at [start, end),
 * whose path it names as path and whose inode is ino (0: not checked):
 * through map_files, else path in its world checked to be that inode. */
int target_files_open_mapped(struct target_files *t, uint64_t start, uint64_t end,
			     uint64_t ino, const char *path);

/* Writes the bytes of the descriptor src (from its start) to path in the
 * process's world, as its user: a new file beside path (mode 0644),
 * renamed over path. 0 or -errno. */
int target_files_install(struct target_files *t, int src, const char *path);

/* A read-only descriptor of the regular file at path as this process
 * sees it (a host path: a root-owned directory such as /usr/lib/debug,
 * or a name in /tmp a user may have planted): never a device or a FIFO
 * (-EINVAL), a final symlink followed only when nofollow is false. */
int target_files_open_host(const char *path, bool nofollow);

#endif
