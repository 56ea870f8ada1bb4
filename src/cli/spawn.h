/* spawn: start a command held before exec, so that profiling is set up
 * before its first instruction, then let it go. */
#ifndef NPROF_CLI_SPAWN_H
#define NPROF_CLI_SPAWN_H

#include <sys/types.h>

#include "base/diag.h"

struct spawned {
	pid_t pid;
	int go_fd;   /* write a byte to let the child exec */
	int err_fd;  /* carries exec's errno if exec fails */
	int exec_error; /* after spawned_finish: 0, or -errno of exec */
};

/* Forks a child that waits for spawned_release() and then execs argv.
 * Fails early, with d saying so, when argv[0] cannot be found or run. */
int spawned_start(char *const argv[], struct spawned *ret, struct diag *d);

/* Lets the child exec (signature fits engine_record's child_started). */
void spawned_release(void *spawned);

/* Ends the child if it still runs (SIGTERM, then SIGKILL after grace_ms),
 * reaps it, notes a failed exec in exec_error, and closes the pipes.
 * Returns its wait status. */
int spawned_finish(struct spawned *s, int grace_ms);

#endif
