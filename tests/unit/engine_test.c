/* engine_test: engine_record end to end — real perf events on child
 * processes forked (or exec'd) here, symbolized into a profile: known
 * function names in the right root-first order, thread frames, values
 * and metadata, kernel frames as root, the user-only notes as `nobody`,
 * a held child released by child_started, and the error contract. */
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "test.h"
#include "../progs/work.h"

/* noclone keeps gcc from renaming them spin_a.constprop.0; clang has no
 * such clones and no such attribute. */
#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

static volatile uint64_t sink;
static void nothing(void)
{
}
/* Keeps the spinners from being leaf functions, which gcc builds
 * without a frame (the frame-pointer walk would skip their caller). */
static void (*volatile hook)(void) = nothing;

NOINLINE static void spin_a(uint64_t n)
{
	hook();
	for (uint64_t i = 0; i < n; i++)
		sink += i * 7;
	hook();
}

/* spin_a in chunks (work.h) until this thread has used ns of CPU time;
 * UINT64_MAX: for ever. */
NOINLINE static void caller_a(uint64_t ns)
{
	uint64_t t0 = work_clock_ns(CLOCK_THREAD_CPUTIME_ID), n = work_chunk(1000000);

	do
		spin_a(n);
	while (work_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0 < ns);
	hook();
}

NOINLINE static void spin_b(uint64_t n)
{
	hook();
	for (uint64_t i = 0; i < n; i++)
		sink ^= i * 13;
	hook();
}

static void *worker(void *arg)
{
	uint64_t n = work_chunk(1000000);

	pthread_setname_np(pthread_self(), arg);
	for (;;)
		spin_b(n);
	return NULL;
}

/* Busy main thread in caller_a -> spin_a, a "late-worker" thread in
 * spin_b created after 100 ms of the main thread's CPU time; or (sleepy)
 * a thread that blocks every millisecond. */
static pid_t start_child(bool sleepy)
{
	int fds[2];
	pid_t pid;
	char c = 0;

	if (pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		pthread_t t;

		close(fds[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (write(fds[1], &c, 1) < 0)
			_exit(1);
		close(fds[1]);
		if (sleepy)
			for (;;)
				usleep(1000);
		caller_a(100000000);
		pthread_create(&t, NULL, worker, "late-worker");
		caller_a(UINT64_MAX);
		_exit(0);
	}
	close(fds[1]);
	if (pid > 0 && read(fds[0], &c, 1) != 1)
		pid = -1;
	close(fds[0]);
	return pid;
}

/* Context switches the kernel counted for the (single-threaded) task PID:
 * all of them, or the voluntary ones only. */
static long long task_switches(pid_t pid, bool voluntary_only)
{
	char path[64], line[128];
	long long total = 0, n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %lld", &n) == 1 ||
		    (!voluntary_only &&
		     sscanf(line, "nonvoluntary_ctxt_switches: %lld", &n) == 1))
			total += n;
	fclose(f);
	return total;
}

/* CPU time the kernel charged to process PID (all its threads), in ns. */
static long long process_cpu_ns(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long utime, stime;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');	/* the command may hold spaces */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &utime, &stime) != 2)
		return -1;
	return (long long)((utime + stime) * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK)));
}

static double seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void stop_child(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static const char *frame_name(const struct profile *p, uint32_t f)
{
	return p->frames[f].name;
}

/* Sum of value v over samples whose stack has frame `a` directly
 * followed (toward the leaf) by frame `b` (b NULL: a is the leaf). */
static int64_t with_pair(const struct profile *p, const char *a,
			 const char *b, unsigned v)
{
	int64_t n = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		const struct stack *s = &p->stacks[p->samples[i].stack];
		const uint32_t *f = profile_stack_frames(p, p->samples[i].stack);

		for (uint32_t j = 0; j < s->depth; j++) {
			if (strcmp(frame_name(p, f[j]), a))
				continue;
			if (b ? j + 1 < s->depth && !strcmp(frame_name(p, f[j + 1]), b)
			      : j + 1 == s->depth) {
				n += p->samples[i].values[v];
				break;
			}
		}
	}
	return n;
}

/* Sum of value 0 over samples where a user frame whose name contains
 * `user` is directly followed by a kernel frame. */
static int64_t user_then_kernel(const struct profile *p, const char *user)
{
	int64_t n = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		const struct stack *s = &p->stacks[p->samples[i].stack];
		const uint32_t *f = profile_stack_frames(p, p->samples[i].stack);

		for (uint32_t j = 0; j + 1 < s->depth; j++)
			if (p->frames[f[j]].kind != FRAME_KERNEL &&
			    strstr(p->frames[f[j]].name, user) &&
			    p->frames[f[j + 1]].kind == FRAME_KERNEL) {
				n += p->samples[i].values[0];
				break;
			}
	}
	return n;
}

static bool has_note(const struct profile *p, const char *text)
{
	for (unsigned i = 0; i < p->nnotes; i++)
		if (strstr(p->notes[i], text))
			return true;
	return false;
}

/* With DEBUG set, the stacks as "collapsed" lines. */
static void dump(const struct profile *p)
{
	if (!getenv("DEBUG"))
		return;
	for (size_t i = 0; i < p->nsamples && i < 12; i++) {
		const struct stack *s = &p->stacks[p->samples[i].stack];
		const uint32_t *f = profile_stack_frames(p, p->samples[i].stack);

		printf("#");
		for (uint32_t j = 0; j < s->depth; j++)
			printf("%s%s", j ? ";" : " ", p->frames[f[j]].name);
		printf(" %lld\n", (long long)p->samples[i].values[0]);
	}
}

static void print_notes(const struct profile *p)
{
	dump(p);
	for (unsigned i = 0; i < p->nnotes; i++)
		printf("# note: %s\n", p->notes[i]);
}

static int record(pid_t pid, struct record_options *o, struct profile **ret,
		  struct diag *d)
{
	struct symbolizer *s = symbolizer_new();
	int err;

	diag_clear(d);
	err = engine_record(pid, o, s, NULL, NULL, ret, d);
	symbolizer_free(s);
	return err;
}

static void test_busy(void)
{
	pid_t pid = start_child(false);
	struct record_options o = { .event = "cpu", .duration_ns = 1200000000,
				    .per_thread = true };
	struct profile *p = NULL;
	struct diag d;
	uint64_t now = (uint64_t)time(NULL) * 1000000000ull;
	char late_frame[64] = "";
	int64_t total;
	long long cpu_before, cpu_after, expected;
	double began, elapsed;
	int err;

	cpu_before = process_cpu_ns(pid);
	began = seconds_now();
	err = record(pid, &o, &p, &d);
	elapsed = seconds_now() - began;
	cpu_after = process_cpu_ns(pid);
	CHECK(err == 0, "engine_record on a busy child: %s", d.msg);
	if (err)
		goto out;
	print_notes(p);
	total = profile_total(p, 0);
	CHECK(p->nvalues == 2 && !strcmp(p->value_types[0].type, "samples") &&
		      !strcmp(p->value_types[1].type, "cpu") &&
		      !strcmp(p->value_types[1].unit, "nanoseconds"),
	      "values: samples/count, cpu/nanoseconds");
	/* One sample per 10 ms of the child's CPU time in the 1.2 s window:
	 * the kernel's count of that time over the whole call, scaled to
	 * the window, is the truth (a loaded host gives the child less). */
	expected = (long long)((double)(cpu_after - cpu_before) / 10e6 * 1.2 / elapsed);
	CHECK(total >= 5 && total >= expected * 7 / 10 &&
		      total <= (cpu_after - cpu_before) / 10000000 * 11 / 10 + 2,
	      "%lld samples for %lld expected from the child's CPU time", (long long)total,
	      expected);
	CHECK(profile_total(p, 1) == total * 10000000, "cpu ns = samples x 10 ms");
	CHECK_STR(p->event, "cpu", "event");
	CHECK(p->interval == 10000000 && !strcmp(p->interval_unit, "nanoseconds"),
	      "interval 10 ms in nanoseconds");
	CHECK(p->pid == pid, "pid");
	CHECK_STR(p->command, "engine_test", "command from /proc/PID/comm");
#if defined(__x86_64__)
	CHECK_STR(p->unwinder, "dwarf", "unwinder: auto gives dwarf here");
#else
	CHECK_STR(p->unwinder, "fp", "unwinder: auto gives fp here");
#endif
	CHECK(p->start_ns + 5000000000ull > now && p->start_ns < now + 5000000000ull,
	      "start_ns is the realtime clock");
	CHECK(p->duration_ns >= 1200000000ull && p->duration_ns < 1400000000ull,
	      "duration %.3f s", p->duration_ns / 1e9);
	CHECK(!p->target_exited && p->degraded.lost_samples == 0,
	      "no exit, nothing lost");
	CHECK(with_pair(p, "caller_a", "spin_a", 0) >= total / 4,
	      "caller_a -> spin_a, root first, symbolized (%lld of %lld)",
	      (long long)with_pair(p, "caller_a", "spin_a", 0), (long long)total);
	CHECK_INT(with_pair(p, "spin_a", NULL, 0), >=, total / 4, "spin_a is the leaf");
	CHECK_INT(with_pair(p, "worker", "spin_b", 0), >, 0, "worker -> spin_b");
	for (size_t i = 0; i < p->nthreads; i++)
		if (!strcmp(p->threads[i].name, "late-worker"))
			snprintf(late_frame, sizeof(late_frame), "[late-worker tid=%d]",
				 (int)p->threads[i].tid);
	CHECK(late_frame[0] && with_pair(p, late_frame, "start_thread", 0) +
					   with_pair(p, late_frame, "clone3", 0) +
					   with_pair(p, late_frame, "clone", 0) > 0,
	      "-t: the late thread's frame %s is the root", late_frame);
	{
		bool roots_ok = true;

		for (size_t i = 0; i < p->nstacks; i++)
			if (!p->stacks[i].depth ||
			    p->frames[profile_stack_frames(p, (uint32_t)i)[0]].kind != FRAME_THREAD)
				roots_ok = false;
		CHECK(roots_ok, "every stack starts with a thread frame");
	}
out:
	profile_free(p);
	stop_child(pid);
}

static void test_depth(void)
{
	pid_t pid = start_child(false);
	struct record_options o = { .event = "cpu", .duration_ns = 400000000,
				    .max_depth = 2 };
	struct profile *p = NULL;
	struct diag d;
	bool ok = true;
	int err;

	err = record(pid, &o, &p, &d);
	CHECK(err == 0, "-j 2: %s", d.msg);
	if (!err) {
		for (size_t i = 0; i < p->nstacks; i++)
			if (p->stacks[i].depth > 2 || !p->stacks[i].truncated)
				ok = false;
		CHECK(ok && p->nstacks > 0, "stacks cut to 2 frames, marked truncated");
		CHECK(with_pair(p, "caller_a", "spin_a", 0) > 0,
		      "the leaf-most frames are the ones kept");
		CHECK(p->degraded.truncated_stacks > 0 &&
			      has_note(p, "stacks deeper than 2 frames"),
		      "truncation counted and noted");
	}
	profile_free(p);
	stop_child(pid);
}

static void test_kernel(void)
{
	pid_t pid;
	struct record_options o = { .event = "context-switches",
				    .duration_ns = 400000000 };
	struct profile *p = NULL;
	struct diag d;
	bool order_ok = true;
	int64_t kernel_leaf = 0;
	long long before, after;
	double began, elapsed;
	int err;

	if (geteuid() != 0) {
		printf("# skip: kernel frames need root here\n");
		return;
	}
	pid = start_child(true);
	before = task_switches(pid, false);
	began = seconds_now();
	err = record(pid, &o, &p, &d);
	elapsed = seconds_now() - began;
	after = task_switches(pid, false);
	CHECK(err == 0, "context-switches as root: %s", d.msg);
	if (!err) {
		print_notes(p);
		for (size_t i = 0; i < p->nsamples; i++) {
			const struct stack *s = &p->stacks[p->samples[i].stack];
			const uint32_t *f = profile_stack_frames(p, p->samples[i].stack);
			bool seen_kernel = false;

			for (uint32_t j = 0; j < s->depth; j++) {
				bool k = p->frames[f[j]].kind == FRAME_KERNEL;

				if (seen_kernel && !k)
					order_ok = false;
				seen_kernel |= k;
			}
			if (s->depth && p->frames[f[s->depth - 1]].kind == FRAME_KERNEL)
				kernel_leaf += p->samples[i].values[0];
		}
		/* Interval 1 samples every switch. The child sleeps in a loop
		 * for the whole call, so the kernel's own count over the call,
		 * scaled to the recording window, is what should be there; a
		 * slow host switches less often, and the bar moves with it. */
		long long window = (long long)((double)(after - before) * 0.4 /
					       elapsed);
		CHECK(profile_total(p, 0) >= 50 &&
			      profile_total(p, 0) >= window * 8 / 10 &&
			      profile_total(p, 0) <= after - before,
		      "switches sampled: %lld of the %lld the kernel counted in the window (%lld in the whole call)",
		      (long long)profile_total(p, 0), window, after - before);
		CHECK(kernel_leaf >= profile_total(p, 0) * 9 / 10,
		      "the leaf is in the kernel (%lld)", (long long)kernel_leaf);
		CHECK(order_ok, "root first: user frames, then kernel frames");
		CHECK(user_then_kernel(p, "nanosleep") >= profile_total(p, 0) / 2,
		      "libc's nanosleep leads into the kernel frames");
	}
	profile_free(p);
	stop_child(pid);
}

struct nobody_result {
	int err_cpu, err_cs;
	int64_t samples, switches_vol;
	/* What the kernel counted for the targets over each call, and how
	 * long the calls took: the truth the counts are held to. */
	long long cpu_ns, vol_switches;
	double cpu_secs, cs_secs;
	bool note_kernel, note_switch, thread_frame_ok;
	char msg[512];
};

static void test_nobody(void)
{
	struct nobody_result *res;
	long long want;
	pid_t pid;

	if (geteuid() != 0) {
		printf("# not root: the other tests already run unprivileged\n");
		return;
	}
	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	memset(res, 0, sizeof(*res));
	res->err_cpu = res->err_cs = -1;
	pid = fork();
	if (pid == 0) {
		struct record_options o = { .event = "cpu", .duration_ns = 800000000 };
		struct profile *p = NULL;
		struct diag d;
		long long before;
		double began;
		pid_t t;

		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(1);
		prctl(PR_SET_DUMPABLE, 1); /* reset by the uid change */
		t = start_child(false);
		before = process_cpu_ns(t);
		began = seconds_now();
		res->err_cpu = record(t, &o, &p, &d);
		res->cpu_secs = seconds_now() - began;
		res->cpu_ns = process_cpu_ns(t) - before;
		memcpy(res->msg, d.msg, sizeof(res->msg));
		if (p) {
			res->samples = profile_total(p, 0);
			res->note_kernel = has_note(p,
				"kernel frames omitted: kernel.perf_event_paranoid=2 lets "
				"non-root users sample user space only (run as root, or "
				"sysctl kernel.perf_event_paranoid=1)");
		}
		profile_free(p);
		p = NULL;
		stop_child(t);
		t = start_child(true);
		o.event = "context-switches";
		o.per_thread = true;
		before = task_switches(t, true);
		began = seconds_now();
		res->err_cs = record(t, &o, &p, &d);
		res->cs_secs = seconds_now() - began;
		res->vol_switches = task_switches(t, true) - before;
		if (p) {
			res->switches_vol = with_pair(p, "[voluntary switch]", NULL, 0) ? 0 : 0;
			for (size_t i = 0; i < p->nsamples; i++) {
				const struct stack *s = &p->stacks[p->samples[i].stack];
				const uint32_t *f = profile_stack_frames(p, p->samples[i].stack);

				if (s->depth == 2 && p->frames[f[0]].kind == FRAME_THREAD &&
				    !strcmp(p->frames[f[1]].name, "[voluntary switch]"))
					res->switches_vol += p->samples[i].values[0];
			}
			res->note_switch = has_note(p, "switch records, without stacks");
		}
		profile_free(p);
		stop_child(t);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	/* As in test_busy and test_kernel: the kernel's counts over each
	 * call, scaled to the 0.8 s window, are what should be there. */
	want = res->cpu_secs > 0 ? (long long)((double)res->cpu_ns / 10e6 * 0.8 / res->cpu_secs) : 0;
	CHECK(res->err_cpu == 0 && res->samples > 0 && res->samples >= want * 7 / 10 &&
		      res->samples <= res->cpu_ns / 10000000 * 11 / 10 + 2,
	      "nobody profiles its own process (%lld samples for %lld expected from its CPU time): %s",
	      (long long)res->samples, want, res->msg);
	CHECK(res->note_kernel, "with the kernel-frames note");
	want = res->cs_secs > 0 ? (long long)((double)res->vol_switches * 0.8 / res->cs_secs) : 0;
	CHECK(res->err_cs == 0 && res->switches_vol >= 100 && res->switches_vol >= want * 8 / 10 &&
		      res->switches_vol <= res->vol_switches && res->note_switch,
	      "context-switches as [thread];[voluntary switch] (%lld of the %lld the kernel counted in the window), noted",
	      (long long)res->switches_vol, want);
	munmap(res, sizeof(*res));
}

/* record -- COMMAND: a child held before exec, released by
 * child_started; it runs this binary again with --spin (0.5 s of CPU in
 * caller_a -> spin_a) and exits. */
static void release(void *arg)
{
	char c = 1;

	if (write(*(int *)arg, &c, 1) < 0)
		perror("release");
}

static void test_child(void)
{
	struct record_options o = { .event = "cpu", .duration_ns = 10000000000ull };
	struct symbolizer *s = symbolizer_new();
	struct profile *p = NULL;
	struct rusage ru = { 0 };
	struct diag d;
	int go[2], err;
	long long cpu_ns, want;
	pid_t pid;

	if (pipe(go) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		execl("/proc/self/exe", "engine_test", "--spin", (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	diag_clear(&d);
	err = engine_record(pid, &o, s, release, &go[1], &p, &d);
	close(go[1]);
	wait4(pid, NULL, 0, &ru);
	/* Its CPU time from the kernel: one sample per 10 ms of it. */
	cpu_ns = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ll +
		 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ll;
	want = cpu_ns / 10000000;
	CHECK(err == 0, "a held child, released by child_started: %s", d.msg);
	if (!err) {
		print_notes(p);
		CHECK(p->target_exited && p->duration_ns < 5000000000ull,
		      "ends when the child exits (%.2f s)", p->duration_ns / 1e9);
		CHECK(has_note(p, "the target exited after"), "and says so");
		CHECK(with_pair(p, "caller_a", "spin_a", 0) > 0 &&
			      with_pair(p, "caller_a", "spin_a", 0) >= want * 7 / 10,
		      "the exec'd program is symbolized from its mmap records (%lld samples "
		      "in caller_a -> spin_a, %lld expected from its %.3f s of CPU)",
		      (long long)with_pair(p, "caller_a", "spin_a", 0), want, cpu_ns / 1e9);
	}
	profile_free(p);
	symbolizer_free(s);
}

static void test_errors(void)
{
	struct record_options o = { .event = "cpu", .duration_ns = 100000000 };
	struct profile *p = NULL;
	struct diag d;
	volatile sig_atomic_t stop = 1;
	pid_t pid;
	int err;

	err = record(0x3ffffff0, &o, &p, &d);
	CHECK(err == -ESRCH && !p, "no such PID: -ESRCH, no profile");
	CHECK_STR(d.msg, "no process with PID 1073741808", "message");

	/* Each mode names itself in the profile (*stop set: no waiting). */
	o.stop = &stop;
	o.cstack = CSTACK_FP;
	err = record(getpid(), &o, &p, &d);
	CHECK(!err && p && !strcmp(p->unwinder, "fp"), "--cstack fp: unwound with fp (%s)",
	      d.msg);
	profile_free(p);
	p = NULL;
	o.cstack = CSTACK_DWARF;
	err = record(getpid(), &o, &p, &d);
#if defined(__x86_64__)
	CHECK(!err && p && !strcmp(p->unwinder, "dwarf"), "--cstack dwarf: unwound with dwarf (%s)",
	      d.msg);
#else
	CHECK(err == -ENOTSUP, "--cstack dwarf: -ENOTSUP off x86-64");
#endif
	profile_free(p);
	p = NULL;
	o.cstack = CSTACK_AUTO;
	o.stop = NULL;

	o.event = "bogus";
	err = record(getpid(), &o, &p, &d);
	CHECK(err == -EINVAL && strstr(d.msg, "unknown event 'bogus'"),
	      "unknown event: %s", d.msg);

	o.event = "cycles";
	err = record(getpid(), &o, &p, &d);
	if (err == 0) {
		printf("# this host has a PMU\n");
		profile_free(p);
		p = NULL;
	} else {
		CHECK(err == -ENOENT && strstr(d.msg, "cycles: ") == d.msg &&
			      strstr(d.msg, "available events: cpu"),
		      "cycles here: -ENOENT, %s", d.msg);
	}

	pid = start_child(true);
	o.event = "cpu";
	o.duration_ns = 0;
	o.stop = &stop;
	err = record(pid, &o, &p, &d);
	CHECK(err == 0 && p && p->duration_ns < 200000000,
	      "*stop set: returns at once with a (possibly empty) profile");
	profile_free(p);
	stop_child(pid);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--spin")) {
		caller_a(500000000);
		return 0;
	}
	test_errors();
	test_busy();
	test_depth();
	test_kernel();
	test_child();
	test_nobody();
	return test_done();
}
