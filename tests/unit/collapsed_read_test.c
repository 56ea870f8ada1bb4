/* The collapsed reader: what it accepts, what it refuses, and that writing
 * what it read gives the same lines back. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/output.h"
#include "test.h"

static char *render(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	if (output_write(p, OUTPUT_COLLAPSED, NULL, out) < 0)
		CHECK(0, "output_write failed");
	fclose(out);
	return buf;
}

static int read_str(const char *text, struct profile **ret, struct diag *d)
{
	diag_clear(d);
	return collapsed_read(text, strlen(text), ret, d);
}

static const struct frame *find(const struct profile *p, const char *name)
{
	for (size_t f = 0; f < p->nframes; f++)
		if (!strcmp(p->frames[f].name, name))
			return &p->frames[f];
	return NULL;
}

static void expect_error(const char *text, const char *want, const char *what)
{
	struct profile *p = NULL;
	struct diag d;
	int r = read_str(text, &p, &d);

	CHECK(r == -EBADMSG && !p && strstr(d.msg, want), "%s: %s", what, d.msg);
	profile_free(p);
}

int main(void)
{
	const char *in = "main;run;burn_a 60\n"
			 "main;run;burn_b 30\r\n"
			 "\n"
			 "   \r\n"
			 "main;operator new(unsigned long) 7\n"
			 "main;run;burn_a 5\n"
			 "main;sys_read_[k];do_syscall_64_[k] 3\n"
			 "[worker 2 tid=12];main;run 4\n"
			 "[worker 2 tid=12];main;run 1"; /* no final newline */
	struct profile *p = NULL;
	const struct frame *f;
	struct diag d;
	char *out;
	int r;

	r = read_str(in, &p, &d);
	CHECK(r == 0 && p, "reads a collapsed file: %s", d.msg);
	if (!p)
		return test_done();
	CHECK(p->nvalues == 1 && !strcmp(p->value_types[0].type, "samples") &&
	      !strcmp(p->value_types[0].unit, "count"), "one value: samples/count");
	CHECK(profile_total(p, 0) == 110, "total %lld", (long long)profile_total(p, 0));
	CHECK(p->nstacks == 5, "equal stacks merge (%zu stacks)", p->nstacks);
	f = find(p, "operator new(unsigned long)");
	CHECK(f && f->kind == FRAME_USER, "a frame with spaces; the count is after the last space");
	f = find(p, "sys_read_[k]");
	CHECK(f && f->kind == FRAME_KERNEL, "_[k] marks a kernel frame, the suffix kept");
	f = find(p, "[worker 2 tid=12]");
	CHECK(f && f->kind == FRAME_THREAD, "[name tid=N] is a thread frame");
	{
		bool found = false;

		for (size_t t = 0; t < p->nthreads; t++)
			if (p->threads[t].tid == 12 &&
			    !strcmp(p->threads[t].name, "worker 2"))
				found = true;
		CHECK(found, "the root thread frame names the sample's thread");
	}
	out = render(p);
	CHECK_STR(out, "main;run;burn_a 65\n"
		       "main;run;burn_b 30\n"
		       "main;operator new(unsigned long) 7\n"
		       "main;sys_read_[k];do_syscall_64_[k] 3\n"
		       "[worker 2 tid=12];main;run 5\n",
		  "written again: the same lines, merged");
	free(out);
	profile_free(p);

	p = NULL;
	r = read_str("", &p, &d);
	CHECK(r == 0 && p && p->nsamples == 0,
	      "an empty file is an empty profile");
	profile_free(p);
	p = NULL;
	r = read_str("a;;b 2\n", &p, &d);
	CHECK(r == 0 && p && find(p, "") != NULL,
	      "an empty frame name is kept");
	profile_free(p);

	expect_error("main;run\n", "line 1: no count", "no count");
	expect_error("main;run 10\nmain;run x10\n", "line 2", "a word for a count");
	expect_error("main;run -5\n", "line 1", "a negative count");
	expect_error("main;run 99999999999999999999\n", "line 1", "an overflowing count");
	expect_error("a 9223372036854775807\nb 1\n", "2^63", "counts whose sum overflows");
	expect_error(" 5\n", "empty stack", "a count without a stack");
	expect_error("main;run 1.5\n", "not a count", "a fraction");
	{
		/* 70000 frames: past the depth limit. */
		size_t n = 70000 * 2 + 8;
		char *deep = malloc(n), *s = deep;

		for (int i = 0; i < 70000; i++) {
			*s++ = 'a';
			*s++ = ';';
		}
		strcpy(s - 1, " 1\n");
		p = NULL;
		diag_clear(&d);
		r = collapsed_read(deep, strlen(deep), &p, &d);
		CHECK(r == -EFBIG && !p,
		      "a stack past the depth limit is refused: %s", d.msg);
		free(deep);
	}
	{
		/* Lines sharing a prefix reuse the previous line's frames; a
		 * prefix that ends inside a name, a line that is the previous
		 * one's prefix, a repeated line and a shared thread root must
		 * read as they would alone. */
		static const char text[] = "a;b;c 1\n"
					   "a;b;cd 2\n"
					   "a;b 4\n"
					   "a;bc;d 8\n"
					   "a;bc;d 16\n"
					   "[w tid=7];x;y 32\n"
					   "[w tid=7];x;z_[i] 64\n"
					   "a;b;c 128\n";
		static const char want[] = "a;b 4\na;b;c 129\na;b;cd 2\na;bc;d 24\n"
					   "[w tid=7];x;y 32\n[w tid=7];x;z_[i] 64\n";
		char *got;

		p = NULL;
		CHECK(read_str(text, &p, &d) == 0, "lines sharing prefixes read");
		got = p ? render(p) : NULL;
		CHECK(got && strlen(got) == strlen(want), "... into the same stacks as alone");
		for (const char *w = want, *nl; got && (nl = strchr(w, '\n')); w = nl + 1) {
			char line[64];

			snprintf(line, sizeof(line), "%.*s", (int)(nl - w + 1), w);
			CHECK(strstr(got, line) != NULL, "has %.*s", (int)(nl - w), w);
		}
		CHECK(p && p->nthreads == 2 && p->threads[1].tid == 7,
		      "the shared thread root puts both lines on thread 7");
		free(got);
		profile_free(p);
	}
	return test_done();
}
