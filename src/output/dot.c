/* dot: a graphviz call graph in the style of jemalloc's jeprof (and
 * gperftools' pprof): one box per function with its self and total value
 * and their shares, the font growing with self; an edge caller -> callee
 * per call seen, labelled with the value that went through it and drawn
 * thicker the more it carries; a legend with what was dropped.
 *
 * Value 0 is the one shown (samples for cpu), as in the text outputs.
 * Functions are (name, module) pairs, as in `flat`. A function's total
 * counts each stack once, however often it recurses; an edge likewise.
 * Like jeprof, nodes whose total is at most NODE_FRACTION of the profile
 * and edges carrying at most EDGE_FRACTION are dropped, and at most
 * MAX_NODES nodes are drawn; the legend says how many went. */
#include "output/output.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"
#include "base/id_index.h"
#include "base/utf8.h"

#define NODE_FRACTION 0.005
#define EDGE_FRACTION 0.001
#define MAX_NODES 80

struct node {
	uint32_t frame; /* a representative frame */
	int64_t self, total;
	size_t stamp;	/* 1 + the sample that last counted total */
	int out_id;	/* N<out_id> in the output; 0 when dropped */
};

struct edge {
	uint32_t from, to; /* node indexes */
	int64_t value;
	size_t stamp;
};

struct graph {
	const struct profile *p;
	struct node *nodes;
	size_t nnodes;
	uint32_t *frame_node;
	struct id_index node_index;
	struct edge *edges;
	size_t nedges, edges_cap;
	struct id_index edge_index;
};

static int node_match(const void *ctx, uint32_t id, const void *key)
{
	const struct graph *g = ctx;
	const struct frame *a = &g->p->frames[g->nodes[id].frame];
	const struct frame *b = key;

	return a->name == b->name && a->module == b->module;
}

static int edge_match(const void *ctx, uint32_t id, const void *key)
{
	const struct edge *e = &((const struct graph *)ctx)->edges[id];
	const uint32_t *k = key;

	return e->from == k[0] && e->to == k[1];
}

static int add_edge(struct graph *g, uint32_t from, uint32_t to, int64_t value,
		    size_t stamp)
{
	uint32_t key[2] = { from, to };
	uint64_t h = hash_bytes(key, sizeof(key), 11);
	uint32_t id = id_index_find(&g->edge_index, h, edge_match, g, key);

	if (id == ID_NONE) {
		if (array_reserve(&g->edges, &g->edges_cap, g->nedges + 1, sizeof(*g->edges)) < 0)
			return -ENOMEM;
		id = (uint32_t)g->nedges;
		if (id_index_insert(&g->edge_index, h, id) < 0)
			return -ENOMEM;
		g->edges[g->nedges++] = (struct edge){ from, to, 0, 0 };
	}
	/* Once per stack, like a node's total. */
	if (g->edges[id].stamp != stamp) {
		g->edges[id].stamp = stamp;
		g->edges[id].value += value;
	}
	return 0;
}

static int build(struct graph *g)
{
	const struct profile *p = g->p;

	g->nodes = calloc(p->nframes + 1, sizeof(*g->nodes));
	g->frame_node = calloc(p->nframes + 1, sizeof(*g->frame_node));
	if (!g->nodes || !g->frame_node)
		return -ENOMEM;
	for (size_t f = 0; f < p->nframes; f++) {
		const struct frame *fr = &p->frames[f];
		uintptr_t key[2] = { (uintptr_t)fr->name, (uintptr_t)fr->module };
		uint64_t h = hash_bytes(key, sizeof(key), 13);
		uint32_t id = id_index_find(&g->node_index, h, node_match, g, fr);

		if (id == ID_NONE) {
			id = (uint32_t)g->nnodes;
			g->nodes[g->nnodes++].frame = (uint32_t)f;
			if (id_index_insert(&g->node_index, h, id) < 0)
				return -ENOMEM;
		}
		g->frame_node[f] = id;
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct sample *s = &p->samples[i];
		uint32_t depth = p->stacks[s->stack].depth;
		int64_t v = s->values[0];
		const uint32_t *f;

		if (!depth || v <= 0)
			continue;
		f = profile_stack_frames(p, s->stack);
		g->nodes[g->frame_node[f[depth - 1]]].self += v;
		for (uint32_t k = 0; k < depth; k++) {
			struct node *n = &g->nodes[g->frame_node[f[k]]];

			if (n->stamp != i + 1) {
				n->stamp = i + 1;
				n->total += v;
			}
			if (k + 1 < depth) {
				uint32_t a = g->frame_node[f[k]], b = g->frame_node[f[k + 1]];

				/* Recursion is a self-loop: jeprof leaves it out. */
				if (a != b && add_edge(g, a, b, v, i + 1) < 0)
					return -ENOMEM;
			}
		}
	}
	return 0;
}

/* The inside of a DOT "string": quotes and backslashes escaped, control
 * characters and bytes that are not UTF-8 (graphviz rejects them) as '?'. */
static void put_escaped(const char *str, FILE *out)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		uint32_t cp;
		size_t n = utf8_next(s, &cp);

		if (cp == '"' || cp == '\\') {
			putc('\\', out);
			putc((int)cp, out);
		} else if (cp < 0x20 || (cp == UTF8_INVALID && n == 1)) {
			putc('?', out);
		} else {
			fwrite(s, 1, n, out);
		}
		s += n;
	}
}

static int by_total(const void *a, const void *b)
{
	const struct node *x = *(struct node *const *)a, *y = *(struct node *const *)b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return (x->frame > y->frame) - (x->frame < y->frame);
}

static double pct(int64_t v, int64_t total)
{
	return total > 0 ? 100.0 * (double)v / (double)total : 0.0;
}

/* A value as the graph shows it: bytes in MB with one decimal, as
 * jeprof draws heap profiles; anything else as it is. */
static const char *shown_value(const struct profile *p, int64_t v, char *buf, size_t len)
{
	if (p->nvalues && !strcmp(p->value_types[0].unit, "bytes"))
		snprintf(buf, len, "%.1f", (double)v / 1048576.0);
	else
		snprintf(buf, len, "%" PRId64, v);
	return buf;
}

static void put_legend(const struct graph *g, const char *title,
		       int64_t total, size_t shown, int64_t shown_self,
		       size_t dropped_nodes, int64_t node_limit,
		       size_t dropped_edges, int64_t edge_limit, FILE *out)
{
	const struct profile *p = g->p;
	const char *type = p->nvalues ? p->value_types[0].type : "samples";
	const char *unit = p->nvalues ? p->value_types[0].unit : "count";
	char a[32], b[32];

	if (!strcmp(unit, "bytes"))
		unit = "MB";
	fputs("subgraph cluster_legend { style=invis;\n"
	      "Legend [shape=box,fontsize=16,label=\"", out);
	put_escaped(title, out);
	fputs("\\l", out);
	if (p->event) {
		fputs("Event: ", out);
		put_escaped(p->event, out);
		fputs("\\l", out);
	}
	fprintf(out, "Total %s: %s%s%s\\l", type, shown_value(p, total, a, sizeof(a)),
		strcmp(unit, "count") ? " " : "", strcmp(unit, "count") ? unit : "");
	fprintf(out, "Showing %zu nodes accounting for %s (%.1f%%)\\l",
		shown, shown_value(p, shown_self, a, sizeof(a)), pct(shown_self, total));
	fprintf(out, "Dropped %zu nodes (cum <= %s)\\l", dropped_nodes,
		shown_value(p, node_limit, b, sizeof(b)));
	fprintf(out, "Dropped %zu edges (freq <= %s)\\l", dropped_edges,
		shown_value(p, edge_limit, b, sizeof(b)));
	for (unsigned i = 0; i < p->nnotes; i++) {
		fputs("Note: ", out);
		put_escaped(p->notes[i], out);
		fputs("\\l", out);
	}
	fputs("\"];\n}\n", out);
}

int output_write_dot(const struct profile *p, const struct output_options *o,
		     FILE *out)
{
	struct graph g = { .p = p };
	struct node **sorted = NULL;
	int64_t total = 0, node_limit, edge_limit, shown_self = 0;
	size_t shown = 0, dropped_edges = 0;
	char title[512], vbuf[32];
	int r = -ENOMEM;

	id_index_init(&g.node_index);
	id_index_init(&g.edge_index);
	if (!p->nvalues) {
		r = 0;
		fputs("digraph \"empty profile\" {\n}\n", out);
		goto out;
	}
	if (build(&g) < 0)
		goto out;
	for (size_t i = 0; i < p->nsamples; i++)
		if (p->samples[i].values[0] > 0)
			total += p->samples[i].values[0];
	node_limit = (int64_t)(NODE_FRACTION * (double)total);
	edge_limit = (int64_t)(EDGE_FRACTION * (double)total);

	sorted = calloc(g.nnodes + 1, sizeof(*sorted));
	if (!sorted)
		goto out;
	for (size_t i = 0; i < g.nnodes; i++)
		sorted[i] = &g.nodes[i];
	qsort(sorted, g.nnodes, sizeof(*sorted), by_total);
	for (size_t i = 0; i < g.nnodes && shown < MAX_NODES; i++) {
		if (sorted[i]->total <= node_limit || sorted[i]->total <= 0)
			break;
		sorted[i]->out_id = (int)++shown;
		shown_self += sorted[i]->self;
	}

	if (o->title)
		snprintf(title, sizeof(title), "%s", o->title);
	else if (p->command)
		snprintf(title, sizeof(title), "%s (pid %d)", p->command, (int)p->pid);
	else
		snprintf(title, sizeof(title), "nprof");

	fputs("digraph \"", out);
	put_escaped(title, out);
	fprintf(out, "; %" PRId64 " %s\" {\n", total,
		p->value_types[0].type ? p->value_types[0].type : "");
	fputs("node [width=0.375,height=0.25,style=filled,fillcolor=\"#f8f8f8\"];\n", out);
	for (size_t e = 0; e < g.nedges; e++)
		if (!g.nodes[g.edges[e].from].out_id || !g.nodes[g.edges[e].to].out_id ||
		    g.edges[e].value <= edge_limit)
			dropped_edges++;
	put_legend(&g, title, total, shown, shown_self, g.nnodes - shown,
		   node_limit, dropped_edges, edge_limit, out);

	for (size_t i = 0; i < shown; i++) {
		const struct node *n = sorted[i];
		/* jeprof's scale: 8pt, up to 58pt for a node with all the self. */
		double fs = 8.0 + (total > 0 ? 50.0 * sqrt((double)n->self / (double)total) : 0);

		fprintf(out, "N%d [shape=box,fontsize=%.1f,label=\"", n->out_id, fs);
		put_escaped(p->frames[n->frame].name, out);
		fprintf(out, "\\n%s (%.1f%%)", shown_value(p, n->self, vbuf, sizeof(vbuf)),
			pct(n->self, total));
		if (n->total != n->self)
			fprintf(out, "\\nof %s (%.1f%%)",
				shown_value(p, n->total, vbuf, sizeof(vbuf)), pct(n->total, total));
		fputs("\",tooltip=\"", out);
		put_escaped(p->frames[n->frame].name, out);
		fprintf(out, " (%" PRId64 ")\"];\n", n->total);
	}
	for (size_t e = 0; e < g.nedges; e++) {
		const struct edge *ed = &g.edges[e];
		const struct node *a = &g.nodes[ed->from], *b = &g.nodes[ed->to];
		double frac = total > 0 ? (double)ed->value / (double)total : 0;

		if (!a->out_id || !b->out_id || ed->value <= edge_limit)
			continue;
		fprintf(out, "N%d -> N%d [label=\" %s\",weight=%d,"
			"penwidth=%.2f,tooltip=\"", a->out_id, b->out_id,
			shown_value(p, ed->value, vbuf, sizeof(vbuf)),
			1 + (int)(100 * frac), 1.0 + 5.0 * frac);
		put_escaped(p->frames[a->frame].name, out);
		fputs(" -> ", out);
		put_escaped(p->frames[b->frame].name, out);
		fprintf(out, " (%" PRId64 ")\"];\n", ed->value);
	}
	fputs("}\n", out);
	r = 0;
out:
	free(sorted);
	free(g.nodes);
	free(g.frame_node);
	free(g.edges);
	id_index_release(&g.node_index);
	id_index_release(&g.edge_index);
	return r;
}
