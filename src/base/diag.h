/* diag: the one-line reason an operation failed, carried up to the edge.
 *
 * Libraries return 0 or -errno; when the caller passed a struct diag they
 * also fill it with a sentence that names the cause and the fix. Only the
 * edge (main, the daemon, the agent's control thread) prints it. */
#ifndef NPROF_BASE_DIAG_H
#define NPROF_BASE_DIAG_H

#include <stddef.h>

struct diag {
	char msg[512];
};

/* Formats the message into d (when d is not NULL) and returns err, so a
 * caller can write `return diag_set(d, -EPERM, "...")`. Keeps the first
 * message: a deeper, more precise reason is not overwritten by a caller. */
int diag_set(struct diag *d, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline void diag_clear(struct diag *d)
{
	if (d)
		d->msg[0] = '\0';
}

#endif
