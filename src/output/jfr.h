/* jfr: Java Flight Recorder files, as `jfr print`, `jfr summary`, JDK
 * Mission Control and async-profiler's converters read them.
 *
 * The writer (output_write_jfr, declared in output.h) maps native frames
 * onto JFR's Java types: the library's file name is the class, its
 * directory the package, the function the method. docs/jfr.md has the
 * details and what each event kind becomes. */
#ifndef NPROF_OUTPUT_JFR_H
#define NPROF_OUTPUT_JFR_H

#include <stddef.h>

#include "base/diag.h"
#include "profile/profile.h"

/* Largest number of events one JFR file is read into or written from;
 * more is -EFBIG. */
#define JFR_MAX_EVENTS (1u << 24)

/* Largest stack a reader accepts, in frames (a thread root it puts back
 * counts); deeper is -EFBIG. */
#define JFR_MAX_STACK_DEPTH 8192

/* Reads a JFR recording (every chunk) into a new profile: the execution
 * samples (jdk.ExecutionSample) and nprof's own events, with their stacks,
 * threads and times (the timeline). Other events are skipped. Returns 0 and sets *ret_p, or -EINVAL with one line
 * in d when the data is not a JFR file this reader understands, -EFBIG
 * past the limits, -ENOMEM. data need not outlive the call. */
int jfr_read(const void *data, size_t len, struct profile **ret_p,
	     struct diag *d);

#endif
