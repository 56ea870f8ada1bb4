/* nprof convert: read a profile in one format, write it in another.
 * The options and their meaning are documented in docs/nprof-convert.1.md,
 * which is also where --help comes from. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/output_args.h"
#include "cli/profile_input.h"
#include "cli/progress.h"
#include "base/units.h"
#include "help/nprof-convert.h"
#include "output/output.h"
#include "output/series.h"
#include "profile/transform.h"

struct convert_args {
	const char *format_name;
	char **inputs;		/* one profile, or several merged into one */
	int ninputs;
	bool parts;		/* --parts: each input holds several, each after its length */
	uint64_t series_ns;	/* --series STEP: value 0 over time, not a profile */
	uint64_t from_ns, until_ns;	/* --from, --until: the series' range */
	const char *input, *output;	/* the first input, for what is said */
	struct transform_options tr;
	struct output_options out;
};

/* (above output_args' options) */
enum { OPT_PARTS = OUTPUT_ARGS_END + 1, OPT_SERIES, OPT_FROM, OPT_UNTIL };

/* --from and --until: Unix seconds, a fraction allowed. */
static int parse_when(const char *opt, const char *arg, uint64_t *ret_ns)
{
	char *end;
	double secs = strtod(arg, &end);

	if (end == arg || *end || !(secs > 0 && secs < 1e11))
		return cli_usage_error("convert", "--%s %s: give a time in Unix seconds "
				       "(1767225600, or 1767225600.250)", opt, arg);
	*ret_ns = (uint64_t)(secs * 1e9);
	return EXIT_OK;
}

static int parse_args(int argc, char **argv, struct convert_args *a)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		OUTPUT_ARGS_LONGOPTS,
		{ "parts", no_argument, NULL, OPT_PARTS },
		{ "series", required_argument, NULL, OPT_SERIES },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "until", required_argument, NULL, OPT_UNTIL },
		{ NULL, 0, NULL, 0 },
	};
	int c, r;

	opterr = 0;
	optind = 1;
	/* No '+': options may follow INPUT and OUTPUT. */
	while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			a->format_name = optarg;
			break;
		case OPT_PARTS:
			a->parts = true;
			break;
		case OPT_SERIES:
			if (units_parse_duration_ns(optarg, 1000000000ull, &a->series_ns) < 0 ||
			    a->series_ns < 1000000)
				return cli_usage_error("convert", "--series %s: give the step, a duration "
						       "of 1ms or more (10s, 1m)", optarg);
			break;
		case OPT_FROM:
		case OPT_UNTIL:
			r = parse_when(c == OPT_FROM ? "from" : "until", optarg,
				       c == OPT_FROM ? &a->from_ns : &a->until_ns);
			if (r != EXIT_OK)
				return r;
			break;
		case OPT_INCLUDE ... OUTPUT_ARGS_END - 1:
			r = output_args_parse("convert", c, optarg, &a->tr, &a->out);
			if (r != EXIT_OK)
				return r;
			break;
		case 'h':
			fputs(nprof_convert_help, stdout);
			exit(EXIT_OK);
		case ':':
		default:
			return cli_option_error("convert", c, argv);
		}
	}
	if (argc - optind < 2)
		return cli_usage_error("convert", "%s; use nprof convert INPUT OUTPUT",
				       argc == optind ? "no INPUT and OUTPUT given" :
							"no OUTPUT given");
	if ((a->from_ns || a->until_ns) && !a->series_ns)
		return cli_usage_error("convert", "--from and --until bound a --series; add "
				       "--series STEP");
	if (!!a->from_ns != !!a->until_ns)
		return cli_usage_error("convert", "give both --from and --until, or neither (the "
				       "profiles' own span)");
	if (a->from_ns && a->from_ns >= a->until_ns)
		return cli_usage_error("convert", "--from must be before --until");
	a->inputs = argv + optind;
	a->ninputs = argc - optind - 1;
	a->input = argv[optind];
	a->output = argv[argc - 1];
	return EXIT_OK;
}

static int choose_format(const struct convert_args *a, enum output_format *ret)
{
	if (a->format_name) {
		if (output_format_parse(a->format_name, ret) < 0)
			return cli_usage_error("convert",
				"-o %s: unknown format; use one of: %s",
				a->format_name, output_format_names());
		return EXIT_OK;
	}
	if (!strcmp(a->output, "-"))
		return cli_usage_error("convert",
			"writing to standard output needs -o FORMAT (%s)",
			output_format_names());
	if (output_format_from_path(a->output, ret) < 0)
		return cli_usage_error("convert",
			"%s: cannot tell the format from the extension; add -o FORMAT (%s)",
			a->output, output_format_names());
	return EXIT_OK;
}

static int write_output(const struct profile *p, const struct convert_args *a,
			enum output_format format)
{
	bool to_stdout = !strcmp(a->output, "-");
	FILE *out = to_stdout ? stdout : fopen(a->output, "wb");
	int r;

	if (!out) {
		cli_error("cannot write %s: %s", a->output, strerror(errno));
		return EXIT_FAILED;
	}
	r = output_write(p, format, &a->out, out);
	if (!to_stdout && fclose(out) != 0 && r == 0)
		r = -errno;
	if (r < 0) {
		cli_error("cannot write %s: %s",
			  to_stdout ? "standard output" : a->output, strerror(-r));
		/* A half-written file would pass for a profile. */
		if (!to_stdout)
			unlink(a->output);
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

/* Every input (with --parts, every part of each) merged into *ret. */
static int read_inputs(const struct convert_args *a, struct profile **ret)
{
	struct cli_merged m = { 0 };
	int ret_code = EXIT_OK;

	for (int i = 0; i < a->ninputs && ret_code == EXIT_OK; i++) {
		struct profile *p = NULL;

		if (a->parts) {
			ret_code = cli_read_parts("convert", a->inputs[i], cli_merge_in, &m);
		} else {
			ret_code = cli_read_profile("convert", a->inputs[i], &p);
			if (ret_code == EXIT_OK)
				ret_code = cli_merge_in(&m, p, NULL, 0);
		}
	}
	return cli_merged_done(&m, ret_code, ret);
}

/* --series: each profile added to the series as it is read, none kept. */
struct series_in {
	struct series s;
	unsigned n;
};

/* (a part's roots change its stacks, not its values over time) */
static int series_in(void *ctx, struct profile *p, const char *const *roots, unsigned nroots)
{
	struct series_in *si = ctx;
	const char *type = "";

	(void)roots;
	(void)nroots;
	int r = series_add(&si->s, p, &type);

	si->n++;
	profile_free(p);
	if (r == -EINVAL)
		cli_error("profile %u measures %s, not %s as the first: a series is of one value",
			  si->n, type[0] ? type : "an unnamed value", si->s.type);
	else if (r == -E2BIG)
		cli_error("the profiles span more than %u steps of the --series: give a longer step",
			  SERIES_MAX_BUCKETS);
	else if (r < 0)
		cli_error("out of memory");
	return r < 0 ? EXIT_FAILED : EXIT_OK;
}

static int write_series(const struct convert_args *a)
{
	struct series_in si = { 0 };
	bool to_stdout = !strcmp(a->output, "-");
	FILE *out = NULL;
	int r = series_init(&si.s, a->series_ns, a->from_ns, a->until_ns), ret = EXIT_OK;

	if (r == -E2BIG) {
		cli_error("--from to --until is more than %u steps of the --series: give a longer "
			  "step", SERIES_MAX_BUCKETS);
		return EXIT_USAGE;
	}
	if (r < 0) {
		cli_error("out of memory");
		return EXIT_FAILED;
	}
	for (int i = 0; i < a->ninputs && ret == EXIT_OK; i++) {
		struct profile *p = NULL;

		if (a->parts) {
			ret = cli_read_parts("convert", a->inputs[i], series_in, &si);
		} else {
			ret = cli_read_profile("convert", a->inputs[i], &p);
			if (ret == EXIT_OK)
				ret = series_in(&si, p, NULL, 0);
		}
	}
	if (ret != EXIT_OK)
		goto out;
	out = to_stdout ? stdout : fopen(a->output, "w");
	if (!out) {
		cli_error("cannot write %s: %s", a->output, strerror(errno));
		ret = EXIT_FAILED;
		goto out;
	}
	r = series_write_json(&si.s, out);
	if (!to_stdout && fclose(out) != 0 && r == 0)
		r = -errno;
	if (r < 0) {
		cli_error("cannot write %s: %s", to_stdout ? "standard output" : a->output,
			  strerror(-r));
		ret = EXIT_FAILED;
	}
out:
	series_release(&si.s);
	return ret;
}

int cmd_convert(int argc, char **argv)
{
	struct convert_args a = { 0 };
	struct profile *p = NULL;
	enum output_format format;
	struct diag d;
	int ret;

	ret = parse_args(argc, argv, &a);
	if (ret != EXIT_OK)
		return ret;
	if (a.series_ns)
		return write_series(&a);
	ret = choose_format(&a, &format);
	if (ret != EXIT_OK)
		return ret;
	diag_clear(&d);

	/* A big profile takes seconds to read and write: the terminal is
	 * told which step it is in (a small one clears the line at once). */
	if (progress_wanted())
		progress_step("converting %s: reading", a.input);
	ret = read_inputs(&a, &p);
	if (ret != EXIT_OK)
		goto out;
	/* The regexes were checked while parsing: only memory can fail. */
	ret = output_args_apply(&a.tr, &p);
	if (ret != EXIT_OK)
		goto out;
	if (progress_wanted())
		progress_step("converting %s: writing %s (%zu stacks, %zu frames)", a.input,
			      a.output, p->nstacks, p->nframes);
	ret = write_output(p, &a, format);
out:
	progress_clear();
	profile_free(p);
	return ret;
}
