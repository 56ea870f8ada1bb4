/* libFuzzer target: the pprof reader on any bytes, gzipped or not. What it
 * accepts must be writable in every format, and pprof must read again
 * what pprof wrote. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "output/output.h"
#include "output/pprof.h"

static void write_all(const struct profile *p)
{
	static const enum output_format formats[] = {
		OUTPUT_COLLAPSED, OUTPUT_SPEEDSCOPE, OUTPUT_DOT, OUTPUT_FLAT,
		OUTPUT_FLAMEGRAPH, /* with the timeline, when the input has one */
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *out;
	struct profile *back = NULL;

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		out = open_memstream(&buf, &len);
		output_write(p, formats[i], NULL, out);
		fclose(out);
		free(buf);
		buf = NULL;
	}
	out = open_memstream(&buf, &len);
	if (output_write(p, OUTPUT_PPROF, NULL, out) < 0)
		abort();
	fclose(out);
	if (pprof_read(buf, len, &back, NULL) < 0)
		abort(); /* pprof must read what pprof wrote */
	profile_free(back);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = NULL;
	struct diag d;

	diag_clear(&d);
	if (pprof_read(data, size, &p, &d) == 0) {
		write_all(p);
		profile_free(p);
	}
	return 0;
}
