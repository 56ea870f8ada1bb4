/* signals: sharing SIGPROF with the program.
 *
 * Once the agent's handler is installed (hot_signals_install, at the first
 * session or thread dump) it stays installed, and the program's own
 * SIGPROF disposition becomes a record the agent keeps: sigaction() and
 * signal() for SIGPROF, interposed, read and write that record (returning
 * the program's previous action as oldact, as the kernel would) and leave
 * the agent's handler in place. The handler passes each SIGPROF that is
 * not the agent's (hot_on_signal tells them apart by si_code and
 * si_value) to the recorded action: hot_signals_chain. The agent's real
 * sigaction carries the program's sa_mask (and SA_ONSTACK), so the
 * program's handler runs with the signals it asked to block blocked.
 * Before the agent installs, sigaction() for SIGPROF goes straight
 * through, and the action then in place is what the record starts as.
 *
 * Concurrency: the record is written with every signal blocked, under a
 * spin lock (writers: the interposers, which the program may call from
 * any thread or from its own signal handlers, and SA_RESETHAND in
 * hot_signals_chain), with a sequence count that the handler reads
 * around its copy and retries on. A writer cannot be interrupted by the
 * handler on its own thread, so the handler's retry never waits for
 * itself.
 *
 * Built with NPROF_NO_INTERPOSE (the TSan build, whose runtime intercepts
 * sigaction), nothing is interposed: the agent installs through the
 * sanitizer and chains to what was there before. */
#ifndef NPROF_AGENT_HOT_SIGNALS_H
#define NPROF_AGENT_HOT_SIGNALS_H

#include <signal.h>
#include <stdbool.h>

/* Installs handler for HOT_SIGNAL (SA_SIGINFO | SA_RESTART), keeping the
 * action it replaces as the program's. Idempotent. 0 or -errno. Not in
 * a signal handler. */
int hot_signals_install(void (*handler)(int, siginfo_t *, void *));

/* In the handler: runs the program's action for a SIGPROF that is not the
 * agent's. Default or ignored: the signal is dropped (SIGPROF's default
 * action would end the process; see docs/agent.md). */
void hot_signals_chain(int sig, siginfo_t *si, void *uc);

/* In a child after fork: the writer lock may have been held by a thread
 * that the child does not have; no session's signal can come. */
void hot_signals_after_fork(void);

/* Set by the session while its engines may send signals: from before it
 * arms them to after they are disarmed and drained. */
void hot_signals_expect(bool on);

/* exec() in this process while a session's signals may come: a SIGPROF
 * pending at the exec, or sent during it, would meet the new program with
 * its default action, which ends it. So SIGPROF is ignored across the
 * exec (which discards any pending, and stays so in the new program, as
 * POSIX keeps ignored signals ignored): true when it did that. When the
 * exec fails, hot_signals_exec_failed puts the agent's handler back (the
 * session then re-arms the perf events whose signals were discarded). */
bool hot_signals_exec_begin(void);
void hot_signals_exec_failed(void);

#endif
