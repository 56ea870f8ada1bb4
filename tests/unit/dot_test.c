/* The dot writer: nodes with self and total, weighted edges, small nodes
 * and edges dropped and counted in the legend, labels escaped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/output.h"
#include "test.h"

static uint32_t fr(struct profile *p, const char *name)
{
	struct frame f = { .name = name, .module = "/usr/bin/app", .kind = FRAME_USER };
	uint32_t id;

	profile_intern_frame(p, &f, &id);
	return id;
}

static void add(struct profile *p, const uint32_t *frames, uint32_t n,
		int64_t samples)
{
	uint32_t s, t;
	int64_t v[1] = { samples };

	profile_intern_stack(p, frames, n, false, &s);
	profile_intern_thread(p, 1, "main", &t);
	profile_add_sample(p, s, t, v);
}

static char *render(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	if (output_write(p, OUTPUT_DOT, NULL, out) < 0)
		CHECK(0, "output_write failed");
	fclose(out);
	return buf;
}

int main(void)
{
	static const struct value_type vt[] = { { "samples", "count" } };
	struct profile *p = profile_new();
	uint32_t main_ = fr(p, "main"), run = fr(p, "run"), a = fr(p, "burn_a"),
		 rec = fr(p, "recurse"), tiny = fr(p, "tiny \"quoted\""),
		 edge_only = fr(p, "edge_only");
	char *text, *n_main, *n_run;

	profile_set_value_types(p, vt, 1);
	p->event = "cpu";
	profile_add_note(p, "a note");
	{
		uint32_t s1[] = { main_, run, a }, s2[] = { main_, rec, rec, rec },
			 s3[] = { main_, tiny }, s4[] = { main_, run, edge_only };
		add(p, s1, 3, 9000);
		add(p, s2, 4, 994);
		add(p, s3, 1 + 1, 5);	  /* 0.05%: below the node limit (0.5%) */
		add(p, s4, 3, 1);	  /* with tiny: both dropped */
	}
	text = render(p);
	CHECK(!strncmp(text, "digraph \"nprof; 10000 samples\" {", 32), "the graph title");
	CHECK(strstr(text, "Legend [shape=box") && strstr(text, "Event: cpu\\l") &&
	      strstr(text, "Total samples: 10000\\l"), "the legend: event and total");
	CHECK(strstr(text, "Dropped 2 nodes (cum <= 50)\\l"),
	      "the legend counts the dropped nodes and the limit");
	CHECK(strstr(text, "Note: a note\\l"), "notes in the legend");
	CHECK(!strstr(text, "tiny") && !strstr(text, "edge_only"), "small nodes are dropped");
	n_main = strstr(text, "label=\"main\\n0 (0.0%)\\nof 10000 (100.0%)\"");
	CHECK(n_main != NULL, "main: self 0, total 10000");
	n_run = strstr(text, "label=\"run\\n0 (0.0%)\\nof 9001 (90.0%)\"");
	CHECK(n_run != NULL, "run: total 9001");
	CHECK(strstr(text, "label=\"burn_a\\n9000 (90.0%)\""),
	      "burn_a: self only when self == total");
	CHECK(strstr(text, "label=\"recurse\\n994 (9.9%)\""),
	      "recursion counts once in total");
	CHECK(strstr(text, "N1 -> N2 [label=\" 9001\"") != NULL, "main -> run carries 9001");
	CHECK(!strstr(text, "tooltip=\"recurse -> recurse"), "no self-loop for recursion");
	CHECK(strstr(text, "shape=box,fontsize=8.0,label=\"main"), "no self: the smallest font");
	free(text);

	/* dot itself accepts it, when it is installed. */
	if (system("command -v dot >/dev/null 2>&1") == 0) {
		FILE *pipe = popen("dot -Tsvg -o /dev/null 2>&1", "w");
		int status;

		text = render(p);
		fputs(text, pipe);
		status = pclose(pipe);
		CHECK(status == 0, "dot -Tsvg accepts the output");
		free(text);
	} else {
		printf("ok %d - # SKIP graphviz not installed\n", ++test_count);
	}
	profile_free(p);
	return test_done();
}
