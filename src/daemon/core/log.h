/* log: nprofd's one line per event on standard error (journald or the
 * supervisor's log collects it), with a level and a UTC timestamp. */
#ifndef NPROF_DAEMON_LOG_H
#define NPROF_DAEMON_LOG_H

#include <stdint.h>

__attribute__((format(printf, 1, 2))) void log_info(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void log_error(const char *fmt, ...);

/* The request this thread serves now (0: none): every line it logs
 * meanwhile names it ("request 42: ..."), and so does a reply of status
 * 500 or more, so that what a client was told leads to what went wrong. */
void log_set_request(uint64_t number);
uint64_t log_request(void);

#endif
