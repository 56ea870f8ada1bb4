/* agent_load: libnprof.so into a running process that was not started
 * with it (`nprof attach`): made visible in the process's own filesystem,
 * dlopen()ed by one of its threads (inject.h), and checked to be there.
 * When the library is already mapped but idle (after `nprof detach`), its
 * nprof_control_start() is called instead. */
#ifndef NPROF_INJECT_AGENT_LOAD_H
#define NPROF_INJECT_AGENT_LOAD_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "base/diag.h"
#include "inject/inject.h"

struct agent_load {
	bool resumed;	     /* it was there, idle: its control was restarted */
	bool copied;	     /* the library was copied into the process's /tmp */
	char path[PATH_MAX]; /* the library as the process sees it */
	struct inject_report call;
};

/* Loads (or resumes) the agent at lib (a path nprof sees) in pid;
 * answers(pid) > 0 once its control socket answers (the caller's
 * agent_client_probe: the call's work is then done). Returns 0, or -errno
 * with one line in d naming the cause: a static binary, no dlopen in its
 * C library, ptrace refused, the library not loadable there (a dependency
 * missing in its filesystem). */
int agent_load(pid_t pid, const char *lib, int (*answers)(void *ctx, pid_t pid),
	       struct agent_load *r, struct diag *d);

#endif
