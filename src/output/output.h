/* output: one writer per format, all reading the same profile model.
 *
 * Writers take a finished profile and a FILE; they never change the
 * profile. Value 0 of a profile (samples for cpu, count for page-faults)
 * is the one text outputs rank by; the others are shown beside it. */
#ifndef NPROF_OUTPUT_OUTPUT_H
#define NPROF_OUTPUT_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "base/diag.h"
#include "profile/profile.h"

enum output_format {
	OUTPUT_SUMMARY,
	OUTPUT_TRACES,
	OUTPUT_FLAT,
	OUTPUT_COLLAPSED,
	OUTPUT_PPROF,
	OUTPUT_SPEEDSCOPE,
	OUTPUT_DOT,
	OUTPUT_FLAMEGRAPH,
	OUTPUT_TREE,
	OUTPUT_SVG,
	OUTPUT_JFR,
};

/* Options a writer may honour; zero means the writer's default. */
struct output_options {
	unsigned top;	    /* rows for traces and flat */
	const char *title;  /* flame graph / tree / svg title */
	unsigned width;	    /* image width in px (svg, flame graph) */
	unsigned height;    /* frame height in px (svg) */
	double minwidth;    /* omit frames narrower than this many px */
	bool reverse;	    /* callers-first (icicle) view */
};

/* "summary", "traces", ... Returns 0 or -EINVAL. */
int output_format_parse(const char *name, enum output_format *ret);

/* The format a file name implies, from the extension table in output.c
 * (".html" -> flamegraph, ".pb.gz" -> pprof, ".collapsed" -> collapsed,
 * ...). Returns 0 or -EINVAL when the extension says nothing. */
int output_format_from_path(const char *path, enum output_format *ret);

/* The names accepted by output_format_parse, space-separated. */
const char *output_format_names(void);

/* Writes p to out. Returns 0, or -EIO when out reported an error. */
int output_write(const struct profile *p, enum output_format f,
		 const struct output_options *o, FILE *out);

int output_write_summary(const struct profile *p, const struct output_options *o, FILE *out);
int output_write_traces(const struct profile *p, const struct output_options *o, FILE *out);
int output_write_flat(const struct profile *p, const struct output_options *o, FILE *out);
int output_write_collapsed(const struct profile *p, const struct output_options *o, FILE *out);
int output_write_flamegraph(const struct profile *p, const struct output_options *o, FILE *out);
int output_write_tree(const struct profile *p, const struct output_options *o, FILE *out);
int output_write_svg(const struct profile *p, const struct output_options *o, FILE *out);
int output_write_pprof(const struct profile *p, const struct output_options *o, FILE *out);
int output_write_speedscope(const struct profile *p, const struct output_options *o, FILE *out);
int output_write_dot(const struct profile *p, const struct output_options *o, FILE *out);
int output_write_jfr(const struct profile *p, const struct output_options *o, FILE *out);

/* Reads collapsed text (root first, `a;b;c 12` per line) back into a new
 * profile with one value, samples/count. Returns 0, or -EBADMSG with the
 * line at fault in d, -EFBIG past the limits, -ENOMEM. docs/formats.md
 * says how frame kinds and threads are recovered. */
int collapsed_read(const void *data, size_t len, struct profile **ret_p,
		   struct diag *d);

#endif
