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
#include "help/nprof-convert.h"
#include "output/output.h"
#include "profile/merge.h"
#include "profile/transform.h"

struct convert_args {
	const char *format_name;
	char **inputs;		/* one profile, or several merged into one */
	int ninputs;
	bool parts;		/* --parts: each input holds several, each after its length */
	const char *input, *output;	/* the first input, for what is said */
	struct transform_options tr;
	struct output_options out;
};

/* (above output_args' options) */
enum { OPT_PARTS = OUTPUT_ARGS_END + 1 };

static int parse_args(int argc, char **argv, struct convert_args *a)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		OUTPUT_ARGS_LONGOPTS,
		{ "parts", no_argument, NULL, OPT_PARTS },
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

/* Profiles read one after another, merged into the first (each
 * process's threads, a service's recordings over time): what
 * profile_merge takes, the same values. */
struct merged {
	struct profile *p;
	unsigned n;
};

static int merge_in(void *ctx, struct profile *more, const char *const *roots,
		    unsigned nroots)
{
	struct merged *m = ctx;
	struct diag d;

	m->n++;
	if (!m->p && !nroots) {
		m->p = more;
		return EXIT_OK;
	}
	/* (a part under roots goes in as a merge: its stacks change) */
	if (!m->p && !(m->p = profile_new())) {
		cli_error("out of memory");
		profile_free(more);
		return EXIT_FAILED;
	}
	diag_clear(&d);
	if (profile_merge_under(m->p, more, roots, nroots, &d) < 0) {
		cli_error("profile %u cannot be merged with the first: %s", m->n,
			  d.msg[0] ? d.msg : "out of memory");
		profile_free(more);
		return EXIT_FAILED;
	}
	profile_free(more);
	return EXIT_OK;
}

/* Every input (with --parts, every part of each) merged into *ret. */
static int read_inputs(const struct convert_args *a, struct profile **ret)
{
	struct merged m = { 0 };
	int ret_code = EXIT_OK;

	for (int i = 0; i < a->ninputs && ret_code == EXIT_OK; i++) {
		struct profile *p = NULL;

		if (a->parts) {
			ret_code = cli_read_parts("convert", a->inputs[i], merge_in, &m);
		} else {
			ret_code = cli_read_profile("convert", a->inputs[i], &p);
			if (ret_code == EXIT_OK)
				ret_code = merge_in(&m, p, NULL, 0);
		}
	}
	if (ret_code != EXIT_OK) {
		profile_free(m.p);
		return ret_code;
	}
	/* once, not once a merge: a day of recordings is thousands */
	if (m.p && m.p->nevents)
		profile_sort_events(m.p);
	*ret = m.p;
	return EXIT_OK;
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
