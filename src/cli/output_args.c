#include "cli/output_args.h"

#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int parse_px(const char *cmd, const char *opt, const char *arg,
		    double max, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= 0) || v > max)
		return cli_usage_error(cmd,
			"%s %s: not a size in pixels; use a number from 0 to %.0f",
			opt, arg, max);
	*ret = v;
	return EXIT_OK;
}

/* Checks a regex before any work is done: a typo is a usage error. */
static int check_regex(const char *cmd, const char *opt, const char *re)
{
	regex_t rx;
	char msg[256];
	int r = regcomp(&rx, re, REG_EXTENDED | REG_NOSUB);

	if (!r) {
		regfree(&rx);
		return EXIT_OK;
	}
	regerror(r, &rx, msg, sizeof(msg));
	return cli_usage_error(cmd, "%s '%s': not a valid extended regex (%s)",
			       opt, re, msg);
}

int output_args_parse(const char *cmd, int c, const char *arg,
		      struct transform_options *tr, struct output_options *out)
{
	double px;
	int r = EXIT_OK;

	switch (c) {
	case OPT_INCLUDE:
		tr->include = arg;
		return check_regex(cmd, "--include", arg);
	case OPT_EXCLUDE:
		tr->exclude = arg;
		return check_regex(cmd, "--exclude", arg);
	case OPT_REVERSE:
		tr->reverse = true;
		return EXIT_OK;
	case OPT_TITLE:
		out->title = arg;
		return EXIT_OK;
	case OPT_MINWIDTH:
		return parse_px(cmd, "--minwidth", arg, 100000, &out->minwidth);
	case OPT_WIDTH:
		r = parse_px(cmd, "--width", arg, 100000, &px);
		if (r == EXIT_OK)
			out->width = (unsigned)px;
		return r;
	case OPT_HEIGHT:
		r = parse_px(cmd, "--height", arg, 1000, &px);
		if (r == EXIT_OK)
			out->height = (unsigned)px;
		return r;
	default:
		return cli_usage_error(cmd, "unknown option");
	}
}

int output_args_apply(const struct transform_options *tr, struct profile **p)
{
	struct profile *out = NULL;
	struct diag d;
	int r;

	if (transform_is_noop(tr))
		return EXIT_OK;
	diag_clear(&d);
	r = profile_transform(*p, tr, &out, &d);
	if (r < 0) {
		cli_error("%s", d.msg[0] ? d.msg : strerror(-r));
		return EXIT_FAILED;
	}
	profile_free(*p);
	*p = out;
	return EXIT_OK;
}
