#include "engine/perf_ring.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int perf_ring_map(struct perf_ring *r, int fd, size_t data_len)
{
	size_t len = (size_t)sysconf(_SC_PAGESIZE) + data_len;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	r->fd = fd;
	r->base = p;
	r->map_len = len;
	r->data_len = data_len;
	return 0;
}
void perf_ring_unmap(struct perf_ring *r)
{
	if (r && r->base) {
		munmap(r->base, r->map_len);
		r->base = NULL;
	}
}

size_t perf_ring_drain(struct perf_ring *r, perf_ring_fn fn, void *ctx)
{
	struct perf_event_mmap_page *meta = r->base;
	const unsigned char *data;
	uint64_t head, tail;
	size_t n = 0, mask;

	if (!meta)
		return 0;
	data = (const unsigned char *)r->base + meta->data_offset;
	mask = r->data_len - 1;
	/* Acquire pairs with the kernel's store of data_head: the records
	 * before head are fully written when we see it. */
	head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	tail = meta->data_tail;
	while (tail + sizeof(struct perf_event_header) <= head) {
		const struct perf_event_header *h;
		size_t off = tail & mask;
		struct perf_event_header hdr;

		/* Even the header may straddle the end. */
		if (off + sizeof(hdr) <= r->data_len) {
			memcpy(&hdr, data + off, sizeof(hdr));
		} else {
			size_t first = r->data_len - off;

			memcpy(&hdr, data + off, first);
			memcpy((unsigned char *)&hdr + first, data,
			       sizeof(hdr) - first);
		}
		if (hdr.size < sizeof(hdr) || tail + hdr.size > head) {
			/* Cannot happen with a sane kernel; skip what we
			 * cannot parse rather than stall the ring. */
			tail = head;
			break;
		}
		if (off + hdr.size <= r->data_len && !(off & 7)) {
			h = (const void *)(data + off);
		} else {
			size_t first = r->data_len - off;

			if (first > hdr.size)
				first = hdr.size;
			memcpy(r->scratch, data + off, first);
			memcpy(r->scratch + first, data, hdr.size - first);
			h = (const void *)r->scratch;
		}
		fn(ctx, h);
		tail += hdr.size;
		n++;
	}
	/* Release: our reads of the records happen before the kernel may
	 * overwrite them. */
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}
