/* diff_write: the three ways a diff is written (diff.h): a table of the
 * functions that changed most, collapsed stacks with both values, and the
 * flame graph page in its diff mode. */
#include "output/diff.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "output/calltree.h"
#include "output/rank.h"
#include "res/flame.html.h"

/* Rows of the page's table: more than a person reads, few enough that
 * the page stays small whatever the profile. */
#define DIFF_PAGE_ROWS 100
#define FLAME_DEFAULT_WIDTH 1200

/* "25.00%" normalized, the raw value otherwise. */
static void put_value(const struct diff *df, enum diff_value side, int64_t v,
		      FILE *out)
{
	if (df->normalize)
		fprintf(out, " %11.2f%%", 100 * diff_share(df, side, v));
	else
		fprintf(out, " %12" PRId64, v);
}

/* "+25.00" points normalized, "+300" raw. */
static void put_change(const struct diff *df, double c, FILE *out)
{
	if (df->normalize)
		fprintf(out, " %+12.2f", 100 * c);
	else
		fprintf(out, " %+12.0f", c);
}

static int write_flat(const struct diff *df, const struct output_options *o,
		      FILE *out)
{
	const struct value_type *vt = &df->merged->value_types[DIFF_BEFORE];
	size_t top = o->top ? o->top : 20;
	char label[1024];

	fprintf(out, "# BEFORE %" PRId64 " %s, AFTER %" PRId64 " %s (%s); %s\n",
		df->total[DIFF_BEFORE], vt->type, df->total[DIFF_AFTER], vt->type,
		vt->unit,
		df->normalize ? "values are shares of each profile's total, changes in points"
			      : "raw values, not normalized");
	fprintf(out, "%12s %12s %12s %12s %12s %12s  %s\n", "self before",
		"self after", "self change", "total before", "total after",
		"total change", "function");
	for (size_t i = 0; i < df->nfuncs && i < top; i++) {
		const struct diff_function *f = &df->funcs[i];

		put_value(df, DIFF_BEFORE, f->self[0], out);
		put_value(df, DIFF_AFTER, f->self[1], out);
		put_change(df, f->self_change, out);
		put_value(df, DIFF_BEFORE, f->total[0], out);
		put_value(df, DIFF_AFTER, f->total[1], out);
		put_change(df, f->total_change, out);
		fprintf(out, "  %s\n",
			rank_frame_label(&df->merged->frames[f->frame], label,
					 sizeof(label)));
	}
	return ferror(out) ? -EIO : 0;
}

/* difffolded.pl's format: the stack as collapsed writes it, then BEFORE's
 * value and AFTER's. Normalizing scales BEFORE to AFTER's total (its -n),
 * so flamegraph.pl --negate/--diff readers see comparable counts. */
static int write_collapsed(const struct diff *df, FILE *out)
{
	const struct profile *m = df->merged;
	double scale = df->normalize ? (double)df->total[DIFF_AFTER] /
					       (double)df->total[DIFF_BEFORE] : 1;
	char buf[CALLTREE_MAX_NAME + 16];

	for (size_t i = 0; i < m->nsamples; i++) {
		const struct sample *s = &m->samples[i];
		const struct stack *st = &m->stacks[s->stack];
		const uint32_t *frames = profile_stack_frames(m, s->stack);

		for (uint32_t d = 0; d < st->depth; d++) {
			if (d)
				putc(';', out);
			fputs(rank_frame_collapsed(&m->frames[frames[d]], buf,
						   sizeof(buf)), out);
		}
		fprintf(out, " %" PRId64 " %" PRId64 "\n",
			(int64_t)llround((double)s->values[DIFF_BEFORE] * scale),
			s->values[DIFF_AFTER]);
	}
	return ferror(out) ? -EIO : 0;
}

struct page_ctx {
	const struct diff *df;
	const struct output_options *o;
	const struct calltree *t;
};

static int fill_tree(void *arg, FILE *out)
{
	const struct page_ctx *c = arg;
	unsigned width = c->o->width ? c->o->width : FLAME_DEFAULT_WIDTH;

	return calltree_write_json(c->t, c->df->merged, c->o,
				   calltree_min_total(c->t, c->o->minwidth, width),
				   out);
}

/* The diff's own data (docs/flamegraph.md): both totals, whether shares
 * are compared, and the table's rows as [name, self before, self after,
 * total before, total after]; the page computes the changes. */
static int fill_diff(void *arg, FILE *out)
{
	const struct page_ctx *c = arg;
	const struct diff *df = c->df;

	fprintf(out, "{\"version\":1,\"normalize\":%s,\"beforeTotal\":%" PRId64
		",\"afterTotal\":%" PRId64 ",\"functions\":[",
		df->normalize ? "true" : "false", df->total[DIFF_BEFORE],
		df->total[DIFF_AFTER]);
	for (size_t i = 0; i < df->nfuncs && i < DIFF_PAGE_ROWS; i++) {
		const struct diff_function *f = &df->funcs[i];

		fputs(i ? ",[" : "[", out);
		json_put_string(out, f->name, CALLTREE_MAX_NAME, JSON_HTML_SAFE);
		fprintf(out, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "]",
			f->self[0], f->self[1], f->total[0], f->total[1]);
	}
	fputs("]}", out);
	return ferror(out) ? -EIO : 0;
}

/* A diff has no timeline: the template's preview would be drawn as one. */
static int fill_null(void *arg, FILE *out)
{
	(void)arg;
	fputs("null", out);
	return ferror(out) ? -EIO : 0;
}

static int write_flamegraph(const struct diff *df,
			    const struct output_options *o, FILE *out)
{
	static const unsigned also[2] = { DIFF_BEFORE, DIFF_AFTER };
	struct page_ctx c = { .df = df, .o = o };
	struct calltree *t;
	int r = calltree_build_also(df->merged, DIFF_WEIGHT, also, 2, o->reverse,
				    0, &t);

	if (r < 0)
		return r;
	c.t = t;
	{
		const struct calltree_slot slots[3] = {
			{ "/*DATA*/", "/*/DATA*/", fill_tree, &c },
			{ "/*DIFF*/", "/*/DIFF*/", fill_diff, &c },
			{ "/*TIMELINE*/", "/*/TIMELINE*/", fill_null, NULL },
		};

		r = calltree_fill_slots((const char *)res_flame_html,
					res_flame_html_len, slots, 3, out);
	}
	calltree_free(t);
	return r;
}

int diff_write(const struct diff *df, enum output_format f,
	       const struct output_options *o, FILE *out)
{
	static const struct output_options none = { 0 };

	if (!o)
		o = &none;
	switch (f) {
	case OUTPUT_FLAT:
		return write_flat(df, o, out);
	case OUTPUT_COLLAPSED:
		return write_collapsed(df, out);
	case OUTPUT_FLAMEGRAPH:
		return write_flamegraph(df, o, out);
	default:
		return -EOPNOTSUPP;
	}
}
