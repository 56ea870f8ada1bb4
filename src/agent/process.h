/* process: what the agent does around fork() and exec() in the process
 * it is loaded into (docs/agent.md, "fork, exec and SIGPROF").
 *
 * fork: api.c registers the handlers with pthread_atfork. Before, the
 * forking thread takes the session's locks, so that the child gets the
 * session's state whole; after, the parent lets them go and the child
 * forgets the parent's session, threads and fds (it has none of the
 * agent's threads, and no timers), free to start its own; under
 * NPROF_START it starts one with the same options (profile_file.c names
 * its file).
 *
 * exec: exec.c interposes the exec family; while a session's signals
 * may come, SIGPROF is ignored across the exec (hot/signals.h), and
 * after a failed one the session re-arms its perf events. */
#ifndef NPROF_AGENT_PROCESS_H
#define NPROF_AGENT_PROCESS_H

void agent_session_before_fork(void);
void agent_session_after_fork_parent(void);
struct agent_options;
bool agent_session_after_fork(struct agent_options *ret_env);
void agent_threads_after_fork(void);

void agent_session_after_failed_exec(void);

#endif
