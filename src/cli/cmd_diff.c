/* nprof diff: two profiles compared, in any format nprof reads. The
 * options and their meaning are documented in docs/nprof-diff.1.md, which
 * is also where --help comes from. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/output_args.h"
#include "cli/profile_input.h"
#include "help/nprof-diff.h"
#include "output/diff.h"
#include "output/output.h"

enum { OPT_NO_NORMALIZE = 1000, OPT_TOP, OPT_PARTS };

struct diff_args {
	const char *format_name;
	const char *before, *after, *output;
	bool no_normalize;
	bool parts;		/* --parts: each side several profiles, merged */
	struct transform_options tr;
	struct output_options out;
	char title[512];
};

static int parse_top(const char *arg, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || v < 1 || v > 1000000)
		return cli_usage_error("diff",
			"--top %s: not a number of rows; use 1 to 1000000", arg);
	*ret = (unsigned)v;
	return EXIT_OK;
}

static int parse_args(int argc, char **argv, struct diff_args *a)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "no-normalize", no_argument, NULL, OPT_NO_NORMALIZE },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "parts", no_argument, NULL, OPT_PARTS },
		OUTPUT_ARGS_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int c, r;

	opterr = 0;
	optind = 1;
	/* No '+': options may follow BEFORE and AFTER. */
	while ((c = getopt_long(argc, argv, ":o:f:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			a->format_name = optarg;
			break;
		case 'f':
			a->output = optarg;
			break;
		case OPT_PARTS:
			a->parts = true;
			break;
		case OPT_NO_NORMALIZE:
			a->no_normalize = true;
			break;
		case OPT_TOP:
			r = parse_top(optarg, &a->out.top);
			if (r != EXIT_OK)
				return r;
			break;
		case OPT_INCLUDE ... OUTPUT_ARGS_END - 1:
			r = output_args_parse("diff", c, optarg, &a->tr, &a->out);
			if (r != EXIT_OK)
				return r;
			break;
		case 'h':
			fputs(nprof_diff_help, stdout);
			exit(EXIT_OK);
		case ':':
		default:
			return cli_option_error("diff", c, argv);
		}
	}
	if (argc - optind < 2)
		return cli_usage_error("diff", "%s; use nprof diff BEFORE AFTER",
				       argc == optind ? "no BEFORE and AFTER given" :
							"no AFTER given");
	if (argc - optind > 2)
		return cli_usage_error("diff",
			"unexpected '%s' after BEFORE and AFTER; the output file goes after -f",
			argv[optind + 2]);
	a->before = argv[optind];
	a->after = argv[optind + 1];
	if (!strcmp(a->before, "-") && !strcmp(a->after, "-"))
		return cli_usage_error("diff",
			"BEFORE and AFTER cannot both be standard input");
	return EXIT_OK;
}

/* Formats a diff can be written in. */
static bool diff_writes(enum output_format f)
{
	return f == OUTPUT_FLAT || f == OUTPUT_COLLAPSED || f == OUTPUT_FLAMEGRAPH;
}

/* -o, else the extension of -f, else flat: a table is what a terminal
 * (or a pipe to less) shows best. */
static int choose_format(const struct diff_args *a, enum output_format *ret)
{
	if (a->format_name) {
		if (output_format_parse(a->format_name, ret) < 0 || !diff_writes(*ret))
			return cli_usage_error("diff",
				"-o %s: not a diff format; use flat, collapsed or flamegraph",
				a->format_name);
		return EXIT_OK;
	}
	if (!a->output || !strcmp(a->output, "-")) {
		*ret = OUTPUT_FLAT;
		return EXIT_OK;
	}
	if (output_format_from_path(a->output, ret) < 0)
		return cli_usage_error("diff",
			"%s: cannot tell the format from the extension; add -o flat, collapsed or flamegraph",
			a->output);
	if (!diff_writes(*ret))
		return cli_usage_error("diff",
			"%s: a diff is written as flat, collapsed or flamegraph (.html), not in this file's format; change the extension or add -o",
			a->output);
	return EXIT_OK;
}

/* One profile being read, on a thread of its own or not. */
struct reading {
	const char *path;
	bool parts;
	struct profile *p;
	int ret;
};

static void *read_one(void *arg)
{
	struct reading *r = arg;
	struct cli_merged m = { 0 };

	if (!r->parts) {
		r->ret = cli_read_profile("diff", r->path, &r->p);
		return NULL;
	}
	r->ret = cli_merged_done(&m, cli_read_parts("diff", r->path, cli_merge_in, &m), &r->p);
	return NULL;
}

/* Reads BEFORE on a thread while AFTER is read: the two are independent,
 * and reading them is a third of a big diff's time. Without a thread,
 * one after the other. A failure has printed its line. */
static int read_both(const struct diff_args *a, struct profile **ret_before,
		     struct profile **ret_after)
{
	struct reading b = { a->before, a->parts, NULL, EXIT_OK },
		       af = { a->after, a->parts, NULL, EXIT_OK };
	pthread_t th;
	bool threaded = pthread_create(&th, NULL, read_one, &b) == 0;

	if (!threaded)
		read_one(&b);
	read_one(&af);
	if (threaded)
		pthread_join(th, NULL);
	if (b.ret != EXIT_OK || af.ret != EXIT_OK) {
		profile_free(b.p);
		profile_free(af.p);
		return b.ret != EXIT_OK ? b.ret : af.ret;
	}
	*ret_before = b.p;
	*ret_after = af.p;
	return EXIT_OK;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int write_output(const struct diff *df, const struct diff_args *a,
			enum output_format format)
{
	bool to_stdout = !a->output || !strcmp(a->output, "-");
	FILE *out = to_stdout ? stdout : fopen(a->output, "wb");
	int r;

	if (!out) {
		cli_error("cannot write %s: %s", a->output, strerror(errno));
		return EXIT_FAILED;
	}
	r = diff_write(df, format, &a->out, out);
	if (to_stdout && fflush(out) != 0 && r == 0)
		r = -errno;
	if (!to_stdout && fclose(out) != 0 && r == 0)
		r = -errno;
	if (r < 0) {
		cli_error("cannot write %s: %s",
			  to_stdout ? "standard output" : a->output, strerror(-r));
		/* A half-written file would pass for a diff. */
		if (!to_stdout)
			unlink(a->output);
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_args a = { 0 };
	struct profile *before = NULL, *after = NULL;
	struct diff *df = NULL;
	enum output_format format;
	struct diag d;
	int ret, r;

	ret = parse_args(argc, argv, &a);
	if (ret != EXIT_OK)
		return ret;
	ret = choose_format(&a, &format);
	if (ret != EXIT_OK)
		return ret;
	ret = read_both(&a, &before, &after);
	if (ret != EXIT_OK)
		goto out;
	/* Both profiles are filtered alike, so the shares compare. */
	ret = output_args_apply(&a.tr, &before);
	if (ret != EXIT_OK)
		goto out;
	ret = output_args_apply(&a.tr, &after);
	if (ret != EXIT_OK)
		goto out;
	diag_clear(&d);
	r = diff_new(before, after, !a.no_normalize, &df, &d);
	if (r < 0) {
		cli_error("diff %s %s: %s", a.before, a.after,
			  d.msg[0] ? d.msg : strerror(-r));
		ret = EXIT_FAILED;
		goto out;
	}
	if (!a.out.title) {
		snprintf(a.title, sizeof(a.title), "Diff: %s \xe2\x86\x92 %s",
			 base_name(a.before), base_name(a.after));
		a.out.title = a.title;
	}
	ret = write_output(df, &a, format);
out:
	diff_free(df);
	profile_free(before);
	profile_free(after);
	return ret;
}
