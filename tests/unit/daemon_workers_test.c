/* workers: the /proc scan against a fake tree (odd comms, kernel
 * threads, cgroup names, cmdline bytes, vanished processes, maps longer
 * than a read), then against the real /proc: this process, a child that
 * burns a measured 300 ms of CPU, pidfds that notice the child is gone.
 * Every timing bar is relative to what the kernel measured. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/perf_event.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "daemon/core/workers.h"
#include "test.h"

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define PF_KTHREAD 0x00200000u

static char root[64];

static void put(pid_t pid, const char *file, const void *data, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", root, (int)pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/%s", root, (int)pid, file);
	f = fopen(path, "w");
	if (!f || fwrite(data, 1, len, f) != len) {
		perror(path);
		exit(2);
	}
	fclose(f);
}

static void put_str(pid_t pid, const char *file, const char *s)
{
	put(pid, file, s, strlen(s));
}

static void put_root(const char *file, const char *s)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, file);
	f = fopen(path, "w");
	if (!f || fputs(s, f) == EOF) {
		perror(path);
		exit(2);
	}
	fclose(f);
}

struct fake {
	pid_t pid;
	const char *comm;
	pid_t ppid;
	unsigned flags;
	unsigned long long utime, stime, start;
	unsigned threads;
	unsigned uid;
	const char *cgroup;
};

static void fake_stat(const struct fake *f)
{
	char buf[512];

	snprintf(buf, sizeof(buf),
		 "%d (%s) S %d %d %d 0 -1 %u 0 0 0 0 %llu %llu 0 0 20 0 %u 0 %llu "
		 "123456 25 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
		 (int)f->pid, f->comm, (int)f->ppid, (int)f->pid, (int)f->pid, f->flags,
		 f->utime, f->stime, f->threads, f->start);
	put_str(f->pid, "stat", buf);
}

static void fake_proc(const struct fake *f)
{
	char buf[512], path[256];

	fake_stat(f);
	/* The effective uid differs: the owner is the real one. */
	snprintf(buf, sizeof(buf),
		 "Name:\tx\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%d\nPid:\t%d\n"
		 "PPid:\t%d\nTracerPid:\t0\nUid:\t%u\t0\t0\t0\nGid:\t0\t0\t0\t0\n",
		 (int)f->pid, (int)f->pid, (int)f->ppid, f->uid);
	put_str(f->pid, "status", buf);
	put_str(f->pid, "statm", "1000 25 10 5 0 100 0\n");
	put_str(f->pid, "cgroup", f->cgroup);
	put(f->pid, "cmdline", "prog\0", 5);
	put_str(f->pid, "maps", "55d0c0000000-55d0c0001000 r--p 00000000 08:01 12 /usr/bin/prog\n");
	snprintf(path, sizeof(path), "%s/%d/exe", root, (int)f->pid);
	if (symlink("/usr/bin/prog", path) < 0)
		perror(path);
}

static const struct worker *find(const struct worker *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == pid)
			return &v[i];
	return NULL;
}

static bool sorted(const struct worker *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (v[i - 1].pid >= v[i].pid)
			return false;
	return true;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path);
}

static void rm_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static uint64_t boot_ns(void)
{
	return clock_ns(CLOCK_BOOTTIME);
}

static void build_tree(void)
{
	static const struct fake procs[] = {
		{ 1, "systemd", 0, 0x400100, 100, 100, 1, 1, 0, "0::/init.scope\n" },
		/* Pid 2 named kthreadd under pid 0: kthreadd, even without
		 * PF_KTHREAD; and so its children. */
		{ 2, "kthreadd", 0, 0, 0, 0, 1, 1, 0, "0::/\n" },
		{ 3, "rcu_gp", 2, 0, 0, 0, 1, 1, 0, "0::/\n" },
		/* PF_KTHREAD, whatever its parent. */
		{ 40, "ksoftirqd/0", 1, 0x04208040, 5, 5, 1, 3, 0, "0::/\n" },
		{ 100, "my (weird) ) app", 1, 0x400000, 6000, 4000, 50000, 7, 4000000,
		  "0::/system.slice/docker-" HEX64 ".scope\n" },
		{ 200, "redis-server", 1, 0x400100, 1, 1, 60000, 4, 0,
		  "12:cpu,cpuacct:/cpu-differs\n1:name=systemd:/system.slice/redis-server.service\n" },
		{ 201, "dockerd-child", 1, 0x400100, 200, 100, 50000, 1, 0,
		  "4:cpu,cpuacct:/docker/" HEX64 "\n3:memory:/docker/" HEX64 "\n" },
		{ 300, "app", 1, 0x400100, 1, 1, 60000, 1, 0,
		  "0::/user.slice/user-0.slice/user@0.service/app.slice/app-foo.scope\n" },
		{ 301, "gnome-shell", 1, 0x400100, 1, 1, 60000, 1, 0,
		  "0::/user.slice/user-1000.slice/user@1000.service\n" },
		{ 302, "longline", 1, 0x400100, 1, 1, 60000, 1, 0, "0::/\n" },
		{ 303, "longother", 1, 0x400100, 1, 1, 60000, 1, 0, "0::/\n" },
		{ 400, "pause", 1, 0x400100, 1, 1, 60000, 1, 0,
		  "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c_3d4e.slice/"
		  "cri-containerd-" HEX64 ".scope\n" },
		{ 401, "nginx", 1, 0x400100, 1, 1, 60000, 1, 0,
		  "0::/machine.slice/libpod-" HEX64 ".scope/container\n" },
		{ 402, "short-id", 1, 0x400100, 1, 1, 60000, 1, 0,
		  "0::/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n" },
		/* Gone while being read: status missing after stat. */
		{ 600, "vanishing", 1, 0x400100, 1, 1, 60000, 1, 0, "0::/\n" },
	};
	char path[256], *maps;
	size_t len = 0, cap = 1 << 20;
	FILE *f;

	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++)
		fake_proc(&procs[i]);
	put_root("uptime", "1000.00 1500.00\n");

	/* 100: a cmdline with NULs and a control byte; maps far longer
	 * than one read, the agent deep inside it. */
	put(100, "cmdline", "python3\0-m\0ser\001ver\0", 20);
	snprintf(path, sizeof(path), "%s/100/exe", root);
	unlink(path);
	if (symlink("/usr/bin/python3.12", path) < 0)
		perror(path);
	maps = malloc(cap);
	f = fmemopen(maps, cap, "w");
	for (int i = 0; i < 3000; i++)
		fprintf(f, "7f00%08x-7f00%08x r-xp 00000000 08:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6\n",
			i * 4096, i * 4096 + 4096);
	fprintf(f, "7f10000000-7f10001000 r-xp 00000000 08:01 77 /opt/nprof/lib/libnprof.so\n");
	for (int i = 0; i < 100; i++)
		fprintf(f, "7f20%08x-7f20%08x rw-p 00000000 00:00 0 \n", i * 4096, i * 4096 + 4096);
	len = (size_t)ftell(f);
	fclose(f);
	put(100, "maps", maps, len);

	/* 200: names that only look like the agent. */
	put_str(200, "maps",
		"7f0-7f1 r-xp 00000000 08:01 1 /opt/notlibnprof.so\n"
		"7f1-7f2 r-xp 00000000 08:01 2 /usr/lib/libnprof.so.1\n"
		"7f2-7f3 r-xp 00000000 08:01 3 /usr/lib/libnprof.so/x\n");
	/* 301: loaded, then replaced on disk; the last line unterminated. */
	put_str(301, "maps",
		"7f0-7f1 r-xp 00000000 08:01 1 /usr/bin/gnome-shell\n"
		"7f1-7f2 r-xp 00000000 08:01 2 /usr/lib/libnprof.so (deleted)");

	/* 302: one line longer than a read, ending in the agent; 303: the
	 * same line ending elsewhere, then a short one. */
	len = 0;
	memcpy(maps, "7f0-7f1 r-xp 00000000 08:01 1 ", 30);
	len = 30;
	for (int i = 0; i < 1200; i++, len += 10)
		memcpy(maps + len, "/deep/path", 10);
	memcpy(maps + len, "/libnprof.so\n", 13);
	put(302, "maps", maps, len + 13);
	{
		static const char end[] = "/libc.so.6\n7f1-7f2 r-xp 00000000 08:01 2 /usr/bin/x\n";

		memcpy(maps + len, end, sizeof(end) - 1);
		put(303, "maps", maps, len + sizeof(end) - 1);
	}
	free(maps);

	/* 500: a directory left without stat; 600: stat, no status. */
	snprintf(path, sizeof(path), "%s/500", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/600/status", root);
	unlink(path);
	/* Entries that are not processes. */
	snprintf(path, sizeof(path), "%s/sys", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/12abc", root);
	mkdir(path, 0755);
}

static void test_fake_tree(void)
{
	struct worker_scanner *s = worker_scanner_new(), *s2 = worker_scanner_new();
	struct worker *v = NULL, w;
	const struct worker *p;
	size_t n = 0;
	long page = sysconf(_SC_PAGESIZE), hz = sysconf(_SC_CLK_TCK);
	struct passwd *pw = getpwuid(4000000);
	char want[128];
	uint64_t life_ns = 1000000000000ull - 50000ull * 1000000000ull / (uint64_t)hz;
	double share = 10000.0 / (double)hz / ((double)life_ns / 1e9) * 100;
	int err;

	snprintf(root, sizeof(root), "/tmp/nprof-workers-XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		exit(2);
	}
	build_tree();

	err = worker_scan(s, root, 100, &v, &n);
	CHECK_INT(err, ==, 0, "scan of the fake tree");
	CHECK_INT(n, ==, 11, "11 workers: no kernel thread, nothing vanished, no non-pid entry");
	CHECK(sorted(v, n), "sorted by pid");
	CHECK(!find(v, n, 2) && !find(v, n, 3), "pid 2 named kthreadd and its child left out");
	CHECK(!find(v, n, 40), "PF_KTHREAD left out");
	CHECK(!find(v, n, 500) && !find(v, n, 600), "vanished pids left out");

	p = find(v, n, 100);
	CHECK(p != NULL, "pid 100 listed");
	if (p) {
		CHECK_STR(p->id, "100-50000", "id is PID-STARTTIME");
		CHECK_STR(p->name, "my (weird) ) app", "comm with spaces and parens");
		CHECK_UINT(p->start_ticks, ==, 50000, "start ticks after the last ')'");
		CHECK_UINT(p->threads, ==, 7, "num_threads");
		CHECK_STR(p->cmdline, "python3 -m ser?ver", "cmdline: NULs to spaces, control byte to '?'");
		CHECK_STR(p->exe, "/usr/bin/python3.12", "exe");
		CHECK_UINT(p->uid, ==, 4000000, "real uid, not the effective one");
		snprintf(want, sizeof(want), "%s", pw ? pw->pw_name : "4000000");
		CHECK_STR(p->user, want, "an unknown uid's user is the number");
		CHECK_STR(p->cgroup, "/system.slice/docker-" HEX64 ".scope", "v2 cgroup");
		CHECK_STR(p->unit, "docker-" HEX64 ".scope", "scope unit");
		CHECK_STR(p->container, "0123456789ab", "docker id, 12 digits");
		CHECK_UINT(p->rss_bytes, ==, 25ull * (unsigned long long)page, "RSS: resident pages");
		/* Started 50000 ticks into a 1000 s uptime, 10000 ticks of
		 * CPU (at 100 Hz: 500 s old, 20%). */
		CHECK(p->uptime_ns >= life_ns && p->uptime_ns < life_ns + 1000000000ull,
		      "uptime from the tree's own uptime (%llu ns)", (unsigned long long)p->uptime_ns);
		CHECK(p->cpu_percent > share * 0.999 && p->cpu_percent <= share,
		      "first sight: the lifetime share (%.3f%% of %.3f%%)", p->cpu_percent, share);
		CHECK(p->agent, "agent found 3000 lines into maps");
	}
	p = find(v, n, 1);
	CHECK(p && !strcmp(p->user, "root") && !strcmp(p->unit, "init.scope") &&
	      !strcmp(p->cmdline, "prog") && !p->agent && !p->container[0],
	      "pid 1: root, init.scope, trailing NUL dropped, no agent");
	p = find(v, n, 200);
	CHECK(p && !strcmp(p->cgroup, "/system.slice/redis-server.service") &&
	      !strcmp(p->unit, "redis-server.service"), "v1: name=systemd before cpu; the service");
	CHECK(p && !p->agent, "notlibnprof.so, libnprof.so.1, libnprof.so/x: not the agent");
	p = find(v, n, 201);
	CHECK(p && !strcmp(p->cgroup, "/docker/" HEX64) && !strcmp(p->container, "0123456789ab") &&
	      !p->unit[0], "v1 cpu only: /docker/ID, no unit");
	p = find(v, n, 300);
	CHECK(p && !strcmp(p->unit, "app-foo.scope"), "the innermost unit, not user@0.service");
	p = find(v, n, 301);
	CHECK(p && !strcmp(p->unit, "user@1000.service"), "user@1000.service is a unit");
	CHECK(p && p->agent, "agent (deleted), on an unterminated last line");
	p = find(v, n, 302);
	CHECK(p && p->agent, "agent at the end of a line longer than a read");
	p = find(v, n, 303);
	CHECK(p && !p->agent, "a long line ending elsewhere: no agent");
	p = find(v, n, 400);
	CHECK(p && !strcmp(p->container, "0123456789ab") &&
	      !strcmp(p->unit, "cri-containerd-" HEX64 ".scope"), "cri-containerd");
	p = find(v, n, 401);
	CHECK(p && !strcmp(p->container, "0123456789ab") &&
	      !strcmp(p->unit, "libpod-" HEX64 ".scope"), "libpod, with a subgroup");
	p = find(v, n, 402);
	CHECK(p && !p->container[0], "63 hex digits: no container");
	free(v);

	CHECK_INT(worker_scan(s2, root, 3, &v, &n), ==, 0, "scan with max 3");
	CHECK(n == 3 && v[0].pid == 1 && v[1].pid == 100 && v[2].pid == 200, "the 3 lowest pids");
	free(v);

	memset(&w, 0, sizeof(w));
	CHECK(worker_read(NULL, root, 100, &w) == 0 && !strcmp(w.id, "100-50000"),
	      "worker_read, without a scanner");
	CHECK_INT(worker_read(s, root, 40, &w), ==, -ESRCH, "worker_read of a kernel thread");
	CHECK_INT(worker_read(s, root, 500, &w), ==, -ESRCH, "worker_read of a pid without stat");
	CHECK_INT(worker_read(s, root, 600, &w), ==, -ESRCH, "worker_read of a pid without status");
	CHECK_INT(worker_read(s, root, 777, &w), ==, -ESRCH, "worker_read of no such pid");
	CHECK_INT(worker_read(s, root, 0, &w), ==, -EINVAL, "worker_read of pid 0");

	/* A container: pid 2 an ordinary process (docker exec: ppid 0). */
	{
		struct fake two = { 2, "bash", 0, 0x400100, 0, 0, 70000, 1, 0, "0::/\n" };

		fake_stat(&two);
		CHECK(worker_scan(s2, root, 100, &v, &n) == 0 && find(v, n, 2) && find(v, n, 3) &&
		      !find(v, n, 40), "pid 2 not kthreadd: it and its children listed");
		free(v);
	}

	/* Since the previous scan: 50 ticks more over a measured window. */
	{
		struct fake hundred = { 100, "my (weird) ) app", 1, 0x400000, 6050, 4000, 50000, 7, 0, "" };
		uint64_t a0, a1, b0, b1, c1;
		double lo, hi, at_b = -1;
		struct timespec nap = { 0, 300000000 };

		/* A fresh scanner: its first scan is the baseline. */
		worker_scanner_free(s);
		s = worker_scanner_new();
		a0 = boot_ns();
		err = worker_scan(s, root, 100, &v, &n);
		a1 = boot_ns();
		free(v);
		fake_stat(&hundred);
		nanosleep(&nap, NULL);
		b0 = boot_ns();
		err = err ? err : worker_scan(s, root, 100, &v, &n);
		b1 = boot_ns();
		CHECK_INT(err, ==, 0, "two more scans");
		p = err ? NULL : find(v, n, 100);
		lo = 50.0 / (double)hz * 1e9 / (double)(b1 - a0) * 100;
		hi = 50.0 / (double)hz * 1e9 / (double)(b0 - a1) * 100;
		CHECK(p && p->cpu_percent >= lo && p->cpu_percent <= hi,
		      "50 ticks over the window: %.3f%% in [%.3f, %.3f]", p ? p->cpu_percent : -1, lo, hi);
		if (p)
			at_b = p->cpu_percent;
		p = err ? NULL : find(v, n, 201);
		CHECK(p && p->cpu_percent == 0, "no ticks since the previous scan: 0%%");
		free(v);

		/* At once again: too short a window to measure, the last share. */
		err = worker_scan(s, root, 100, &v, &n);
		c1 = boot_ns();
		p = err ? NULL : find(v, n, 100);
		CHECK(p && (p->cpu_percent == at_b || c1 - b0 >= 200000000),
		      "a scan %llu ms later repeats the share", (unsigned long long)((c1 - b0) / 1000000));
		free(v);

		/* 201 leaves the tree: the scanner forgets it, so when it is
		 * back it is first sight again (its lifetime share, not 0%). */
		snprintf(want, sizeof(want), "%s/201/stat", root);
		unlink(want);
		CHECK(worker_scan(s, root, 100, &v, &n) == 0 && !find(v, n, 201), "201 gone");
		free(v);
		{
			struct fake back = { 201, "dockerd-child", 1, 0x400100, 200, 100, 50000, 1, 0, "" };

			fake_stat(&back);
		}
		CHECK(worker_scan(s, root, 100, &v, &n) == 0, "201 back");
		p = find(v, n, 201);
		share = 300.0 / (double)hz / ((double)life_ns / 1e9) * 100;
		CHECK(p && p->cpu_percent > share * 0.999 && p->cpu_percent <= share,
		      "forgotten, then its lifetime share (%.3f%% of %.3f%%)", p ? p->cpu_percent : -1,
		      share);
		free(v);
	}

	CHECK_INT(worker_scan(s, "/nonexistent-proc", 100, &v, &n), ==, -ENOENT,
		  "a proc_root that is not there");
	worker_scanner_free(s);
	worker_scanner_free(s2);
	worker_scanner_free(NULL);
	rm_tree(root);
}

static uint64_t self_start_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
			 "%*d %*d %*d %*d %*d %*d %llu", &start) != 1)
		return 0;
	return start;
}

static bool proc_is_kthread(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned flags = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	p = strrchr(buf, ')');
	return p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %u", &flags) == 1 && (flags & PF_KTHREAD);
}

static uint64_t child_cpu_ns(pid_t pid)
{
	clockid_t c;

	if (clock_getcpuclockid(pid, &c) != 0)
		return 0;
	return clock_ns(c);
}

static void test_real_proc(int argc, char **argv)
{
	struct worker_scanner *s = worker_scanner_new();
	struct worker *v = NULL, w;
	const struct worker *p;
	size_t n = 0, kthreads = 0, listed_kthreads = 0;
	char want[WORKER_CMDLINE_MAX] = "", exe[512];
	const char *preload = getenv("LD_PRELOAD");
	struct passwd *pw = getpwuid(getuid());
	ssize_t len;
	int err;

	err = worker_scan(s, "/proc", 1 << 20, &v, &n);
	CHECK_INT(err, ==, 0, "scan of /proc");
	CHECK(sorted(v, n), "sorted by pid");
	p = find(v, n, getpid());
	CHECK(p != NULL, "this process listed");
	if (p) {
		snprintf(want, sizeof(want), "%d-%llu", (int)getpid(),
			 (unsigned long long)self_start_ticks(getpid()));
		CHECK_STR(p->id, want, "its id");
		CHECK_UINT(p->uid, ==, getuid(), "its uid");
		CHECK_STR(p->user, pw ? pw->pw_name : "", "its user");
		CHECK_UINT(p->threads, >=, 1, "threads");
		CHECK_UINT(p->rss_bytes, >, 0, "RSS");
		CHECK_UINT(p->uptime_ns, >, 0, "uptime");
		want[0] = '\0';
		for (int i = 0; i < argc; i++)
			snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s",
				 i ? " " : "", argv[i]);
		CHECK_STR(p->cmdline, want, "its cmdline");
		len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[len < 0 ? 0 : len] = '\0';
		CHECK_STR(p->exe, exe, "its exe");
		CHECK(p->agent == (preload && strstr(preload, "libnprof.so")),
		      "agent only when preloaded");
	}
	for (size_t i = 0; i < n; i++)
		listed_kthreads += proc_is_kthread(v[i].pid);
	free(v);
	for (pid_t pid = 2; pid < 200; pid++)
		kthreads += proc_is_kthread(pid);
	CHECK_UINT(listed_kthreads, ==, 0, "no kernel thread listed (of %zu seen in pids 2-199)", kthreads);
	if (proc_is_kthread(2))
		CHECK_INT(worker_read(s, "/proc", 2, &w), ==, -ESRCH, "worker_read of kthreadd");
	CHECK(worker_read(s, "/proc", getpid(), &w) == 0 && w.pid == getpid(), "worker_read of itself");

	/* A child that burns 300 ms of CPU between two scans. */
	{
		int ready[2], go[2], done[2];
		uint64_t c0, c1, a0, a1, b0, b1, tick = 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK);
		char id[WORKER_ID_MAX] = "", byte = 0, other[WORKER_ID_MAX];
		double lo, hi;
		pid_t child;
		int fd;

		if (pipe(ready) || pipe(go) || pipe(done)) {
			perror("pipe");
			exit(2);
		}
		child = fork();
		if (child == 0) {
			uint64_t t0;

			if (write(ready[1], "r", 1) != 1 || read(go[0], &byte, 1) != 1)
				_exit(1);
			t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
			while (clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0 < 300000000ull)
				;
			if (write(done[1], "d", 1) != 1)
				_exit(1);
			for (;;)
				pause();
		}
		if (child < 0 || read(ready[0], &byte, 1) != 1) {
			perror("fork");
			exit(2);
		}
		c0 = child_cpu_ns(child);
		a0 = boot_ns();
		err = worker_scan(s, "/proc", 1 << 20, &v, &n);
		a1 = boot_ns();
		p = err ? NULL : find(v, n, child);
		if (p)
			snprintf(id, sizeof(id), "%s", p->id);
		CHECK(p != NULL, "the child, on the first scan");
		free(v);
		if (write(go[1], "g", 1) != 1 || read(done[0], &byte, 1) != 1) {
			perror("child");
			exit(2);
		}
		b0 = boot_ns();
		err = worker_scan(s, "/proc", 1 << 20, &v, &n);
		b1 = boot_ns();
		c1 = child_cpu_ns(child);
		p = err ? NULL : find(v, n, child);
		CHECK(p && !strcmp(p->id, id), "the child, on the second scan, same id");
		CHECK_UINT(c1 - c0, >=, 300000000ull, "the kernel counted the child's 300 ms");
		/* Ticks are whole: utime and stime each truncated. */
		lo = (double)(c1 - c0 - 3 * tick) / (double)(b1 - a0) * 100;
		hi = (double)(c1 - c0 + 3 * tick) / (double)(b0 - a1) * 100;
		CHECK(p && p->cpu_percent >= lo && p->cpu_percent <= hi,
		      "child's share %.1f%% in [%.1f, %.1f], from the kernel's counts",
		      p ? p->cpu_percent : -1, lo, hi);
		free(v);

		fd = worker_pin("/proc", id);
		CHECK_INT(fd, >=, 0, "worker_pin of the live child: a pidfd");
		CHECK(fd >= 0 && syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) == 0,
		      "the pidfd names the child");
		snprintf(other, sizeof(other), "%d-%llu", (int)child,
			 (unsigned long long)self_start_ticks(child) + 1);
		CHECK_INT(worker_pin("/proc", other), ==, -ESRCH, "the child's pid, another start time");
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		CHECK_INT(worker_pin("/proc", id), ==, -ESRCH, "worker_pin once the child is reaped");
		CHECK(fd >= 0 && syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) < 0 && errno == ESRCH,
		      "the old pidfd still names the dead child, not a new process");
		if (fd >= 0)
			close(fd);
		CHECK_INT(worker_pin("/proc", "12-"), ==, -EINVAL, "worker_pin of a malformed id");
		for (int i = 0; i < 2; i++) {
			close(ready[i]);
			close(go[i]);
			close(done[i]);
		}
	}
	worker_scanner_free(s);
}

static void test_id_parse(void)
{
	static const char *const bad[] = {
		"", "12", "12-", "-1-5", "1 -5", "99999999999-1", "12-3x", "+1-5", "1-+5", "0-5",
		"01-5", "1-05", "2147483648-1", "1-18446744073709551616", " 1-5", "1-5 ", "1--5",
		"1-5-6", "a-1",
	};
	pid_t pid = 7;
	uint64_t start = 7;
	bool rejected = true;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err = worker_id_parse(bad[i], &pid, &start);

		if (err != -EINVAL) {
			printf("# \"%s\" gave %d\n", bad[i], err);
			rejected = false;
		}
	}
	CHECK(rejected && pid == 7 && start == 7, "malformed ids: -EINVAL, outputs untouched");
	CHECK(worker_id_parse("12-3", &pid, &start) == 0 && pid == 12 && start == 3, "12-3");
	CHECK(worker_id_parse("2147483647-18446744073709551615", &pid, &start) == 0 &&
	      pid == 2147483647 && start == UINT64_MAX, "the largest pid and start");
	CHECK(worker_id_parse("1-0", &pid, &start) == 0 && pid == 1 && start == 0, "start 0");
}

static bool mode_ok(const struct worker_mode *m, enum event_id e)
{
	return m[e].event == e && m[e].available && !m[e].why_not[0];
}

static bool mode_not(const struct worker_mode *m, enum event_id e, const char *why)
{
	return m[e].event == e && !m[e].available && strstr(m[e].why_not, why) &&
	       !strchr(m[e].why_not, '\n');
}

static void test_modes(void)
{
	struct worker w = { .pid = 1 };
	struct worker_mode m[EVENT_COUNT];
	bool sw, hw, sw2, hw2;
	int fd;

	worker_modes(&w, true, false, false, m);
	CHECK(mode_ok(m, EVENT_CPU) && mode_ok(m, EVENT_PAGE_FAULTS) &&
	      mode_ok(m, EVENT_CONTEXT_SWITCHES), "perf, no agent: cpu, software events");
	CHECK(mode_not(m, EVENT_ITIMER, "LD_PRELOAD=libnprof.so") &&
	      mode_not(m, EVENT_ALLOC, "agent") && mode_not(m, EVENT_HEAP, "agent") &&
	      mode_not(m, EVENT_LOCK, "agent"), "no agent: itimer, alloc, heap, lock need it (the events table: agent only)");
	CHECK(mode_not(m, EVENT_WALL, "scheduler's tracepoint") && mode_not(m, EVENT_WALL, "admin") &&
	      m[EVENT_WALL].needs_agent && mode_not(m, EVENT_OFFCPU, "admin"),
	      "no agent, not an admin: wall and offcpu need the scheduler (wall: or the agent)");
	worker_modes(&w, true, true, false, m);
	CHECK(mode_ok(m, EVENT_WALL) && mode_ok(m, EVENT_OFFCPU),
	      "no agent, an admin where the tracepoint opens: wall and offcpu from outside");
	CHECK(mode_not(m, EVENT_CYCLES, "no PMU") && mode_not(m, EVENT_INSTRUCTIONS, "no PMU") &&
	      mode_not(m, EVENT_CACHE_MISSES, "no PMU") && mode_not(m, EVENT_BRANCH_MISSES, "no PMU"),
	      "no PMU: no hardware events");

	worker_modes(&w, true, false, true, m);
	CHECK(mode_ok(m, EVENT_CYCLES) && mode_ok(m, EVENT_BRANCH_MISSES), "a PMU: hardware events");

	w.agent = true;
	worker_modes(&w, false, false, false, m);
	CHECK(mode_ok(m, EVENT_CPU) && mode_ok(m, EVENT_ITIMER) && mode_ok(m, EVENT_WALL) &&
	      mode_ok(m, EVENT_ALLOC) && mode_ok(m, EVENT_HEAP) && mode_ok(m, EVENT_LOCK),
	      "agent, no perf: cpu (itimer), wall and the agent's events");
	CHECK(mode_not(m, EVENT_PAGE_FAULTS, "perf_events denied") &&
	      mode_not(m, EVENT_CYCLES, "perf_events denied"), "no perf: no engine events");

	w.agent = false;
	worker_modes(&w, false, false, false, m);
	CHECK(mode_not(m, EVENT_CPU, "perf_events denied; load nprof's agent for itimer") &&
	      mode_not(m, EVENT_WALL, "admin") && m[EVENT_WALL].needs_agent, "neither: no cpu, no wall");
	{
		bool all = true;

		for (unsigned i = 0; i < EVENT_COUNT; i++)
			all = all && m[i].event == (enum event_id)i && !m[i].available && m[i].why_not[0];
		CHECK(all, "neither perf nor agent: nothing, each with its reason");
	}

	worker_perf_probe(&sw, &hw);
	worker_perf_probe(&sw2, &hw2);
	CHECK(sw == sw2 && hw == hw2, "the probe answers the same twice");
	{
		struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE,
					     .config = PERF_COUNT_SW_CPU_CLOCK, .disabled = 1,
					     .exclude_kernel = 1 };

		fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
		CHECK(sw == (fd >= 0), "software probe agrees with perf_event_open (%s)",
		      sw ? "allowed" : "denied");
		if (fd >= 0)
			close(fd);
	}
	printf("# perf_events: software %s, hardware %s\n", sw ? "yes" : "no", hw ? "yes" : "no");
}

int main(int argc, char **argv)
{
	test_fake_tree();
	test_real_proc(argc, argv);
	test_id_parse();
	test_modes();
	return test_done();
}
