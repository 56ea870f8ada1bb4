/* agent_client: the CLI's side of the agent's control socket
 * (docs/agent.md): finding processes that have libnprof.so loaded,
 * recording through it, and starting a command with it preloaded. */
#ifndef NPROF_CLI_AGENT_CLIENT_H
#define NPROF_CLI_AGENT_CLIENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/diag.h"
#include "engine/engine.h"
#include "profile/profile.h"

/* Events only the agent has (the engine has cpu and wall of its own). */
bool agent_client_event_only(const char *event);
/* Events whose interval is bytes (alloc, heap), not a time. */
bool agent_client_event_bytes(const char *event);
/* Events the agent can record. */
bool agent_client_event(const char *event);

/* The pids whose agent listens (abstract sockets in /proc/net/unix:
 * this network namespace only), sorted. 0 or -errno; free *ret. */
int agent_client_list(pid_t **ret, unsigned *ret_n);
bool agent_client_present(pid_t pid);

/* One request line; the reply's text (after "ok") in a malloc'd buffer,
 * NUL-terminated. An "error ..." reply becomes -EIO (or -EACCES for a
 * refusal) with its message in d. */
int agent_client_request(pid_t pid, const char *line, char **ret_data, size_t *ret_len,
			 struct diag *d);

/* Records pid through its agent: start, wait for the duration (or *stop,
 * or the process's exit), stop, and read the profile back. */
int agent_client_record(pid_t pid, const struct record_options *o, struct profile **ret,
			struct diag *d);

/* Starts argv with libnprof.so preloaded and NPROF_START set, waits for
 * the duration or its exit (then ends it with SIGTERM), and reads the
 * profile it wrote. ret_pid gets the command's pid. */
int agent_client_record_command(char **argv, const struct record_options *o,
				pid_t *ret_pid, struct profile **ret, struct diag *d);

#endif
