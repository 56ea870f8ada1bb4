/* libFuzzer target: the pprof reader on any bytes, gzipped or not. What it
 * accepts must be writable in every format, and pprof must read again
 * what pprof wrote; compared with itself, it makes a diff's page. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "output/diff.h"
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

static void write_diff(const struct profile *p)
{
	static const struct output_options minwidth = { .minwidth = 1 };
	struct diff *df = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	if (diff_new(p, p, true, &df, NULL) < 0)
		return;
	out = open_memstream(&buf, &len);
	diff_write(df, OUTPUT_FLAMEGRAPH, NULL, out);
	diff_write(df, OUTPUT_FLAMEGRAPH, &minwidth, out);
	fclose(out);
	free(buf);
	diff_free(df);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = NULL;
	struct diag d;

	diag_clear(&d);
	if (pprof_read(data, size, &p, &d) == 0) {
		write_all(p);
		write_diff(p);
		profile_free(p);
	}
	return 0;
}
