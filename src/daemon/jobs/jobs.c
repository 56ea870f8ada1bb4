/* jobs: child processes and the thread that watches them. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/array.h"
#include "base/clock.h"
#include "daemon/core/log.h"
#include "daemon/jobs/jobs.h"

#define STDERR_KEEP 4096

struct job {
	int64_t id;
	uid_t uid;
	pid_t pid;
	int pidfd;
	int err_fd;		/* read end of its stderr; -1 at EOF */
	char err[STDERR_KEEP];	/* the last STDERR_KEEP bytes it wrote */
	size_t err_len;
	uint64_t deadline_ns;
	int stop_signal;
	bool stopped, timed_out;
};

/* A start asked of the supervisor thread (see jobs_start). */
struct spawn_req {
	const struct job_spec *spec;
	pid_t pid;
	int err;
	bool done;
	struct spawn_req *next;
};

struct jobs {
	pthread_mutex_t lock;	/* guards list, n, quit, spawns */
	struct job **list;
	size_t n, cap;
	int wake_fd;		/* eventfd: the list changed, or a start is asked */
	bool quit;
	struct spawn_req *spawns; /* starts waiting for the supervisor */
	pthread_cond_t spawned;
	pthread_t thread;
	job_done_fn done;
	void *ctx;
};

static void spawn_asked(struct jobs *j);

static void wake(struct jobs *j)
{
	uint64_t one = 1;

	(void)!write(j->wake_fd, &one, sizeof(one));
}

/* Keeps the tail: a failing nprof says why in its last line. */
static void read_stderr(struct job *jb)
{
	char buf[4096];
	ssize_t n;

	while (jb->err_fd >= 0 && (n = read(jb->err_fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			break;
		}
		if ((size_t)n >= STDERR_KEEP) {
			memcpy(jb->err, buf + n - STDERR_KEEP, STDERR_KEEP);
			jb->err_len = STDERR_KEEP;
		} else {
			size_t keep = jb->err_len + (size_t)n > STDERR_KEEP ? STDERR_KEEP - (size_t)n
									    : jb->err_len;

			memmove(jb->err, jb->err + jb->err_len - keep, keep);
			memcpy(jb->err + keep, buf, (size_t)n);
			jb->err_len = keep + (size_t)n;
		}
	}
	close(jb->err_fd);
	jb->err_fd = -1;
}

static void finish(struct jobs *j, struct job *jb)
{
	siginfo_t si = { 0 };
	struct rusage ru;
	struct job_end end;
	char text[STDERR_KEEP + 1];

	read_stderr(jb);
	/* The system call's fifth argument, which glibc's waitid leaves
	 * out: the CPU the child (and what it waited for) used, which the
	 * schedules' budget counts. */
	if (syscall(SYS_waitid, P_PIDFD, jb->pidfd, &si, WEXITED, &ru) < 0) {
		si.si_code = CLD_KILLED, si.si_status = SIGKILL;
		memset(&ru, 0, sizeof(ru));
	}
	memcpy(text, jb->err, jb->err_len);
	text[jb->err_len] = '\0';
	end = (struct job_end){
		.id = jb->id,
		.uid = jb->uid,
		.status = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : si.si_status & 0x7f,
		.stopped = jb->stopped,
		.timed_out = jb->timed_out,
		.stderr_text = text,
		.cpu_ns = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
			  (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull,
	};
	close(jb->pidfd);
	if (jb->err_fd >= 0)
		close(jb->err_fd);
	free(jb);
	j->done(j->ctx, &end);
}

static void *supervise(void *arg)
{
	struct jobs *j = arg;

	for (;;) {
		struct pollfd fds[1 + 2 * 256];
		struct job *watched[256];
		size_t nw = 0, nf = 1;
		uint64_t now = clock_ns(CLOCK_MONOTONIC), next = UINT64_MAX;
		int timeout;

		spawn_asked(j);
		fds[0] = (struct pollfd){ .fd = j->wake_fd, .events = POLLIN };
		pthread_mutex_lock(&j->lock);
		if (j->quit) {
			/* Starts asked since: refused, never left waiting. */
			for (struct spawn_req *r = j->spawns; r; r = r->next) {
				r->err = -ESHUTDOWN;
				r->done = true;
			}
			j->spawns = NULL;
			pthread_cond_broadcast(&j->spawned);
			pthread_mutex_unlock(&j->lock);
			return NULL;
		}
		for (size_t i = 0; i < j->n && nw < 256; i++) {
			struct job *jb = j->list[i];

			if (jb->deadline_ns && now >= jb->deadline_ns && !jb->timed_out) {
				jb->timed_out = true;
				syscall(SYS_pidfd_send_signal, jb->pidfd, SIGKILL, NULL, 0);
			}
			if (jb->deadline_ns && !jb->timed_out && jb->deadline_ns < next)
				next = jb->deadline_ns;
			watched[nw++] = jb;
			fds[nf++] = (struct pollfd){ .fd = jb->pidfd, .events = POLLIN };
			fds[nf++] = (struct pollfd){ .fd = jb->err_fd, .events = POLLIN };
		}
		pthread_mutex_unlock(&j->lock);
		timeout = next == UINT64_MAX ? -1 : (int)((next - now) / 1000000 + 1);
		if (poll(fds, nf, timeout) < 0 && errno != EINTR) {
			log_error("jobs: poll: %s", strerror(errno));
			sleep(1);
			continue;
		}
		if (fds[0].revents) {
			uint64_t v;

			(void)!read(j->wake_fd, &v, sizeof(v));
		}
		for (size_t w = 0; w < nw; w++) {
			struct job *jb = watched[w];

			if (fds[2 + 2 * w].revents)
				read_stderr(jb);
			if (!fds[1 + 2 * w].revents)
				continue;
			pthread_mutex_lock(&j->lock);
			for (size_t i = 0; i < j->n; i++)
				if (j->list[i] == jb) {
					j->list[i] = j->list[--j->n];
					break;
				}
			pthread_mutex_unlock(&j->lock);
			finish(j, jb);
		}
	}
}

struct jobs *jobs_new(job_done_fn done, void *ctx)
{
	struct jobs *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->spawned, NULL);
	j->done = done;
	j->ctx = ctx;
	j->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (j->wake_fd < 0 || pthread_create(&j->thread, NULL, supervise, j) != 0) {
		if (j->wake_fd >= 0)
			close(j->wake_fd);
		free(j);
		return NULL;
	}
	return j;
}

void jobs_free(struct jobs *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	for (size_t i = 0; i < j->n; i++)
		syscall(SYS_pidfd_send_signal, j->list[i]->pidfd, SIGKILL, NULL, 0);
	j->quit = true;
	pthread_mutex_unlock(&j->lock);
	wake(j);
	pthread_join(j->thread, NULL);
	for (size_t i = 0; i < j->n; i++)
		finish(j, j->list[i]);
	close(j->wake_fd);
	free(j->list);
	pthread_cond_destroy(&j->spawned);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

/* Whether the target still runs (ESRCH: it has exited; EPERM, which a
 * child run as a user may get for a process of someone else's, says it
 * runs). Async-signal-safe. */
static bool target_runs(int pidfd)
{
	return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0 || errno != ESRCH;
}

/* Writes the NULL-terminated strings to fd in one line. Async-signal-safe. */
static void child_say(int fd, const char *const *parts)
{
	char line[512];
	size_t n = 0;

	for (; *parts; parts++)
		for (const char *c = *parts; *c && n < sizeof(line) - 1; c++)
			line[n++] = *c;
	line[n++] = '\n';
	(void)!write(fd, line, n);
}

/* errno's text: strerrordesc_np indexes a constant table (strerror may
 * translate, which is not async-signal-safe). */
static const char *child_errno_text(int err)
{
	const char *text = strerrordesc_np(err);

	return text ? text : "unknown error";
}

/* A step of the set-up before exec failed: which one and errno's text on
 * the job's stderr (fd: the pipe's end, 2 once it is there), which the
 * instance's message shows, instead of a bare status 126 (systemd's
 * EXIT_* codes, in words). */
static void __attribute__((noreturn)) child_failed(int fd, const char *step)
{
	const char *why = child_errno_text(errno);

	child_say(fd, (const char *const[]){ "nprofd could not start the job: ", step, ": ", why,
					     NULL });
	_exit(126);
}

/* In the child, between fork and exec: async-signal-safe calls only. */
static void __attribute__((noreturn))
child(const struct job_spec *s, int err_w, pid_t parent, char *const envp[])
{
	static const char gone[] = "the worker exited before its command started, so nothing was "
				   "run (its pid may name another process by now); list the "
				   "workers again\n";
	sigset_t none;
	int null = open("/dev/null", O_RDWR);
	/* Above the descriptors set up below, kept past close_range. */
	int target = s->has_target ? fcntl(s->target_pidfd, F_DUPFD_CLOEXEC, 10) : -1;
	unsigned first = s->has_fd3 ? 4u : 3u;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	if (null < 0)
		child_failed(err_w, "opening /dev/null");
	if (dup2(err_w, 2) < 0)
		child_failed(err_w, "making the pipe to nprofd its standard error");
	if (dup2(s->stdin_fd >= 0 ? s->stdin_fd : null, 0) < 0 ||
	    dup2(s->stdout_fd >= 0 ? s->stdout_fd : null, 1) < 0)
		child_failed(2, "setting up its standard input and output");
	if (s->has_target && target < 0)
		child_failed(2, "keeping the worker's pidfd");
	/* dup2 of an fd onto itself would keep its close-on-exec */
	if (s->has_fd3 && (s->fd3 == 3 ? fcntl(3, F_SETFD, 0) : dup2(s->fd3, 3)) < 0)
		child_failed(2, "handing it descriptor 3");
	if (target >= 0) {
		syscall(SYS_close_range, first, (unsigned)target - 1, 0u);
		syscall(SYS_close_range, (unsigned)target + 1, ~0u, 0u);
	} else {
		syscall(SYS_close_range, first, ~0u, 0u);
	}
	setsid();
	/* An nprofd run by a user (not root) runs its children as itself. */
	if (getuid() == 0 && (setgroups(1, &s->gid) < 0 || setresgid(s->gid, s->gid, s->gid) < 0 ||
			      setresuid(s->uid, s->uid, s->uid) < 0))
		child_failed(2, "taking the user and group it runs as");
	if (getuid() != s->uid) {
		errno = EPERM; /* an nprofd run by a user, asked to run as another */
		child_failed(2, "running as another user than nprofd's own");
	}
	/* After the change of user, which clears it; then check that the
	 * daemon did not die before it was set. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent) {
		errno = ESRCH;
		child_failed(2, "nprofd ended before it started");
	}
	/* The last thing before exec: what remains is the program's own
	 * start until it uses the pid, which the worker would have to exit
	 * and the kernel give to another process within. */
	if (target >= 0 && !target_runs(target)) {
		(void)!write(2, gone, sizeof(gone) - 1);
		_exit(JOBS_TARGET_GONE);
	}
	int exec_err = ENOENT;

	if (strchr(s->argv[0], '/')) {
		execve(s->argv[0], s->argv, envp);
		exec_err = errno;
	} else {
		/* An operator's command by name: the PATH children get. */
		static const char *const dirs[] = { "/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
						    "/usr/bin", "/sbin", "/bin" };
		char path[4096];

		for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
			size_t dl = strlen(dirs[i]), nl = strlen(s->argv[0]);

			if (dl + 1 + nl >= sizeof(path))
				continue;
			memcpy(path, dirs[i], dl);
			path[dl] = '/';
			memcpy(path + dl + 1, s->argv[0], nl + 1);
			execve(path, s->argv, envp);
			/* as execvp: a program found but refused is the
			 * reason, not the directories without it */
			if (errno != ENOENT && errno != ENOTDIR)
				exec_err = errno;
		}
	}
	child_say(2, (const char *const[]){ "cannot run ", s->argv[0], ": ",
					    child_errno_text(exec_err), NULL });
	_exit(127);
}

static char *const child_env[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", NULL
};

int jobs_run(const struct job_spec *s, char *err, size_t errlen)
{
	struct job jb = { .err_fd = -1 };
	pid_t parent = getpid(), pid;
	int pipefd[2], r = 0;
	siginfo_t si = { 0 };

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid == 0)
		child(s, pipefd[1], parent, child_env);
	close(pipefd[1]);
	if (pid < 0) {
		r = -errno;
		close(pipefd[0]);
		return r;
	}
	jb.err_fd = pipefd[0];
	jb.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	fcntl(jb.err_fd, F_SETFL, O_NONBLOCK);
	for (;;) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC);
		struct pollfd fds[2] = { { .fd = jb.pidfd, .events = POLLIN },
					 { .fd = jb.err_fd, .events = POLLIN } };

		if (now >= s->deadline_ns) {
			kill(pid, SIGKILL);
			r = -ETIME;
			break;
		}
		poll(fds, 2, (int)((s->deadline_ns - now) / 1000000 + 1));
		if (fds[1].revents)
			read_stderr(&jb);
		if (fds[0].revents)
			break;
	}
	read_stderr(&jb);
	waitid(P_PID, (id_t)pid, &si, WEXITED);
	if (jb.pidfd >= 0)
		close(jb.pidfd);
	snprintf(err, errlen, "%.*s", (int)jb.err_len, jb.err);
	if (r == 0)
		r = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : si.si_status & 0x7f;
	return r;
}

/* Forks and registers a child; on the supervisor thread (jobs_start). */
static int spawn(struct jobs *j, const struct job_spec *s, pid_t *ret_pid)
{
	char *const *envp = child_env;
	struct job *jb = calloc(1, sizeof(*jb));
	pid_t parent = getpid(), pid;
	int pipefd[2], err;

	if (!jb)
		return -ENOMEM;
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		err = -errno;
		free(jb);
		return err;
	}
	pid = fork();
	if (pid == 0)
		child(s, pipefd[1], parent, envp);
	err = -errno;
	close(pipefd[1]);
	if (pid < 0) {
		close(pipefd[0]);
		free(jb);
		return err;
	}
	fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
	*jb = (struct job){ .id = s->id, .uid = s->uid, .pid = pid, .err_fd = pipefd[0],
			    .deadline_ns = s->deadline_ns, .stop_signal = s->stop_signal };
	jb->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	pthread_mutex_lock(&j->lock);
	if (jb->pidfd < 0 || array_reserve(&j->list, &j->cap, j->n + 1, sizeof(*j->list)) < 0) {
		pthread_mutex_unlock(&j->lock);
		err = jb->pidfd < 0 ? -errno : -ENOMEM;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(pipefd[0]);
		if (jb->pidfd >= 0)
			close(jb->pidfd);
		free(jb);
		return err;
	}
	j->list[j->n++] = jb;
	pthread_mutex_unlock(&j->lock);
	*ret_pid = pid;
	return 0;
}

/* The starts asked since the last round, made here: a child's
 * PR_SET_PDEATHSIG fires when the *thread* that forked it ends, and a
 * request's thread ends with its connection; this one lives as long as
 * nprofd. */
static void spawn_asked(struct jobs *j)
{
	struct spawn_req *list, *r;

	pthread_mutex_lock(&j->lock);
	list = j->spawns;
	j->spawns = NULL;
	pthread_mutex_unlock(&j->lock);
	for (r = list; r; r = r->next)
		r->err = spawn(j, r->spec, &r->pid);
	pthread_mutex_lock(&j->lock);
	for (r = list; r; r = r->next)
		r->done = true;
	pthread_cond_broadcast(&j->spawned);
	pthread_mutex_unlock(&j->lock);
}

int jobs_start(struct jobs *j, const struct job_spec *s, pid_t *ret_pid)
{
	struct spawn_req req = { .spec = s };

	pthread_mutex_lock(&j->lock);
	if (j->quit) {
		pthread_mutex_unlock(&j->lock);
		return -ESHUTDOWN;
	}
	/* From a job's end (its done callback runs on this very thread, a
	 * group's last member starting the merge): no other thread would
	 * make the start, so it is made here and now. */
	if (pthread_equal(pthread_self(), j->thread)) {
		pthread_mutex_unlock(&j->lock);
		return spawn(j, s, ret_pid);
	}
	req.next = j->spawns;
	j->spawns = &req;
	pthread_mutex_unlock(&j->lock);
	wake(j);
	pthread_mutex_lock(&j->lock);
	while (!req.done)
		pthread_cond_wait(&j->spawned, &j->lock);
	pthread_mutex_unlock(&j->lock);
	if (req.err == 0)
		*ret_pid = req.pid;
	return req.err;
}

int jobs_stop(struct jobs *j, int64_t id)
{
	int r = -ESRCH;

	pthread_mutex_lock(&j->lock);
	for (size_t i = 0; i < j->n; i++) {
		struct job *jb = j->list[i];

		if (jb->id != id)
			continue;
		jb->stopped = true;
		syscall(SYS_pidfd_send_signal, jb->pidfd, jb->stop_signal, NULL, 0);
		r = 0;
	}
	pthread_mutex_unlock(&j->lock);
	return r;
}

unsigned jobs_running(struct jobs *j)
{
	unsigned n;

	pthread_mutex_lock(&j->lock);
	n = (unsigned)j->n;
	pthread_mutex_unlock(&j->lock);
	return n;
}
