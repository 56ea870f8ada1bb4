/* Attaching: probing the event on the target, opening it on each
 * thread (and each CPU when the event cannot be inherited per thread),
 * the thread table. See recorder_internal.h. */
#include "engine/recorder_internal.h"

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

#include "base/array.h"
#include "base/hash.h"
#include "base/id_index.h"
#include "base/proc.h"
#include "engine/perf_ring.h"

static int64_t paranoid_level(void)
{
	return (int64_t)recorder_sysctl("/proc/sys/kernel/perf_event_paranoid",
					2);
}

void recorder_raise_nofile(void)
{
	struct rlimit rl;

	/* One fd per (thread, CPU): a 200-thread service on 32 CPUs needs
	 * 6400, well past the usual soft limit of 1024. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int recorder_online_cpus(struct recorder_private *p)
{
	char buf[4096];
	const char *s = buf;
	long n;

	p->cpus = calloc(MAX_CPUS, sizeof(*p->cpus));
	if (!p->cpus)
		return -ENOMEM;
	if (recorder_read_small_file("/sys/devices/system/cpu/online", buf,
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

static void make_sched_attr(struct recorder_private *p, struct perf_event_attr *a);

/* The attr every event is opened with; kernel selects the exclusions. */
void recorder_make_attr(struct recorder *r, bool kernel,
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
	if (r->offcpu && p->c.event->type == PERF_TYPE_TRACEPOINT)
		make_sched_attr(p, a);
}

/* The sched_switch event from an attr made for it (offcpu) or for the
 * primary event beside it (wall): every switch-out sampled with its raw
 * record (prev_state), and switch records for the switch-ins. */
static void make_sched_attr(struct recorder_private *p, struct perf_event_attr *a)
{
	a->type = PERF_TYPE_TRACEPOINT;
	a->config = p->sched.id;
	a->sample_period = 1;
	a->sample_type |= PERF_SAMPLE_RAW;
	a->context_switch = 1;
}

void recorder_make_sched_beside(struct recorder *r)
{
	struct recorder_private *p = r->priv;
	struct perf_event_attr *a = &p->sched_attr;

	if (!r->offcpu || p->c.event->type == PERF_TYPE_TRACEPOINT)
		return;
	*a = p->attr;
	make_sched_attr(p, a);
	a->comm = a->comm_exec = a->task = a->mmap = a->mmap2 = 0;
	p->has_sched_attr = true;
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
/* Whether perf_event_open is refused to this process whatever the target:
 * even the cheapest event on itself (user space only, software) is. Then
 * it is a filter on this process (seccomp: a container's default profile)
 * or a security module, not the target's owner or the sysctl. */
static bool refused_even_here(void)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_DUMMY,
		.disabled = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};
	int fd = engine_perf_event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd == -EACCES || fd == -EPERM;
}

/* Whether this process runs under a seccomp filter (/proc/self/status
 * "Seccomp: 2"). */
static bool seccomp_filtered(void)
{
	char buf[4096];
	const char *line;

	if (proc_read_small("/proc/self/status", buf, sizeof(buf)) < 0)
		return false;
	line = strstr(buf, "\nSeccomp:");
	return line && strtol(line + 9, NULL, 10) == 2;
}

static int explain_denied(struct recorder *r, int err, struct diag *d)
{
	struct recorder_private *p = r->priv;
	const char *ev = p->c.event->def->name;
	int64_t level = paranoid_level();
	uid_t me = getuid(), uids[3] = { 0, 0, 0 };
	char path[64];
	int fd;

	if (geteuid() != 0 && level > 2)
		return diag_set(d, err,
				"%s: perf_events denied (kernel.perf_event_paranoid=%lld); "
				"set it to 2 or lower, or use the agent's -e itimer",
				ev, (long long)level);
	/* The sysctl allows it, and it is refused even on ourselves: a filter
	 * on this process (a container's default profile) or a security
	 * module, whatever the user. */
	if (refused_even_here() && seccomp_filtered())
		return diag_set(d, err,
				"%s: perf_event_open is refused by a seccomp filter on nprof itself "
				"(%s), as a container's default profile does; run nprof outside the "
				"container, or allow perf_event_open in its profile (docker: "
				"--security-opt seccomp=PROFILE), or load the agent and use -e itimer",
				ev, strerror(-err));
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
			e->def->name, strerror(-err),
			e->type == PERF_TYPE_HARDWARE
				? ", no hardware PMU, as in most VMs"
				: "",
			avail[0] ? avail : "none");
}

static int open_probe(struct recorder *r, bool kernel)
{
	struct perf_event_attr a;
	int fd;

	recorder_make_attr(r, kernel, &a);
	a.inherit = 0;
	a.enable_on_exec = 0;
	fd = engine_perf_event_open(&a, r->priv->pid, -1, -1,
				    PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return fd < 0 ? fd : 0;
}

/* Off-CPU time needs the scheduler's tracepoint, which needs privilege:
 * say so, with what would allow it and the way around it. */
static int explain_scheduler(struct recorder *r, int err, const char *why,
			     struct diag *d)
{
	const struct event_def *ev = r->priv->c.event->def;

	return diag_set(d, err,
			"%s: off-CPU time needs the sched:sched_switch tracepoint, denied here "
			"(%s); run as root, or with CAP_PERFMON (or sysctl "
			"kernel.perf_event_paranoid=-1) and read access to /sys/kernel/tracing; "
			"or %s",
			ev->name, why,
			ev->runs & EVENT_IN_AGENT
				? "load the agent (--attach), whose wall sampler needs neither"
				: "use -e wall with the agent (--attach), whose sampler needs neither");
}

static int probe_offcpu(struct recorder *r, struct diag *d)
{
	struct recorder_private *p = r->priv;
	struct perf_event_attr a;
	struct diag sd;
	char why[256];
	int err, fd;

	diag_clear(&sd);
	err = sched_switch_load(&p->sched, &sd);
	if (err == -EACCES)
		return explain_scheduler(r, -EACCES, sd.msg, d);
	if (err < 0)
		return diag_set(d, err, "%s: %s", p->c.event->def->name, sd.msg);
	r->offcpu = true;
	r->tracefs_mounted = p->sched.mounted;
	if (p->c.force_user_only) {
		snprintf(why, sizeof(why), "user-space sampling only");
		return explain_scheduler(r, -EACCES, why, d);
	}
	recorder_make_attr(r, true, &a);
	if (p->c.event->type != PERF_TYPE_TRACEPOINT) {
		p->attr = a;
		recorder_make_sched_beside(r);
		a = p->sched_attr;
		p->has_sched_attr = false; /* recorder_new makes it again */
	}
	a.inherit = 0;
	a.enable_on_exec = 0;
	fd = engine_perf_event_open(&a, p->pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (fd == -EACCES || fd == -EPERM) {
		snprintf(why, sizeof(why), "perf_event_open: %s; kernel.perf_event_paranoid=%lld",
			 strerror(-fd), (long long)paranoid_level());
		return explain_scheduler(r, fd, why, d);
	}
	return fd;
}

/* Decides kernel vs user-only (and switch records) by opening the event
 * on the target once, the way the real open will. */
int recorder_probe(struct recorder *r, struct diag *d)
{
	struct recorder_private *p = r->priv;
	int err = -EACCES;

	if (p->c.event->offcpu) {
		err = probe_offcpu(r, d);
		if (err < 0 && d && d->msg[0])
			return err;
		r->kernel = !err;
		goto explain;
	}
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
explain:
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
				p->c.event->def->name, (int)p->pid, strerror(-err));
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
struct raw_thread *recorder_thread_get(struct recorder *r, pid_t tid)
{
	struct recorder_private *p = r->priv;
	struct raw_thread *t = thread_find(r, tid);

	if (t)
		return t;
	if (r->nthreads >= RECORDER_MAX_THREADS)
		return NULL;
	if (array_reserve(&r->threads, &p->threads_cap, r->nthreads + 1, sizeof(*r->threads)) < 0)
		return NULL;
	if (id_index_insert(&p->thread_index, hash_u64((uint64_t)tid),
			    (uint32_t)r->nthreads) < 0)
		return NULL;
	t = &r->threads[r->nthreads++];
	t->tid = tid;
	t->name[0] = '\0';
	return t;
}

void recorder_thread_set_name(struct recorder *r, pid_t tid, const char *name)
{
	struct raw_thread *t = recorder_thread_get(r, tid);

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
const struct open_event *recorder_event_of(const struct recorder *r, uint64_t id)
{
	const struct recorder_private *p = r->priv;
	uint32_t e = id_index_find(&p->event_index, hash_u64(id), event_match,
				   p->events, &id);

	return e == ID_NONE ? NULL : &p->events[e];
}

bool recorder_keep_record(struct recorder *r, uint64_t id, pid_t tid)
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
size_t recorder_ring_fit(size_t want, unsigned ncpus)
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

static int add_event(struct recorder_private *p, int fd, pid_t tid, bool sched)
{
	uint64_t id;

	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
		return -errno;
	if (array_reserve(&p->events, &p->events_cap, p->nevents + 1, sizeof(*p->events)) < 0)
		return -ENOMEM;
	if (id_index_insert(&p->event_index, hash_u64(id),
			    (uint32_t)p->nevents) < 0)
		return -ENOMEM;
	p->events[p->nevents++] = (struct open_event){ fd, id, tid, sched };
	return 0;
}

/* wall: the sched_switch event of (tid, CPU ci) into that CPU's ring,
 * enabled at once (unless enable_on_exec). */
static int open_beside(struct recorder *r, pid_t tid, unsigned ci, struct diag *d)
{
	struct recorder_private *p = r->priv;
	struct perf_event_attr a = p->sched_attr;
	int fd = engine_perf_event_open(&a, tid, p->cpus[ci], -1, PERF_FLAG_FD_CLOEXEC);
	int err;

	if (fd < 0)
		return fd == -ESRCH ? fd
				    : diag_set(d, fd, "sched:sched_switch: perf_event_open on "
					       "thread %d, CPU %d: %s", (int)tid, p->cpus[ci],
					       strerror(-fd));
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, p->rings[ci]->fd) < 0) {
		err = -errno;
		close(fd);
		return diag_set(d, err, "sched:sched_switch: PERF_EVENT_IOC_SET_OUTPUT: %s",
				strerror(-err));
	}
	err = add_event(p, fd, tid, true);
	if (err < 0) {
		close(fd);
		return err;
	}
	r->stats.events_opened++;
	if (!p->c.enable_on_exec && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
		return diag_set(d, -errno, "sched:sched_switch: PERF_EVENT_IOC_ENABLE: %s",
				strerror(errno));
	return 0;
}

static int remember_opened(struct recorder_private *p, pid_t tid)
{
	if (array_reserve(&p->opened, &p->opened_cap, p->nopened + 1, sizeof(*p->opened)) < 0)
		return -ENOMEM;
	if (id_index_insert(&p->opened_index, hash_u64((uint64_t)tid),
			    (uint32_t)p->nopened) < 0)
		return -ENOMEM;
	p->opened[p->nopened++] = tid;
	return 0;
}

/* Opens tid's event on every CPU. A thread that exited meanwhile is not
 * an error (*ret_gone says so). */
int recorder_open_thread(struct recorder *r, pid_t tid, bool *ret_gone,
			 struct diag *d)
{
	struct recorder_private *p = r->priv;
	char name[32];
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
					 p->c.event->def->name, strerror(-err));
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
				       p->c.event->def->name, (int)tid, p->cpus[ci],
				       strerror(-fd));
			goto out;
		}
		err = add_event(p, fd, tid, r->offcpu && !p->has_sched_attr);
		if (err < 0) {
			close(fd);
			goto out;
		}
		r->stats.events_opened++;
		if (p->has_sched_attr) {
			err = open_beside(r, tid, ci, d);
			if (err == -ESRCH) {
				*ret_gone = true;
				err = 0;
				goto out;
			}
			if (err < 0)
				goto out;
		}
		if (!p->c.enable_on_exec && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
			err = diag_set(d, -errno, "%s: PERF_EVENT_IOC_ENABLE: %s",
				       p->c.event->def->name, strerror(errno));
			goto out;
		}
	}
	err = remember_opened(p, tid);
	if (err < 0)
		goto out;
	r->stats.threads_opened++;
	if (proc_comm(p->pid, tid, name, sizeof(name)) == 0)
		recorder_thread_set_name(r, tid, name);
	else
		recorder_thread_get(r, tid);
out:
	return err;
}

/* Opens every thread of the target not opened yet; *ret_new counts them. */
int recorder_scan_threads(struct recorder *r, unsigned *ret_new, struct diag *d)
{
	struct recorder_private *p = r->priv;
	pid_t *tids = NULL;
	size_t ntids;
	unsigned n = 0;
	int err = 0;

	if (proc_tasks(p->pid, SIZE_MAX, &tids, &ntids) < 0) {
		/* Gone: the loop sees the exit through the pidfd. */
		*ret_new = 0;
		return 0;
	}
	for (size_t i = 0; i < ntids; i++) {
		bool gone;

		if (tid_opened(p, tids[i]))
			continue;
		err = recorder_open_thread(r, tids[i], &gone, d);
		if (err < 0)
			goto out;
		n += !gone;
	}
	*ret_new = n;
out:
	free(tids);
	return err;
}
