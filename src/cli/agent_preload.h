/* agent_preload: `nprof record -- COMMAND` with the agent inside the
 * command: started with libnprof.so preloaded and NPROF_START set, the
 * profile read back from the file the agent writes. (Talking to an agent
 * that already runs is src/client/agent_client.h.) */
#ifndef NPROF_CLI_AGENT_PRELOAD_H
#define NPROF_CLI_AGENT_PRELOAD_H

#include <sys/types.h>

#include "base/diag.h"
#include "engine/engine.h"
#include "profile/profile.h"

/* libnprof.so's path: $NPROF_AGENT, else beside the nprof binary, else
 * in ../lib/nprof from it. */
int agent_library_path(char *buf, size_t len, struct diag *d);

/* Starts argv with libnprof.so preloaded and NPROF_START set, waits for
 * the duration or its exit (then ends it with SIGTERM), and reads the
 * profile it wrote. ret_pid gets the command's pid. */
int agent_preload_record(char **argv, const struct record_options *o, pid_t *ret_pid,
			 struct profile **ret, struct diag *d);

#endif
