/* perf_ring: one perf_event mmap ring buffer, read from user space.
 *
 * The kernel writes records at data_head; we read up to it and publish
 * data_tail so it may reuse the space. A record may wrap around the end
 * of the data area; the reader copies such a record into a scratch buffer
 * so the callback always sees it contiguous. One reader per ring. */
#ifndef NPROF_ENGINE_PERF_RING_H
#define NPROF_ENGINE_PERF_RING_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

struct perf_ring {
	int fd;		   /* the event that owns the mapping */
	void *base;	   /* metadata page, then the data area */
	size_t map_len;
	size_t data_len;   /* power of two */
	/* a record's size field is 16 bits */
	unsigned char scratch[65536] __attribute__((aligned(8)));
};

/* Maps fd's ring with a data area of data_len bytes (a power of two of
 * pages). 0 or -errno; -EPERM when over the locked-memory allowance
 * (kernel.perf_event_mlock_kb per CPU, then RLIMIT_MEMLOCK). */
int perf_ring_map(struct perf_ring *r, int fd, size_t data_len);
void perf_ring_unmap(struct perf_ring *r);

typedef void (*perf_ring_fn)(void *ctx, const struct perf_event_header *h);

/* Calls fn for every complete record available, then frees their space.
 * Returns the number of records. */
size_t perf_ring_drain(struct perf_ring *r, perf_ring_fn fn, void *ctx);

#endif
