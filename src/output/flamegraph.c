/* flamegraph: one self-contained, interactive HTML file.
 *
 * The page is res/flame.html, a real file a developer opens and edits as
 * it is; this writer only puts the profile's call tree, as JSON, where the
 * template's built-in sample is (between its DATA comment markers). The
 * tree is merged here, in C, so the page stays small and draws fast
 * however many distinct stacks there are (docs/flamegraph.md). */
#include "output/output.h"

#include "output/calltree.h"
#include "res/flame.html.h"

/* The width minwidth is measured against when the page fills the window. */
#define FLAME_DEFAULT_WIDTH 1200

struct flame_ctx {
	const struct profile *p;
	const struct output_options *o;
	const struct calltree *t;
};

static int fill_data(void *arg, FILE *out)
{
	struct flame_ctx *c = arg;
	unsigned width = c->o->width ? c->o->width : FLAME_DEFAULT_WIDTH;

	return calltree_write_json(c->t, c->p, c->o,
				   calltree_min_total(c->t, c->o->minwidth, width),
				   out);
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
	r = calltree_fill_template((const char *)res_flame_html, res_flame_html_len,
				   "/*DATA*/", "/*/DATA*/", fill_data, &c, out);
	calltree_free(t);
	return r;
}
