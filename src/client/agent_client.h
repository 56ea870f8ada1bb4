/* agent_client: talking to the nprof agent (libnprof.so) inside another
 * process over its control socket, "@nprof-agent-PID" (docs/agent.md):
 * finding agents, connecting and verifying that the peer is the process
 * itself, the request protocol, and recording through it. Used by the CLI
 * and the daemon; the replies are read by agent_reply.h, the thread dump
 * by threaddump/threaddump.h (thread_dump_read_json).
 *
 * Trust: an abstract socket name belongs to whoever binds it first, in
 * the whole network namespace. Anyone can bind "@nprof-agent-1234" for a
 * process 1234 that has no agent. So every connection is verified before
 * a byte is sent (agent_client_connect); code that talks to agents goes
 * through it, never through its own connect(2). */
#ifndef NPROF_CLIENT_AGENT_CLIENT_H
#define NPROF_CLIENT_AGENT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"
#include "client/agent_reply.h"
#include "engine/engine.h"
#include "profile/events.h"
#include "profile/profile.h"

#define AGENT_CLIENT_SOCKET_PREFIX "nprof-agent-"

/* The pids whose socket name is in /proc/net/unix (this network namespace
 * only), sorted: candidates, not agents. Nothing here is verified; talk to
 * each through agent_client_connect (or what calls it). 0 or -errno; free
 * *ret. */
int agent_client_list(pid_t **ret, unsigned *ret_n);

/* Connects to pid's agent, and before sending anything checks, with the
 * kernel's word for it, that the socket listening on the name was made by
 * pid itself:
 *  - SO_PEERCRED's pid (the process that called listen(2): the agent's
 *    socket is made in pid, whatever thread, so this is pid's tgid; a
 *    forked child that still holds the socket reports its parent) must be
 *    pid;
 *  - that process must still be alive (SO_PEERPIDFD, Linux 6.5+: a
 *    socket whose maker has exited reports its old pid, which may be
 *    reused);
 *  - SO_PEERCRED's uid (the maker's effective uid at listen(2)) must be
 *    one of pid's uids (real, effective, saved, read after connecting) or
 *    root (a service started as root that has dropped privileges since
 *    its agent listened).
 * Returns the connected fd (close it), or -ENOENT: nothing listens on the
 * name (no agent); -ENOTUNIQ: something else holds it (d names the holder
 * by pid and uid, in one line that callers extend with what they do
 * instead); -ESRCH: no process pid; other -errno (socket(2), connect(2),
 * which gives up after 10 s on a listener that does not accept). */
int agent_client_connect(pid_t pid, struct diag *d);

/* Whether pid has its own agent listening: 1 (verified, nothing sent),
 * 0 (no agent: d left as it was), or agent_client_connect's error. */
int agent_client_probe(pid_t pid, struct diag *d);

/* One request line to pid's verified agent; the reply's payload (after
 * "ok" or "ok LEN", agent_reply_parse) in a malloc'd buffer, NUL-
 * terminated (the NUL not counted in *ret_len). Errors as
 * agent_client_connect and agent_reply_parse; at most 1 GiB is read. */
int agent_client_request(pid_t pid, const char *line, char **ret_data, size_t *ret_len,
			 struct diag *d);

/* "status" to pid's agent, read with agent_status_parse; -EPROTO when the
 * reply is not a status or names another pid. */
int agent_client_status(pid_t pid, struct agent_status *ret, struct diag *d);

/* The "start" options for o, as the agent reads them (event=, interval=,
 * duration=, jstackdepth=, thread, simple), duration_ns in place of o's. */
void agent_client_format_options(const struct record_options *o, uint64_t duration_ns,
				 char *buf, size_t len);

/* Records pid through its agent: start, wait for the duration (or *stop,
 * or the process's exit), stop, and read the profile back (pprof,
 * pprof_read). */
int agent_client_record(pid_t pid, const struct record_options *o, struct profile **ret,
			struct diag *d);

#endif
