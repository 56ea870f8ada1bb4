/* agent_cycles: many short agent sessions, started and stopped through the
 * C API while 16 threads work and come and go, to prove that a session
 * leaves nothing behind: no fd, no thread, no crash, no deadlock.
 *
 *   LD_PRELOAD=libnprof.so agent_cycles [--cycles N] [--events cpu,itimer,wall]
 *                                      [--interval 1ms] [--burn-us US] [--stall S]
 *   agent_cycles --serve SECONDS
 *
 * --serve: only the workers, no sessions, for SECONDS or until SIGTERM
 * ("ready" once they run): the target of cycles driven from outside
 * (nprof attach / detach, tests/integration/attach_cycles.sh). It exits 0
 * after joining them.
 *
 * The workers, at nice 10: 6 burn CPU, 4 sleep (nanosleep, a condition
 * variable with a timeout, poll), 6 churn (each creates a short-lived
 * thread that burns or sleeps a little, joins it, and again), so threads
 * exit and appear while sessions arm and disarm them. For each event, N
 * cycles of nprof_start("event=E,interval=I"); the main thread burning a
 * random 0..2*US microseconds of its own CPU time (0 included, so some
 * stops race the arming); nprof_status (the samples so far); nprof_stop.
 *
 * nprof_start and nprof_stop are looked up with dlsym(RTLD_DEFAULT), so
 * the program needs no link to the agent and runs the same behind a
 * sanitizer build of it. Output, one line each, on stdout:
 *
 *   before fds=N threads=N timers=N
 *   event cpu cycles=N errors=N samples=N expect=N with_samples=N last_with=N fds=N timers=N ...
 *   ...
 *   after fds=N threads=N timers=N
 *
 * expect is the ground truth the samples are held to: for cpu and itimer,
 * the whole intervals of CPU the main thread burned in sessions (its own
 * samples alone should reach it; the workers add more); for wall, the
 * whole intervals of wall time the sessions lasted (ticks of the
 * sampler, each signalling one thread or more). Both are summed in small
 * steps, jumps of the thread's clocks left out (burn_ns_for).
 * with_samples counts the sessions that got a sample, last_with those
 * among the last tenth (the engine still works after all the cycles
 * before). fds, threads and POSIX timers are counted in /proc/self
 * (timers=-1 where the kernel has no /proc/self/timers); "after" is taken
 * once every worker has been joined, so it should equal "before".
 * start_us and stop_us are the mean CPU time of nprof_start and
 * nprof_stop on the calling thread.
 *
 * A watchdog thread ends the program with status 3 and one line naming
 * the cycle and the call that hung when no cycle completes for S seconds
 * (default 20): a deadlock fails, it does not hang. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

#define N_BURN 6
#define N_SLEEP 4
#define N_CHURN 6
#define N_WORKERS (N_BURN + N_SLEEP + N_CHURN)

static int (*api_start)(const char *);
static int (*api_stop)(void);
static int (*api_status)(char *, size_t);
static const char *(*api_last_error)(void);

static _Atomic int stop;
static _Atomic unsigned long progress;	/* cycles completed, all events */
static _Atomic(const char *) phase = "starting";
static _Atomic int cycle_now, stall_s = 20;
static const char *event_now = "-";
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static __thread volatile uint64_t sink; /* per thread: no race for TSan to report */
static _Atomic unsigned long tick_signals;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleeps ns of wall time, through the EINTR a wall sample causes. */
static void nap_ns(uint64_t ns)
{
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + ns;
	struct timespec ts = { (time_t)(end / 1000000000ull), (long)(end % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* The CPU and wall time the calling thread's burning really ran for:
 * the sums of the small steps burn_ns_for measures, a step longer than
 * STEP_MAX_NS left out. Such a step is the thread's clock jumping while
 * it did not run: on a virtual machine whose host took the vCPU away
 * (steal time, charged to the running thread), or a stop. No timer or
 * perf event of the thread could tick through it, so it is no ground
 * truth for samples. */
#define STEP_MAX_NS 2000000
static __thread uint64_t ran_cpu_ns, ran_wall_ns;

NOINLINE static void burn_ns_for(uint64_t ns)
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

static unsigned count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - (strcmp(path, "/proc/self/fd") ? 0 : 1); /* opendir's own */
}

/* The workers run at nice 10 (and so do the threads they make): the
 * cycles on the main thread, and the agent's threads it starts, get the
 * CPU when they need it, so that a loaded machine slows the workers, not
 * the cycles being measured. */
static void lower_priority(void)
{
	setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
}

/* The POSIX timers of this process (the itimer engine makes one per
 * thread), from /proc/self/timers; -1 where the kernel has no such file. */
static int count_timers(void)
{
	FILE *f = fopen("/proc/self/timers", "r");
	char line[256];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += !strncmp(line, "ID:", 3);
	fclose(f);
	return n;
}

/* "fd -> target" lines of the open fds, to name what leaked. */
static void list_fds(char *buf, size_t len)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	size_t off = 0;

	buf[0] = '\0';
	if (!d)
		return;
	while ((de = readdir(d)) && off + 300 < len) {
		char path[64], target[256];
		ssize_t n;

		if (de->d_name[0] == '.' || atoi(de->d_name) == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		off += (size_t)snprintf(buf + off, len - off, "agent_cycles:   %s -> %s\n",
					de->d_name, target);
	}
	closedir(d);
}

static void *burner(void *arg)
{
	(void)arg;
	lower_priority();
	while (!atomic_load(&stop))
		burn_ns_for(1000000);
	return NULL;
}

static void *sleeper(void *arg)
{
	int kind = (int)(intptr_t)arg % 3;

	lower_priority();
	while (!atomic_load(&stop)) {
		if (kind == 0) {
			nap_ns(700000);
		} else if (kind == 1) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 900000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_mutex_lock(&mu);
			pthread_cond_timedwait(&cv, &mu, &ts);
			pthread_mutex_unlock(&mu);
		} else {
			poll(NULL, 0, 1);
		}
	}
	return NULL;
}

static void *short_lived(void *arg)
{
	unsigned r = (unsigned)(uintptr_t)arg;

	if (r & 1)
		burn_ns_for(100000 + r % 1000 * 1000);
	else
		nap_ns(100000 + r % 1000 * 1000);
	return NULL;
}

static void *churner(void *arg)
{
	unsigned r = (unsigned)(uintptr_t)arg * 2654435761u + 1;

	lower_priority();
	while (!atomic_load(&stop)) {
		pthread_t t;

		r = r * 1103515245u + 12345u;
		if (pthread_create(&t, NULL, short_lived, (void *)(uintptr_t)(r >> 8)) == 0)
			pthread_join(t, NULL);
		else
			nap_ns(1000000);
	}
	return NULL;
}

/* Dumps where each thread is (state and kernel wait channel) to stderr. */
static void dump_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[96], stat[256] = "", wchan[64] = "";
		int fd;
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", de->d_name);
		if ((fd = open(path, O_RDONLY)) >= 0) {
			n = read(fd, stat, sizeof(stat) - 1);
			stat[n > 0 ? n : 0] = '\0';
			close(fd);
		}
		snprintf(path, sizeof(path), "/proc/self/task/%s/wchan", de->d_name);
		if ((fd = open(path, O_RDONLY)) >= 0) {
			n = read(fd, wchan, sizeof(wchan) - 1);
			wchan[n > 0 ? n : 0] = '\0';
			close(fd);
		}
		stat[strcspn(stat, "\n")] = '\0';
		fprintf(stderr, "agent_cycles:   %.60s wchan=%s\n", stat, wchan);
	}
	closedir(d);
}

/* Ends the process when no cycle completes for stall_s seconds. */
static void *watchdog(void *arg)
{
	unsigned long last = atomic_load(&progress);
	uint64_t since = clock_ns(CLOCK_MONOTONIC);

	(void)arg;
	for (;;) {
		unsigned long now = atomic_load(&progress);

		nap_ns(100000000);
		if (now != last) {
			last = now;
			since = clock_ns(CLOCK_MONOTONIC);
			continue;
		}
		if (clock_ns(CLOCK_MONOTONIC) - since < (uint64_t)atomic_load(&stall_s) * 1000000000ull)
			continue;
		printf("stall event=%s cycle=%d in=%s\n", event_now, atomic_load(&cycle_now),
		       atomic_load(&phase));
		fflush(stdout);
		fprintf(stderr,
			"agent_cycles: no progress for %d s: event %s, cycle %d, stuck in %s "
			"(a deadlock or a lost wake-up); threads:\n",
			atomic_load(&stall_s), event_now, atomic_load(&cycle_now), atomic_load(&phase));
		dump_threads();
		_exit(3);
	}
	return NULL;
}

static void on_tick(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	(void)si;
	atomic_fetch_add(&tick_signals, 1);
}

/* How far apart a thread CPU-time timer can fire: POSIX CPU timers are
 * checked at the scheduler tick, so a 1 ms itimer fires at most once a
 * tick (1 to 10 ms by the kernel's HZ), its overruns adding weight, not
 * samples. Measured on this thread with a 100 us timer over 40 ms of CPU,
 * before the agent is used (SIGUSR2, not SIGPROF). */
static uint64_t cpu_timer_granularity(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR2 };
	struct itimerspec its = { { 0, 100000 }, { 0, 100000 } };
	struct sigaction sa = { .sa_sigaction = on_tick, .sa_flags = SA_SIGINFO | SA_RESTART };
	unsigned long n;
	timer_t t;

	ev._sigev_un._tid = gettid();
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR2, &sa, NULL) < 0 ||
	    timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t) < 0)
		return 0;
	timer_settime(t, 0, &its, NULL);
	burn_ns_for(40000000);
	timer_delete(t);
	n = atomic_load(&tick_signals);
	return n ? 40000000ull / n : 0;
}

static uint64_t parse_ns(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (!strcmp(end, "us"))
		return (uint64_t)(v * 1e3);
	if (!strcmp(end, "ms"))
		return (uint64_t)(v * 1e6);
	if (!strcmp(end, "s"))
		return (uint64_t)(v * 1e9);
	return (uint64_t)v;
}

static uint64_t status_samples(void)
{
	char buf[256];
	const char *p;

	if (api_status(buf, sizeof(buf)) < 0 || !(p = strstr(buf, "samples=")))
		return 0;
	return strtoull(p + 8, NULL, 10);
}

/* N cycles of one event; prints its line. 0, or 1 when any call failed. */
static int run_event(const char *event, int cycles, const char *interval, uint64_t burn_ns,
		     uint64_t granularity)
{
	uint64_t samples = 0, t0 = clock_ns(CLOCK_MONOTONIC), t_start = 0, t_stop = 0;
	uint64_t interval_ns = parse_ns(interval), period = interval_ns;
	double expect = 0;
	unsigned errors = 0, with = 0, last_with = 0, r = 12345;
	bool wall = !strcmp(event, "wall");
	char opts[128];

	if (!strcmp(event, "itimer") && granularity > period)
		period = granularity;
	event_now = event;
	snprintf(opts, sizeof(opts), "event=%s,interval=%s", event, interval);
	for (int i = 0; i < cycles; i++) {
		uint64_t c0, w0, n;
		int err;

		atomic_store(&cycle_now, i);
		r = r * 1103515245u + 12345u;
		atomic_store(&phase, "nprof_start");
		c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		err = api_start(opts);
		t_start += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		if (err < 0) {
			if (errors++ < 5)
				fprintf(stderr, "agent_cycles: %s cycle %d: nprof_start: %s\n", event,
					i, api_last_error());
			atomic_fetch_add(&progress, 1);
			continue;
		}
		atomic_store(&phase, "the session");
		c0 = ran_cpu_ns;
		w0 = ran_wall_ns;
		if (burn_ns)
			burn_ns_for((r >> 8) % (2 * burn_ns));
		atomic_store(&phase, "nprof_status");
		if (wall) {
			expect += (double)(ran_wall_ns - w0) / (double)interval_ns;
		} else {
			/* The first sample comes after one interval of CPU. */
			uint64_t b = ran_cpu_ns - c0;

			expect += b > interval_ns ? (double)(b - interval_ns) / (double)period : 0;
		}
		n = status_samples();
		samples += n;
		with += n > 0;
		last_with += n > 0 && i >= cycles - cycles / 10;
		atomic_store(&phase, "nprof_stop");
		c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		if (api_stop() < 0 && errors++ < 5)
			fprintf(stderr, "agent_cycles: %s cycle %d: nprof_stop: %s\n", event, i,
				api_last_error());
		t_stop += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		atomic_fetch_add(&progress, 1);
	}
	atomic_store(&phase, "between events");
	printf("event %s cycles=%d errors=%u samples=%llu expect=%.0f with_samples=%u last_with=%u "
	       "fds=%u timers=%d start_us=%llu stop_us=%llu secs=%.2f\n",
	       event, cycles, errors, (unsigned long long)samples, expect, with,
	       last_with, count_dir("/proc/self/fd"), count_timers(),
	       (unsigned long long)(cycles ? t_start / 1000 / (unsigned)cycles : 0),
	       (unsigned long long)(cycles ? t_stop / 1000 / (unsigned)cycles : 0),
	       (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e9);
	fflush(stdout);
	return errors ? 1 : 0;
}
static volatile sig_atomic_t terminated;

static void on_term(int sig)
{
	(void)sig;
	terminated = 1;
}

/* --serve: the workers alone until SIGTERM or seconds have passed. */
static int serve(int seconds)
{
	pthread_t w[N_WORKERS];
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + (uint64_t)seconds * 1000000000ull;

	signal(SIGTERM, on_term);
	for (int i = 0; i < N_WORKERS; i++)
		pthread_create(&w[i], NULL,
			       i < N_BURN ? burner : i < N_BURN + N_SLEEP ? sleeper : churner,
			       (void *)(intptr_t)i);
	printf("ready\n");
	fflush(stdout);
	while (!terminated && clock_ns(CLOCK_MONOTONIC) < end)
		nap_ns(50000000);
	atomic_store(&stop, 1);
	for (int i = 0; i < N_WORKERS; i++)
		pthread_join(w[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	const char *events = "cpu,itimer,wall", *interval = "1ms";
	uint64_t burn_ns = 2000000, granularity;
	int cycles = 100, status = 0;
	pthread_t dog, w[N_WORKERS];
	unsigned fds0, threads0, fds1, threads1;
	int timers0, timers1;
	char *list, *ev, *save;
	static char fd_list[16384];

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--serve"))
			return serve(atoi(argv[i + 1]));
		if (!strcmp(argv[i], "--cycles"))
			cycles = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--events"))
			events = argv[i + 1];
		else if (!strcmp(argv[i], "--interval"))
			interval = argv[i + 1];
		else if (!strcmp(argv[i], "--burn-us"))
			burn_ns = parse_ns(argv[i + 1]) * 1000;
		else if (!strcmp(argv[i], "--stall"))
			atomic_store(&stall_s, atoi(argv[i + 1]));
	}
	api_start = (int (*)(const char *))dlsym(RTLD_DEFAULT, "nprof_start");
	api_stop = (int (*)(void))dlsym(RTLD_DEFAULT, "nprof_stop");
	api_status = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "nprof_status");
	api_last_error = (const char *(*)(void))dlsym(RTLD_DEFAULT, "nprof_last_error");
	if (!api_start || !api_stop || !api_status || !api_last_error) {
		fprintf(stderr, "agent_cycles: nprof_start is not in the process; run it with "
				"LD_PRELOAD=libnprof.so\n");
		return 2;
	}
	granularity = cpu_timer_granularity();
	printf("cpu_timer_granularity_us=%llu\n", (unsigned long long)(granularity / 1000));
	/* The watchdog counts in the baseline: it lives to the end. */
	pthread_create(&dog, NULL, watchdog, NULL);
	nap_ns(50000000); /* let the agent's control thread settle */
	fds0 = count_dir("/proc/self/fd");
	timers0 = count_timers();
	list_fds(fd_list, sizeof(fd_list));
	threads0 = count_dir("/proc/self/task");
	printf("before fds=%u threads=%u timers=%d\n", fds0, threads0, timers0);
	fflush(stdout);
	for (int i = 0; i < N_WORKERS; i++)
		pthread_create(&w[i], NULL,
			       i < N_BURN ? burner : i < N_BURN + N_SLEEP ? sleeper : churner,
			       (void *)(intptr_t)i);
	nap_ns(20000000);
	list = strdup(events);
	for (ev = strtok_r(list, ",", &save); ev; ev = strtok_r(NULL, ",", &save))
		status |= run_event(ev, cycles, interval, burn_ns, granularity);
	free(list);
	atomic_store(&phase, "joining the workers");
	atomic_store(&stop, 1);
	for (int i = 0; i < N_WORKERS; i++)
		pthread_join(w[i], NULL);
	/* A joined thread may linger in /proc/self/task for a moment after
	 * its exit wakes the joiner. */
	for (int i = 0; i < 200; i++) {
		threads1 = count_dir("/proc/self/task");
		if (threads1 <= threads0)
			break;
		nap_ns(10000000);
	}
	fds1 = count_dir("/proc/self/fd");
	timers1 = count_timers();
	printf("after fds=%u threads=%u timers=%d\n", fds1, threads1, timers1);
	fflush(stdout);
	if (fds1 != fds0) {
		fprintf(stderr, "agent_cycles: %u fds open before the sessions:\n%s", fds0, fd_list);
		list_fds(fd_list, sizeof(fd_list));
		fprintf(stderr, "agent_cycles: %u after:\n%s", fds1, fd_list);
	}
	if (threads1 != threads0) {
		fprintf(stderr, "agent_cycles: %u threads at the start, %u at the end:\n", threads0,
			threads1);
		dump_threads();
	}
	if (fds1 != fds0 || threads1 != threads0 || timers1 != timers0)
		status = 1;
	atomic_fetch_add(&progress, 1);
	return status;
}
