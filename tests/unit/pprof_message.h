/* For the unit tests that look inside a pprof file: its gzip taken off,
 * and a message built or changed by hand read back through pprof_read (the
 * reader's error paths). Include after test.h. */
#ifndef NPROF_TESTS_PPROF_MESSAGE_H
#define NPROF_TESTS_PPROF_MESSAGE_H

#include <stdlib.h>
#include <zlib.h>

#include "output/pprof.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;

/* The raw message of a gzipped pprof of at most 1 MiB (malloc'd). */
static inline uint8_t *gunzip_all(const char *gz, size_t len, size_t *ret_len)
{
	size_t cap = 1 << 20;
	uint8_t *buf = malloc(cap);
	z_stream z = { 0 };

	inflateInit2(&z, 15 + 16);
	z.next_in = (uint8_t *)gz;
	z.avail_in = (uInt)len;
	z.next_out = buf;
	z.avail_out = (uInt)cap;
	CHECK(inflate(&z, Z_FINISH) == Z_STREAM_END, "the output is one gzip member");
	*ret_len = cap - z.avail_out;
	inflateEnd(&z);
	return buf;
}

/* Packs the message and reads it with pprof_read. */
static inline int read_packed(const pb_profile *pb, struct diag *d,
			      struct profile **ret)
{
	size_t len = perftools__profiles__profile__get_packed_size(pb);
	uint8_t *buf = malloc(len + 1);
	int r;

	perftools__profiles__profile__pack(pb, buf);
	r = pprof_read(buf, len, ret, d);
	free(buf);
	return r;
}

#endif
