/* flamegraph: one self-contained, interactive HTML file.
 *
 * The page is res/flame.html, a real file a developer opens and edits as
 * it is; this writer only puts the profile's call tree, as JSON, where the
 * template's built-in sample is (between its DATA comment markers). The
 * tree is merged here, in C, so the page stays small and draws fast
 * however many distinct stacks there are (docs/flamegraph.md). */
#include "output/output.h"

#include "output/calltree.h"
#include "output/timeline.h"
#include "res/flame.html.h"

/* The width minwidth is measured against when the page fills the window. */
#define FLAME_DEFAULT_WIDTH 1200

struct flame_ctx {
	const struct profile *p;
	const struct output_options *o;
	const struct calltree *t;
	int64_t min_total;
};

static int fill_data(void *arg, FILE *out)
{
	struct flame_ctx *c = arg;

	return calltree_write_json(c->t, c->p, c->o, c->min_total, out);
}

/* The samples over time, against the same nodes (output/timeline.h). */
static int fill_timeline(void *arg, FILE *out)
{
	struct flame_ctx *c = arg;

	return timeline_write_json(c->p, c->t, 0, c->min_total, out);
}

int output_write_flamegraph(const struct profile *p,
			    const struct output_options *o, FILE *out)
{
	struct calltree *t;
	struct flame_ctx c = { .p = p, .o = o };
	int r = calltree_build(p, 0, o->reverse, 0, &t);

	if (r < 0)
		return r;
	c.t = t;
	c.min_total = calltree_min_total(t, o->minwidth,
					 o->width ? o->width : FLAME_DEFAULT_WIDTH);
	{
		const struct calltree_slot slots[2] = {
			{ "/*DATA*/", "/*/DATA*/", fill_data, &c },
			{ "/*TIMELINE*/", "/*/TIMELINE*/", fill_timeline, &c },
		};

		r = calltree_fill_slots((const char *)res_flame_html,
					res_flame_html_len, slots, 2, out);
	}
	calltree_free(t);
	return r;
}
