/* agent_preload: see agent_preload.h. */
#include "cli/agent_preload.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "cli/spawn.h"
#include "client/agent_client.h"
#include "output/pprof.h"
#include "profile/merge.h"

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* libnprof.so: $NPROF_AGENT, else beside the nprof binary, else in
 * ../lib/nprof/ from it. */
int agent_library_path(char *buf, size_t len, struct diag *d)
{
	const char *env = getenv("NPROF_AGENT");
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (env && *env) {
		if (access(env, R_OK) == 0) {
			snprintf(buf, len, "%s", env);
			return 0;
		}
		return diag_set(d, -ENOENT, "NPROF_AGENT=%s: %s", env, strerror(errno));
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return diag_set(d, -errno, "cannot find nprof's own path: %s", strerror(errno));
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	if (snprintf(buf, len, "%.3000s/libnprof.so", exe) < (int)len && access(buf, R_OK) == 0)
		return 0;
	if (snprintf(buf, len, "%.3000s/../lib/nprof/libnprof.so", exe) < (int)len &&
	    access(buf, R_OK) == 0)
		return 0;
	return diag_set(d, -ENOENT,
			"cannot find libnprof.so beside %s or in ../lib/nprof; set NPROF_AGENT=PATH",
			exe);
}

/* The profiles the command's processes wrote in dir: profile.PID.pb.gz,
 * one per process that recorded something (docs/agent.md, "Process
 * trees"; a temporary .tmpPID is not one yet). */
static bool is_profile(const char *name)
{
	size_t n = strlen(name);

	return !strncmp(name, "profile.", 8) && n > 14 && !strcmp(name + n - 6, ".pb.gz");
}

static unsigned count_profiles(const char *dir)
{
	DIR *dh = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	while (dh && (e = readdir(dh)))
		n += is_profile(e->d_name);
	if (dh)
		closedir(dh);
	return n;
}

static int read_file(const char *path, char **ret, size_t *ret_len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return -errno;
	do {
		if (len + 65536 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 262144);

			if (!nb) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* Every profile in dir, merged into *ret (and removed). -ENOENT when
 * there is none. */
static int read_profiles(const char *dir, struct profile **ret, struct diag *d)
{
	DIR *dh = opendir(dir);
	struct profile *all = NULL;
	struct dirent *e;
	unsigned n = 0;
	int err = -ENOENT;

	while (dh && (e = readdir(dh))) {
		char path[PATH_MAX];
		struct profile *p = NULL;
		char *data = NULL;
		size_t len = 0;

		if (!is_profile(e->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		err = read_file(path, &data, &len);
		if (err == 0)
			err = pprof_read(data, len, all ? &p : &all, d);
		if (err == 0 && p)
			err = profile_merge(all, p, d);
		n += err == 0;
		free(data);
		profile_free(p);
		unlink(path);
		if (err < 0)
			break;
	}
	if (dh)
		closedir(dh);
	if (err < 0) {
		profile_free(all);
		return err;
	}
	if (n > 1 && (err = profile_add_note(all, "%u processes of the command recorded "
					    "samples; this is all of them, merged", n)) < 0) {
		profile_free(all);
		return err;
	}
	*ret = all;
	return 0;
}

int agent_preload_record(char **argv, const struct record_options *o, pid_t *ret_pid,
			 struct profile **ret, struct diag *d)
{
	char agent[PATH_MAX], preload[PATH_MAX * 2], opts[512], start[PATH_MAX + 600];
	char dir[] = "/tmp/nprof-record.XXXXXX", file[sizeof(dir) + 32], *root;
	const char *old = getenv("LD_PRELOAD");
	struct spawned child = { .pid = -1, .go_fd = -1, .err_fd = -1 };
	uint64_t end = o->duration_ns ? clock_ns(CLOCK_MONOTONIC) + o->duration_ns : 0;
	int err;

	err = agent_library_path(agent, sizeof(agent), d);
	if (err < 0)
		return err;
	if (!mkdtemp(dir))
		return diag_set(d, -errno, "cannot create a directory in /tmp: %s", strerror(errno));
	snprintf(file, sizeof(file), "%s/profile.%%p.pb.gz", dir);
	/* The command may run as another user (setuid) or drop privileges:
	 * let it write there. */
	chmod(dir, 0777);
	snprintf(preload, sizeof(preload), "%s%s%s", agent, old && *old ? ":" : "",
		 old ? old : "");
	agent_client_format_options(o, o->duration_ns, opts, sizeof(opts));
	/* Every process of the command's tree is recorded and writes
	 * profile.PID.pb.gz, in silence: the command's stderr is the user's.
	 * The command is the root of the tree (docs/agent.md, "Process
	 * trees"): it writes even an empty profile, unless it started others.
	 * They are merged. */
	snprintf(start, sizeof(start), "%s,output=pprof,quiet,file=%s", opts, file);
	root = getenv("NPROF_START_ROOT");
	if (root)
		root = strdup(root);
	unsetenv("NPROF_START_ROOT");
	setenv("LD_PRELOAD", preload, 1);
	setenv("NPROF_START", start, 1);
	err = spawned_start(argv, &child, d);
	if (old)
		setenv("LD_PRELOAD", old, 1);
	else
		unsetenv("LD_PRELOAD");
	unsetenv("NPROF_START");
	if (root)
		setenv("NPROF_START_ROOT", root, 1);
	free(root);
	if (err < 0)
		goto out;
	*ret_pid = child.pid;
	spawned_release(&child);
	/* Until it exits, the duration passes and the agent has written the
	 * file, or we are stopped. */
	for (;;) {
		siginfo_t si = { 0 };

		/* WNOWAIT: spawned_finish reaps it. */
		if (waitid(P_PID, (id_t)child.pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == child.pid)
			break;
		if (o->stop && *o->stop)
			break;
		if (end && clock_ns(CLOCK_MONOTONIC) >= end && count_profiles(dir) > 0)
			break;
		if (end && clock_ns(CLOCK_MONOTONIC) >= end + 10000000000ull)
			break; /* the agent never wrote: give up on it */
		sleep_ms(20);
	}
	/* Ends it with SIGTERM: its agent writes the profile first. */
	spawned_finish(&child, 8000);
	if (child.exec_error) {
		err = diag_set(d, child.exec_error, "cannot run '%s': %s", argv[0],
			       strerror(-child.exec_error));
		goto out;
	}
	err = read_profiles(dir, ret, d);
	if (err == -ENOENT)
		err = diag_set(d, err,
			       "'%s' ended without writing a profile: a program linked statically, "
			       "one that ends with _exit(), or one that recorded nothing cannot be "
			       "recorded by the agent", argv[0]);
out:
	rmdir(dir);
	return err;
}
