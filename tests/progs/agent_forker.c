/* agent_forker: a program that forks, execs and uses SIGPROF itself while
 * the agent profiles it, for tests/integration/agent_fork.sh.
 *
 *   LD_PRELOAD=libnprof.so agent_forker --event cpu|itimer|wall [--interval 1ms]
 *                                       [--children N] [--file PATTERN]
 *
 * With a session of EVENT running (nprof_start through dlsym, so nothing
 * links the agent), the main thread does each scenario and prints one
 * line of numbers on stdout; the test holds them to the ground truth the
 * program measured itself (CPU time burned, process CPU for its own
 * timer). The SIGPROF scenarios come first, with the main thread alone;
 * three worker threads burn CPU (at nice 10) during fork and exec. The
 * first line is "pid N cpu_timer_granularity_us=N", the last "done".
 *
 *   fork: N children forked at once from a session. Each must see no
 *     session ("idle", nprof_stop -ENOENT), start one of its own, get
 *     samples and stop it, and exit(0) normally; its exit status names
 *     what failed (below), SIGALRM after 20 s means it hung.
 *     "fork children=N ok=N first_failure=CODE parent_samples=N parent_expect=N"
 *     (the parent's samples after the forks, against the CPU the main
 *     thread burned then)
 *   exec: a child execs this program (--exec-child), which must find the
 *     agent loaded (LD_PRELOAD passed on) and profile itself; another
 *     execs /bin/sh -c 'exit 7'.
 *     "exec self_status=S self_line=... sh_status=S parent_samples=N parent_expect=N"
 *   selfexec: 10 children each start a session of their own (100 us) and,
 *     while it runs, exec the program again (no fork in between); each
 *     must exit 0 (a SIGPROF meeting the new program at its default
 *     action would end it: status 1027). Then an exec that fails
 *     (execvp of a name that is nowhere) during the parent's session,
 *     which must go on sampling.
 *     "selfexec children=N ok=N first_failure=CODE failed_exec_errno=E after_samples=N
 *      after_expect=N"
 *   sigprof during: with the session running, the program installs its own
 *     SIGPROF handler with sigaction and sends itself SIGPROF three ways,
 *     one after the other (app_round): setitimer(ITIMER_PROF), a
 *     timer_create timer on its process CPU clock, and raise() 50 times.
 *     Then it replaces the handler with signal() and raises 50 more.
 *     "sigprof when=during itimer=N itimer_sent=N timer=N timer_expect=N raised=N
 *      strays=N plain=N samples=N expect=N consistent=0|1"
 *     itimer: the ticks its handler got of the itimer_sent the kernel
 *     sent; timer: the expirations it got, and the process CPU time over
 *     the period; raised and plain: of 50; strays: SIGPROFs
 *     its handler got that were not its own (the agent's: must be 0);
 *     consistent: sigaction and signal handed back its own previous
 *     handler every time.
 *   sigprof before: the handler set before the session starts; the same
 *     round in a session and again after it stops (after_ fields).
 *     "sigprof when=before itimer=N ... strays=N after_itimer=N ... after_strays=N
 *      samples=N expect=N consistent=0|1"
 *   sigprof storm: in a session, the program raises SIGPROF 5 times every
 *     100 us of CPU (raised: those its handler got, of sent); the agent
 *     must keep sampling.
 *     "sigprof when=storm raised=N sent=N samples=N expect=N"
 *
 * The session writes FILE (default none) when stopped at the end: the
 * children must not write theirs (%p would name them).
 *
 * expect, for cpu: the whole intervals of CPU burned after the first
 * (one sample each); itimer: the same in units of the kernel's CPU-timer
 * granularity when coarser (measured here, as agent_cycles does); wall:
 * the intervals of wall time. Burned CPU and wall time are summed in small
 * steps, jumps of the thread's clocks left out (burn_ns). A watchdog
 * alarm ends a hung run (SIGALRM). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

/* A child's exit status: what went wrong first. */
enum {
	CHILD_OK = 0,
	CHILD_INHERITED = 11,	  /* nprof_status not "idle" after fork */
	CHILD_STOP_NOT_ENOENT = 12, /* nprof_stop did not say no session runs */
	CHILD_START_FAILED = 13,  /* its own session would not start */
	CHILD_NO_SAMPLES = 14,	  /* its own session got no sample */
	CHILD_STOP_FAILED = 15,	  /* its own session would not stop */
};

static int (*api_start)(const char *);
static int (*api_stop)(void);
static int (*api_status)(char *, size_t);
static const char *(*api_last_error)(void);

static _Atomic int stop;
static __thread volatile uint64_t sink;
static _Atomic unsigned long granularity_ticks;
static const char *event = "cpu", *interval = "1ms";
static uint64_t interval_ns = 1000000, period_ns = 1000000;
/* The program's own ITIMER_PROF: 10 ms, or three of the kernel's
 * CPU-timer ticks when longer, so that between two reads of getitimer
 * (app_round) its time left can only go up when it fired. */
static uint64_t app_period_ns = 10000000;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The CPU and wall time the calling thread's burning really ran for:
 * the sums of the small steps burn_ns measures, a step longer than
 * STEP_MAX_NS left out. Such a step is the thread's clock jumping while
 * it did not run: on a virtual machine whose host took the vCPU away
 * (steal time, charged to the running thread), or a stop. No timer or
 * perf event of the thread could tick through it, so it is no ground
 * truth for samples. */
#define STEP_MAX_NS 2000000
static __thread uint64_t ran_cpu_ns, ran_wall_ns;

NOINLINE static void burn_ns(uint64_t ns)
{
	uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), c = t0, w = clock_ns(CLOCK_MONOTONIC);
	uint64_t x = t0 | 1, n = work_chunk(20000);

	do {
		uint64_t c1, w1;

		for (uint64_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		sink += x;
		c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		w1 = clock_ns(CLOCK_MONOTONIC);
		ran_cpu_ns += c1 - c < STEP_MAX_NS ? c1 - c : 0;
		ran_wall_ns += w1 - w < STEP_MAX_NS ? w1 - w : 0;
		c = c1;
		w = w1;
	} while (c - t0 < ns);
	KEEP_FRAME();
}

static bool find_api(void)
{
	api_start = (int (*)(const char *))dlsym(RTLD_DEFAULT, "nprof_start");
	api_stop = (int (*)(void))dlsym(RTLD_DEFAULT, "nprof_stop");
	api_status = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "nprof_status");
	api_last_error = (const char *(*)(void))dlsym(RTLD_DEFAULT, "nprof_last_error");
	return api_start && api_stop && api_status && api_last_error;
}

/* The agent's samples so far, in intervals: the time they stand for
 * (nprof_status's weight_ns) over the interval. Not the count of
 * signals: a CPU timer that expires again while its signal is pending
 * (a thread waiting for a CPU on a busy machine) sends one signal for
 * both, and the sample weighs both. */
static uint64_t samples_now(void)
{
	char buf[256];
	const char *p;

	if (api_status(buf, sizeof(buf)) < 0 || !(p = strstr(buf, "weight_ns=")))
		return 0;
	return strtoull(p + 10, NULL, 10) / interval_ns;
}

static int start_session(const char *file)
{
	char opts[512];

	snprintf(opts, sizeof(opts), "event=%s,interval=%s%s%s", event, interval,
		 file ? ",file=" : "", file ? file : "");
	if (api_start(opts) < 0) {
		fprintf(stderr, "agent_forker[%d]: nprof_start(%s): %s\n", (int)getpid(), opts,
			api_last_error());
		return -1;
	}
	return 0;
}

/* What the agent should sample of the main thread's burning between
 * mark and now (see the header), added to *expect. */
struct mark {
	uint64_t cpu, wall;
};

static struct mark mark_now(void)
{
	return (struct mark){ ran_cpu_ns, ran_wall_ns };
}

static void count_expect(struct mark m, double *expect)
{
	uint64_t b = ran_cpu_ns - m.cpu;

	if (!strcmp(event, "wall"))
		*expect += (double)(ran_wall_ns - m.wall) / (double)interval_ns;
	else
		*expect += b > interval_ns ? (double)(b - interval_ns) / (double)period_ns : 0;
}

/* Burns ns of the main thread's CPU, counted in *expect. */
static void burn_counted(uint64_t ns, double *expect)
{
	struct mark m = mark_now();

	burn_ns(ns);
	count_expect(m, expect);
}

static void *worker(void *arg)
{
	(void)arg;
	setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
	while (!atomic_load(&stop))
		burn_ns(2000000);
	return NULL;
}

static void on_granularity_tick(int sig)
{
	(void)sig;
	atomic_fetch_add(&granularity_ticks, 1);
}

/* How far apart a thread CPU-time timer can fire (the scheduler tick):
 * see agent_cycles.c. Measured before the agent's handler is installed. */
static uint64_t cpu_timer_granularity(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR2 };
	struct itimerspec its = { { 0, 100000 }, { 0, 100000 } };
	unsigned long n;
	timer_t t;

	ev._sigev_un._tid = gettid();
	signal(SIGUSR2, on_granularity_tick);
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t) < 0)
		return 0;
	timer_settime(t, 0, &its, NULL);
	burn_ns(40000000);
	timer_delete(t);
	signal(SIGUSR2, SIG_DFL);
	n = atomic_load(&granularity_ticks);
	return n ? 40000000ull / n : 0;
}

/* --- fork -------------------------------------------------------------- */

static int child_after_fork(void)
{
	char buf[256];
	uint64_t n;

	alarm(20);
	burn_ns(5000000);
	if (api_status(buf, sizeof(buf)) < 0 || strcmp(buf, "idle"))
		return CHILD_INHERITED;
	if (api_stop() != -ENOENT)
		return CHILD_STOP_NOT_ENOENT;
	if (start_session(NULL) < 0)
		return CHILD_START_FAILED;
	burn_ns(50000000);
	n = samples_now();
	if (api_stop() < 0)
		return CHILD_STOP_FAILED;
	return n ? CHILD_OK : CHILD_NO_SAMPLES;
}

static void scenario_fork(int children)
{
	int ok = 0, first = 0;
	double expect = 0;
	pid_t pids[64];
	uint64_t n0;

	if (children > 64)
		children = 64;
	for (int i = 0; i < children; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			exit(child_after_fork()); /* exit, not _exit: destructors run */
		if (pids[i] < 0 && !first)
			first = 100 + errno;
	}
	n0 = samples_now();
	burn_counted(200000000, &expect);
	for (int i = 0; i < children; i++) {
		int st;

		if (pids[i] <= 0 || waitpid(pids[i], &st, 0) < 0)
			continue;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
		else if (!first)
			first = WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
	}
	printf("fork children=%d ok=%d first_failure=%d parent_samples=%llu parent_expect=%.0f\n",
	       children, ok, first, (unsigned long long)(samples_now() - n0), expect);
	fflush(stdout);
}

/* --- exec ---------------------------------------------------------------- */

/* Runs argv in a child with its stdout into line; its exit status. */
static int run_exec(char *const argv[], char *line, size_t len)
{
	int p[2], st = -1;
	ssize_t n = 0, r;
	pid_t pid;

	line[0] = '\0';
	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		close(p[0]);
		close(p[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	while (pid > 0 && (size_t)n < len - 1 &&
	       ((r = read(p[0], line + n, len - 1 - (size_t)n)) > 0 || (r < 0 && errno == EINTR)))
		n += r > 0 ? r : 0;
	close(p[0]);
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}

static int exec_child(void)
{
	uint64_t n;

	alarm(20);
	if (!find_api()) {
		printf("exec-child agent=0\n");
		return 1;
	}
	if (start_session(NULL) < 0)
		return 2;
	burn_ns(50000000);
	n = samples_now();
	if (api_stop() < 0)
		return 3;
	printf("exec-child agent=1 samples=%llu\n", (unsigned long long)n);
	return n ? 0 : 4;
}

static void scenario_exec(const char *self)
{
	char self_line[256], sh_line[64], *self_argv[] = { (char *)self, "--exec-child", "--event",
							   (char *)event, NULL };
	char *sh_argv[] = { "/bin/sh", "-c", "exit 7", NULL };
	double expect = 0;
	uint64_t n0 = samples_now();
	int self_st = run_exec(self_argv, self_line, sizeof(self_line));
	int sh_st = run_exec(sh_argv, sh_line, sizeof(sh_line));

	burn_counted(100000000, &expect);
	for (char *c = self_line; *c; c++)
		if (*c == ' ')
			*c = '_';
	printf("exec self_status=%d self_line=%s sh_status=%d parent_samples=%llu parent_expect=%.0f\n",
	       self_st, self_line[0] ? self_line : "-", sh_st,
	       (unsigned long long)(samples_now() - n0), expect);
	fflush(stdout);
}

/* --- exec in a process being profiled ------------------------------------ */

/* A child that starts a session of its own at 100 us, burns, and execs
 * the program again while it runs (no fork in between): a SIGPROF of the
 * session must not reach the new program. */
static int selfexec_child(const char *self)
{
	char *argv[] = { (char *)self, "--exec-child", "--event", (char *)event, NULL };
	char opts[128];
	int null = open("/dev/null", O_WRONLY);

	alarm(20);
	snprintf(opts, sizeof(opts), "event=%s,interval=100us", event);
	if (api_start(opts) < 0)
		return CHILD_START_FAILED;
	burn_ns(3000000);
	if (null >= 0)
		dup2(null, STDOUT_FILENO);
	execv(self, argv);
	return 127;
}

static void scenario_selfexec(const char *self, int children)
{
	char *missing[] = { "nprof-test-no-such-program", NULL };
	int ok = 0, first = 0, err;
	double expect = 0;
	uint64_t n0;

	for (int i = 0; i < children; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0)
			_exit(selfexec_child(self));
		if (pid < 0 || waitpid(pid, &st, 0) < 0)
			continue;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
		else if (!first)
			first = WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
	}
	/* An exec that fails (a PATH search that finds nothing) during the
	 * parent's session: the session goes on sampling. */
	n0 = samples_now();
	err = execvp(missing[0], missing) < 0 ? errno : 0;
	burn_counted(100000000, &expect);
	printf("selfexec children=%d ok=%d first_failure=%d failed_exec_errno=%d after_samples=%llu "
	       "after_expect=%.0f\n",
	       children, ok, first, err, (unsigned long long)(samples_now() - n0), expect);
	fflush(stdout);
}

/* --- the program's own SIGPROF ---------------------------------------------- */

/* What the program's SA_SIGINFO handler saw, by source. */
static struct {
	_Atomic unsigned long itimer;	/* setitimer(ITIMER_PROF): SI_KERNEL */
	_Atomic unsigned long timer;	/* its timer_create timer: expirations */
	_Atomic unsigned long raised;	/* raise(SIGPROF): SI_TKILL from itself */
	_Atomic unsigned long plain;	/* calls of the signal() handler */
	_Atomic unsigned long strays;	/* anything else: the agent's */
} app;
static int app_cookie;

static void on_app_prof(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code == SI_KERNEL)
		atomic_fetch_add(&app.itimer, 1);
	else if (si->si_code == SI_TIMER && si->si_value.sival_ptr == &app_cookie)
		atomic_fetch_add(&app.timer, 1 + (unsigned long)(si->si_overrun > 0 ? si->si_overrun : 0));
	else if (si->si_code == SI_TKILL && si->si_pid == getpid())
		atomic_fetch_add(&app.raised, 1);
	else
		atomic_fetch_add(&app.strays, 1);
}

static void on_app_prof_plain(int sig)
{
	(void)sig;
	atomic_fetch_add(&app.plain, 1);
}

/* One round of the program's own SIGPROF, each source alone (two
 * process-wide SIGPROFs pending at once would merge):
 *   - setitimer(ITIMER_PROF, app_period_ns) over 150 ms of CPU. Its
 *     clock is the tick-sampled user+system time, which under load
 *     strays far from the precise CPU time, so what it sent is counted
 *     instead: getitimer's time left, read every 250 us of CPU, goes up
 *     by a period each time the kernel sends the signal (and down by at
 *     most a tick, which is shorter than the period, in between).
 *   - timer_create(CLOCK_PROCESS_CPUTIME_ID) sending SIGPROF, 5 ms,
 *     over 150 ms of CPU: expirations (overruns included) are exact.
 *   - raise(SIGPROF) 50 times, a millisecond of CPU apart: the handler
 *     runs before each raise returns.
 * The agent's samples of the main thread go to *expect. */
struct app_round {
	unsigned long itimer, itimer_sent, timer, raised, strays;
	double timer_expect;
};

static uint64_t itimer_left(void)
{
	struct itimerval now;

	getitimer(ITIMER_PROF, &now);
	return (uint64_t)now.it_value.tv_sec * 1000000000ull + (uint64_t)now.it_value.tv_usec * 1000ull;
}

/* A SIGPROF the timer sent that no thread has taken yet (a process-wide
 * signal waits for a thread that runs, which on a busy machine can take
 * a while, its expirations adding up in it) reaches the handler before
 * the count is read: at most 2 s of waiting. */
static void settle_sigprof(void)
{
	sigset_t pending;

	for (int i = 0; i < 2000; i++) {
		if (sigpending(&pending) < 0 || !sigismember(&pending, SIGPROF))
			return;
		usleep(1000);
	}
}

static void app_round(struct app_round *r, double *expect)
{
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGPROF };
	struct itimerspec its = { { 0, 5000000 }, { 0, 5000000 } }, off = { { 0, 0 }, { 0, 0 } };
	struct itimerval it, it_off = { { 0, 0 }, { 0, 0 } };
	unsigned long s0 = atomic_load(&app.strays), n0;
	struct mark m;
	uint64_t p0;
	timer_t t;

	memset(r, 0, sizeof(*r));
	it.it_interval.tv_sec = 0;
	it.it_interval.tv_usec = (suseconds_t)(app_period_ns / 1000);
	it.it_value = it.it_interval;
	n0 = atomic_load(&app.itimer);
	m = mark_now();
	setitimer(ITIMER_PROF, &it, NULL);
	/* The kernel adds a tick to the first expiry: start from what it set. */
	for (uint64_t left, last = itimer_left(); ran_cpu_ns - m.cpu < 150000000; last = left) {
		burn_ns(250000);
		left = itimer_left();
		r->itimer_sent += left > last;
	}
	setitimer(ITIMER_PROF, &it_off, NULL);
	count_expect(m, expect);
	r->itimer = atomic_load(&app.itimer) - n0;

	ev.sigev_value.sival_ptr = &app_cookie;
	if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &t) == 0) {
		n0 = atomic_load(&app.timer);
		p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
		timer_settime(t, 0, &its, NULL);
		burn_counted(150000000, expect);
		/* Counted with the timer still armed: what becomes of the
		 * pending signal of a timer that is disarmed is unspecified
		 * (POSIX), and Linux may drop it with the expirations it
		 * holds, several under load (22 of 30 seen in CI). At most
		 * one comes between the settling and the reading: within the
		 * bar's margin. */
		settle_sigprof();
		r->timer_expect = (double)(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - p0) / 5e6;
		r->timer = atomic_load(&app.timer) - n0;
		timer_settime(t, 0, &off, NULL);
		timer_delete(t);
	}

	n0 = atomic_load(&app.raised);
	for (int i = 0; i < 50; i++) {
		raise(SIGPROF);
		burn_counted(1000000, expect);
	}
	r->raised = atomic_load(&app.raised) - n0;
	r->strays = atomic_load(&app.strays) - s0;
}

static void print_round(const char *prefix, const struct app_round *r)
{
	printf(" %sitimer=%lu %sitimer_sent=%lu %stimer=%lu %stimer_expect=%.0f %sraised=%lu "
	       "%sstrays=%lu",
	       prefix, r->itimer, prefix, r->itimer_sent, prefix, r->timer, prefix,
	       r->timer_expect, prefix, r->raised, prefix, r->strays);
}

static bool same_handler(const struct sigaction *a, void *fn)
{
	return (void *)a->sa_handler == fn;
}

static void app_handler(struct sigaction *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sa_sigaction = on_app_prof;
	sa->sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa->sa_mask);
}

/* raise(SIGPROF) n times to the signal() handler; the calls it got. */
static unsigned long raise_plain(unsigned n, double *expect)
{
	unsigned long p0 = atomic_load(&app.plain);

	for (unsigned i = 0; i < n; i++) {
		raise(SIGPROF);
		burn_counted(1000000, expect);
	}
	return atomic_load(&app.plain) - p0;
}

static void scenario_sigprof_during(void)
{
	struct sigaction sa, old, cur;
	struct app_round r;
	double expect = 0;
	unsigned long plain;
	uint64_t n0;
	bool consistent = true;
	__sighandler_t prev;

	if (start_session(NULL) < 0)
		return;
	n0 = samples_now();
	app_handler(&sa);
	/* The program had no SIGPROF handler: the default is what it gets back. */
	consistent &= sigaction(SIGPROF, &sa, &old) == 0 && old.sa_handler == SIG_DFL;
	consistent &= sigaction(SIGPROF, NULL, &cur) == 0 && same_handler(&cur, (void *)on_app_prof);
	app_round(&r, &expect);
	prev = signal(SIGPROF, on_app_prof_plain);
	consistent &= prev == (__sighandler_t)(void *)on_app_prof;
	plain = raise_plain(50, &expect);
	consistent &= signal(SIGPROF, SIG_DFL) == on_app_prof_plain;
	consistent &= sigaction(SIGPROF, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL;
	printf("sigprof when=during");
	print_round("", &r);
	printf(" plain=%lu samples=%llu expect=%.0f consistent=%d\n", plain,
	       (unsigned long long)(samples_now() - n0), expect, consistent);
	fflush(stdout);
	api_stop();
}

/* The program raising SIGPROF at itself all the time, the agent's
 * signals to the same thread meanwhile: a SIGPROF sent while another is
 * pending is dropped, whichever came first, and the agent must not stop
 * sampling the thread for having lost one (hot/cpu_fds.h). 200 ms of
 * CPU, 5 raises every 100 us. */
static void scenario_sigprof_storm(void)
{
	struct sigaction sa;
	unsigned long r0 = atomic_load(&app.raised), sent = 0;
	struct mark m;
	double expect = 0;
	uint64_t n0;

	app_handler(&sa);
	sigaction(SIGPROF, &sa, NULL);
	if (start_session(NULL) < 0)
		return;
	n0 = samples_now();
	m = mark_now();
	while (ran_cpu_ns - m.cpu < 200000000) {
		for (int i = 0; i < 5; i++, sent++)
			raise(SIGPROF);
		burn_ns(100000);
	}
	count_expect(m, &expect);
	printf("sigprof when=storm raised=%lu sent=%lu samples=%llu expect=%.0f\n",
	       atomic_load(&app.raised) - r0, sent, (unsigned long long)(samples_now() - n0), expect);
	fflush(stdout);
	api_stop();
	signal(SIGPROF, SIG_DFL);
}

static void scenario_sigprof_before(void)
{
	struct sigaction sa, cur;
	struct app_round r, after;
	double expect = 0, unused = 0;
	uint64_t n0, n1;
	bool consistent = true;

	app_handler(&sa);
	sigaction(SIGPROF, &sa, NULL);
	if (start_session(NULL) < 0)
		return;
	n0 = samples_now();
	/* The agent's handler is in; the program still sees its own. */
	consistent &= sigaction(SIGPROF, NULL, &cur) == 0 && same_handler(&cur, (void *)on_app_prof);
	app_round(&r, &expect);
	n1 = samples_now();
	api_stop();
	app_round(&after, &unused);
	consistent &= sigaction(SIGPROF, NULL, &cur) == 0 && same_handler(&cur, (void *)on_app_prof);
	signal(SIGPROF, SIG_DFL);
	printf("sigprof when=before");
	print_round("", &r);
	print_round("after_", &after);
	printf(" samples=%llu expect=%.0f consistent=%d\n", (unsigned long long)(n1 - n0), expect,
	       consistent);
	fflush(stdout);
}

static uint64_t parse_ns(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	return (uint64_t)(v * (!strcmp(end, "us") ? 1e3 : !strcmp(end, "ms") ? 1e6 :
			       !strcmp(end, "s") ? 1e9 : 1));
}

int main(int argc, char **argv)
{
	const char *file = NULL;
	bool child = false;
	int children = 16;
	pthread_t w[3];
	uint64_t g;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--exec-child"))
			child = true;
		else if (i + 1 < argc && !strcmp(argv[i], "--event"))
			event = argv[++i];
		else if (i + 1 < argc && !strcmp(argv[i], "--interval"))
			interval = argv[++i];
		else if (i + 1 < argc && !strcmp(argv[i], "--children"))
			children = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--file"))
			file = argv[++i];
	}
	if (child)
		return exec_child();
	if (!find_api()) {
		fprintf(stderr, "agent_forker: nprof_start is not in the process; run it with "
				"LD_PRELOAD=libnprof.so\n");
		return 2;
	}
	alarm(120);
	interval_ns = period_ns = parse_ns(interval);
	g = cpu_timer_granularity();
	if (!strcmp(event, "itimer") && g > period_ns)
		period_ns = g;
	if (3 * g > app_period_ns)
		app_period_ns = 3 * g;
	printf("pid %d cpu_timer_granularity_us=%llu\n", (int)getpid(),
	       (unsigned long long)(g / 1000));
	/* The program's timer alone: with more threads burning, the kernel
	 * merges ITIMER_PROF expirations, and its ticks no longer measure
	 * the CPU time. */
	scenario_sigprof_before();
	scenario_sigprof_during();
	scenario_sigprof_storm();

	for (int i = 0; i < 3; i++)
		pthread_create(&w[i], NULL, worker, NULL);
	if (start_session(file) < 0)
		return 1;
	scenario_fork(children);
	scenario_exec(argv[0]);
	scenario_selfexec(argv[0], 10);
	if (api_stop() < 0)
		fprintf(stderr, "agent_forker: nprof_stop: %s\n", api_last_error());
	atomic_store(&stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(w[i], NULL);
	printf("done\n");
	return 0;
}
