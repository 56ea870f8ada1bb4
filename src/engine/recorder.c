/* The raw recorder: perf events on every thread of one process, read
 * into a table of distinct (thread, address chain). See recorder.h and
 * docs/engine.md for why it is shaped this way. */
#include "engine/recorder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/hash.h"
#include "base/id_index.h"
#include "engine/perf_ring.h"

#define POLL_MS 100		/* how promptly *stop is noticed */
#define MAX_RESCANS 64		/* /proc/PID/task passes; inherit covers the rest */
#define MAX_CPUS 8192
#define RING_BYTES (128u << 10)	/* per CPU, for ~100 samples/s per thread */
#define RING_BYTES_FAST (512u << 10)
#define RING_BYTES_MIN (8u << 10)

struct open_event {
	int fd;
	uint64_t id;	/* PERF_EVENT_IOC_ID; what samples carry */
	pid_t tid;	/* the thread it was opened on */
};

struct recorder_private {
	struct recorder_config c;
	const struct unwinder *unwinder;
	void *unwind_state;
	struct perf_event_attr attr; /* template for every open */
	pid_t pid;
	int pidfd;		/* readable when the target exits; -1 if none */
	int *cpus;
	unsigned ncpus;
	struct perf_ring **rings; /* per CPU index; owned by its first event */
	size_t ring_want;
	struct open_event *events;
	size_t nevents, events_cap;
	struct id_index event_index;  /* id -> events[] */
	pid_t *opened;		      /* threads opened directly */
	size_t nopened, opened_cap;
	struct id_index opened_index;
	struct id_index thread_index; /* tid -> r->threads[] */
	size_t threads_cap;
	struct id_index stack_index;  /* key -> r->stacks[] */
	size_t stacks_cap, ips_cap, timeline_cap;
	uint64_t *scratch;	      /* unwinder output, max_stack entries */
	uint64_t start_mono;
};

/* sample_id_all trailer for our sample_type: TID, TIME, IDENTIFIER. */
struct id_trailer {
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id;
};

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int read_small_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return 0;
}

uint64_t recorder_sysctl(const char *path, uint64_t dflt)
{
	char buf[64];
	char *end;
	long long v;

	if (read_small_file(path, buf, sizeof(buf)) < 0)
		return dflt;
	v = strtoll(buf, &end, 10);
	return end == buf ? dflt : (uint64_t)v;
}

static int64_t paranoid_level(void)
{
	return (int64_t)recorder_sysctl("/proc/sys/kernel/perf_event_paranoid",
					2);
}

static void raise_nofile(void)
{
	struct rlimit rl;

	/* One fd per (thread, CPU): a 200-thread service on 32 CPUs needs
	 * 6400, well past the usual soft limit of 1024. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int online_cpus(struct recorder_private *p)
{
	char buf[4096];
	const char *s = buf;
	long n;

	p->cpus = calloc(MAX_CPUS, sizeof(*p->cpus));
	if (!p->cpus)
		return -ENOMEM;
	if (read_small_file("/sys/devices/system/cpu/online", buf,
			    sizeof(buf)) < 0) {
		n = sysconf(_SC_NPROCESSORS_ONLN);
		for (long i = 0; i < n && i < MAX_CPUS; i++)
			p->cpus[p->ncpus++] = (int)i;
		return p->ncpus ? 0 : -ENODEV;
	}
	/* "0-3,8,10-11" */
	while (*s) {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (end == s)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long i = a; i <= b && p->ncpus < MAX_CPUS; i++)
			p->cpus[p->ncpus++] = (int)i;
		s = *end == ',' ? end + 1 : end;
		if (*end != ',')
			break;
	}
	return p->ncpus ? 0 : -ENODEV;
}

/* The attr every event is opened with; kernel selects the exclusions. */
static void make_attr(struct recorder *r, bool kernel,
		      struct perf_event_attr *a)
{
	struct recorder_private *p = r->priv;

	engine_event_attr(p->c.event, p->c.interval, a);
	if (r->switch_records) {
		/* A dummy event counts nothing; it is here for its side-band
		 * records: switches, comm, task, mmap. */
		a->config = PERF_COUNT_SW_DUMMY;
		a->sample_period = 1;
		a->context_switch = 1;
	}
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
			 PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_PERIOD;
	p->unwinder->prepare_attr(a, r->kernel_max_stack);
	/* Sample times on CLOCK_MONOTONIC, so they map to wall-clock time
	 * with one offset taken at start. */
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->sample_id_all = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->inherit = 1;
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(p->ring_want / 4);
	if (!kernel) {
		a->exclude_kernel = 1;
		a->exclude_callchain_kernel = 1;
		a->exclude_hv = 1;
	}
	if (p->c.enable_on_exec)
		a->enable_on_exec = 1;
}

/* Reads the real, effective and saved uids of pid. */
static int proc_uids(pid_t pid, uid_t uids[3])
{
	char path[64], line[256];
	FILE *f;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned a, b, c;

		if (sscanf(line, "Uid: %u %u %u", &a, &b, &c) == 3) {
			uids[0] = a;
			uids[1] = b;
			uids[2] = c;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* perf_event_open refused even user-space sampling: say why. The kernel
 * allows a non-root user to profile a process only when its real,
 * effective and saved uids all equal the caller's (ptrace's read check),
 * when it is dumpable, and when perf_event_paranoid is at most 2. */
static int explain_denied(struct recorder *r, int err, struct diag *d)
{
	struct recorder_private *p = r->priv;
	const char *ev = p->c.event->name;
	int64_t level = paranoid_level();
	uid_t me = getuid(), uids[3] = { 0, 0, 0 };
	char path[64];
	int fd;

	if (geteuid() != 0 && level > 2)
		return diag_set(d, err,
				"%s: perf_events denied (kernel.perf_event_paranoid=%lld); "
				"set it to 2 or lower, or use the agent's -e itimer",
				ev, (long long)level);
	if (!proc_uids(p->pid, uids) &&
	    (uids[0] != me || uids[1] != me || uids[2] != me)) {
		uid_t other = uids[0] != me ? uids[0]
			      : uids[1] != me ? uids[1] : uids[2];

		return diag_set(d, err,
				"cannot profile PID %d: it belongs to another user (uid %u); "
				"run nprof as that user or as root",
				(int)p->pid, (unsigned)other);
	}
	/* Same user: reading /proc/PID/environ takes the same ptrace
	 * check, which fails for a non-dumpable (setuid, or
	 * prctl(PR_SET_DUMPABLE, 0)) process. */
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)p->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM))
		return diag_set(d, err,
				"cannot profile PID %d: it is not dumpable (started setuid "
				"or called prctl(PR_SET_DUMPABLE, 0)); run nprof as root",
				(int)p->pid);
	if (fd >= 0)
		close(fd);
	return diag_set(d, err,
			"%s: perf_event_open on PID %d denied (%s; "
			"kernel.perf_event_paranoid=%lld); a security module may "
			"forbid it; try as root",
			ev, (int)p->pid, strerror(-err), (long long)level);
}

static int explain_unsupported(struct recorder *r, int err, struct diag *d)
{
	const struct engine_event *e = r->priv->c.event;
	char avail[256];

	engine_available_events(avail, sizeof(avail));
	return diag_set(d, -ENOENT,
			"%s: this host cannot count it (perf_event_open: %s%s); "
			"available events: %s",
			e->name, strerror(-err),
			e->type == PERF_TYPE_HARDWARE
				? ", no hardware PMU, as in most VMs"
				: "",
			avail[0] ? avail : "none");
}

static int open_probe(struct recorder *r, bool kernel)
{
	struct perf_event_attr a;
	int fd;

	make_attr(r, kernel, &a);
	a.inherit = 0;
	a.enable_on_exec = 0;
	fd = engine_perf_event_open(&a, r->priv->pid, -1, -1,
				    PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return fd < 0 ? fd : 0;
}

/* Decides kernel vs user-only (and switch records) by opening the event
 * on the target once, the way the real open will. */
static int probe(struct recorder *r, struct diag *d)
{
	struct recorder_private *p = r->priv;
	int err = -EACCES;

	if (!p->c.force_user_only)
		err = open_probe(r, true);
	r->kernel = !err;
	if (err == -EACCES || err == -EPERM)
		err = open_probe(r, false);
	if (!err && !r->kernel && p->c.event->context_switches) {
		/* The context-switch software event fires in the kernel, so
		 * exclude_kernel leaves it silent; switch records still
		 * come, without stacks. */
		r->switch_records = true;
		err = open_probe(r, false);
	}
	switch (err) {
	case 0:
		return 0;
	case -ESRCH:
		return diag_set(d, -ESRCH, "no process with PID %d",
				(int)p->pid);
	case -EACCES:
	case -EPERM:
		return explain_denied(r, err, d);
	case -ENOENT:
	case -EOPNOTSUPP:
	case -ENODEV:
		return explain_unsupported(r, err, d);
	default:
		return diag_set(d, err, "%s: perf_event_open on PID %d: %s",
				p->c.event->name, (int)p->pid, strerror(-err));
	}
}

static int tid_match(const void *ctx, uint32_t id, const void *key)
{
	return ((const pid_t *)ctx)[id] == *(const pid_t *)key;
}

static bool tid_opened(const struct recorder_private *p, pid_t tid)
{
	return id_index_find(&p->opened_index, hash_u64((uint64_t)tid),
			     tid_match, p->opened, &tid) != ID_NONE;
}

static int thread_match(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct raw_thread *)ctx)[id].tid == *(const pid_t *)key;
}

static struct raw_thread *thread_find(const struct recorder *r, pid_t tid)
{
	uint32_t id = id_index_find(&r->priv->thread_index,
				    hash_u64((uint64_t)tid), thread_match,
				    r->threads, &tid);

	return id == ID_NONE ? NULL : &r->threads[id];
}

const char *recorder_thread_name(const struct recorder *r, pid_t tid)
{
	const struct raw_thread *t = thread_find(r, tid);

	return t ? t->name : "";
}

/* The thread, created when new; NULL when the table is full or memory
 * ran out (the thread then just has no name). */
static struct raw_thread *thread_get(struct recorder *r, pid_t tid)
{
	struct recorder_private *p = r->priv;
	struct raw_thread *t = thread_find(r, tid);

	if (t)
		return t;
	if (r->nthreads >= RECORDER_MAX_THREADS)
		return NULL;
	if (r->nthreads == p->threads_cap) {
		size_t cap = p->threads_cap ? p->threads_cap * 2 : 64;
		struct raw_thread *n = realloc(r->threads, cap * sizeof(*n));

		if (!n)
			return NULL;
		r->threads = n;
		p->threads_cap = cap;
	}
	if (id_index_insert(&p->thread_index, hash_u64((uint64_t)tid),
			    (uint32_t)r->nthreads) < 0)
		return NULL;
	t = &r->threads[r->nthreads++];
	t->tid = tid;
	t->name[0] = '\0';
	return t;
}

static void thread_set_name(struct recorder *r, pid_t tid, const char *name)
{
	struct raw_thread *t = thread_get(r, tid);

	size_t len;

	if (!t || !name || !*name)
		return;
	len = strnlen(name, sizeof(t->name) - 1);
	memcpy(t->name, name, len);
	t->name[len] = '\0';
}

static int event_match(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct open_event *)ctx)[id].id ==
	       *(const uint64_t *)key;
}

/* Keeps one copy of every sample: a thread created by an already
 * sampled thread inherits its events, and if a rescan also opened it
 * directly, it has two. Samples carry the id of the event we opened
 * (the inherited one reports its parent's id), so prefer the thread's
 * own events when it has some. */
static bool keep_record(struct recorder *r, uint64_t id, pid_t tid)
{
	struct recorder_private *p = r->priv;
	uint32_t e = id_index_find(&p->event_index, hash_u64(id), event_match,
				   p->events, &id);

	if (e == ID_NONE || p->events[e].tid == tid || !tid_opened(p, tid))
		return true;
	r->stats.duplicates++;
	return false;
}

/* The largest ring (data bytes, a power of two) that fits on every CPU
 * within the locked-memory allowance of a user without CAP_IPC_LOCK:
 * kernel.perf_event_mlock_kb per CPU for all of the user's perf rings,
 * then RLIMIT_MEMLOCK. Splitting it up front keeps the first CPUs' rings
 * from taking it all and leaving none for the last. Root: no limit. */
static size_t ring_fit(size_t want, unsigned ncpus)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), fit;
	uint64_t budget;
	struct rlimit rl;

	if (geteuid() == 0 || !ncpus)
		return want;
	budget = recorder_sysctl("/proc/sys/kernel/perf_event_mlock_kb", 516) * 1024 * ncpus;
	if (!getrlimit(RLIMIT_MEMLOCK, &rl)) {
		if (rl.rlim_cur == RLIM_INFINITY)
			return want;
		budget += rl.rlim_cur;
	}
	budget /= ncpus;
	for (fit = want; fit > RING_BYTES_MIN && fit + page > budget; fit /= 2)
		;
	return fit;
}

/* Opens the ring owner of a CPU: halves the ring while the locked-memory
 * allowance refuses it. Returns the fd or -errno. */
static int open_ring_owner(struct recorder *r, pid_t tid, unsigned ci,
			   struct diag *d)
{
	struct recorder_private *p = r->priv;
	struct perf_ring *ring = calloc(1, sizeof(*ring));
	size_t len = p->ring_want;
	int fd = -ENOMEM;

	if (!ring)
		goto out;
	for (;;) {
		struct perf_event_attr a = p->attr;
		int err;

		a.wakeup_watermark = (uint32_t)(len / 4);
		fd = engine_perf_event_open(&a, tid, p->cpus[ci], -1,
					    PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			goto out;
		err = perf_ring_map(ring, fd, len);
		if (!err)
			break;
		close(fd);
		fd = err;
		if (err != -EPERM || len / 2 < RING_BYTES_MIN) {
			diag_set(d, err,
				 "cannot map a perf ring buffer of %zu KiB: %s "
				 "(limits: kernel.perf_event_mlock_kb=%llu per CPU, "
				 "then ulimit -l)",
				 len >> 10, strerror(-err),
				 (unsigned long long)recorder_sysctl(
					 "/proc/sys/kernel/perf_event_mlock_kb", 516));
			goto out;
		}
		len /= 2;
	}
	if (!r->stats.ring_bytes || len < r->stats.ring_bytes)
		r->stats.ring_bytes = len;
	p->rings[ci] = ring;
	ring = NULL;
out:
	free(ring);
	return fd;
}

static int add_event(struct recorder_private *p, int fd, pid_t tid)
{
	uint64_t id;

	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
		return -errno;
	if (p->nevents == p->events_cap) {
		size_t cap = p->events_cap ? p->events_cap * 2 : 64;
		struct open_event *n = realloc(p->events, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->events = n;
		p->events_cap = cap;
	}
	if (id_index_insert(&p->event_index, hash_u64(id),
			    (uint32_t)p->nevents) < 0)
		return -ENOMEM;
	p->events[p->nevents++] = (struct open_event){ fd, id, tid };
	return 0;
}

static int remember_opened(struct recorder_private *p, pid_t tid)
{
	if (p->nopened == p->opened_cap) {
		size_t cap = p->opened_cap ? p->opened_cap * 2 : 64;
		pid_t *n = realloc(p->opened, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->opened = n;
		p->opened_cap = cap;
	}
	if (id_index_insert(&p->opened_index, hash_u64((uint64_t)tid),
			    (uint32_t)p->nopened) < 0)
		return -ENOMEM;
	p->opened[p->nopened++] = tid;
	return 0;
}

/* Opens tid's event on every CPU. A thread that exited meanwhile is not
 * an error (*ret_gone says so). */
static int open_thread(struct recorder *r, pid_t tid, bool *ret_gone,
		       struct diag *d)
{
	struct recorder_private *p = r->priv;
	char path[96], name[32];
	int err = 0;

	*ret_gone = false;
	if (p->nopened >= RECORDER_MAX_THREADS) {
		/* Not sampled, unless an opened thread created it. */
		*ret_gone = true;
		return 0;
	}
	for (unsigned ci = 0; ci < p->ncpus; ci++) {
		int fd;

		if (!p->rings[ci]) {
			fd = open_ring_owner(r, tid, ci, d);
		} else {
			struct perf_event_attr a = p->attr;

			fd = engine_perf_event_open(&a, tid, p->cpus[ci], -1,
						    PERF_FLAG_FD_CLOEXEC);
			if (fd >= 0 &&
			    ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT,
				  p->rings[ci]->fd) < 0) {
				err = -errno;
				close(fd);
				diag_set(d, err, "%s: PERF_EVENT_IOC_SET_OUTPUT: %s",
					 p->c.event->name, strerror(-err));
				goto out;
			}
		}
		if (fd == -ESRCH) {
			*ret_gone = true;
			err = 0;
			goto out;
		}
		if (fd == -EMFILE || fd == -ENFILE) {
			struct rlimit rl = { 0 };

			getrlimit(RLIMIT_NOFILE, &rl);
			err = diag_set(d, fd,
				       "out of file descriptors after %zu perf events "
				       "(one per thread and CPU; RLIMIT_NOFILE=%llu); "
				       "raise ulimit -n",
				       p->nevents,
				       (unsigned long long)rl.rlim_cur);
			goto out;
		}
		if (fd < 0) {
			err = diag_set(d, fd, "%s: perf_event_open on thread %d, CPU %d: %s",
				       p->c.event->name, (int)tid, p->cpus[ci],
				       strerror(-fd));
			goto out;
		}
		err = add_event(p, fd, tid);
		if (err < 0) {
			close(fd);
			goto out;
		}
		r->stats.events_opened++;
		if (!p->c.enable_on_exec && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
			err = diag_set(d, -errno, "%s: PERF_EVENT_IOC_ENABLE: %s",
				       p->c.event->name, strerror(errno));
			goto out;
		}
	}
	err = remember_opened(p, tid);
	if (err < 0)
		goto out;
	r->stats.threads_opened++;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)p->pid,
		 (int)tid);
	if (!read_small_file(path, name, sizeof(name)))
		thread_set_name(r, tid, name);
	else
		thread_get(r, tid);
out:
	return err;
}

/* Opens every thread of the target not opened yet; *ret_new counts them. */
static int scan_threads(struct recorder *r, unsigned *ret_new, struct diag *d)
{
	struct recorder_private *p = r->priv;
	char path[64];
	struct dirent *de;
	unsigned n = 0;
	int err = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)p->pid);
	dir = opendir(path);
	if (!dir) {
		/* Gone: the loop sees the exit through the pidfd. */
		*ret_new = 0;
		return 0;
	}
	while ((de = readdir(dir))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		bool gone;

		if (*end || tid <= 0 || tid_opened(p, (pid_t)tid))
			continue;
		err = open_thread(r, (pid_t)tid, &gone, d);
		if (err < 0)
			goto out;
		n += !gone;
	}
	*ret_new = n;
out:
	closedir(dir);
	return err;
}

/* Parses a sample by our sample_type; -EBADMSG when it is cut short. */
static int parse_sample(const struct recorder_private *p,
			const struct perf_event_header *h,
			struct raw_sample *s)
{
	const uint64_t *w = (const uint64_t *)(h + 1);
	const uint64_t *end = (const uint64_t *)((const char *)h + h->size);
	uint64_t t = p->attr.sample_type;

#define NEED(k)                                              \
	do {                                                 \
		if ((uint64_t)(end - w) < (uint64_t)(k))     \
			return -EBADMSG;                     \
	} while (0)
	memset(s, 0, sizeof(*s));
	if (t & PERF_SAMPLE_IDENTIFIER) {
		NEED(1);
		s->id = *w++;
	}
	if (t & PERF_SAMPLE_IP) {
		NEED(1);
		s->ip = *w++;
	}
	if (t & PERF_SAMPLE_TID) {
		uint32_t pt[2];

		NEED(1);
		memcpy(pt, w++, sizeof(pt));
		s->pid = pt[0];
		s->tid = pt[1];
	}
	if (t & PERF_SAMPLE_TIME) {
		NEED(1);
		s->time = *w++;
	}
	if (t & PERF_SAMPLE_ADDR)
		w++;
	if (t & PERF_SAMPLE_ID)
		w++;
	if (t & PERF_SAMPLE_STREAM_ID)
		w++;
	if (t & PERF_SAMPLE_CPU)
		w++;
	if (t & PERF_SAMPLE_PERIOD) {
		NEED(1);
		s->period = *w++;
	}
	if (t & (PERF_SAMPLE_READ | PERF_SAMPLE_RAW | PERF_SAMPLE_BRANCH_STACK))
		return -EBADMSG; /* never requested */
	if (t & PERF_SAMPLE_CALLCHAIN) {
		NEED(1);
		s->nr = *w++;
		NEED(s->nr);
		s->callchain = w;
		w += s->nr;
	}
	if (t & PERF_SAMPLE_REGS_USER) {
		NEED(1);
		s->regs_abi = *w++;
		if (s->regs_abi) {
			s->nregs = (unsigned)__builtin_popcountll(
				p->attr.sample_regs_user);
			NEED(s->nregs);
			s->regs = w;
			w += s->nregs;
		}
	}
	if (t & PERF_SAMPLE_STACK_USER) {
		NEED(1);
		s->stack_size = *w++;
		if (s->stack_size) {
			NEED(s->stack_size / 8 + 1);
			s->stack = (const uint8_t *)w;
			w += s->stack_size / 8;
			s->stack_dyn_size = *w++;
		}
	}
#undef NEED
	return 0;
}

struct stack_key {
	pid_t tid;
	uint8_t kind;
	bool truncated;
	uint32_t n, nkernel;
	const uint64_t *ips;
};

static uint64_t stack_hash(const struct stack_key *k)
{
	uint64_t seed = ((uint64_t)(uint32_t)k->tid << 32) ^
			((uint64_t)k->kind << 24) ^
			((uint64_t)k->truncated << 20) ^ k->nkernel;

	return hash_bytes(k->n ? k->ips : (const void *)&seed,
			  k->n * sizeof(*k->ips), seed);
}

static int stack_match(const void *ctx, uint32_t id, const void *key)
{
	const struct recorder *r = ctx;
	const struct raw_stack *s = &r->stacks[id];
	const struct stack_key *k = key;

	return s->tid == k->tid && s->kind == k->kind && s->n == k->n &&
	       s->nkernel == k->nkernel && s->truncated == k->truncated &&
	       (!k->n || !memcmp(r->ips + s->first, k->ips,
				 k->n * sizeof(*k->ips)));
}

/* Notes when the sample happened, for the timeline. */
static void timeline_add(struct recorder *r, uint64_t time_ns, uint32_t stack)
{
	struct recorder_private *p = r->priv;

	if (r->nevents >= RECORDER_MAX_EVENTS) {
		r->stats.events_dropped++;
		return;
	}
	if (r->nevents == p->timeline_cap) {
		size_t cap = p->timeline_cap ? p->timeline_cap * 2 : 4096;
		struct raw_event *n = realloc(r->events, cap * sizeof(*n));

		if (!n) {
			r->stats.events_dropped++;
			return;
		}
		r->events = n;
		p->timeline_cap = cap;
	}
	r->events[r->nevents++] = (struct raw_event){ time_ns, stack };
}

/* The per-sample work: one hash of the chain and, for a chain seen
 * before, two additions. Returns the raw stack's id, or ID_NONE when the
 * tables are full. */
static uint32_t aggregate(struct recorder *r, const struct stack_key *k,
			  uint64_t period)
{
	struct recorder_private *p = r->priv;
	uint64_t h = stack_hash(k);
	uint32_t id = id_index_find(&p->stack_index, h, stack_match, r, k);
	struct raw_stack *s;

	if (id != ID_NONE) {
		r->stacks[id].samples++;
		r->stacks[id].period += period;
		r->stats.samples++;
		return id;
	}
	if (r->nstacks >= RECORDER_MAX_STACKS ||
	    r->nips + k->n > RECORDER_MAX_IPS)
		goto full;
	if (r->nstacks == p->stacks_cap) {
		size_t cap = p->stacks_cap ? p->stacks_cap * 2 : 256;
		struct raw_stack *n = realloc(r->stacks, cap * sizeof(*n));

		if (!n)
			goto full;
		r->stacks = n;
		p->stacks_cap = cap;
	}
	if (r->nips + k->n > p->ips_cap) {
		size_t cap = p->ips_cap ? p->ips_cap : 4096;
		uint64_t *n;

		while (cap < r->nips + k->n)
			cap *= 2;
		n = realloc(r->ips, cap * sizeof(*n));
		if (!n)
			goto full;
		r->ips = n;
		p->ips_cap = cap;
	}
	if (id_index_insert(&p->stack_index, h, (uint32_t)r->nstacks) < 0)
		goto full;
	s = &r->stacks[r->nstacks++];
	*s = (struct raw_stack){
		.first = r->nips, .n = k->n, .nkernel = k->nkernel,
		.tid = k->tid, .kind = k->kind, .truncated = k->truncated,
		.samples = 1, .period = period,
	};
	if (k->n)
		memcpy(r->ips + r->nips, k->ips, k->n * sizeof(*k->ips));
	r->nips += k->n;
	r->stats.samples++;
	return (uint32_t)(r->nstacks - 1);
full:
	r->stats.table_full++;
	return ID_NONE;
}

static void on_sample(struct recorder *r, const struct perf_event_header *h)
{
	struct recorder_private *p = r->priv;
	struct raw_sample s;
	struct unwound u;
	struct stack_key k;
	uint32_t id;

	if (parse_sample(p, h, &s) < 0 || r->switch_records)
		return;
	if ((pid_t)s.pid != p->pid) {
		r->stats.other_process++;
		return;
	}
	if (!keep_record(r, s.id, (pid_t)s.tid))
		return;
	if (p->unwinder->unwind(p->unwind_state, &s, p->scratch, r->max_stack,
				&u) < 0) {
		r->stats.unwind_failed++;
		return;
	}
	if (u.truncated) {
		r->stats.truncated++;
		r->stats.truncated_by[u.end < UNWOUND_NEND ? u.end : UNWOUND_FAULT]++;
	}
	k = (struct stack_key){ (pid_t)s.tid, RAW_SAMPLE, u.truncated, u.n,
				u.nkernel, p->scratch };
	id = aggregate(r, &k, s.period);
	if (id != ID_NONE)
		timeline_add(r, s.time, id);
}

static const struct id_trailer *trailer(const struct perf_event_header *h,
					size_t body)
{
	if (h->size < sizeof(*h) + body + sizeof(struct id_trailer))
		return NULL;
	return (const void *)((const char *)h + h->size -
			      sizeof(struct id_trailer));
}

static void on_switch(struct recorder *r, const struct perf_event_header *h)
{
	const struct id_trailer *t = trailer(h, 0);
	struct stack_key k = { 0 };
	uint32_t id;

	if (!r->switch_records || !t || !(h->misc & PERF_RECORD_MISC_SWITCH_OUT))
		return;
	if ((pid_t)t->pid != r->priv->pid) {
		r->stats.other_process++;
		return;
	}
	if (!keep_record(r, t->id, (pid_t)t->tid))
		return;
	k.tid = (pid_t)t->tid;
	k.kind = h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT
			 ? RAW_SWITCH_PREEMPT
			 : RAW_SWITCH_VOLUNTARY;
	id = aggregate(r, &k, 1);
	if (id != ID_NONE)
		timeline_add(r, t->time, id);
}

/* A NUL-terminated string starting at s inside the record, or NULL. */
static const char *record_string(const struct perf_event_header *h,
				 const char *s)
{
	const char *end = (const char *)h + h->size;

	return s < end && memchr(s, '\0', (size_t)(end - s)) ? s : NULL;
}

static void on_comm(struct recorder *r, const struct perf_event_header *h)
{
	const uint32_t *pt = (const void *)(h + 1);
	const char *name = record_string(h, (const char *)(pt + 2));

	if (h->size < sizeof(*h) + 8 || !name || (pid_t)pt[0] != r->priv->pid)
		return;
	thread_set_name(r, (pid_t)pt[1], name);
	if ((pid_t)pt[1] == r->priv->pid && (h->misc & PERF_RECORD_MISC_COMM_EXEC)) {
		const struct unwinder *u = r->priv->unwinder;

		snprintf(r->comm, sizeof(r->comm), "%s", name);
		/* A new address space: its mappings follow as records. */
		if (u->on_exec && r->priv->unwind_state)
			u->on_exec(r->priv->unwind_state);
	}
}

static void on_fork(struct recorder *r, const struct perf_event_header *h)
{
	const uint32_t *f = (const void *)(h + 1); /* pid ppid tid ptid */
	struct raw_thread *child;
	const char *parent;

	if (h->size < sizeof(*h) + 16 || (pid_t)f[0] != r->priv->pid)
		return;
	/* A new thread is named after its creator until it renames
	 * itself (which sends a COMM record). */
	parent = recorder_thread_name(r, (pid_t)f[3]);
	child = thread_get(r, (pid_t)f[2]);
	if (child && !child->name[0] && parent[0])
		snprintf(child->name, sizeof(child->name), "%s", parent);
}

static void on_mmap(struct recorder *r, const struct perf_event_header *h)
{
	struct recorder_private *p = r->priv;
	const char *b = (const char *)(h + 1);
	struct mapping m = { 0 };
	uint32_t pid;
	uint64_t addr, len;
	size_t fixed = h->type == PERF_RECORD_MMAP2 ? 64 : 32;

	if (h->size < sizeof(*h) + fixed)
		return;
	memcpy(&pid, b, 4);
	if ((pid_t)pid != p->pid ||
	    (!p->c.on_mapping && !(p->unwinder->on_mapping && p->unwind_state)))
		return;
	memcpy(&addr, b + 8, 8);
	memcpy(&len, b + 16, 8);
	memcpy(&m.pgoff, b + 24, 8);
	m.start = addr;
	m.end = addr + len;
	if (h->type == PERF_RECORD_MMAP2) {
		if (!(h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
			memcpy(&m.maj, b + 32, 4);
			memcpy(&m.min, b + 36, 4);
			memcpy(&m.inode, b + 40, 8);
		}
		memcpy(&m.prot, b + 56, 4);
	} else {
		m.prot = (h->misc & PERF_RECORD_MISC_MMAP_DATA) ? PROT_READ
								: PROT_READ | PROT_EXEC;
	}
	m.path = record_string(h, b + fixed);
	if (!m.path)
		return;
	r->stats.mappings++;
	if (p->unwinder->on_mapping && p->unwind_state)
		p->unwinder->on_mapping(p->unwind_state, &m);
	if (p->c.on_mapping)
		p->c.on_mapping(p->c.ctx, &m);
}

static void on_record(void *ctx, const struct perf_event_header *h)
{
	struct recorder *r = ctx;
	const uint64_t *w = (const uint64_t *)(h + 1);

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		on_sample(r, h);
		break;
	case PERF_RECORD_SWITCH:
		on_switch(r, h);
		break;
	case PERF_RECORD_COMM:
		on_comm(r, h);
		break;
	case PERF_RECORD_FORK:
		on_fork(r, h);
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		on_mmap(r, h);
		break;
	case PERF_RECORD_LOST: /* id, lost */
		if (h->size >= sizeof(*h) + 16)
			r->stats.lost += w[1];
		break;
	case PERF_RECORD_LOST_SAMPLES: /* lost */
		if (h->size >= sizeof(*h) + 8)
			r->stats.lost += w[0];
		break;
	case PERF_RECORD_THROTTLE:
		r->stats.throttled++;
		break;
	default:
		break;
	}
}

static void drain_all(struct recorder *r)
{
	struct recorder_private *p = r->priv;

	for (unsigned ci = 0; ci < p->ncpus; ci++)
		if (p->rings[ci])
			perf_ring_drain(p->rings[ci], on_record, r);
}

int recorder_new(const struct recorder_config *c, struct recorder **ret,
		 struct diag *d)
{
	struct recorder *r = NULL;
	struct recorder_private *p;
	unsigned depth = c->max_depth ? c->max_depth : RECORDER_DEFAULT_DEPTH;
	uint64_t sysmax;
	char path[64];
	int err;

	if (c->pid <= 0 || !c->event) {
		err = diag_set(d, -EINVAL, "invalid PID %d", (int)c->pid);
		goto out;
	}
	err = -ENOMEM;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->priv = calloc(1, sizeof(*r->priv))))
		goto out;
	p = r->priv;
	p->c = *c;
	p->pid = c->pid;
	r->pid = c->pid;
	p->pidfd = -1;
	p->unwinder = c->unwinder ? c->unwinder : &unwinder_fp;
	id_index_init(&p->event_index);
	id_index_init(&p->opened_index);
	id_index_init(&p->thread_index);
	id_index_init(&p->stack_index);
	raise_nofile();

	/* The pidfd pins the process identity from here on and tells us
	 * when it exits. */
	p->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
	if (p->pidfd < 0 && errno == ESRCH) {
		err = diag_set(d, -ESRCH, "no process with PID %d", (int)c->pid);
		goto out;
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)c->pid);
	read_small_file(path, r->comm, sizeof(r->comm));

	sysmax = recorder_sysctl("/proc/sys/kernel/perf_event_max_stack", 127);
	r->kernel_max_stack = depth < sysmax ? depth : (unsigned)sysmax;
	if (r->kernel_max_stack > UINT16_MAX) /* attr.sample_max_stack is 16 bits */
		r->kernel_max_stack = UINT16_MAX;
	if (!r->kernel_max_stack)
		r->kernel_max_stack = 1;
	/* The kernel's callchain obeys the sysctl; our own walk only -j. */
	r->max_stack = p->unwinder->own_user_walk ? depth : r->kernel_max_stack;
	p->scratch = calloc(r->max_stack, sizeof(*p->scratch));
	if (!p->scratch)
		goto out;

	err = online_cpus(p);
	if (err < 0) {
		diag_set(d, err, "cannot list the online CPUs");
		goto out;
	}
	err = -ENOMEM;
	p->rings = calloc(p->ncpus, sizeof(*p->rings));
	if (!p->rings)
		goto out;

	err = probe(r, d);
	if (err < 0)
		goto out;
	make_attr(r, r->kernel, &p->attr);
	r->interval = p->attr.sample_period;
	/* Every-event sampling (page faults, switches) and hardware counts
	 * come fast; switch records are small. */
	p->ring_want = p->unwinder->ring_bytes ? p->unwinder->ring_bytes
					       : RING_BYTES;
	if (!r->switch_records &&
	    (p->c.event->type != PERF_TYPE_SOFTWARE ||
	     p->c.event->config != PERF_COUNT_SW_CPU_CLOCK ||
	     r->interval < 1000000))
		p->ring_want *= RING_BYTES_FAST / RING_BYTES;
	r->stats.ring_wanted = p->ring_want;
	p->ring_want = ring_fit(p->ring_want, p->ncpus);
	p->attr.wakeup_watermark = (uint32_t)(p->ring_want / 4);
	if (p->unwinder->state_new) {
		err = p->unwinder->state_new(c->pid, &p->unwind_state, d);
		if (err < 0) {
			diag_set(d, err, "%s unwinding of PID %d: %s",
				 p->unwinder->name, (int)c->pid, strerror(-err));
			goto out;
		}
	}
	*ret = r;
	r = NULL;
	err = 0;
out:
	recorder_free(r);
	return err;
}

int recorder_start(struct recorder *r, struct diag *d)
{
	struct recorder_private *p = r->priv;
	unsigned fresh = 0;
	bool gone;
	int err;

	/* The main thread first, so it owns the rings: it usually lives as
	 * long as the process. */
	err = open_thread(r, p->pid, &gone, d);
	if (err < 0)
		goto out;
	/* Threads created by an opened thread inherit its events; threads
	 * created by one not yet opened do not, so scan again until a pass
	 * finds nothing new. */
	do {
		err = scan_threads(r, &fresh, d);
		if (err < 0)
			goto out;
		r->stats.rescans++;
	} while (fresh && r->stats.rescans < MAX_RESCANS);
	if (!p->nevents) {
		err = diag_set(d, -ESRCH, "no process with PID %d (it exited)",
			       (int)p->pid);
		goto out;
	}
	r->stats.cpus = p->ncpus;
	r->start_ns = now_ns(CLOCK_REALTIME);
	p->start_mono = now_ns(CLOCK_MONOTONIC);
	r->start_mono_ns = p->start_mono;
out:
	return err;
}

int recorder_run(struct recorder *r, uint64_t duration_ns,
		 volatile sig_atomic_t *stop, struct diag *d)
{
	struct recorder_private *p = r->priv;
	struct pollfd *fds;
	unsigned nfds = 0;
	uint64_t end_mono = 0;
	int err = 0;

	fds = calloc(p->ncpus + 1, sizeof(*fds));
	if (!fds)
		return -ENOMEM;
	for (unsigned ci = 0; ci < p->ncpus; ci++)
		if (p->rings[ci])
			fds[nfds++] = (struct pollfd){ p->rings[ci]->fd, POLLIN, 0 };
	if (p->pidfd >= 0)
		fds[nfds++] = (struct pollfd){ p->pidfd, POLLIN, 0 };

	for (;;) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		int timeout = POLL_MS;

		if (stop && *stop)
			break;
		if (duration_ns) {
			uint64_t left;

			if (now - p->start_mono >= duration_ns)
				break;
			left = duration_ns - (now - p->start_mono);
			if (left < (uint64_t)POLL_MS * 1000000)
				timeout = (int)((left + 999999) / 1000000);
		}
		if (poll(fds, nfds, timeout) < 0 && errno != EINTR) {
			err = diag_set(d, -errno, "poll: %s", strerror(errno));
			break;
		}
		drain_all(r);
		for (unsigned i = 0; i < nfds; i++) {
			if (fds[i].fd == p->pidfd && (fds[i].revents & (POLLIN | POLLHUP)))
				r->target_exited = true;
			/* A ring owner's thread exited: its fd reports POLLHUP
			 * for ever. Stop polling it; the timeout still drains
			 * the ring for the threads that remain. */
			else if (fds[i].revents & (POLLHUP | POLLERR))
				fds[i].fd = -1;
		}
		/* No pidfd (kernel < 5.3): poll for the exit. */
		if (p->pidfd < 0 &&
		    kill(p->pid, 0) < 0 && errno == ESRCH)
			r->target_exited = true;
		if (r->target_exited)
			break;
	}
	end_mono = now_ns(CLOCK_MONOTONIC);
	/* Stop the events so the recording ends where the duration says,
	 * then take what is left in the rings. */
	for (size_t i = 0; i < p->nevents; i++)
		ioctl(p->events[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	drain_all(r);
	r->duration_ns = end_mono - p->start_mono;
	free(fds);
	return err;
}

void recorder_free(struct recorder *r)
{
	struct recorder_private *p;

	if (!r)
		return;
	p = r->priv;
	if (p) {
		for (unsigned ci = 0; p->rings && ci < p->ncpus; ci++) {
			perf_ring_unmap(p->rings[ci]);
			free(p->rings[ci]);
		}
		for (size_t i = 0; i < p->nevents; i++)
			close(p->events[i].fd);
		if (p->pidfd >= 0)
			close(p->pidfd);
		if (p->unwind_state && p->unwinder->state_free)
			p->unwinder->state_free(p->unwind_state);
		id_index_release(&p->event_index);
		id_index_release(&p->opened_index);
		id_index_release(&p->thread_index);
		id_index_release(&p->stack_index);
		free(p->events);
		free(p->opened);
		free(p->rings);
		free(p->cpus);
		free(p->scratch);
		free(p);
	}
	free(r->stacks);
	free(r->events);
	free(r->ips);
	free(r->threads);
	free(r);
}
