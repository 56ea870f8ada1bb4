/* jobs: a child aimed at a process (its target, a pidfd) runs only if
 * that process still runs right before the child's exec: with a target
 * that has exited and been reaped, the command is not run at all, the
 * child exits JOBS_TARGET_GONE saying so on stderr; with a live one it
 * runs, and the pidfd it was given is not left open in it. A child that
 * cannot start says why on stderr: the program it could not run, or the
 * step of its set-up that failed, with errno's text. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "daemon/jobs/jobs.h"
#include "test.h"

static char dir[] = "/tmp/nprof-jobs-test.XXXXXX";

/* A child that runs until killed (pause), or ends at once, with a pidfd. */
static pid_t child(bool live, int *ret_pidfd)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (live)
			pause();
		_exit(0);
	}
	*ret_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return pid;
}

/* Runs sh -c script as this process's user, aimed at target. */
static int run(const char *script, int target, char *err, size_t len)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
	struct job_spec s = { .argv = argv, .uid = getuid(), .gid = getgid(), .stdin_fd = -1,
			      .stdout_fd = -1, .deadline_ns = clock_ns(CLOCK_MONOTONIC) + 20000000000ull,
			      .has_target = true, .target_pidfd = target };

	return jobs_run(&s, err, len);
}

/* Runs argv (no target), fd3 handed as descriptor 3 when >= 0. */
static int run_argv(char **argv, int fd3, char *err, size_t len)
{
	struct job_spec s = { .argv = argv, .uid = getuid(), .gid = getgid(), .stdin_fd = -1,
			      .stdout_fd = -1, .deadline_ns = clock_ns(CLOCK_MONOTONIC) + 20000000000ull,
			      .has_fd3 = fd3 >= 0, .fd3 = fd3 };

	return jobs_run(&s, err, len);
}

int main(void)
{
	char err[4096], script[1024], mark[128], fds[128];
	int pidfd, r;
	pid_t pid;
	FILE *f;

	if (!mkdtemp(dir))
		return 1;
	snprintf(mark, sizeof(mark), "%s/ran", dir);
	snprintf(fds, sizeof(fds), "%s/fds", dir);

	pid = child(false, &pidfd);
	CHECK(pidfd >= 0 && waitpid(pid, NULL, 0) == pid, "a target that exited, reaped: its pid is "
	      "free for another process");
	snprintf(script, sizeof(script), "echo %d >%s", (int)pid, mark);
	r = run(script, pidfd, err, sizeof(err));
	CHECK(r >= 0 && WIFEXITED(r) && WEXITSTATUS(r) == JOBS_TARGET_GONE,
	      "the job exits %d (JOBS_TARGET_GONE), status 0x%x", JOBS_TARGET_GONE, r);
	CHECK(access(mark, F_OK) < 0, "and its command did not run");
	CHECK(strstr(err, "exited before its command started") && strstr(err, "nothing was run"),
	      "saying why on stderr: %s", err);
	close(pidfd);

	pid = child(true, &pidfd);
	snprintf(script, sizeof(script), "echo %d >%s; ls -l /proc/$$/fd/ >%s", (int)pid, mark, fds);
	r = run(script, pidfd, err, sizeof(err));
	CHECK(r >= 0 && WIFEXITED(r) && WEXITSTATUS(r) == 0 && access(mark, F_OK) == 0,
	      "with the target running, the command runs (status 0x%x, %s)", r, err);
	f = fopen(fds, "r");
	if (f) {
		char line[512];
		int n = 0, pidfds = 0;

		while (fgets(line, sizeof(line), f))
			n++, pidfds += strstr(line, "pidfd") != NULL;
		fclose(f);
		CHECK(n > 3 && pidfds == 0, "the target's pidfd is not left open in it (%d pidfds in %d "
		      "lines of ls -l /proc/PID/fd)", pidfds, n);
	} else {
		CHECK(false, "the command listed its descriptors");
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pidfd);

	{
		char *missing[] = { "/nonexistent/nprof-prog", NULL };
		char *by_name[] = { "nprof-no-such-program", NULL };
		char *sh[] = { "/bin/sh", "-c", "exit 0", NULL };

		r = run_argv(missing, -1, err, sizeof(err));
		CHECK(r >= 0 && WIFEXITED(r) && WEXITSTATUS(r) == 127 &&
		      strstr(err, "cannot run /nonexistent/nprof-prog: No such file or directory"),
		      "a program that is not there: 127, named on stderr (%s)", err);
		r = run_argv(by_name, -1, err, sizeof(err));
		CHECK(r >= 0 && WIFEXITED(r) && WEXITSTATUS(r) == 127 &&
		      strstr(err, "cannot run nprof-no-such-program: No such file or directory"),
		      "a program by a name in no directory of the PATH: the same (%s)", err);
		snprintf(script, sizeof(script), "%s/noexec", dir);
		f = fopen(script, "w");
		if (f)
			fclose(f);
		missing[0] = script;
		r = run_argv(missing, -1, err, sizeof(err));
		CHECK(r >= 0 && WIFEXITED(r) && WEXITSTATUS(r) == 127 &&
		      strstr(err, ": Permission denied"),
		      "a file that may not be run: its reason (%s)", err);
		r = run_argv(sh, 1000, err, sizeof(err));
		CHECK(r >= 0 && WIFEXITED(r) && WEXITSTATUS(r) == 126 &&
		      strstr(err, "nprofd could not start the job: handing it descriptor 3: "
				  "Bad file descriptor"),
		      "a step of the set-up that fails: 126, the step and errno's text (%s)", err);
	}

	snprintf(script, sizeof(script), "rm -rf %s", dir);
	return system(script) == 0 ? test_done() : 1;
}
