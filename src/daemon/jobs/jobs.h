/* jobs: every profiling instance and action runs as a child process
 * (nprof itself, or an operator's command), so that its crash, hang or
 * leak cannot take nprofd or another job down. A supervisor thread
 * collects each child's end, its standard error (the instance's
 * message), and ends a child that outlives its deadline.
 *
 * Children die with nprofd (PR_SET_PDEATHSIG): nothing goes on sampling,
 * tracing or holding a target stopped past the daemon. */
#ifndef NPROF_DAEMON_JOBS_H
#define NPROF_DAEMON_JOBS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct jobs;

/* How a job ended, handed to the done callback on the supervisor thread. */
struct job_end {
	int64_t id;		/* the instance */
	uid_t uid;		/* it ran as */
	int status;		/* as waitpid's */
	bool stopped;		/* jobs_stop asked it to end early */
	bool timed_out;		/* it outlived its deadline and was killed */
	const char *stderr_text;/* what it wrote on stderr (last 4 KiB) */
	uint64_t cpu_ns;	/* the CPU it used, user and system */
};

typedef void (*job_done_fn)(void *ctx, const struct job_end *end);

struct job_spec {
	int64_t id;		/* the instance, unique among running jobs */
	char *const *argv;	/* argv[0]: the program's absolute path */
	uid_t uid;		/* run as (with gid and no supplementary groups) */
	gid_t gid;
	int stdin_fd;		/* its standard input; -1: /dev/null (jobs_run only) */
	int stdout_fd;		/* its standard output; -1: /dev/null */
	bool has_fd3;		/* and fd3 as its file descriptor 3 (a second input) */
	int fd3;
	uint64_t deadline_ns;	/* CLOCK_MONOTONIC: killed past it; 0 = none */
	int stop_signal;	/* jobs_stop sends it (SIGINT: nprof keeps what it has) */
	/* The process the job acts on (its pid is in argv: nprof's PID, a
	 * command's %p), as a pidfd: the child checks that it still runs
	 * right before exec, after its change of user, and otherwise runs
	 * nothing and exits JOBS_TARGET_GONE, saying so on stderr. A pidfd
	 * names one process for good: once that one has exited, the check
	 * fails however its pid has been reused since. */
	bool has_target;
	int target_pidfd;
};

/* A job's exit status when its target had exited before its exec. */
#define JOBS_TARGET_GONE 125

struct jobs *jobs_new(job_done_fn done, void *ctx);
/* Ends every child (SIGKILL) and waits for the supervisor. */
void jobs_free(struct jobs *j);

/* Starts a child (also from a job's done callback). 0 (with its pid), or
 * -errno. */
int jobs_start(struct jobs *j, const struct job_spec *s, pid_t *ret_pid);

/* Asks job id to end early (its stop signal): 0, or -ESRCH. */
int jobs_stop(struct jobs *j, int64_t id);

/* Runs a short child to its end, on the caller's thread (a download's
 * conversion): its exit status (as waitpid's), or -errno; -ETIME when
 * it outlived s->deadline_ns and was killed. What it wrote on stderr
 * (the tail) into err. */
int jobs_run(const struct job_spec *s, char *err, size_t errlen);

/* Running children. */
unsigned jobs_running(struct jobs *j);

#endif
