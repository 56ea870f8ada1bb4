/* profile_file: where a profile given file= is written, and NPROF_START
 * across a process tree (docs/agent.md, "Process trees").
 *
 * NPROF_START and LD_PRELOAD reach every process of a tree: a wrapper
 * (timeout, sh -c, nice, env, a start script) and the service it starts,
 * a service and the workers it forks. Each loads the agent and records
 * itself, so each would write the same file, the last to exit (often the
 * wrapper, which only waited) over the others. As gperftools does for
 * CPUPROFILE, the first process claims the name and says so in the
 * environment (NPROF_START_ROOT=its pid), which everything it starts
 * inherits; every other process writes the name with its pid inserted
 * before the extension (prof.collapsed, prof.4242.collapsed). A template
 * with %p is unique already. A process that execs keeps its pid, and so
 * its claim: under nice or env the service writes the name itself.
 *
 * Two more rules keep a real profile in view: a process of the tree that
 * recorded nothing writes nothing when another process may have (it is
 * not the first, or it started others), and each process says on stderr
 * where its profile went (one line; quiet or NPROF_QUIET silence it). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "base/path_template.h"

#define ROOT_ENV "NPROF_START_ROOT"

static struct {
	char tmpl[PATH_MAX]; /* NPROF_START's file=, as given */
	bool child;	     /* not the process that claimed the name */
	bool forked;	     /* this process started others with fork() */
} T;

/* tmpl with ".%p" before its extension (".gz" counting with the one
 * before it): prof.pb.gz, prof.%p.pb.gz; prof, prof.%p. */
static void insert_pid(const char *tmpl, char *out, size_t len)
{
	const char *base = strrchr(tmpl, '/');
	const char *dot, *ext;

	base = base ? base + 1 : tmpl;
	ext = tmpl + strlen(tmpl);
	dot = strrchr(base, '.');
	if (dot && dot > base) {
		ext = dot;
		if (!strcmp(dot, ".gz")) {
			for (dot = ext - 1; dot > base && *dot != '.'; dot--)
				;
			if (dot > base)
				ext = dot;
		}
	}
	snprintf(out, len, "%.*s.%%p%s", (int)(ext - tmpl), tmpl, ext);
}

static void name_for_child(struct agent_options *o)
{
	if (strstr(T.tmpl, "%p"))
		snprintf(o->file, sizeof(o->file), "%s", T.tmpl);
	else
		insert_pid(T.tmpl, o->file, sizeof(o->file));
}

/* At load, before any thread of the program's own: setenv is safe. */
void agent_profile_file_claim(struct agent_options *o)
{
	const char *root = getenv(ROOT_ENV);
	char me[16];

	o->from_start_env = true;
	if (!o->file[0])
		return;
	snprintf(T.tmpl, sizeof(T.tmpl), "%s", o->file);
	snprintf(me, sizeof(me), "%d", (int)getpid());
	if (!root || !*root)
		setenv(ROOT_ENV, me, 1);
	T.child = root && *root && strcmp(root, me) != 0;
	if (T.child)
		name_for_child(o);
}

void agent_profile_file_forked(void)
{
	T.forked = true;
}

void agent_profile_file_fork_child(struct agent_options *o)
{
	T.child = true;
	T.forked = false;
	if (o->file[0])
		name_for_child(o);
}

int agent_write_profile_path(const struct profile *p, const struct agent_options *o,
			     char *path, size_t len, struct diag *d)
{
	char tmp[PATH_MAX + 32];
	enum output_format f;
	FILE *out;
	int err;

	if (path_template_expand(o->file, getpid(), path, len) < 0)
		return diag_set(d, -ENAMETOOLONG, "file=%s: the expanded path is too long", o->file);
	if (o->have_format)
		f = o->format;
	else if (output_format_from_path(path, &f) < 0)
		return diag_set(d, -EINVAL,
				"file=%s: cannot tell the format from the extension; add output=FORMAT (%s)",
				path, output_format_names());
	/* Whole or not at all: a reader never sees half a profile. */
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	out = fopen(tmp, "w");
	if (!out)
		return diag_set(d, -errno, "cannot write %s: %s", tmp, strerror(errno));
	err = output_write(p, f, &o->out, out);
	if (fclose(out) != 0 && err == 0)
		err = -errno;
	if (err == 0 && rename(tmp, path) < 0)
		err = -errno;
	if (err < 0) {
		unlink(tmp);
		return diag_set(d, err, "cannot write %s: %s", path, strerror(-err));
	}
	return 0;
}

int agent_write_profile(const struct profile *p, const struct agent_options *o,
			struct diag *d)
{
	char path[PATH_MAX];

	return agent_write_profile_path(p, o, path, sizeof(path), d);
}

void agent_profile_file_finish(const struct profile *p, const struct agent_options *o)
{
	const char *me = program_invocation_short_name;
	bool say = o->from_start_env && !o->quiet;
	char path[PATH_MAX];
	struct diag d;

	if (!o->file[0])
		return;
	if (o->from_start_env && p->nsamples == 0 && (T.child || T.forked)) {
		if (say && T.forked) {
			struct agent_options theirs = *o;

			name_for_child(&theirs);
			agent_log("%s recorded nothing, so wrote nothing; the processes it "
				  "started write theirs to %s (%%p: their pid)", me, theirs.file);
		} else if (say)
			agent_log("%s recorded nothing, so wrote nothing", me);
		return;
	}
	diag_clear(&d);
	if (agent_write_profile_path(p, o, path, sizeof(path), &d) < 0)
		agent_log("%s", d.msg);
	else if (say)
		agent_log("%s: profile in %s (%lld %s)", me, path,
			  (long long)profile_total(p, 0),
			  p->nvalues ? p->value_types[0].type : "samples");
}
