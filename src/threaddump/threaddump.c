/* threaddump: the model of a thread dump, what a taker reads of a thread
 * in /proc, and naming its frames; see threaddump.h. */
#include "threaddump/threaddump.h"
#include "base/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


struct thread_dump *thread_dump_new(pid_t pid, enum thread_dump_method method)
{
	struct thread_dump *td = calloc(1, sizeof(*td));
	struct timespec now;

	if (!td)
		return NULL;
	td->pid = pid;
	td->method = method;
	clock_gettime(CLOCK_REALTIME, &now);
	td->time_ns = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec;
	return td;
}

void thread_info_clear_frames(struct thread_info *t)
{
	for (unsigned j = 0; j < t->nframes; j++) {
		free(t->frames[j].name);
		free(t->frames[j].module);
		free(t->frames[j].file);
	}
	free(t->frames);
	t->frames = NULL;
	t->nframes = 0;
}

void thread_dump_free(struct thread_dump *td)
{
	if (!td)
		return;
	for (size_t i = 0; i < td->nthreads; i++)
		thread_info_clear_frames(&td->threads[i]);
	free(td->threads);
	free(td->exe);
	free(td);
}

struct thread_info *thread_dump_add_thread(struct thread_dump *td, pid_t tid)
{
	struct thread_info *t;

	if (td->nthreads == THREAD_DUMP_MAX_THREADS)
		return NULL;
	if (td->nthreads == td->cap) {
		size_t ncap = td->cap ? td->cap * 2 : 64;
		struct thread_info *nv = realloc(td->threads, ncap * sizeof(*nv));

		if (!nv)
			return NULL;
		td->threads = nv;
		td->cap = ncap;
	}
	t = &td->threads[td->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->state = '?';
	snprintf(t->name, sizeof(t->name), "?");
	return t;
}

struct thread_info *thread_dump_find_thread(struct thread_dump *td, pid_t tid)
{
	for (size_t i = 0; i < td->nthreads; i++)
		if (td->threads[i].tid == tid)
			return &td->threads[i];
	return NULL;
}

static int cmp_thread(const void *a, const void *b)
{
	const struct thread_info *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

void thread_dump_sort(struct thread_dump *td)
{
	if (td->nthreads > 1)
		qsort(td->threads, td->nthreads, sizeof(*td->threads), cmp_thread);
	thread_dump_count(td);
}

void thread_dump_count(struct thread_dump *td)
{
	td->ntaken = td->ngone = td->nfailed = 0;
	for (size_t i = 0; i < td->nthreads; i++)
		switch (td->threads[i].status) {
		case THREAD_TAKEN:
		case THREAD_LIVE: td->ntaken++; break;
		case THREAD_GONE: td->ngone++; break;
		case THREAD_FAILED: td->nfailed++; break;
		case THREAD_AGENT: break;
		}
}

const char *thread_state_name(char state)
{
	switch (state) {
	case 'R': return "running";
	case 'S': return "sleeping";
	case 'D': return "disk wait";
	case 'T': return "stopped";
	case 't': return "traced";
	case 'Z': return "zombie";
	case 'X': return "dead";
	case 'I': return "idle";
	case 'P': return "parked";
	default: return "unknown";
	}
}

/* --- /proc ----------------------------------------------------------------- */

int thread_dump_read_process(struct thread_dump *td)
{
	char path[64], exe[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)td->pid);
	if (proc_read_small(path, td->comm, sizeof(td->comm)) < 0)
		return -ESRCH;
	td->comm[strcspn(td->comm, "\n")] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)td->pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0 && !td->exe) {
		exe[n] = '\0';
		td->exe = strdup(exe);
	}
	return 0;
}

int thread_info_read_stat_at(int task_dir, struct thread_info *t)
{
	char path[32], buf[1024];
	struct proc_stat st;
	long hz;
	int r;

	snprintf(path, sizeof(path), "%d/stat", (int)t->tid);
	r = proc_stat_read_at(task_dir, path, &st);
	if (r < 0)
		return r == -ENOENT || r == -EBADMSG ? -ESRCH : r;
	snprintf(t->name, sizeof(t->name), "%s", st.comm);
	t->state = st.state;
	hz = sysconf(_SC_CLK_TCK);
	t->cpu_ns = (st.utime + st.stime) * (1000000000ull / (unsigned long long)(hz > 0 ? hz : 100));
	/* schedstat's first field is the exact time on CPU, in ns. */
	snprintf(path, sizeof(path), "%d/schedstat", (int)t->tid);
	if (proc_read_small_at(task_dir, path, buf, sizeof(buf)) > 0) {
		unsigned long long ns;

		if (sscanf(buf, "%llu", &ns) == 1 && ns)
			t->cpu_ns = ns;
	}
	return 0;
}

void thread_info_read_syscall_at(int task_dir, struct thread_info *t)
{
	char path[32], buf[1024];

	t->sc = THREAD_SC_UNKNOWN;
	snprintf(path, sizeof(path), "%d/syscall", (int)t->tid);
	if (proc_read_small_at(task_dir, path, buf, sizeof(buf)) > 0) {
		unsigned long long a[8];
		long nr;

		if (!strncmp(buf, "running", 7)) {
			t->sc = THREAD_SC_ON_CPU;
		} else if (sscanf(buf, "%ld", &nr) == 1 && nr < 0) {
			t->sc = THREAD_SC_USER;
		} else if (sscanf(buf, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &nr,
				  &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &a[7]) == 9) {
			t->sc = THREAD_SC_IN;
			t->syscall_nr = nr;
			memcpy(t->syscall_args, a, sizeof(t->syscall_args));
			/* sp and pc at the syscall: the registers of a thread
			 * a taker does not stop (disk wait). */
			t->syscall_sp = a[6];
			t->syscall_pc = a[7];
		}
	}
}

int thread_dump_open_tasks(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return fd;
}

int thread_info_read_proc(pid_t pid, struct thread_info *t)
{
	int dir = thread_dump_open_tasks(pid);
	int err;

	if (dir < 0)
		return dir;
	err = thread_info_read_stat_at(dir, t);
	if (!err)
		thread_info_read_syscall_at(dir, t);
	close(dir);
	return err;
}

/* --- naming ---------------------------------------------------------------- */

/* Appends one named frame to t->frames (grown as needed). */
static int push_frame(struct thread_info *t, unsigned *cap, uint64_t addr,
		      const struct thread_frame_name *si)
{
	struct thread_frame *f;

	if (t->nframes == *cap) {
		unsigned ncap = *cap ? *cap * 2 : 16;
		struct thread_frame *nv = realloc(t->frames, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		t->frames = nv;
		*cap = ncap;
	}
	f = &t->frames[t->nframes];
	memset(f, 0, sizeof(*f));
	f->addr = addr;
	f->module_offset = si->module_offset;
	f->kind = si->kind;
	f->line = si->line;
	f->name = strdup(si->name ? si->name : "??");
	f->module = si->module ? strdup(si->module) : NULL;
	f->file = si->file ? strdup(si->file) : NULL;
	t->nframes++;
	if (!f->name || (si->module && !f->module) || (si->file && !f->file))
		return -ENOMEM;
	return 0;
}

#define NR_RESTART_SYSCALL 219

/* A thread that a ptrace stop (an earlier thread dump's or core file's, a
 * debugger's) took out of poll, nanosleep, clock_nanosleep, epoll_wait...
 * waits on in restart_syscall: the kernel rewound it to call that
 * instead. Which call it restarts is the function it sits in (the leaf:
 * __poll, __GI___clock_nanosleep), when that is a system call's name. */
static void name_restarts(struct thread_dump *td)
{
	for (size_t i = 0; i < td->nthreads; i++) {
		struct thread_info *t = &td->threads[i];
		const char *n;
		long nr;

		if (t->sc != THREAD_SC_IN || t->syscall_nr != NR_RESTART_SYSCALL ||
		    !t->nframes || !t->frames[0].name)
			continue;
		n = t->frames[0].name;
		for (;;) {
			while (*n == '_')
				n++;
			if (!strncmp(n, "GI_", 3))
				n += 3;
			else if (!strncmp(n, "libc_", 5))
				n += 5;
			else
				break;
		}
		nr = thread_syscall_number(n);
		if (nr >= 0 && nr != NR_RESTART_SYSCALL)
			snprintf(t->restart_of, sizeof(t->restart_of), "%s", n);
	}
}

int thread_dump_name_frames(struct thread_dump *td, thread_dump_namer_fn namer, void *arg)
{
	struct thread_frame_name si[THREAD_DUMP_NAMES_PER_ADDR];

	for (size_t i = 0; i < td->nthreads; i++) {
		struct thread_info *t = &td->threads[i];
		uint64_t *addrs;
		unsigned n = t->nframes, cap = 0;

		if (!n)
			continue;
		addrs = malloc(n * sizeof(*addrs));
		if (!addrs)
			return -ENOMEM;
		for (unsigned j = 0; j < n; j++)
			addrs[j] = t->frames[j].addr;
		thread_info_clear_frames(t);
		for (unsigned j = 0; j < n; j++) {
			/* Return addresses are named at addr - 1: the call,
			 * not what follows it (which may be another function
			 * or another line). */
			uint64_t a = j ? addrs[j] - 1 : addrs[j];
			unsigned got = 0;
			int err;

			memset(si, 0, sizeof(si));
			err = namer(arg, a, si, THREAD_DUMP_NAMES_PER_ADDR, &got);
			if (!err && !got)
				got = 1; /* unnamed: "??" */
			if (got > THREAD_DUMP_NAMES_PER_ADDR)
				got = THREAD_DUMP_NAMES_PER_ADDR;
			for (unsigned k = got; !err && k-- > 0;)
				err = push_frame(t, &cap, addrs[j], &si[k]);
			if (err < 0) {
				free(addrs);
				return err;
			}
		}
		free(addrs);
	}
	name_restarts(td);
	return 0;
}
