#include "daemon/core/workers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/array.h"
#include "base/clock.h"
#include "base/proc.h"
#include "base/utf8.h"

#define PF_KTHREAD 0x00200000u	/* include/linux/sched.h: stat's flags field */
#define KTHREADD_PID 2
#define AGENT_LIB "libnprof.so"
#define AGENT_COPY "nprof-agent-" /* inject/agent_load.c: its copy is nprof-agent-UID-BUILDID.so */

/* A share measured over a few clock ticks is noise (at 100 Hz, 50 ms is
 * 5 ticks: +-20%), so a scan closer than this to the baseline repeats
 * the last share and keeps the older baseline. */
#define CPU_WINDOW_MIN_NS 200000000ull

/* Users are few and getpwuid_r may go to the network (sssd, LDAP): one
 * lookup per uid per scan, for this many uids; past it, no caching. */
#define USER_CACHE_MAX 256

/* /proc/PID/maps is read in chunks of this many bytes; a line longer
 * than that is checked by its tail, all that decides a match. */
#define MAPS_CHUNK 8192
#define MAPS_TAIL 64

/* The CPU time a scanner last took as the baseline for one process. */
struct cpu_seen {
	pid_t pid;
	uint64_t start_ticks;
	uint64_t cpu_ticks;	/* utime + stime */
	uint64_t seen_ns;	/* CLOCK_BOOTTIME when read */
	double percent;		/* the share last measured from a baseline */
	bool has_percent;
};

struct user_name {
	uid_t uid;
	char name[64];
};

/* Not thread-safe: one caller at a time. */
struct worker_scanner {
	struct cpu_seen *seen;	/* sorted by pid; replaced by every scan */
	size_t nseen, seen_cap;
	struct user_name *users; /* emptied at the start of every scan */
	size_t nusers, users_cap;
};

/* What one scan reads once for all its processes. */
struct scan_ctx {
	const char *root;
	int64_t boot_offset_ns;	/* proc_root's uptime minus CLOCK_BOOTTIME */
	long hz;
	long page_size;
	/* The pids whose agent's socket (@nprof-agent-PID) is in this
	 * network namespace's unix table, sorted: only their maps need
	 * reading. Without the table (a test's tree), every process's. */
	bool net_known;
	char netns[64];		/* proc_root/self/ns/net's target */
	pid_t *agent_pids;
	size_t n_agent_pids;
};

/* The fields of /proc/PID/stat a worker needs. */

struct worker_scanner *worker_scanner_new(void)
{
	return calloc(1, sizeof(struct worker_scanner));
}

void worker_scanner_free(struct worker_scanner *s)
{
	if (!s)
		return;
	free(s->seen);
	free(s->users);
	free(s);
}

/* Digits only, no sign, no leading zero but "0" itself, no overflow. */
static int parse_u64(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;

	if (!len || (len > 1 && s[0] == '0'))
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*ret = v;
	return 0;
}

static int pid_path(char *buf, size_t len, const char *root, pid_t pid, const char *file)
{
	int n = snprintf(buf, len, "%s/%d/%s", root, (int)pid, file);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A file of proc_root/PID: its length, or -errno; -ESRCH when the
 * process is gone (its directory or the file no longer there). */
static ssize_t pid_read(const char *root, pid_t pid, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;

	n = pid_path(path, sizeof(path), root, pid, file);
	if (n < 0)
		return n;
	n = proc_read_small(path, buf, len);
	return n == -ENOENT ? -ESRCH : n;
}

/* pid's stat, through root (a /proc, or a test's copy of one). */
static int stat_read(const char *root, pid_t pid, struct proc_stat *ret)
{
	char buf[2048];
	ssize_t n = pid_read(root, pid, "stat", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	return proc_stat_parse(buf, ret);
}

/* PF_KTHREAD is the kernel's own answer. Pid 2 and its children are
 * kthreadd's only in the root pid namespace: in a container pid 2 is an
 * ordinary process, so the fallback asks whether pid 2 is kthreadd. */
static bool is_kernel_thread(const char *root, pid_t pid, const struct proc_stat *st)
{
	struct proc_stat two;

	if (st->flags & PF_KTHREAD)
		return true;
	if (pid == KTHREADD_PID)
		return st->ppid == 0 && !strcmp(st->comm, "kthreadd");
	if (st->ppid != KTHREADD_PID)
		return false;
	return stat_read(root, KTHREADD_PID, &two) == 0 && two.ppid == 0 &&
	       !strcmp(two.comm, "kthreadd");
}

static int status_uid(const char *root, pid_t pid, uid_t *ret)
{
	char buf[4096], *line, *end;
	ssize_t n = pid_read(root, pid, "status", buf, sizeof(buf));
	unsigned long long v;

	if (n < 0)
		return (int)n;
	if (!strncmp(buf, "Uid:", 4))
		line = buf;
	else if ((line = strstr(buf, "\nUid:")))
		line++;
	else
		return -EBADMSG;
	line += 4;
	while (*line == ' ' || *line == '\t')
		line++;
	if (*line < '0' || *line > '9')
		return -EBADMSG;
	errno = 0;
	v = strtoull(line, &end, 10);
	if (errno || (*end != '\t' && *end != ' ' && *end != '\n') || v > UINT32_MAX - 1)
		return -EBADMSG;
	*ret = (uid_t)v;
	return 0;
}

static void user_lookup(struct worker_scanner *s, uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *found = NULL;
	char pwbuf[4096];

	for (size_t i = 0; s && i < s->nusers; i++) {
		if (s->users[i].uid == uid) {
			snprintf(buf, len, "%s", s->users[i].name);
			return;
		}
	}
	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &found) == 0 && found)
		snprintf(buf, len, "%s", found->pw_name);
	else
		snprintf(buf, len, "%u", (unsigned)uid);
	utf8_clean(buf);
	if (s && s->nusers < USER_CACHE_MAX &&
	    array_reserve(&s->users, &s->users_cap, s->nusers + 1, sizeof(*s->users)) == 0) {
		s->users[s->nusers].uid = uid;
		snprintf(s->users[s->nusers].name, sizeof(s->users[0].name), "%s", buf);
		s->nusers++;
	}
}

static void cmdline_read(const char *root, pid_t pid, char *buf, size_t len)
{
	ssize_t n = pid_read(root, pid, "cmdline", buf, len);

	/* Unreadable or empty (a zombie has no argv): "". */
	if (n <= 0) {
		buf[0] = '\0';
		return;
	}
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	utf8_clean(buf);
}

static void exe_read(const char *root, pid_t pid, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n = -1;

	/* Another user's exe is EACCES unless we are root, a zombie's
	 * ENOENT: neither is an error, only an unknown. */
	if (pid_path(path, sizeof(path), root, pid, "exe") == 0)
		n = readlink(path, buf, len - 1);
	buf[n < 0 ? 0 : n] = '\0';
	utf8_clean(buf);
}

/* The cgroup path shown (identity.h: the unified line "0::PATH" first;
 * on a v1-only host the name=systemd line, else the cpu controller's)
 * and what the cgroup lines say the process is. */
static int cgroup_read(const char *root, pid_t pid, struct worker *w)
{
	char buf[IDENTITY_TEXT_MAX];
	struct identity id;
	ssize_t n = pid_read(root, pid, "cgroup", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	identity_from_cgroup(buf, (size_t)n, w->cgroup, sizeof(w->cgroup), &id);
	memcpy(w->unit, id.unit, sizeof(w->unit));
	memcpy(w->slice, id.slice, sizeof(w->slice));
	memcpy(w->container_id, id.container_id, sizeof(w->container_id));
	snprintf(w->container, sizeof(w->container), "%.*s", IDENTITY_SHORT_ID, id.container_id);
	memcpy(w->runtime, id.runtime, sizeof(w->runtime));
	memcpy(w->pod_uid, id.pod_uid, sizeof(w->pod_uid));
	memcpy(w->qos, id.qos, sizeof(w->qos));
	return 0;
}

/* Whether the line (a maps line, or the tail of a long one) names a file
 * whose basename is AGENT_LIB, or AGENT_COPY...so (the copy nprof attach
 * makes in a process's own /tmp), "(deleted)" or not: the library may
 * have been replaced on disk since it was loaded. */
static bool maps_line_is_agent(const char *line, size_t len)
{
	static const char deleted[] = " (deleted)";
	static const char lib[] = "/" AGENT_LIB, copy[] = "/" AGENT_COPY, so[] = ".so";
	const char *base;

	if (len >= sizeof(deleted) - 1 &&
	    !memcmp(line + len - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1))
		len -= sizeof(deleted) - 1;
	if (len >= sizeof(lib) - 1 && !memcmp(line + len - (sizeof(lib) - 1), lib, sizeof(lib) - 1))
		return true;
	base = memrchr(line, '/', len);
	return base && (size_t)(line + len - base) > sizeof(copy) - 1 + sizeof(so) - 1 &&
	       !memcmp(base, copy, sizeof(copy) - 1) &&
	       !memcmp(line + len - (sizeof(so) - 1), so, sizeof(so) - 1);
}

/* A JVM can have tens of thousands of mappings: read in chunks and stop
 * at the first hit. Unreadable (another user's, without root): false. */
static bool maps_has_agent(const char *root, pid_t pid)
{
	char path[PATH_MAX], buf[MAPS_CHUNK];
	size_t have = 0;
	bool found = false;
	int fd;

	if (pid_path(path, sizeof(path), root, pid, "maps") < 0)
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);
		char *line, *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		line = buf;
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			if (maps_line_is_agent(line, (size_t)(nl - line))) {
				found = true;
				goto out;
			}
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		if (have == sizeof(buf)) {
			/* No newline in a full buffer: only the tail matters. */
			line += have - MAPS_TAIL;
			have = MAPS_TAIL;
		}
		memmove(buf, line, have);
	}
	found = have && maps_line_is_agent(buf, have);
out:
	close(fd);
	return found;
}

static int pid_t_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Reads root/net/unix once: the pids that abstract sockets named
 * @nprof-agent-PID claim. A name anyone could bind, so only a hint of
 * where to look: the maps still decide. */
static void agent_sockets_read(struct scan_ctx *ctx)
{
	char path[PATH_MAX], line[512];
	size_t cap = 0;
	FILE *f;

	if (snprintf(path, sizeof(path), "%s/net/unix", ctx->root) >= (int)sizeof(path) ||
	    !(f = fopen(path, "re")))
		return;
	ctx->net_known = true;
	while (fgets(line, sizeof(line), f)) {
		const char *at = strstr(line, " @nprof-agent-");
		char *end;
		long pid;

		if (!at)
			continue;
		pid = strtol(at + 14, &end, 10);
		if (pid <= 0 || pid > INT32_MAX || (*end != '\n' && *end != '\0') ||
		    array_reserve(&ctx->agent_pids, &cap, ctx->n_agent_pids + 1,
				  sizeof(*ctx->agent_pids)) < 0)
			continue;
		ctx->agent_pids[ctx->n_agent_pids++] = (pid_t)pid;
	}
	fclose(f);
	if (ctx->n_agent_pids) /* qsort's base must not be NULL, even for none */
		qsort(ctx->agent_pids, ctx->n_agent_pids, sizeof(*ctx->agent_pids), pid_t_cmp);
	if (snprintf(path, sizeof(path), "%s/self/ns/net", ctx->root) >= (int)sizeof(path) ||
	    readlink(path, ctx->netns, sizeof(ctx->netns) - 1) <= 0)
		ctx->net_known = false;
}

static void scan_ctx_release(struct scan_ctx *ctx)
{
	free(ctx->agent_pids);
	ctx->agent_pids = NULL;
}

/* Whether pid has the agent: its maps, read only when the unix table
 * of its network namespace (when it is ours) names its socket. */
static bool has_agent(const struct scan_ctx *ctx, pid_t pid)
{
	char path[PATH_MAX], ns[64];
	ssize_t n;

	if (ctx->net_known && pid_path(path, sizeof(path), ctx->root, pid, "ns/net") == 0 &&
	    (n = readlink(path, ns, sizeof(ns) - 1)) > 0) {
		ns[n] = '\0';
		/* bsearch's base must not be NULL, even for no element */
		if (!strcmp(ns, ctx->netns) && (!ctx->n_agent_pids ||
		    !bsearch(&pid, ctx->agent_pids, ctx->n_agent_pids, sizeof(pid), pid_t_cmp)))
			return false;
	}
	return maps_has_agent(ctx->root, pid);
}

static int scan_ctx_init(struct scan_ctx *ctx, const char *root)
{
	char path[PATH_MAX], buf[128], *end;
	uint64_t now = clock_ns(CLOCK_BOOTTIME);
	long long sec;
	int n;

	memset(ctx, 0, sizeof(*ctx));
	ctx->root = root;
	ctx->hz = sysconf(_SC_CLK_TCK);
	ctx->page_size = sysconf(_SC_PAGESIZE);
	if (ctx->hz <= 0 || ctx->page_size <= 0)
		return -EINVAL;
	/* proc_root's own uptime when it has one (a test's tree does), so
	 * that start times and now share one clock. */
	ctx->boot_offset_ns = 0;
	n = snprintf(path, sizeof(path), "%s/uptime", root);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	if (proc_read_small(path, buf, sizeof(buf)) > 0) {
		errno = 0;
		sec = strtoll(buf, &end, 10);
		if (!errno && end != buf && sec >= 0 && sec < INT64_MAX / 1000000000) {
			int64_t ns = sec * 1000000000ll;

			if (*end == '.') {
				int64_t scale = 100000000;

				for (end++; *end >= '0' && *end <= '9' && scale; end++, scale /= 10)
					ns += (*end - '0') * scale;
			}
			ctx->boot_offset_ns = ns - (int64_t)now;
		}
	}
	agent_sockets_read(ctx);
	return 0;
}

/* Reads process pid into *ret and its CPU reading into *ret_seen (the
 * scanner's bookkeeping is the caller's). */
static int worker_load(struct worker_scanner *s, const struct scan_ctx *ctx, pid_t pid,
		       struct worker *ret, struct cpu_seen *ret_seen)
{
	struct worker w;
	struct proc_stat st;
	uint64_t seen, started, life, hz = (uint64_t)ctx->hz;
	int64_t now;
	char buf[256];
	unsigned long long size, resident;
	int err;

	memset(&w, 0, sizeof(w));
	err = stat_read(ctx->root, pid, &st);
	if (err < 0)
		goto out;
	seen = clock_ns(CLOCK_BOOTTIME);
	if (is_kernel_thread(ctx->root, pid, &st)) {
		err = -ESRCH;
		goto out;
	}
	err = status_uid(ctx->root, pid, &w.uid);
	if (err < 0)
		goto out;
	err = (int)pid_read(ctx->root, pid, "statm", buf, sizeof(buf));
	if (err < 0)
		goto out;
	if (sscanf(buf, "%llu %llu", &size, &resident) != 2) {
		err = -EBADMSG;
		goto out;
	}
	err = cgroup_read(ctx->root, pid, &w);
	if (err < 0)
		goto out;

	w.pid = pid;
	w.start_ticks = st.start_ticks;
	snprintf(w.id, sizeof(w.id), "%d-%llu", (int)pid, (unsigned long long)st.start_ticks);
	snprintf(w.name, sizeof(w.name), "%.*s", (int)sizeof(w.name) - 1, st.comm);
	utf8_clean(w.name);
	cmdline_read(ctx->root, pid, w.cmdline, sizeof(w.cmdline));
	exe_read(ctx->root, pid, w.exe, sizeof(w.exe));
	user_lookup(s, w.uid, w.user, sizeof(w.user));
	w.threads = st.threads;
	w.rss_bytes = (uint64_t)resident * (uint64_t)ctx->page_size;
	now = (int64_t)seen + ctx->boot_offset_ns;
	/* In two steps: ticks * 1e9 overflows after 5.8 years at 100 Hz. */
	started = st.start_ticks / hz * 1000000000ull + st.start_ticks % hz * 1000000000ull / hz;
	/* /proc/uptime counts in 10 ms: a process just started may seem
	 * to start in the future. */
	w.uptime_ns = now > 0 && (uint64_t)now > started ? (uint64_t)now - started : 0;
	life = w.uptime_ns;
	w.cpu_percent = life ? (double)(st.utime + st.stime) * 1e9 / (double)hz / (double)life * 100.0 : 0.0;
	w.agent = has_agent(ctx, pid);

	*ret = w;
	*ret_seen = (struct cpu_seen){ .pid = pid, .start_ticks = st.start_ticks,
				       .cpu_ticks = st.utime + st.stime, .seen_ns = seen };
	err = 0;
out:
	return err == -ENOENT ? -ESRCH : err;
}

/* The index of pid in s->seen, or where it would go. */
static size_t seen_find(const struct worker_scanner *s, pid_t pid)
{
	size_t lo = 0, hi = s->nseen;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->seen[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Sets w->cpu_percent from the scanner's baseline for it (w holds its
 * lifetime share on entry) and makes *cur the baseline to keep. */
static void cpu_account(const struct worker_scanner *s, long hz, struct worker *w,
			struct cpu_seen *cur)
{
	const struct cpu_seen *prev = NULL;
	size_t i = seen_find(s, w->pid);
	uint64_t window, delta;

	if (i < s->nseen && s->seen[i].pid == w->pid && s->seen[i].start_ticks == w->start_ticks)
		prev = &s->seen[i];
	if (!prev || cur->seen_ns <= prev->seen_ns)
		return;
	window = cur->seen_ns - prev->seen_ns;
	if (window < CPU_WINDOW_MIN_NS) {
		if (prev->has_percent)
			w->cpu_percent = prev->percent;
		*cur = *prev;
		return;
	}
	delta = cur->cpu_ticks > prev->cpu_ticks ? cur->cpu_ticks - prev->cpu_ticks : 0;
	w->cpu_percent = (double)delta * 1e9 / (double)hz / (double)window * 100.0;
	cur->percent = w->cpu_percent;
	cur->has_percent = true;
}

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* The numeric entries of proc_root, sorted. */
static int pids_list(const char *root, pid_t **ret, size_t *ret_n)
{
	pid_t *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *dir;
	int err = 0;

	dir = opendir(root);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		uint64_t pid;

		if (parse_u64(de->d_name, strlen(de->d_name), &pid) < 0 || !pid || pid > INT_MAX)
			continue;
		if (array_reserve(&v, &cap, n + 1, sizeof(*v)) < 0) {
			err = -ENOMEM;
			goto out;
		}
		v[n++] = (pid_t)pid;
	}
	if (n)
		qsort(v, n, sizeof(*v), pid_cmp);
	*ret = v;
	*ret_n = n;
	v = NULL;
out:
	closedir(dir);
	free(v);
	return err;
}

int worker_scan(struct worker_scanner *s, const char *proc_root, size_t max,
		struct worker **ret, size_t *ret_n)
{
	struct scan_ctx ctx;
	struct worker *v = NULL;
	struct cpu_seen *seen = NULL;
	size_t n = 0, cap = 0, seen_cap = 0, npids = 0;
	pid_t *pids = NULL;
	int err;

	err = scan_ctx_init(&ctx, proc_root);
	if (err < 0)
		goto out;
	err = pids_list(proc_root, &pids, &npids);
	if (err < 0)
		goto out;
	if (s)
		s->nusers = 0; /* a renamed user shows at the next scan */
	for (size_t i = 0; i < npids && n < max; i++) {
		struct cpu_seen cur;

		if (array_reserve(&v, &cap, n + 1, sizeof(*v)) < 0 ||
		    array_reserve(&seen, &seen_cap, n + 1, sizeof(*seen)) < 0) {
			err = -ENOMEM;
			goto out;
		}
		err = worker_load(s, &ctx, pids[i], &v[n], &cur);
		if (err == -ENOMEM)
			goto out;
		/* Gone, a kernel thread, hidden (hidepid) or malformed:
		 * not one nprofd can act on. */
		if (err < 0)
			continue;
		if (s)
			cpu_account(s, ctx.hz, &v[n], &cur);
		seen[n++] = cur;
	}
	err = 0;
	/* Only the processes of this scan: the table cannot outgrow /proc. */
	if (s) {
		free(s->seen);
		s->seen = seen;
		s->nseen = n;
		s->seen_cap = seen_cap;
		seen = NULL;
	}
	*ret = v;
	*ret_n = n;
	v = NULL;
out:
	scan_ctx_release(&ctx);
	free(pids);
	free(seen);
	free(v);
	return err;
}

int worker_read(struct worker_scanner *s, const char *proc_root, pid_t pid,
		struct worker *ret)
{
	struct scan_ctx ctx;
	struct worker w;
	struct cpu_seen cur;
	size_t i;
	int err;

	if (pid <= 0)
		return -EINVAL;
	err = scan_ctx_init(&ctx, proc_root);
	if (err < 0)
		return err;
	err = worker_load(s, &ctx, pid, &w, &cur);
	scan_ctx_release(&ctx);
	if (err < 0)
		return err;
	if (s) {
		cpu_account(s, ctx.hz, &w, &cur);
		i = seen_find(s, pid);
		if (i < s->nseen && s->seen[i].pid == pid) {
			s->seen[i] = cur;
		} else if (array_reserve(&s->seen, &s->seen_cap, s->nseen + 1,
					 sizeof(*s->seen)) == 0) {
			/* Out of memory only loses the next delta: not an error. */
			memmove(&s->seen[i + 1], &s->seen[i], (s->nseen - i) * sizeof(*s->seen));
			s->seen[i] = cur;
			s->nseen++;
		}
	}
	*ret = w;
	return 0;
}

int worker_id_parse(const char *id, pid_t *ret_pid, uint64_t *ret_start_ticks)
{
	const char *dash;
	uint64_t pid, start;

	if (!id)
		return -EINVAL;
	dash = strchr(id, '-');
	if (!dash || parse_u64(id, (size_t)(dash - id), &pid) < 0 || !pid || pid > INT_MAX ||
	    parse_u64(dash + 1, strlen(dash + 1), &start) < 0)
		return -EINVAL;
	*ret_pid = (pid_t)pid;
	*ret_start_ticks = start;
	return 0;
}

int worker_pin(const char *proc_root, const char *id)
{
	struct proc_stat st;
	uint64_t start;
	pid_t pid;
	int fd, err;

	err = worker_id_parse(id, &pid, &start);
	if (err < 0)
		return err;
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	/* EINVAL: the pid is now a thread's, so not the worker's. */
	if (fd < 0)
		return errno == EINVAL ? -ESRCH : -errno;
	/* Checked after the open: if the pid named another process when
	 * the pidfd was taken, its start time now differs. */
	err = stat_read(proc_root, pid, &st);
	if (err == 0 && (st.start_ticks != start || is_kernel_thread(proc_root, pid, &st)))
		err = -ESRCH;
	if (err == -ENOENT)
		err = -ESRCH;
	if (err < 0)
		goto out;
	return fd;
out:
	close(fd);
	return err;
}

static bool event_is_hardware(enum event_id e)
{
	return e == EVENT_CYCLES || e == EVENT_INSTRUCTIONS || e == EVENT_CACHE_MISSES ||
	       e == EVENT_BRANCH_MISSES;
}

#define WHY_AGENT "needs nprof's agent in the process: start it with NPROF_START=1 LD_PRELOAD=libnprof.so"
#define WHY_PERF "perf_events denied to nprofd (perf_event_paranoid, seccomp or a container); allow perf_event_open"
#define WHY_CPU "perf_events denied; load nprof's agent for itimer"
#define WHY_PMU "no hardware counters on this machine (no PMU); use cpu instead"
#define WHY_SCHED_WALL "recorded from outside only by an admin (the scheduler's tracepoint " \
	"needs root)"
#define WHY_SCHED "needs the scheduler's tracepoint, which only an admin's instance (run as root) " \
	"may open here"

void worker_modes(const struct worker *w, bool perf_ok, bool sched_ok, bool hw_ok,
		  struct worker_mode modes[EVENT_COUNT])
{
	for (unsigned i = 0; i < EVENT_COUNT; i++) {
		struct worker_mode *m = &modes[i];
		unsigned runs = event_defs[i].runs;
		const char *why = NULL;
		bool agent = false;

		if (event_defs[i].scheduler) {
			/* wall: the agent's sampler, else the engine's
			 * scheduler tracepoint; offcpu: the tracepoint only. */
			if (!((runs & EVENT_IN_AGENT) && w->agent) && !(sched_ok && perf_ok)) {
				agent = (runs & EVENT_IN_AGENT) != 0;
				why = agent ? WHY_SCHED_WALL : WHY_SCHED;
			}
		} else if ((runs & EVENT_IN_ENGINE) && (runs & EVENT_IN_AGENT)) {
			if (!perf_ok && !w->agent)
				why = WHY_CPU;
		} else if (runs & EVENT_IN_AGENT) {
			agent = !w->agent;
			if (agent)
				why = WHY_AGENT;
		} else if (!perf_ok) {
			why = WHY_PERF;
		} else if (event_is_hardware((enum event_id)i) && !hw_ok) {
			why = WHY_PMU;
		}
		m->event = (enum event_id)i;
		m->available = !why;
		m->needs_agent = agent;
		snprintf(m->why_not, sizeof(m->why_not), "%s", why ? why : "");
	}
}

static bool perf_sw_ok, perf_hw_ok;
static pthread_once_t perf_once = PTHREAD_ONCE_INIT;

static bool perf_try(uint32_t type, uint64_t config)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr), .type = type, .config = config,
		.disabled = 1, .exclude_kernel = 1, .exclude_hv = 1,
	};
	int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static void perf_probe_once(void)
{
	perf_sw_ok = perf_try(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
	perf_hw_ok = perf_try(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
}

void worker_perf_probe(bool *ret_sw_ok, bool *ret_hw_ok)
{
	pthread_once(&perf_once, perf_probe_once);
	*ret_sw_ok = perf_sw_ok;
	*ret_hw_ok = perf_hw_ok;
}
