/* progress: the one line that long work (a recording, a wait for nprofd,
 * a big conversion) keeps current on stderr while it runs -- when stderr
 * is a terminal, and never otherwise: a script or a pipe sees only the
 * result. The line is rewritten in place at most every
 * PROGRESS_PERIOD_MS and cleared before anything else is printed. */
#ifndef NPROF_CLI_PROGRESS_H
#define NPROF_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"

#define PROGRESS_PERIOD_MS 200

/* Whether a progress line is shown here: stderr is a terminal. */
bool progress_wanted(void);

/* Writes the line ("nprof: " and the text, cut to the terminal's width),
 * unless the last was written less than PROGRESS_PERIOD_MS ago. */
void progress_show(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes the line at once: a new step of the work, which the last
 * line must not go on naming. */
void progress_step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Clears the line, if one is shown. */
void progress_clear(void);

/* A recording's line: "recording PID 1234: 3.2 s of 10 s, 640 samples,
 * 3 threads; Ctrl-C stops early". arg points to the pid_t; a
 * record_options.progress. */
void progress_recording(void *arg, const struct record_progress *pr);

#endif
