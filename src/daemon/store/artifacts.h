/* artifacts: the files instances and actions produce, under
 * state_dir/artifacts (root-only, 0700), named by the daemon — never by
 * a path a client supplies — and indexed in the artifacts table. */
#ifndef NPROF_DAEMON_ARTIFACTS_H
#define NPROF_DAEMON_ARTIFACTS_H

#include <stdbool.h>
#include <sys/types.h>

#include "daemon/core/daemon.h"

/* Creates the file name (a bare name the daemon made) for a job that
 * runs as uid (which then owns it, so that nprof can reopen its stdout
 * by /proc/self/fd/1; the directory keeps everyone else out). An fd
 * open for writing, or -errno. */
int artifacts_create(struct daemon *d, const char *name, uid_t uid);

/* After instance id ended: records its files' sizes, complete when ok;
 * a file that holds nothing is removed with its row. */
void artifacts_settle(struct daemon *d, int64_t id, bool ok);

/* After a command of instance id ended: the regular files it left in
 * its work directory (owned by uid, the user it ran as, one link each)
 * become artifacts; the directory is removed. */
void artifacts_collect_work(struct daemon *d, int64_t id, uid_t uid);

/* Applies [artifacts] max_count, max_age and max_bytes: removes the
 * oldest complete artifacts (never one being written, never the newest
 * one) until all three hold, and [instances] history_per_worker. */
void artifacts_retain(struct daemon *d);

/* Instance id removed with its artifacts (files and rows); it stays when
 * one of them cannot be removed. 0 or -errno. */
int artifacts_remove_instance(struct daemon *d, int64_t id);

/* Whether the artifacts still take more than max_bytes. */
bool artifacts_full(struct daemon *d);

#endif
