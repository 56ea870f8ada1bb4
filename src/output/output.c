#include "output/output.h"

#include <errno.h>
#include <string.h>

struct format_entry {
	const char *name;
	enum output_format format;
	int (*write)(const struct profile *, const struct output_options *,
		     FILE *);
};

static const struct format_entry formats[] = {
	{ "summary", OUTPUT_SUMMARY, output_write_summary },
	{ "traces", OUTPUT_TRACES, output_write_traces },
	{ "flat", OUTPUT_FLAT, output_write_flat },
	{ "collapsed", OUTPUT_COLLAPSED, output_write_collapsed },
	{ "pprof", OUTPUT_PPROF, output_write_pprof },
	{ "speedscope", OUTPUT_SPEEDSCOPE, output_write_speedscope },
	{ "dot", OUTPUT_DOT, output_write_dot },
	{ "flamegraph", OUTPUT_FLAMEGRAPH, output_write_flamegraph },
	{ "tree", OUTPUT_TREE, output_write_tree },
	{ "svg", OUTPUT_SVG, output_write_svg },
	{ "jfr", OUTPUT_JFR, output_write_jfr },
};

static const struct {
	const char *ext;
	enum output_format format;
} extensions[] = {
	/* Longer suffixes first: the first match wins. */
	{ ".speedscope.json", OUTPUT_SPEEDSCOPE },
	{ ".pb.gz", OUTPUT_PPROF },
	{ ".pprof", OUTPUT_PPROF },
	{ ".dot", OUTPUT_DOT },
	{ ".collapsed", OUTPUT_COLLAPSED },
	{ ".folded", OUTPUT_COLLAPSED },
	{ ".txt", OUTPUT_FLAT },
	{ ".html", OUTPUT_FLAMEGRAPH },
	{ ".svg", OUTPUT_SVG },
	{ ".jfr", OUTPUT_JFR },
};

int output_format_parse(const char *name, enum output_format *ret)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(formats[i].name, name)) {
			*ret = formats[i].format;
			return 0;
		}
	return -EINVAL;
}

int output_format_from_path(const char *path, enum output_format *ret)
{
	size_t len = strlen(path);

	for (size_t i = 0; i < sizeof(extensions) / sizeof(extensions[0]); i++) {
		size_t elen = strlen(extensions[i].ext);

		if (len > elen && !strcmp(path + len - elen, extensions[i].ext)) {
			*ret = extensions[i].format;
			return 0;
		}
	}
	return -EINVAL;
}

const char *output_format_names(void)
{
	return "summary traces flat collapsed pprof speedscope dot flamegraph tree svg jfr";
}

int output_write(const struct profile *p, enum output_format f,
		 const struct output_options *o, FILE *out)
{
	static const struct output_options defaults;

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (formats[i].format == f) {
			int r = formats[i].write(p, o ? o : &defaults, out);

			if (r == 0 && (fflush(out) != 0 || ferror(out)))
				r = -EIO;
			return r;
		}
	return -EINVAL;
}
