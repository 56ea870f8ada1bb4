/* pprof: Google's profile format (a gzipped protobuf, profile.proto), as
 * `go tool pprof` reads and writes it.
 *
 * The writer is output_write_pprof (output.h). The reader below takes the
 * bytes of a file, gzipped or not, and rebuilds a profile: frames from
 * functions and lines (a location's extra lines become FRAME_INLINED
 * frames), stacks root first, the sample types, threads from the
 * `thread`/`thread_id` labels, the period and the time range. How the two
 * map the model onto the format is in docs/formats.md. */
#ifndef NPROF_OUTPUT_PPROF_H
#define NPROF_OUTPUT_PPROF_H

#include <stdbool.h>
#include <stddef.h>

#include "base/diag.h"
#include "profile/profile.h"

/* Limits on what a reader accepts, so a hostile file costs bounded memory. */
#define PPROF_MAX_INPUT (1ull << 30)	   /* bytes, compressed or not */
#define PPROF_MAX_DECOMPRESSED (1ull << 30) /* bytes after gunzip */
#define PPROF_MAX_UNPACKED (1ull << 31)	   /* bytes the parsed message may take */
#define PPROF_MAX_DEPTH 65536		   /* frames per stack; deeper is cut */
#define PPROF_MAX_EVENTS (1u << 22)	   /* timeline events kept; more are counted */

/* True when data starts with the gzip magic (1f 8b). */
bool pprof_is_gzip(const void *data, size_t len);

/* Parses a pprof profile. Returns 0 and the new profile in *ret_p, or
 * -EBADMSG (not a valid profile), -EFBIG (past the limits above) or
 * -ENOMEM, with the reason in d. */
int pprof_read(const void *data, size_t len, struct profile **ret_p,
	       struct diag *d);

#endif
