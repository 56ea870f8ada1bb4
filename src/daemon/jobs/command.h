/* command: an operator's command line ([command NAME] run = in
 * nprofd.conf) into an argv, without a shell. */
#ifndef NPROF_DAEMON_COMMAND_H
#define NPROF_DAEMON_COMMAND_H

#include <stdint.h>
#include <sys/types.h>

/* Splits a command line on blanks ('...' and "..." group, no other
 * shell syntax), %p %d %o %% replaced: a NULL-terminated malloc'd argv
 * (free each and it), or NULL with errno (EINVAL: unbalanced quote). */
char **command_argv(const char *run, pid_t pid, uint64_t seconds, const char *output);
void command_argv_free(char **argv);

#endif
