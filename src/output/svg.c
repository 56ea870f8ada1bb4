/* svg: a flame graph as one SVG file in the FlameGraph look: a frame per
 * merged call-tree node, root at the bottom, a <title> tooltip on each,
 * and click-to-zoom and search from the script in the template.
 *
 * Unlike the HTML pages, an SVG is often viewed without scripts (as an
 * <img>, in a document), so the frames are real elements. Their markup is
 * still the template's: res/flame.svg holds the markup of a frame (and of
 * the root element and the header) in named comments, and this writer
 * only repeats it with values filled in, escaped for XML. How the
 * template is read is described at its top. */
#include "output/output.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "output/calltree.h"
#include "res/flame.svg.h"

#define SVG_DEFAULT_WIDTH 1200
#define SVG_DEFAULT_FRAME_HEIGHT 16
#define SVG_DEFAULT_MINWIDTH 0.1 /* px, as flamegraph.pl */
#define SVG_MAX_SIZE 100000	 /* px, width and frame height alike */
#define SVG_PAD 10
#define SVG_TOP 70		 /* title, subtitle, notes */
#define SVG_BOTTOM 34		 /* the details line */
#define SVG_CHAR_WIDTH 7.0	 /* of 12px Verdana, for cutting labels */
#define SVG_MAX_PATTERNS 8

struct svg_pattern {
	const char *name, *text;
	size_t nlen, tlen;
};

struct svg_ctx {
	const struct profile *p;
	const struct output_options *o;
	const struct calltree *t;
	struct svg_pattern patterns[SVG_MAX_PATTERNS];
	unsigned npatterns;
	unsigned width, fh, levels;
	int64_t min_total;
	double scale; /* px per unit of value */
	/* The frame being written. */
	uint32_t node;
	int64_t left;
};

static const char *const kind_names[] = { "user code", "library", "kernel",
					  "inlined", "JIT", "thread",
					  "no symbol" };

/* Hue, hue spread, saturation, lightness per kind, as in flame.html. */
static const double palette[][4] = {
	{ 8, 22, 78, 60 },  { 42, 14, 80, 56 }, { 205, 16, 55, 64 },
	{ 178, 12, 48, 56 }, { 105, 25, 45, 56 }, { 270, 10, 28, 74 },
	{ 0, 0, 0, 74 },
};

/* The same name hash as the page's, so one function has one colour. */
static double name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (int i = 0; s[i] && i < 64; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return (double)(h % 1000) / 1000;
}

static void put_fill(const struct calltree *t, uint32_t node, FILE *out)
{
	double hue, sat, light, c, x, m, r = 0, g = 0, b = 0;
	uint32_t f = t->nodes[node].func;

	if (f == CALLTREE_NONE) {
		fputs("rgb(200,200,208)", out);
		return;
	}
	{
		unsigned k = t->funcs[f].kind < 7 ? t->funcs[f].kind : 6;
		double v = name_hash(t->funcs[f].name);

		hue = palette[k][0] + palette[k][1] * v;
		sat = palette[k][2] / 100;
		light = (palette[k][3] + 8 * (v - 0.5)) / 100;
	}
	/* hsl to rgb: SVG 1.1 viewers other than browsers want rgb(). */
	c = (1 - fabs(2 * light - 1)) * sat;
	x = c * (1 - fabs(fmod(hue / 60, 2) - 1));
	m = light - c / 2;
	switch ((int)(hue / 60) % 6) {
	case 0: r = c, g = x; break;
	case 1: r = x, g = c; break;
	case 2: g = c, b = x; break;
	case 3: g = x, b = c; break;
	case 4: r = x, b = c; break;
	default: r = c, b = x; break;
	}
	fprintf(out, "rgb(%d,%d,%d)", (int)lround((r + m) * 255),
		(int)lround((g + m) * 255), (int)lround((b + m) * 255));
}

/* "1,234 samples", "12.50 ms", "3.00 MiB": value v in the profile's unit. */
static void put_value(const struct profile *p, int64_t v, FILE *out)
{
	const char *unit = p->nvalues ? p->value_types[0].unit : "count";
	const char *type = p->nvalues ? p->value_types[0].type : "samples";

	if (unit && !strcmp(unit, "nanoseconds")) {
		if (v >= 1000000000)
			fprintf(out, "%.2f s", v / 1e9);
		else if (v >= 1000000)
			fprintf(out, "%.2f ms", v / 1e6);
		else
			fprintf(out, "%.2f \xc2\xb5s", v / 1e3);
	} else if (unit && !strcmp(unit, "bytes")) {
		static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
		double d = (double)v;
		unsigned k = 0;

		while (d >= 1024 && k < 4)
			d /= 1024, k++;
		fprintf(out, k ? "%.2f %s" : "%.0f %s", d, u[k]);
	} else {
		fprintf(out, "%" PRId64 " ", v);
		calltree_put_xml(type, 64, out);
	}
}

static bool var_is(const char *name, size_t n, const char *want)
{
	return strlen(want) == n && !memcmp(name, want, n);
}

/* Writes the value of {{name}} for the current frame and layout. */
static int put_var(struct svg_ctx *c, const char *name, size_t n, FILE *out)
{
	const struct calltree *t = c->t;
	const struct calltree_node *nd = &t->nodes[c->node];
	const struct calltree_func *f =
		nd->func == CALLTREE_NONE ? NULL : &t->funcs[nd->func];
	unsigned height = SVG_TOP + c->levels * c->fh + SVG_BOTTOM;
	double x = SVG_PAD + c->left * c->scale, w = nd->total * c->scale;
	double y = SVG_TOP + (double)(c->levels - 1 - nd->depth) * c->fh;

	if (var_is(name, n, "width"))
		fprintf(out, "%u", c->width);
	else if (var_is(name, n, "height"))
		fprintf(out, "%u", height);
	else if (var_is(name, n, "pad"))
		fprintf(out, "%d", SVG_PAD);
	else if (var_is(name, n, "frame_height"))
		fprintf(out, "%u", c->fh);
	else if (var_is(name, n, "total"))
		fprintf(out, "%" PRId64, t->nodes[0].total);
	else if (var_is(name, n, "unit"))
		calltree_put_xml(c->p->nvalues ? c->p->value_types[0].unit : "count", 64, out);
	else if (var_is(name, n, "search_x"))
		fprintf(out, "%u", c->width - SVG_PAD);
	else if (var_is(name, n, "details_y"))
		fprintf(out, "%u", height - 12);
	else if (var_is(name, n, "title"))
		calltree_put_xml(c->o->title ? c->o->title : "Flame Graph", CALLTREE_MAX_NAME, out);
	else if (var_is(name, n, "subtitle")) {
		calltree_put_xml(c->p->event ? c->p->event : "", 64, out);
		fputs(" \xc2\xb7 ", out);
		put_value(c->p, t->nodes[0].total, out);
		if (t->reversed)
			fputs(" \xc2\xb7 reversed stacks", out);
	} else if (var_is(name, n, "notes")) {
		/* One line: the page has room for little. */
		for (unsigned i = 0; i < c->p->nnotes; i++) {
			if (i)
				fputs("; ", out);
			calltree_put_xml(c->p->notes[i], 512, out);
		}
		if (t->cut_value)
			fputs(c->p->nnotes ? "; call tree cut short" : "call tree cut short", out);
	} else if (var_is(name, n, "x"))
		fprintf(out, "%.2f", x);
	else if (var_is(name, n, "y"))
		fprintf(out, "%.1f", y);
	else if (var_is(name, n, "w"))
		fprintf(out, "%.2f", w);
	else if (var_is(name, n, "h"))
		fprintf(out, "%u", c->fh - 1);
	else if (var_is(name, n, "text_x"))
		fprintf(out, "%.2f", x + 3);
	else if (var_is(name, n, "text_y"))
		fprintf(out, "%.1f", y + c->fh / 2.0 + 4);
	else if (var_is(name, n, "fill"))
		put_fill(t, c->node, out);
	else if (var_is(name, n, "tooltip")) {
		int64_t total = t->nodes[0].total;

		calltree_put_xml(f ? f->name : "all", CALLTREE_MAX_NAME, out);
		if (f && (f->module || f->file)) {
			putc('\n', out);
			calltree_put_xml(f->module ? f->module : "", 1024, out);
			if (f->file) {
				fputs(f->module ? " " : "", out);
				calltree_put_xml(f->file, 1024, out);
				if (f->line)
					fprintf(out, ":%" PRIu32, f->line);
			}
			fprintf(out, " (%s)", kind_names[f->kind < 7 ? f->kind : 6]);
		}
		putc('\n', out);
		put_value(c->p, nd->total, out);
		fprintf(out, ", %.2f%%", total ? 100.0 * nd->total / total : 0.0);
	} else if (var_is(name, n, "label")) {
		const char *s = f ? f->name : "all";
		double room = (w - 6) / SVG_CHAR_WIDTH;

		if (room >= 3)
			calltree_put_xml(s, strlen(s) <= room ? strlen(s) : (size_t)room - 2, out);
	} else {
		return -EINVAL;
	}
	return 0;
}

/* Writes pattern text with every {{name}} filled in. */
static int expand(struct svg_ctx *c, const char *s, size_t len, FILE *out)
{
	const char *end = s + len;

	while (s < end) {
		const char *open = memmem(s, (size_t)(end - s), "{{", 2), *close;
		int r;

		if (!open) {
			fwrite(s, 1, (size_t)(end - s), out);
			break;
		}
		close = memmem(open, (size_t)(end - open), "}}", 2);
		if (!close)
			return -EINVAL;
		fwrite(s, 1, (size_t)(open - s), out);
		r = put_var(c, open + 2, (size_t)(close - open - 2), out);
		if (r < 0)
			return r;
		s = close + 2;
	}
	return 0;
}

static const struct svg_pattern *find_pattern(const struct svg_ctx *c,
					      const char *name, size_t n)
{
	for (unsigned i = 0; i < c->npatterns; i++)
		if (c->patterns[i].nlen == n && !memcmp(c->patterns[i].name, name, n))
			return &c->patterns[i];
	return NULL;
}

/* Every drawn frame, in pre-order, with its left edge in value units. */
static int put_frames(struct svg_ctx *c, const struct svg_pattern *pat, FILE *out)
{
	const struct calltree *t = c->t;
	int64_t *next = malloc(t->nnodes * sizeof(*next));
	uint32_t skip_below = UINT32_MAX;
	int r = 0;

	if (!next)
		return -ENOMEM;
	next[0] = 0;
	for (size_t i = 0; i < t->nnodes && r == 0; i++) {
		const struct calltree_node *nd = &t->nodes[i];
		int64_t left = i ? next[nd->parent] : 0;

		if (nd->depth > skip_below)
			continue;
		skip_below = UINT32_MAX;
		/* A frame left out still takes its room among its siblings. */
		if (i)
			next[nd->parent] += nd->total;
		if (nd->total < c->min_total) {
			skip_below = nd->depth;
			continue;
		}
		next[i] = left;
		c->node = (uint32_t)i;
		c->left = left;
		r = expand(c, pat->text, pat->tlen, out);
	}
	free(next);
	return r;
}

static int put_region(struct svg_ctx *c, const char *name, size_t n, FILE *out)
{
	const struct svg_pattern *pat = find_pattern(c, name, n);

	if (!pat)
		return -EINVAL;
	if (var_is(name, n, "FRAME"))
		return put_frames(c, pat, out);
	c->node = 0;
	c->left = 0;
	return expand(c, pat->text, pat->tlen, out);
}

/* Copies the template, handling its three kinds of named comments. */
static int put_template(struct svg_ctx *c, const char *s, size_t len, FILE *out)
{
	const char *end = s + len;

	while (s < end) {
		const char *cm = memmem(s, (size_t)(end - s), "<!--", 4), *body, *ce;
		size_t blen, nl = 0;
		int r;

		if (!cm) {
			fwrite(s, 1, (size_t)(end - s), out);
			break;
		}
		fwrite(s, 1, (size_t)(cm - s), out);
		body = cm + 4;
		ce = memmem(body, (size_t)(end - body), "-->", 3);
		if (!ce)
			return -EINVAL;
		blen = (size_t)(ce - body);
		while (nl < blen && isupper((unsigned char)body[nl]))
			nl++;
		s = ce + 3;
		if (nl && nl == blen) {
			/* A sample region: find its end, write the real thing. */
			char close[32];
			const char *re;

			if (nl > sizeof(close) - 8)
				return -EINVAL;
			snprintf(close, sizeof(close), "<!--/%.*s-->", (int)nl, body);
			re = memmem(s, (size_t)(end - s), close, strlen(close));
			if (!re)
				return -EINVAL;
			r = put_region(c, body, nl, out);
			if (r < 0)
				return r;
			s = re + strlen(close);
		} else if (nl && body[nl] == ' ') {
			struct svg_pattern *pat;

			if (c->npatterns == SVG_MAX_PATTERNS)
				return -EINVAL;
			pat = &c->patterns[c->npatterns++];
			pat->name = body;
			pat->nlen = nl;
			pat->text = body + nl + 1;
			pat->tlen = blen - nl - 1;
			/* Trailing space before "-->" is the comment's, not
			 * the markup's. */
			while (pat->tlen && isspace((unsigned char)pat->text[pat->tlen - 1]))
				pat->tlen--;
			if (s < end && *s == '\n')
				s++;
		} else {
			fwrite(cm, 1, (size_t)(s - cm), out);
		}
	}
	return 0;
}

int output_write_svg(const struct profile *p, const struct output_options *o,
		     FILE *out)
{
	struct svg_ctx c = { .p = p, .o = o };
	struct calltree *t;
	uint32_t max_depth = 0, skip_below = UINT32_MAX;
	double minwidth = o->minwidth > 0 ? o->minwidth : SVG_DEFAULT_MINWIDTH;
	int r;

	c.width = o->width ? o->width : SVG_DEFAULT_WIDTH;
	c.fh = o->height ? o->height : SVG_DEFAULT_FRAME_HEIGHT;
	if (c.width > SVG_MAX_SIZE || c.width < 2 * SVG_PAD + 10 ||
	    c.fh > SVG_MAX_SIZE || c.fh < 2)
		return -EINVAL;
	r = calltree_build(p, 0, o->reverse, 0, &t);
	if (r < 0)
		return r;
	c.t = t;
	c.min_total = calltree_min_total(t, minwidth, c.width - 2 * SVG_PAD);
	c.scale = t->nodes[0].total > 0
			  ? (double)(c.width - 2 * SVG_PAD) / t->nodes[0].total
			  : 0;
	/* The height counts only the levels that have a frame drawn. */
	for (size_t i = 0; i < t->nnodes; i++) {
		const struct calltree_node *nd = &t->nodes[i];

		if (nd->depth > skip_below)
			continue;
		skip_below = UINT32_MAX;
		if (nd->total < c.min_total) {
			skip_below = nd->depth;
			continue;
		}
		if (nd->depth > max_depth)
			max_depth = nd->depth;
	}
	c.levels = max_depth + 1;
	r = put_template(&c, (const char *)res_flame_svg, res_flame_svg_len, out);
	calltree_free(t);
	return r;
}
