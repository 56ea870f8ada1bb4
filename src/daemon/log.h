/* log: nprofd's one line per event on standard error (journald or the
 * supervisor's log collects it), with a level and a UTC timestamp. */
#ifndef NPROF_DAEMON_LOG_H
#define NPROF_DAEMON_LOG_H

__attribute__((format(printf, 1, 2))) void log_info(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void log_error(const char *fmt, ...);

#endif
