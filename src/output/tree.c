/* tree: the call tree as one self-contained HTML page with expandable
 * nodes, total and self values and shares, and the flame graph's search.
 *
 * Like flamegraph.c, this writer only puts the merged call tree, as JSON,
 * into res/tree.html where the template's built-in sample is; the page
 * builds rows only for the nodes a reader opens, so a tree of millions of
 * nodes costs what is on screen. Nothing is left out: a tree has no pixel
 * width, so --minwidth does not apply. */
#include "output/output.h"

#include "output/calltree.h"
#include "res/tree.html.h"

struct tree_ctx {
	const struct profile *p;
	const struct output_options *o;
	const struct calltree *t;
};

static int fill_data(void *arg, FILE *out)
{
	struct tree_ctx *c = arg;

	return calltree_write_json(c->t, c->p, c->o, 1, out);
}

int output_write_tree(const struct profile *p, const struct output_options *o,
		      FILE *out)
{
	struct calltree *t;
	struct tree_ctx c = { .p = p, .o = o };
	int r = calltree_build(p, 0, o->reverse, 0, &t);

	if (r < 0)
		return r;
	c.t = t;
	r = calltree_fill_template((const char *)res_tree_html, res_tree_html_len,
				   "/*DATA*/", "/*/DATA*/", fill_data, &c, out);
	calltree_free(t);
	return r;
}
