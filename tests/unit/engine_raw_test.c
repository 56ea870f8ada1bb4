/* engine_raw_test: the recorder (perf events -> address chains) on real
 * child processes, without symbols: known busy functions placed in their
 * own sections so their exact address ranges are known, threads created
 * before and during the recording, exits, errors, and the unprivileged
 * (user `nobody`) path. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <dirent.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "engine/events.h"
#include "engine/perf_ring.h"
#include "engine/recorder.h"
#include "test.h"
#include "../progs/work.h"

#define SECTION(s) __attribute__((noinline, section(s), used))

extern const char __start_nprof_spin_a[], __stop_nprof_spin_a[];
extern const char __start_nprof_spin_b[], __stop_nprof_spin_b[];
extern const char __start_nprof_caller[], __stop_nprof_caller[];

static volatile uint64_t sink;
static void nothing(void)
{
}
/* Called around the loops so the spinners are not leaf functions, which
 * gcc builds without a frame even with -fno-omit-frame-pointer (and then
 * the frame-pointer walk skips their caller). */
static void (*volatile hook)(void) = nothing;

SECTION("nprof_spin_a") static void spin_a(uint64_t n)
{
	hook();
	for (uint64_t i = 0; i < n; i++)
		sink += i * 7;
	hook();
}

SECTION("nprof_spin_b") static void spin_b(uint64_t n)
{
	hook();
	for (uint64_t i = 0; i < n; i++)
		sink ^= i * 13;
	hook();
}

/* spin_a in chunks (work.h) until this thread has used ns of CPU time;
 * UINT64_MAX: for ever. */
SECTION("nprof_caller") static void caller_a(uint64_t ns)
{
	uint64_t t0 = work_clock_ns(CLOCK_THREAD_CPUTIME_ID), n = work_chunk(1000000);

	do
		spin_a(n);
	while (work_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0 < ns);
}

/* CPU time of process pid, or of its thread tid when tid is not 0, in ns
 * (utime + stime). */
static uint64_t cpu_time_ns_of(pid_t pid, pid_t tid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0;
	FILE *f;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
		       &ut, &st);
	fclose(f);
	return (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

static uint64_t cpu_time_ns(pid_t pid)
{
	return cpu_time_ns_of(pid, 0);
}

static bool in(uint64_t a, const char *start, const char *stop)
{
	return a >= (uintptr_t)start && a < (uintptr_t)stop;
}

/* The thread of pid named name, or 0. */
static pid_t tid_named(pid_t pid, const char *name)
{
	char path[300], comm[32];
	struct dirent *e;
	pid_t tid = 0;
	DIR *dir;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	while (dir && !tid && (e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f) && !strcmp(strtok(comm, "\n"), name))
			tid = atoi(e->d_name);
		if (f)
			fclose(f);
	}
	if (dir)
		closedir(dir);
	return tid;
}

/* CPU time of a process ended and reaped with wait4, in ns. */
static uint64_t rusage_ns(const struct rusage *ru)
{
	return (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000ull +
	       (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000ull;
}

static void *worker(void *arg)
{
	uint64_t n = work_chunk(1000000);

	pthread_setname_np(pthread_self(), arg);
	for (;;)
		spin_b(n);
	return NULL;
}

static void *sleeper(void *arg)
{
	pthread_setname_np(pthread_self(), arg);
	for (;;)
		usleep(1000);
	return NULL;
}

enum child_kind { CHILD_BUSY, CHILD_EXIT, CHILD_SLEEPY, CHILD_FAULTS };

/* Forks a target; returns once it is running its workload (and, for
 * CHILD_BUSY, its "early" thread exists). *ret_go is a pipe's write end
 * that record() writes a byte to once the recording runs: the main
 * thread of CHILD_BUSY and CHILD_EXIT waits for it before its work, so
 * that all of that work falls in the recording. */
static pid_t start_child(enum child_kind kind, int *ret_go)
{
	int fds[2], go[2];
	pid_t pid;
	char c = 0;

	*ret_go = -1;
	if (pipe(fds) < 0)
		return -1;
	if (pipe(go) < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		pthread_t t;

		close(fds[0]);
		close(go[1]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (kind == CHILD_BUSY)
			pthread_create(&t, NULL, worker, "early");
		if (kind == CHILD_SLEEPY)
			pthread_create(&t, NULL, sleeper, "napper");
		if (write(fds[1], &c, 1) < 0)
			_exit(1);
		close(fds[1]);
		if ((kind == CHILD_BUSY || kind == CHILD_EXIT) && read(go[0], &c, 1) != 1)
			_exit(1);
		if (kind == CHILD_BUSY) {
			/* A thread born mid-recording (100 ms of CPU into it),
			 * named by itself. */
			caller_a(100000000);
			pthread_create(&t, NULL, worker, "late-worker");
			caller_a(UINT64_MAX);
		}
		if (kind == CHILD_EXIT) {
			caller_a(300000000);
			_exit(0);
		}
		if (kind == CHILD_FAULTS) {
			for (;;) {
				char *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

				for (int i = 0; m != MAP_FAILED && i < (1 << 20); i += 4096)
					m[i] = 1;
				munmap(m, 1 << 20);
			}
		}
		for (;;)
			usleep(1000);
	}
	close(fds[1]);
	close(go[0]);
	if (pid > 0 && read(fds[0], &c, 1) != 1)
		pid = -1;
	close(fds[0]);
	if (pid > 0)
		*ret_go = go[1];
	else
		close(go[1]);
	return pid;
}

/* Ends the child; its CPU time into *ret_ru when not NULL. */
static void stop_child(pid_t pid, int go, struct rusage *ret_ru)
{
	struct rusage ru;

	if (go >= 0)
		close(go);
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	if (wait4(pid, NULL, 0, &ru) == pid && ret_ru)
		*ret_ru = ru;
}

/* Records pid for dur_ms; once the events are open, a byte to go (when
 * not -1) lets the child's work begin. */
/* Records pid's event for dur_ms (0: until *stop), after letting the
 * child go (go >= 0). */
static int record_until(pid_t pid, const char *event, uint64_t dur_ms, bool user_only, int go,
			volatile sig_atomic_t *stop, struct recorder **ret, struct diag *d)
{
	struct recorder_config c = {
		.pid = pid,
		.event = engine_event_find(event),
		.force_user_only = user_only,
	};
	struct recorder *r = NULL;
	int err;

	diag_clear(d);
	err = recorder_new(&c, &r, d);
	if (!err)
		err = recorder_start(r, d);
	if (!err && go >= 0 && write(go, "g", 1) != 1)
		err = diag_set(d, -errno, "cannot let the child go: %s", strerror(errno));
	if (!err)
		err = recorder_run(r, dur_ms * 1000000, stop, d);
	if (err) {
		recorder_free(r);
		return err;
	}
	*ret = r;
	return 0;
}

static int record(pid_t pid, const char *event, uint64_t dur_ms, bool user_only, int go,
		  struct recorder **ret, struct diag *d)
{
	return record_until(pid, event, dur_ms, user_only, go, NULL, ret, d);
}

/* test_busy's window: at least 1.5 s, and until the thread born in it
 * has had 50 ms of CPU (on a loaded host it is born late and runs
 * little), at most 60 s. */
struct busy_window {
	pid_t pid;
	volatile sig_atomic_t stop;
};

static void *busy_window_watch(void *arg)
{
	struct busy_window *w = arg;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

	for (;;) {
		pid_t late = tid_named(w->pid, "late-worker");
		uint64_t waited = clock_ns(CLOCK_MONOTONIC) - t0;

		if ((waited >= 1500000000ull && late > 0 &&
		     cpu_time_ns_of(w->pid, late) >= 50000000ull) || waited >= 60000000000ull)
			break;
		usleep(10000);
	}
	w->stop = 1;
	return NULL;
}

static uint64_t kind_samples(const struct recorder *r, int kind)
{
	uint64_t n = 0;

	for (size_t i = 0; i < r->chains.nchains; i++)
		if (r->chains.chains[i].kind == kind)
			n += r->chains.chains[i].samples;
	return n;
}

static uint64_t kernel_frames(const struct recorder *r)
{
	uint64_t n = 0;

	for (size_t i = 0; i < r->chains.nchains; i++)
		n += r->chains.chains[i].nkernel;
	return n;
}

static void test_events(void)
{
	char buf[256];

	CHECK(engine_event_known("cpu") && engine_event_known("cycles") &&
		      engine_event_known("context-switches"),
	      "cpu, cycles, context-switches are known events");
	CHECK(!engine_event_known("bogus") && !engine_event_known(NULL),
	      "unknown names are not");
	engine_available_events(buf, sizeof(buf));
	CHECK(!strncmp(buf, "cpu, page-faults, context-switches", 34),
	      "cpu, page-faults, context-switches available: %s", buf);
	if (engine_event_probe(engine_event_find("cycles")) < 0)
		CHECK(!strstr(buf, "cycles"), "cycles not listed without a PMU");
	engine_available_events(buf, 6);
	CHECK(!strcmp(buf, "cpu"), "a short buffer keeps whole names only");
}

struct ring_seen {
	unsigned n;
	uint64_t sum;
	bool sizes_ok;
};

static void ring_cb(void *ctx, const struct perf_event_header *h)
{
	struct ring_seen *s = ctx;
	const uint64_t *w = (const uint64_t *)(h + 1);

	s->n++;
	/* Each record is a header and (size - 8) / 8 words all equal to
	 * its ordinal. */
	for (unsigned i = 0; i < (h->size - sizeof(*h)) / 8; i++)
		if (w[i] != s->n)
			s->sizes_ok = false;
	s->sum += h->size;
}

/* The kernel's side of a ring, simulated: records of varied sizes
 * written so that some straddle the end of the data area, one of them
 * in the middle of its header. */
static void test_ring_wrap(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), data_len = 4096;
	unsigned char *mem = aligned_alloc(page, page + data_len);
	struct perf_event_mmap_page *meta = (void *)mem;
	static struct perf_ring r;
	struct ring_seen seen = { 0, 0, true };
	uint64_t head = 0, written = 0;
	unsigned ordinal = 0, total_records = 0;

	memset(mem, 0, page + data_len);
	meta->data_offset = page;
	meta->data_size = data_len;
	r.base = mem;
	r.data_len = data_len;
	r.fd = -1;
	/* Start near the end so the first rounds wrap; tail == head. */
	meta->data_tail = head = data_len - 4;
	for (int round = 0; round < 40; round++) {
		unsigned size = 8 * (2 + (unsigned)(round * 7) % 40);

		while (head + size - meta->data_tail <= data_len) {
			unsigned char rec[512];
			struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, (uint16_t)size };
			uint64_t v = ++ordinal;

			memcpy(rec, &h, sizeof(h));
			for (unsigned i = 8; i < size; i += 8)
				memcpy(rec + i, &v, 8);
			for (unsigned i = 0; i < size; i++)
				mem[page + ((head + i) & (data_len - 1))] = rec[i];
			head += size;
			written += size;
			total_records++;
			size = 8 * (2 + (size / 8 * 5 + 3) % 40);
		}
		__atomic_store_n(&meta->data_head, head, __ATOMIC_RELEASE);
		perf_ring_drain(&r, ring_cb, &seen);
	}
	CHECK(seen.n == total_records && seen.sum == written && seen.sizes_ok,
	      "ring: %u records (%llu bytes) read whole across the wrap",
	      seen.n, (unsigned long long)written);
	CHECK(meta->data_tail == head, "ring: data_tail published");
	free(mem);
}

static void test_errors(void)
{
	struct recorder *r = NULL;
	struct diag d;
	int err;

	err = record(0x3ffffff0, "cpu", 100, false, -1, &r, &d);
	CHECK(err == -ESRCH, "a PID that does not exist: -ESRCH (%d)", err);
	CHECK(strstr(d.msg, "no process with PID 1073741808") != NULL,
	      "message: %s", d.msg);

	if (engine_event_probe(engine_event_find("cycles")) >= 0) {
		printf("# skip: this host has a PMU\n");
		return;
	}
	err = record(getpid(), "cycles", 100, false, -1, &r, &d);
	CHECK(err == -ENOENT, "cycles without a PMU: -ENOENT (%d)", err);
	CHECK(strstr(d.msg, "cycles:") == d.msg &&
		      strstr(d.msg, "available events: cpu, page-faults, context-switches") &&
		      !strchr(d.msg, '\n'),
	      "one line naming the event and the available ones: %s", d.msg);
}

static void test_busy(void)
{
	int go;
	pid_t pid = start_child(CHILD_BUSY, &go), early = 0;
	struct recorder *r = NULL;
	struct diag d;
	uint64_t in_a = 0, in_b_early = 0, in_b_late = 0, caller_ok = 0,
		 total = 0, period = 0, cpu0, cpu1, main0, main1, early0, early1;
	pid_t late = 0;
	int err;

	/* The early thread names itself once it runs, which on a busy
	 * machine may be a while after the child said it started it. */
	for (int i = 0; pid > 0 && !early && i < 1000; i++) {
		early = tid_named(pid, "early");
		if (!early)
			usleep(10000);
	}
	CHECK(pid > 0 && early > 0, "busy child started, with its early thread");
	cpu0 = cpu_time_ns(pid);
	main0 = cpu_time_ns_of(pid, pid);
	early0 = cpu_time_ns_of(pid, early);
	{
		struct busy_window w = { .pid = pid };
		pthread_t watcher;

		pthread_create(&watcher, NULL, busy_window_watch, &w);
		err = record_until(pid, "cpu", 0, false, go, &w.stop, &r, &d);
		w.stop = 1;
		pthread_join(watcher, NULL);
	}
	cpu1 = cpu_time_ns(pid);
	main1 = cpu_time_ns_of(pid, pid);
	early1 = cpu_time_ns_of(pid, early);
	CHECK(err == 0, "recorded the busy child: %s", d.msg);
	if (err)
		goto out;
	for (size_t i = 0; i < r->chains.nchains; i++) {
		const struct chain *s = &r->chains.chains[i];
		const uint64_t *ips = chain_table_ips(&r->chains, s);
		uint64_t leaf;
		const char *name = recorder_thread_name(r, s->tid);

		total += s->samples;
		period += s->weight;
		if (s->n <= s->nkernel)
			continue;
		leaf = ips[s->nkernel];
		if (s->tid == pid && in(leaf, __start_nprof_spin_a, __stop_nprof_spin_a)) {
			in_a += s->samples;
			/* Frame pointers lead from spin_a to its caller. */
			if (s->n > s->nkernel + 1 &&
			    in(ips[s->nkernel + 1] - 1, __start_nprof_caller,
			       __stop_nprof_caller))
				caller_ok += s->samples;
		}
		if (in(leaf, __start_nprof_spin_b, __stop_nprof_spin_b)) {
			if (!strcmp(name, "early"))
				in_b_early += s->samples;
			if (!strcmp(name, "late-worker")) {
				in_b_late += s->samples;
				late = s->tid;
			}
		}
	}
	printf("# %zu stacks, %llu samples (a %llu, early %llu, late %llu), "
	       "%u threads opened, %u events, ring %zu KiB, lost %llu, dup %llu\n",
	       r->chains.nchains, (unsigned long long)total, (unsigned long long)in_a,
	       (unsigned long long)in_b_early, (unsigned long long)in_b_late,
	       r->stats.threads_opened, r->stats.events_opened,
	       r->stats.ring_bytes >> 10, (unsigned long long)r->stats.lost,
	       (unsigned long long)r->stats.duplicates);
	/* The other engineers' builds share these CPUs: compare with the
	 * CPU time the child really got, not with 1.5 s x 2 CPUs. */
	printf("# child used %.3f s of CPU; samples x 10 ms = %.3f s\n",
	       (cpu1 - cpu0) / 1e9, period / 1e9);
	CHECK(period == total * 10000000, "each cpu sample weighs its period");
	CHECK(period >= (cpu1 - cpu0) * 7 / 10 && period <= (cpu1 - cpu0) * 13 / 10 + 20000000,
	      "samples x period match the CPU time used, within 30%%");
	CHECK(r->stats.samples == total, "stats count every aggregated sample");
	/* Three busy threads share the CPUs: each should get about a third
	 * of the samples. Half of a fair share is the bar, whatever load the
	 * machine carries; and each thread's samples stand for its own CPU
	 * time as the kernel counted it, within the 30% above. */
	CHECK(in_a > 0 && in_a * 10000000 >= (main1 - main0) * 7 / 10 && in_a * 6 >= total,
	      "main thread samples in spin_a (%llu of %llu; %.3f s of its CPU)",
	      (unsigned long long)in_a, (unsigned long long)total, (main1 - main0) / 1e9);
	CHECK(caller_ok >= in_a * 9 / 10,
	      "spin_a's caller found by frame pointers (%llu of %llu)",
	      (unsigned long long)caller_ok, (unsigned long long)in_a);
	CHECK(in_b_early > 0 && in_b_early * 10000000 >= (early1 - early0) * 7 / 10 &&
		      in_b_early * 6 >= total,
	      "the thread present at start is sampled (%llu of %llu; %.3f s of its CPU)",
	      (unsigned long long)in_b_early, (unsigned long long)total,
	      (early1 - early0) / 1e9);
	/* The late thread's whole CPU time is nearly all inside the window
	 * (it was born in it, and little time has passed since it closed). */
	uint64_t late_cpu = late ? cpu_time_ns_of(pid, late) : 0;

	CHECK(in_b_late >= 1 && late != pid &&
		      in_b_late * 10000000 >= late_cpu * 7 / 10 - 20000000,
	      "the thread created mid-recording is sampled and named (%llu samples, %.3f s of CPU)",
	      (unsigned long long)in_b_late, late_cpu / 1e9);
	CHECK(r->stats.threads_opened == 2, "two threads opened directly (%u)",
	      r->stats.threads_opened);
	CHECK(r->stats.events_opened == 2 * (unsigned)sysconf(_SC_NPROCESSORS_ONLN),
	      "one event per (thread, CPU)");
	CHECK(r->duration_ns >= 1500000000ull, "the window lasted its 1.5 s at least (%.3f s)",
	      r->duration_ns / 1e9);
	CHECK(!r->target_exited, "target still running");
	CHECK(r->stats.mappings == 0 || r->stats.mappings > 0, "mappings counted");
	if (geteuid() == 0)
		CHECK(r->kernel, "root samples kernel frames");
	CHECK(r->interval == 10000000, "default cpu interval 10 ms");
out:
	recorder_free(r);
	stop_child(pid, go, NULL);
}

/* The child burns 0.3 s of CPU once the recording runs, then exits. */
static void test_exit(void)
{
	int go;
	pid_t pid = start_child(CHILD_EXIT, &go);
	struct rusage ru = { 0 };
	struct recorder *r = NULL;
	struct diag d;
	uint64_t want;
	int err;

	err = record(pid, "cpu", 10000, false, go, &r, &d);
	stop_child(pid, go, &ru);
	/* One sample per 10 ms of the CPU time the kernel charged it. */
	want = rusage_ns(&ru) / 10000000;
	CHECK(err == 0, "recorded a child that exits: %s", d.msg);
	if (!err) {
		CHECK(r->target_exited, "the exit is noticed");
		CHECK(r->duration_ns < 3000000000ull,
		      "the recording ends at the exit, not the duration (%.3f s)",
		      r->duration_ns / 1e9);
		CHECK(r->stats.samples > 0 && r->stats.samples >= want * 7 / 10,
		      "samples before the exit (%llu, %llu expected from its %.3f s of CPU)",
		      (unsigned long long)r->stats.samples, (unsigned long long)want,
		      rusage_ns(&ru) / 1e9);
	}
	recorder_free(r);
}

static void test_stop(void)
{
	int go;
	pid_t pid = start_child(CHILD_SLEEPY, &go);
	struct recorder_config c = { .pid = pid, .event = engine_event_find("cpu") };
	volatile sig_atomic_t stop = 0;
	struct recorder *r = NULL;
	struct diag d;
	struct timespec t0, t1;
	int err;

	diag_clear(&d);
	err = recorder_new(&c, &r, &d);
	if (!err)
		err = recorder_start(r, &d);
	stop = 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!err)
		err = recorder_run(r, 0, &stop, &d);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(!err && (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 200,
	      "*stop ends an unlimited recording promptly");
	recorder_free(r);
	stop_child(pid, go, NULL);
}

/* What the kernel itself counted for process PID, summed over its
 * threads: the truth the sampled counts are held against, so that a slow
 * or loaded host (fewer switches, fewer faults) moves the bar with it. */
struct kernel_counts {
	long long voluntary, involuntary, minor_faults;
	double at;	/* CLOCK_MONOTONIC seconds */
};

static void kernel_counts(pid_t pid, struct kernel_counts *k)
{
	char path[300], line[128];
	struct timespec ts;
	struct dirent *e;
	long long n;
	DIR *dir;
	FILE *f;

	memset(k, 0, sizeof(*k));
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	while (dir && (e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid, e->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "voluntary_ctxt_switches: %lld", &n) == 1)
				k->voluntary += n;
			else if (sscanf(line, "nonvoluntary_ctxt_switches: %lld", &n) == 1)
				k->involuntary += n;
		}
		if (f)
			fclose(f);
	}
	if (dir)
		closedir(dir);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f) {
		char buf[1024], *p;
		size_t len = fread(buf, 1, sizeof(buf) - 1, f);

		buf[len] = 0;
		p = strrchr(buf, ')');
		if (p)
			sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %lld", &k->minor_faults);
		fclose(f);
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	k->at = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Of a count that grew from a to b over the call, the part that fell in
 * a window of window_ms, the rate taken as steady. */
static long long in_window(long long a, long long b, const struct kernel_counts *ka,
			   const struct kernel_counts *kb, unsigned window_ms)
{
	return (long long)((double)(b - a) * window_ms / 1000.0 / (kb->at - ka->at));
}

static void test_user_only(void)
{
	int go;
	pid_t pid = start_child(CHILD_BUSY, &go);
	struct recorder *r = NULL;
	struct diag d;
	uint64_t cpu0, cpu1;
	int err;

	cpu0 = cpu_time_ns(pid);
	err = record(pid, "cpu", 800, true, go, &r, &d);
	cpu1 = cpu_time_ns(pid);
	CHECK(err == 0, "user-only recording: %s", d.msg);
	if (!err) {
		/* As in test_busy: samples x 10 ms against the CPU time used. */
		CHECK(!r->kernel && r->stats.samples > 0 &&
			      r->stats.samples * 10000000 >= (cpu1 - cpu0) * 7 / 10,
		      "user-only samples (%llu; the child used %.3f s of CPU)",
		      (unsigned long long)r->stats.samples, (cpu1 - cpu0) / 1e9);
		CHECK(kernel_frames(r) == 0, "no kernel frames when user-only");
		CHECK(r->duration_ns >= 800000000ull && r->duration_ns < 1000000000ull,
		      "the duration is honoured (%.3f s of 0.8)", r->duration_ns / 1e9);
	}
	recorder_free(r);
	stop_child(pid, go, NULL);
}

static void test_context_switches(void)
{
	int go;
	pid_t pid = start_child(CHILD_SLEEPY, &go);
	struct recorder *r = NULL;
	struct diag d;
	int err;

	struct kernel_counts k0, k1;

	kernel_counts(pid, &k0);
	err = record(pid, "context-switches", 500, true, go, &r, &d);
	kernel_counts(pid, &k1);
	CHECK(err == 0, "context-switches, user only: %s", d.msg);
	if (!err) {
		uint64_t vol = kind_samples(r, RAW_SWITCH_VOLUNTARY);
		long long want = in_window(k0.voluntary, k1.voluntary, &k0, &k1, 500);

		printf("# switch records: %llu voluntary, %llu preempted\n",
		       (unsigned long long)vol,
		       (unsigned long long)kind_samples(r, RAW_SWITCH_PREEMPT));
		CHECK(r->switch_records, "switch records replace the event");
		/* Two threads, each sleeping 1 ms at a time, for 0.5 s: every
		 * voluntary switch the kernel counted in the window. */
		CHECK(vol >= 50 && (long long)vol >= want * 8 / 10 &&
			      (long long)vol <= k1.voluntary - k0.voluntary,
		      "voluntary switches counted: %llu, the kernel counted %lld in the window",
		      (unsigned long long)vol, want);
		CHECK(kind_samples(r, RAW_SAMPLE) == 0, "no stacks in that mode");
	}
	recorder_free(r);
	r = NULL;
	if (geteuid() == 0) {
		kernel_counts(pid, &k0);
		err = record(pid, "context-switches", 500, false, go, &r, &d);
		kernel_counts(pid, &k1);
		CHECK(err == 0 && !r->switch_records && r->kernel,
		      "context-switches as root: sampled: %s", d.msg);
		if (!err) {
			long long n = (long long)kind_samples(r, RAW_SAMPLE);
			long long all = k1.voluntary + k1.involuntary - k0.voluntary - k0.involuntary;
			long long want = in_window(0, all, &k0, &k1, 500);

			CHECK(n >= 50 && n >= want * 8 / 10 && n <= all,
			      "switches sampled with stacks: %lld, the kernel counted %lld in the window",
			      n, want);
			CHECK(kernel_frames(r) > 0, "with kernel frames");
		}
		recorder_free(r);
	}
	stop_child(pid, go, NULL);
}

static void test_page_faults(void)
{
	int go;
	pid_t pid = start_child(CHILD_FAULTS, &go);
	struct recorder *r = NULL;
	struct diag d;
	int err;

	struct kernel_counts k0, k1;

	kernel_counts(pid, &k0);
	err = record(pid, "page-faults", 300, false, go, &r, &d);
	kernel_counts(pid, &k1);
	CHECK(err == 0, "page-faults: %s", d.msg);
	if (!err) {
		uint64_t period = 0;

		for (size_t i = 0; i < r->chains.nchains; i++)
			period += r->chains.chains[i].weight;
		printf("# page faults: %llu samples, lost %llu, ring %zu KiB\n",
		       (unsigned long long)r->stats.samples,
		       (unsigned long long)r->stats.lost, r->stats.ring_bytes >> 10);
		long long want = in_window(k0.minor_faults, k1.minor_faults, &k0, &k1, 300);

		CHECK(r->stats.samples > 100 && (long long)r->stats.samples >= want * 7 / 10,
		      "faults sampled: %llu, the kernel counted %lld in the window",
		      (unsigned long long)r->stats.samples, want);
		CHECK(period == r->stats.samples, "period 1: one per fault");
	}
	recorder_free(r);
	stop_child(pid, go, NULL);
}

/* As user nobody: profile our own child (user space only), count its
 * context switches, and be refused PID 1 with the reason. */
struct nobody_result {
	int err, kernel, switch_records, err_pid1, err_cs;
	uint64_t samples, kframes, switches;
	/* What the kernel counted: the child's CPU time over the recording,
	 * its voluntary switches in the window and over the call. */
	uint64_t cpu_ns;
	long long switches_want, switches_all;
	char msg[512], msg_pid1[512];
};

static void run_as_nobody(struct nobody_result *res)
{
	struct kernel_counts k0, k1;
	struct recorder *r = NULL;
	struct diag d;
	uint64_t cpu0;
	pid_t pid;
	int go;

	pid = start_child(CHILD_BUSY, &go);
	cpu0 = cpu_time_ns(pid);
	res->err = record(pid, "cpu", 800, false, go, &r, &d);
	res->cpu_ns = cpu_time_ns(pid) - cpu0;
	memcpy(res->msg, d.msg, sizeof(res->msg));
	if (!res->err) {
		res->kernel = r->kernel;
		res->samples = r->stats.samples;
		res->kframes = kernel_frames(r);
	}
	recorder_free(r);
	r = NULL;
	stop_child(pid, go, NULL);
	pid = start_child(CHILD_SLEEPY, &go);
	kernel_counts(pid, &k0);
	res->err_cs = record(pid, "context-switches", 300, false, go, &r, &d);
	kernel_counts(pid, &k1);
	res->switches_want = in_window(k0.voluntary, k1.voluntary, &k0, &k1, 300);
	res->switches_all = k1.voluntary - k0.voluntary;
	if (!res->err_cs) {
		res->switch_records = r->switch_records;
		res->switches = kind_samples(r, RAW_SWITCH_VOLUNTARY);
	}
	recorder_free(r);
	stop_child(pid, go, NULL);
	res->err_pid1 = record(1, "cpu", 100, false, -1, &r, &d);
	memcpy(res->msg_pid1, d.msg, sizeof(res->msg_pid1));
}

static void test_nobody(void)
{
	struct nobody_result *res;
	pid_t pid;

	if (geteuid() != 0) {
		printf("# not root: this whole test already runs unprivileged\n");
		return;
	}
	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	memset(res, 0, sizeof(*res));
	res->err = -1;
	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(1);
		/* A uid change makes us non-dumpable, and our children
		 * inherit that; a real target was exec'd, which resets it. */
		prctl(PR_SET_DUMPABLE, 1);
		run_as_nobody(res);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	CHECK(res->err == 0, "nobody records its own child: %s", res->msg);
	/* cpu_ns spans a little more than the window (read before it opens
	 * and after it closes): two samples' worth of slack, as above. */
	CHECK(!res->kernel && res->samples > 0 &&
		      res->samples * 10000000 >= res->cpu_ns * 7 / 10 - 20000000 && res->kframes == 0,
	      "user space only (paranoid %lld): %llu samples for %.3f s of the child's CPU, "
	      "%llu kernel frames",
	      (long long)recorder_sysctl("/proc/sys/kernel/perf_event_paranoid", 2),
	      (unsigned long long)res->samples, res->cpu_ns / 1e9,
	      (unsigned long long)res->kframes);
	/* As test_context_switches: what the kernel counted in the window. */
	CHECK(res->err_cs == 0 && res->switch_records && res->switches > 0 &&
		      (long long)res->switches >= res->switches_want * 8 / 10 &&
		      (long long)res->switches <= res->switches_all,
	      "nobody's context-switches come from switch records (%llu, the kernel counted %lld in the window)",
	      (unsigned long long)res->switches, res->switches_want);
	CHECK(res->err_pid1 == -EACCES || res->err_pid1 == -EPERM,
	      "PID 1 refused (%d)", res->err_pid1);
	CHECK(strstr(res->msg_pid1, "cannot profile PID 1: it belongs to another user (uid 0)") != NULL,
	      "the refusal names the owner: %s", res->msg_pid1);
	munmap(res, sizeof(*res));
}

int main(void)
{
	test_events();
	test_ring_wrap();
	test_errors();
	test_busy();
	test_exit();
	test_stop();
	test_user_only();
	test_context_switches();
	test_page_faults();
	test_nobody();
	return test_done();
}
