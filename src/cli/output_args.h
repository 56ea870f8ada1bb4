/* output_args: the options every command that writes a profile shares
 * (--include, --exclude, --reverse, --title, --width, --height,
 * --minwidth), parsed one way for record and convert alike. */
#ifndef NPROF_CLI_OUTPUT_ARGS_H
#define NPROF_CLI_OUTPUT_ARGS_H

#include <getopt.h>

#include "output/output.h"
#include "profile/transform.h"

/* getopt_long values of these options; commands number their own long
 * options below OUTPUT_ARGS_FIRST. */
enum output_arg {
	OUTPUT_ARGS_FIRST = 2000,
	OPT_INCLUDE = OUTPUT_ARGS_FIRST,
	OPT_EXCLUDE,
	OPT_REVERSE,
	OPT_TITLE,
	OPT_MINWIDTH,
	OPT_WIDTH,
	OPT_HEIGHT,
	OUTPUT_ARGS_END,
};

/* The struct option entries, to splice into a command's longopts. */
#define OUTPUT_ARGS_LONGOPTS                                           \
	{ "include", required_argument, NULL, OPT_INCLUDE },           \
	{ "exclude", required_argument, NULL, OPT_EXCLUDE },           \
	{ "reverse", no_argument, NULL, OPT_REVERSE },                 \
	{ "title", required_argument, NULL, OPT_TITLE },               \
	{ "minwidth", required_argument, NULL, OPT_MINWIDTH },         \
	{ "width", required_argument, NULL, OPT_WIDTH },               \
	{ "height", required_argument, NULL, OPT_HEIGHT }

/* Handles option c (one of enum output_arg) with its argument. Returns
 * EXIT_OK, or prints a usage error naming cmd and returns EXIT_USAGE. */
int output_args_parse(const char *cmd, int c, const char *arg,
		      struct transform_options *tr, struct output_options *out);

/* Applies the transform to *p when it asks for anything, replacing *p.
 * Returns EXIT_OK or prints the error and returns EXIT_FAILED. */
int output_args_apply(const struct transform_options *tr, struct profile **p);

#endif
