#include "cli/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Finds what execvp would run, so a typo fails before any recording. */
static int check_runnable(const char *cmd, struct diag *d)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	struct stat st;

	if (strchr(cmd, '/')) {
		if (access(cmd, X_OK) == 0 && stat(cmd, &st) == 0 &&
		    S_ISREG(st.st_mode))
			return 0;
		return diag_set(d, -ENOENT, "cannot run '%s': %s", cmd,
				access(cmd, F_OK) ? "no such file" :
						    "not an executable file");
	}
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		const char *end = strchrnul(p, ':');
		int n = snprintf(buf, sizeof(buf), "%.*s/%s", (int)(end - p),
				 end == p ? "." : p, cmd);

		if (n > 0 && (size_t)n < sizeof(buf) && access(buf, X_OK) == 0 &&
		    stat(buf, &st) == 0 && S_ISREG(st.st_mode))
			return 0;
		p = *end ? end + 1 : end;
	}
	return diag_set(d, -ENOENT, "cannot run '%s': not found in PATH", cmd);
}

int spawned_start(char *const argv[], struct spawned *ret, struct diag *d)
{
	int go[2] = { -1, -1 }, err[2] = { -1, -1 };
	pid_t pid;
	int r;

	r = check_runnable(argv[0], d);
	if (r < 0)
		return r;
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		r = diag_set(d, -errno, "cannot create a pipe: %s", strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		r = diag_set(d, -errno, "cannot fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		char b;
		int e;

		close(go[1]);
		close(err[0]);
		/* EOF means nprof gave up before releasing us: do not run. */
		if (read(go[0], &b, 1) != 1)
			_exit(127);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[0], argv);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(126);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	*ret = (struct spawned){ pid, go[1], err[0], 0 };
	return 0;
out:
	for (int i = 0; i < 2; i++) {
		if (go[i] >= 0)
			close(go[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	return r;
}

void spawned_release(void *arg)
{
	struct spawned *s = arg;

	if (s->go_fd >= 0) {
		if (write(s->go_fd, "g", 1) < 0) {
			/* The child died already; spawned_finish reaps it. */
		}
		close(s->go_fd);
		s->go_fd = -1;
	}
}

static int wait_with_timeout(pid_t pid, int *status, int ms)
{
	for (int waited = 0; waited <= ms; waited += 10) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid || (r < 0 && errno != EINTR))
			return r == pid ? 0 : -errno;
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	return -ETIMEDOUT;
}

int spawned_finish(struct spawned *s, int grace_ms)
{
	int status = 0;

	if (s->go_fd >= 0) {
		close(s->go_fd); /* a never-released child exits on EOF */
		s->go_fd = -1;
	}
	if (wait_with_timeout(s->pid, &status, 0) == -ETIMEDOUT) {
		kill(s->pid, SIGTERM);
		if (wait_with_timeout(s->pid, &status, grace_ms) == -ETIMEDOUT) {
			kill(s->pid, SIGKILL);
			while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
				;
		}
	}
	if (s->err_fd >= 0) {
		int e;

		/* The child is gone, so its end of the pipe is closed: a
		 * successful exec closed it (O_CLOEXEC) without writing. */
		if (read(s->err_fd, &e, sizeof(e)) == sizeof(e))
			s->exec_error = -e;
		close(s->err_fd);
		s->err_fd = -1;
	}
	return status;
}
