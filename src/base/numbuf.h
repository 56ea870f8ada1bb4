/* numbuf: integers written in decimal through a buffer of their own.
 *
 * A flame graph's data is millions of numbers; fprintf per number was
 * most of the time spent writing one. */
#ifndef NPROF_BASE_NUMBUF_H
#define NPROF_BASE_NUMBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct numbuf {
	char buf[1 << 16];
	size_t n;
	FILE *out;
};

/* Writes what is buffered to b->out. */
void numbuf_flush(struct numbuf *b);

/* Writes sep (0 for none) and then x in decimal. */
void numbuf_put(struct numbuf *b, char sep, int64_t x);

#endif
