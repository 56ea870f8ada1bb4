/* stacks: a thread dump taken from inside the process (/stacks of the HTTP
 * endpoint). Each thread is sent the agent's sampling signal carrying a
 * thread-dump slot; the handler (hot/dump.c) walks its own stack into the slot;
 * names come afterwards, here, outside signal context. Unlike `nprof
 * stacks` (ptrace, src/engine/threads_dump.c) it needs no ptrace
 * permission, but, like the wall engine, the signal interrupts a blocked
 * system call (restarted, or EINTR for nanosleep, poll, epoll_wait,
 * select). The agent's own threads are listed, their stacks not taken. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/hot/hot.h"
#include "base/units.h"
#include "symbolize/symbolize.h"

#define DUMP_MAX_THREADS 4096
#define DUMP_WAIT_NS 500000000ull /* per batch: a thread that has not answered
				     by then is reported as not answering */

enum dump_status { DS_TAKEN, DS_GONE, DS_NO_ANSWER, DS_AGENT, DS_SELF };

struct dump_thread {
	pid_t tid;
	char name[16];
	char state;
	uint64_t cpu_ns;
	enum dump_status status;
	bool truncated;
	unsigned n;
	uint64_t *ips; /* leaf first */
};

static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static struct symbolizer *dump_syms; /* under dump_lock; kept: caches by build-id */
static unsigned dump_seq;	     /* under dump_lock */

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void read_proc(struct dump_thread *t)
{
	char path[64], buf[1024];
	ssize_t n;
	int fd;

	t->state = '?';
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)t->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, t->name, sizeof(t->name) - 1);
		close(fd);
		t->name[n > 0 ? n : 0] = '\0';
		t->name[strcspn(t->name, "\n")] = '\0';
	}
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)t->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		/* "tid (comm) S ... utime stime": fields after the last ')'. */
		char *p = memrchr(buf, ')', (size_t)n);
		unsigned long long ut = 0, st = 0;
		char state;

		buf[n] = '\0';
		if (p && sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
				&state, &ut, &st) == 3) {
			long hz = sysconf(_SC_CLK_TCK);

			t->state = state;
			t->cpu_ns = (ut + st) * (1000000000ull / (uint64_t)(hz > 0 ? hz : 100));
		}
	}
}

static int list_threads(struct dump_thread **ret, size_t *ret_n, unsigned *ret_omitted)
{
	DIR *dir = opendir("/proc/self/task");
	struct dump_thread *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	*ret_omitted = 0;
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		pid_t tid = (pid_t)atoi(de->d_name);

		if (tid <= 0)
			continue;
		if (n == DUMP_MAX_THREADS) {
			(*ret_omitted)++;
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct dump_thread *nv = realloc(v, ncap * sizeof(*nv));

			if (!nv) {
				closedir(dir);
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap = ncap;
		}
		memset(&v[n], 0, sizeof(v[n]));
		v[n++].tid = tid;
	}
	closedir(dir);
	*ret = v;
	*ret_n = n;
	return 0;
}

static int cmp_tid(const void *a, const void *b)
{
	const struct dump_thread *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

static int slots_get(struct hot_dump_slot **ret)
{
	struct hot_dump_slot *s = atomic_load(&hot.dump);

	if (!s) {
		/* Mapped once, never unmapped: a late handler may still look. */
		s = mmap(NULL, HOT_DUMP_SLOTS * sizeof(*s), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (s == MAP_FAILED)
			return -ENOMEM;
		atomic_store(&hot.dump, s);
	}
	*ret = s;
	return 0;
}

/* Signals up to HOT_DUMP_SLOTS threads (v[0..n)), each with its slot, and
 * collects what their handlers wrote. */
static void take_batch(struct hot_dump_slot *slots, struct dump_thread *v, size_t n)
{
	unsigned seq = ++dump_seq & 0x3fffffff;
	uint64_t deadline;
	bool waiting;

	for (size_t i = 0; i < n; i++) {
		siginfo_t si;

		if (v[i].status != DS_TAKEN)
			continue;
		atomic_store(&slots[i].tag, seq << 2 | HOT_DUMP_ARMED);
		memset(&si, 0, sizeof(si));
		si.si_signo = HOT_SIGNAL;
		si.si_code = SI_QUEUE;
		si.si_pid = getpid();
		si.si_uid = getuid();
		si.si_value.sival_ptr = (void *)(uintptr_t)hot_dump_word((unsigned)i, seq);
		if (syscall(SYS_rt_tgsigqueueinfo, getpid(), v[i].tid, HOT_SIGNAL, &si) < 0) {
			atomic_store(&slots[i].tag, 0);
			v[i].status = DS_GONE;
		}
	}
	deadline = now_ns(CLOCK_MONOTONIC) + DUMP_WAIT_NS;
	do {
		waiting = false;
		for (size_t i = 0; i < n && !waiting; i++)
			waiting = v[i].status == DS_TAKEN &&
				  atomic_load(&slots[i].tag) != (seq << 2 | HOT_DUMP_DONE);
		if (waiting)
			usleep(200);
	} while (waiting && now_ns(CLOCK_MONOTONIC) < deadline);
	for (size_t i = 0; i < n; i++) {
		struct hot_dump_slot *s = &slots[i];
		unsigned armed = seq << 2 | HOT_DUMP_ARMED;

		if (v[i].status != DS_TAKEN)
			continue;
		/* Not answered: disarm, unless its handler has just begun. */
		if (atomic_compare_exchange_strong(&s->tag, &armed, 0)) {
			v[i].status = DS_NO_ANSWER;
			continue;
		}
		for (int k = 0; k < 100000 && atomic_load(&s->tag) != (seq << 2 | HOT_DUMP_DONE); k++)
			sched_yield();
		if (atomic_load(&s->tag) != (seq << 2 | HOT_DUMP_DONE)) {
			v[i].status = DS_NO_ANSWER; /* left WRITING: slot seq moves on */
			continue;
		}
		v[i].ips = malloc((s->n ? s->n : 1) * sizeof(uint64_t));
		if (v[i].ips) {
			memcpy(v[i].ips, s->ips, s->n * sizeof(uint64_t));
			v[i].n = s->n;
		}
		v[i].truncated = s->truncated;
		atomic_store(&s->tag, 0);
	}
}

static const char *state_name(char state)
{
	switch (state) {
	case 'R': return "running";
	case 'S': return "sleeping";
	case 'D': return "disk wait";
	case 'T': return "stopped";
	case 't': return "traced";
	case 'Z': return "zombie";
	case 'I': return "idle";
	default: return "unknown";
	}
}

static const char *status_text(enum dump_status s)
{
	switch (s) {
	case DS_TAKEN: return NULL;
	case DS_GONE: return "exited before its stack was taken";
	case DS_NO_ANSWER: return "did not answer the signal in time (SIGPROF blocked, or "
				  "uninterruptible sleep)";
	case DS_AGENT: return "an nprof agent thread: not dumped";
	case DS_SELF: return "the thread taking this dump";
	}
	return "?";
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

static void write_thread(FILE *f, bool json, struct proc_syms *ps, const struct dump_thread *t,
			 bool first)
{
	char cpu[32];
	const char *why = status_text(t->status);

	if (json) {
		char st[2] = { t->state, 0 };

		fprintf(f, "%s\n{\"tid\":%d,\"name\":", first ? "" : ",", (int)t->tid);
		json_str(f, t->name);
		fputs(",\"state\":", f);
		json_str(f, st);
		fprintf(f, ",\"state_name\":\"%s\",\"cpu_ns\":%llu,\"status\":\"%s\",",
			state_name(t->state), (unsigned long long)t->cpu_ns,
			t->status == DS_TAKEN ? "taken" : t->status == DS_GONE ? "gone" :
			t->status == DS_NO_ANSWER ? "no-answer" :
			t->status == DS_AGENT ? "agent" : "self");
		fprintf(f, "\"truncated\":%s,\"frames\":[", t->truncated ? "true" : "false");
	} else {
		fprintf(f, "\n\"%s\" tid=%d state=%s cpu=%s\n", t->name, (int)t->tid,
			state_name(t->state), units_format_ns(t->cpu_ns, cpu, sizeof(cpu)));
		if (why)
			fprintf(f, "\t(%s)\n", why);
	}
	for (unsigned j = 0; j < t->n; j++) {
		struct symbol_info si = { 0 };
		/* Return addresses are named at addr - 1: the call. */
		uint64_t a = j ? t->ips[j] - 1 : t->ips[j];

		proc_syms_lookup(ps, a, false, 0, &si);
		if (json) {
			fprintf(f, "%s{\"addr\":\"0x%llx\",\"function\":", j ? "," : "",
				(unsigned long long)t->ips[j]);
			json_str(f, si.name);
			fputs(",\"module\":", f);
			if (si.module)
				json_str(f, si.module);
			else
				fputs("null", f);
			fputc('}', f);
		} else {
			fprintf(f, "\tat %s", si.name ? si.name : "??");
			if (si.module && si.kind != FRAME_UNKNOWN)
				fprintf(f, " (%s)", base_name(si.module));
			fputc('\n', f);
		}
	}
	if (json) {
		fputc(']', f);
		if (why) {
			fputs(",\"note\":", f);
			json_str(f, why);
		}
		fputc('}', f);
	} else if (t->truncated) {
		fputs("\t... (stack ends here)\n", f);
	}
}

int agent_stacks_dump(bool json, char **ret_buf, size_t *ret_len, struct diag *d)
{
	struct dump_thread *v = NULL;
	struct hot_dump_slot *slots;
	struct proc_syms *ps = NULL;
	size_t n = 0, len = 0;
	char *buf = NULL, comm[16] = "", when[64];
	unsigned omitted = 0;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), real = now_ns(CLOCK_REALTIME), took;
	pid_t self = gettid();
	FILE *f = NULL;
	int err;

	pthread_mutex_lock(&dump_lock);
	err = agent_session_prepare_dump(d);
	if (err < 0)
		goto out;
	err = slots_get(&slots);
	if (err == 0)
		err = list_threads(&v, &n, &omitted);
	if (err < 0) {
		diag_set(d, err, "thread dump: %s", strerror(-err));
		goto out;
	}
	qsort(v, n, sizeof(*v), cmp_tid);
	for (size_t i = 0; i < n; i++) {
		read_proc(&v[i]);
		if (v[i].tid == self)
			v[i].status = DS_SELF;
		else if (agent_thread_is_own(v[i].tid))
			v[i].status = DS_AGENT;
	}
	for (size_t i = 0; i < n; i += HOT_DUMP_SLOTS)
		take_batch(slots, v + i, n - i < HOT_DUMP_SLOTS ? n - i : HOT_DUMP_SLOTS);
	took = now_ns(CLOCK_MONOTONIC) - t0;

	if (!dump_syms)
		dump_syms = symbolizer_new();
	err = dump_syms ? symbolizer_open_process(dump_syms, getpid(), false, &ps, d) : -ENOMEM;
	if (err < 0) {
		if (!dump_syms)
			diag_set(d, err, "thread dump: out of memory");
		goto out;
	}
	f = open_memstream(&buf, &len);
	if (!f) {
		err = diag_set(d, -ENOMEM, "thread dump: out of memory");
		goto out;
	}
	{
		int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			ssize_t k = read(fd, comm, sizeof(comm) - 1);

			comm[k > 0 ? k : 0] = '\0';
			comm[strcspn(comm, "\n")] = '\0';
			close(fd);
		}
	}
	if (json) {
		fprintf(f, "{\"pid\":%d,\"comm\":", (int)getpid());
		json_str(f, comm);
		fprintf(f, ",\"time_ns\":%llu,\"method\":\"signal\",\"total_ns\":%llu,"
			   "\"threads_omitted\":%u,\"threads\":[",
			(unsigned long long)real, (unsigned long long)took, omitted);
	} else {
		time_t sec = (time_t)(real / 1000000000ull);
		struct tm tm;
		char t[32];

		localtime_r(&sec, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		fprintf(f, "Thread dump of PID %d (%s) at %s\n", (int)getpid(), comm, when);
		fprintf(f, "%zu threads, taken in %s by the in-process agent (one SIGPROF each)\n",
			n, units_format_ns(took, t, sizeof(t)));
	}
	for (size_t i = 0; i < n; i++)
		write_thread(f, json, ps, &v[i], i == 0);
	if (json)
		fputs("]}\n", f);
	else if (omitted)
		fprintf(f, "\nnote: %u threads past the first %d were not dumped\n", omitted,
			DUMP_MAX_THREADS);
	if (fclose(f) != 0) {
		f = NULL;
		err = diag_set(d, -ENOMEM, "thread dump: out of memory");
		goto out;
	}
	f = NULL;
	*ret_buf = buf;
	*ret_len = len;
	buf = NULL;
	err = 0;
out:
	proc_syms_free(ps); /* before the unlock: it belongs to dump_syms */
	pthread_mutex_unlock(&dump_lock);
	for (size_t i = 0; i < n; i++)
		free(v[i].ips);
	free(v);
	free(buf);
	return err;
}
