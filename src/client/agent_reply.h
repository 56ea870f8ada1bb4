/* agent_reply: reading what an nprof agent sends back on its control
 * socket (docs/agent.md, "Control socket"). Pure functions on bytes: the
 * agent runs inside another process, often another user's, so nothing it
 * sends is trusted. Each reader is fuzzed (tests/fuzz/agent_reply_fuzz.c,
 * agent_status_fuzz.c); none needs a NUL after the bytes. */
#ifndef NPROF_CLIENT_AGENT_REPLY_H
#define NPROF_CLIENT_AGENT_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"

/* The longest first line a reply may have ("error MESSAGE"). */
#define AGENT_REPLY_MAX_HEADER 4096

/* A whole reply (all the agent sent before it closed), framed as
 *   "ok\n" TEXT            (status, start, heap enable|disable|status)
 *   "ok LEN\n" LEN bytes   (stop, dump, stacks, heap dump: exactly LEN)
 *   "error MESSAGE\n"
 * "ok": 0, and *ret_off, *ret_len place the payload in buf.
 * "error": -EACCES when the agent refused us ("permission denied ..."),
 * else -EIO; d says "PID <pid>'s agent: MESSAGE", control characters
 * shown as '?'. Anything else (no newline, a first line longer than
 * AGENT_REPLY_MAX_HEADER, another word, a LEN that is not the payload's
 * length): -EPROTO, d saying how it is malformed. pid only names the
 * agent in messages. */
int agent_reply_parse(const char *buf, size_t len, pid_t pid, size_t *ret_off,
		      size_t *ret_len, struct diag *d);

/* Replaces, in place, the bytes of text an agent sent that a terminal
 * would act on (C0 controls other than tab and newline, DEL) with '?',
 * and a NUL too (the text ends at len). */
void agent_reply_clean_text(char *s, size_t len);

/* The reply to "status", without its "ok" line:
 *   nprof-agent 1 / pid N / events E... / [http ADDR [http-token PATH]] /
 *   state idle | state running event=E effective=E interval=N samples=N
 * Unknown lines are skipped (newer agents may add some). Text fields keep
 * printable ASCII only (anything else becomes '?') and are cut to fit. */
struct agent_status {
	unsigned version;	/* "nprof-agent N" */
	pid_t pid;		/* "pid N" */
	char events[128];	/* "events ...", space-separated */
	char http[96];		/* "http ADDR", or "" */
	char http_token[256];	/* "http-token PATH": the endpoint's token file, or "" */
	bool running;		/* "state running ...", else "state idle" */
	char event[32];		/* running: event=, or "" */
	char effective[32];	/* running: effective=, or "" */
	uint64_t interval;	/* running: interval= */
	uint64_t samples;	/* running: samples= */
};

/* 0, or -EPROTO when there is no "nprof-agent N", "pid N" or "state" line,
 * or one of them is malformed. */
int agent_status_parse(const char *buf, size_t len, struct agent_status *ret);

#endif
