/* profile_input: one reading path for every command that reads a profile
 * file; see profile_input.h. */
#include "cli/profile_input.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "output/jfr.h"
#include "output/output.h"
#include "output/pprof.h"
#include "profile/merge.h"

/* The largest input read: past it the readers' own limits would refuse
 * the data anyway, and reading it would only cost memory. */
#define PROFILE_INPUT_MAX (1ull << 30)

enum input_kind { INPUT_COLLAPSED, INPUT_PPROF, INPUT_JFR };

/* Reads all of f, at most PROFILE_INPUT_MAX bytes. 0 or -errno. */
static int read_all(FILE *f, char **ret_buf, size_t *ret_len)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap), *n;
	int r = -ENOMEM;

	if (!buf)
		goto out;
	for (;;) {
		size_t got = fread(buf + len, 1, cap - len, f);

		len += got;
		if (got == 0) {
			r = ferror(f) ? -EIO : 0;
			if (r < 0)
				goto out;
			break;
		}
		if (len == cap) {
			if (cap > PROFILE_INPUT_MAX) {
				r = -EFBIG;
				goto out;
			}
			n = realloc(buf, cap * 2);
			if (!n) {
				r = -ENOMEM;
				goto out;
			}
			buf = n;
			cap *= 2;
		}
	}
	*ret_buf = buf;
	*ret_len = len;
	buf = NULL;
out:
	free(buf);
	return r;
}

/* Text has no control characters but tab, newline, carriage return and
 * form feed; a protobuf almost always has some in its first bytes. */
static enum input_kind detect(const char *data, size_t len)
{
	const unsigned char *b = (const unsigned char *)data;

	if (pprof_is_gzip(data, len))
		return INPUT_PPROF;
	if (len >= 4 && !memcmp(data, "FLR\0", 4))
		return INPUT_JFR;
	for (size_t i = 0; i < len && i < 65536; i++)
		if ((b[i] < 0x20 && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' &&
		     b[i] != '\f') || b[i] == 0x7f)
			return INPUT_PPROF;
	return INPUT_COLLAPSED;
}

/* path opened for reading. /dev/fd/N is the descriptor N as it was
 * given, not opened again: opening it by its path would check the
 * permissions anew, which a pipe or file another user handed over (as
 * nprofd hands a comparison its two profiles) refuses. */
static FILE *open_input(const char *path)
{
	char *end;
	long fd;
	int copy;
	FILE *f;

	if (!strcmp(path, "-"))
		return stdin;
	if (strncmp(path, "/dev/fd/", 8) || !isdigit((unsigned char)path[8]))
		return fopen(path, "rb");
	errno = 0;
	fd = strtol(path + 8, &end, 10);
	if (*end || errno || fd > INT_MAX) {
		errno = ENOENT;
		return NULL;
	}
	if ((copy = fcntl((int)fd, F_DUPFD_CLOEXEC, 0)) < 0)
		return NULL;
	if (!(f = fdopen(copy, "rb")))
		close(copy);
	return f;
}

/* data (len bytes, recognized from its content), read as the profile
 * name names into *ret_p: EXIT_OK, or EXIT_FAILED after its one line. */
static int parse_profile(const char *cmd, const char *name, const char *data, size_t len,
			 struct profile **ret_p)
{
	enum input_kind kind;
	struct diag d;
	int r;

	diag_clear(&d);
	if (!len) {
		cli_error("%s is empty; give a collapsed, pprof or JFR profile", name);
		return EXIT_FAILED;
	}
	kind = detect(data, len);
	switch (kind) {
	case INPUT_PPROF:
		r = pprof_read(data, len, ret_p, &d);
		break;
	case INPUT_JFR:
		r = jfr_read(data, len, ret_p, &d);
		break;
	default:
		r = collapsed_read(data, len, ret_p, &d);
		break;
	}
	if (r < 0) {
		/* Text that is not collapsed stacks (an HTML flame graph,
		 * perf script output) is the likely mistake: say what is
		 * read. */
		char hint[128] = "";

		if (r == -EBADMSG && kind == INPUT_PPROF)
			snprintf(hint, sizeof(hint),
				 "; %s reads collapsed text, pprof and JFR", cmd);
		else if (r == -EBADMSG && kind == INPUT_COLLAPSED)
			snprintf(hint, sizeof(hint),
				 " (read as collapsed stacks; %s reads collapsed text, pprof and JFR)",
				 cmd);
		cli_error("%s: %s%s", name, d.msg[0] ? d.msg : strerror(-r), hint);
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

/* All of path ("-": standard input) into *data (free it): EXIT_OK, or
 * EXIT_FAILED after its one line. */
static int read_path(const char *cmd, const char *path, const char *name, char **data,
		     size_t *len)
{
	FILE *in = open_input(path);
	int r;

	if (!in) {
		cli_error("cannot read %s: %s", path, strerror(errno));
		return EXIT_FAILED;
	}
	r = read_all(in, data, len);
	if (in != stdin)
		fclose(in);
	if (r == -EFBIG) {
		cli_error("%s is larger than %llu MiB, more than %s reads",
			  name, PROFILE_INPUT_MAX >> 20, cmd);
		return EXIT_FAILED;
	}
	if (r < 0) {
		cli_error("cannot read %s: %s", name, strerror(-r));
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

int cli_read_profile(const char *cmd, const char *path, struct profile **ret_p)
{
	const char *name = strcmp(path, "-") ? path : "standard input";
	char *data = NULL;
	size_t len = 0;
	int r = read_path(cmd, path, name, &data, &len);

	if (r == EXIT_OK)
		r = parse_profile(cmd, name, data, len, ret_p);
	free(data);
	return r;
}

/* The roots after a part's length, "\tROOT" each up to the newline at
 * end, into line (split there) and roots: their number, or -1 when
 * there are too many, one is not a root's name, or the line is too long. */
static int part_roots(const char *at, const char *end, char *line, const char **roots)
{
	size_t len = (size_t)(end - at);
	int n = 0;

	if (len >= PARTS_LINE_MAX)
		return -1;
	memcpy(line, at, len);
	line[len] = '\0';
	for (char *p = line, *next; *p; p = next, n++) {
		if (*p != '\t' || n == PARTS_ROOTS_MAX)
			return -1;
		*p++ = '\0';	/* ends the root before */
		roots[n] = p;
		next = p + strcspn(p, "\t");
		if (!profile_is_root_name(p, (size_t)(next - p)))
			return -1;
	}
	return n;
}

int cli_read_parts(const char *cmd, const char *path,
		   int (*each)(void *ctx, struct profile *p, const char *const *roots,
			       unsigned nroots),
		   void *ctx)
{
	const char *name = strcmp(path, "-") ? path : "standard input";
	char *data = NULL, part_name[64], line[PARTS_LINE_MAX];
	const char *roots[PARTS_ROOTS_MAX];
	size_t len = 0, at = 0;
	unsigned n = 0;
	int r = read_path(cmd, path, name, &data, &len);

	while (r == EXIT_OK && at < len) {
		struct profile *p = NULL;
		char *end, *nl;
		unsigned long long size = strtoull(data + at, &end, 10);
		int nroots = 0;

		n++;
		nl = end < data + len ? memchr(end, '\n', len - (size_t)(end - data)) : NULL;
		if (end == data + at || !nl || (*end != '\n' && *end != '\t') ||
		    size > len - (size_t)(nl + 1 - data)) {
			cli_error("%s: part %u does not begin with its length in bytes and a newline, "
				  "or is cut short", name, n);
			r = EXIT_FAILED;
			break;
		}
		if ((nroots = part_roots(end, nl, line, roots)) < 0) {
			cli_error("%s: part %u: what follows its length is not up to %d roots, each "
				  "after a tab ([host NAME], [NAME pid=N])", name, n, PARTS_ROOTS_MAX);
			r = EXIT_FAILED;
			break;
		}
		at = (size_t)(nl + 1 - data);
		snprintf(part_name, sizeof(part_name), "part %u of %s", n, name);
		r = parse_profile(cmd, part_name, data + at, (size_t)size, &p);
		at += (size_t)size;
		if (r == EXIT_OK)
			r = each(ctx, p, roots, (unsigned)nroots);
	}
	if (r == EXIT_OK && !n) {
		cli_error("%s holds no profile", name);
		r = EXIT_FAILED;
	}
	free(data);
	return r;
}

int cli_merge_in(void *ctx, struct profile *more, const char *const *roots, unsigned nroots)
{
	struct cli_merged *m = ctx;
	struct diag d;

	m->n++;
	if (!m->p && !nroots) {
		m->p = more;
		return EXIT_OK;
	}
	/* (a part under roots goes in as a merge: its stacks change) */
	if (!m->p && !(m->p = profile_new())) {
		cli_error("out of memory");
		profile_free(more);
		return EXIT_FAILED;
	}
	diag_clear(&d);
	if (profile_merge_under(m->p, more, roots, nroots, &d) < 0) {
		cli_error("profile %u cannot be merged with the first: %s", m->n,
			  d.msg[0] ? d.msg : "out of memory");
		profile_free(more);
		return EXIT_FAILED;
	}
	profile_free(more);
	return EXIT_OK;
}

int cli_merged_done(struct cli_merged *m, int ret, struct profile **ret_p)
{
	if (ret != EXIT_OK) {
		profile_free(m->p);
		return ret;
	}
	/* once, not once a merge: a day of recordings is thousands */
	if (m->p && m->p->nevents)
		profile_sort_events(m->p);
	*ret_p = m->p;
	return EXIT_OK;
}
