/* threads_dump: see threads_dump.h. The ptrace sequence and its races are
 * described in docs/nprof-stacks.1.md ("How it works"). */
#include "capture/threads_dump.h"

#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/proc.h"
#include "capture/tracee.h"
#include "symbolize/maps.h"
#include "symbolize/symbolize.h"
#include "unwind/modules.h"
#include "unwind/unwind_table.h"
#include "unwind/walker.h"

/* --- one thread ----------------------------------------------------------- */

struct namer {
	struct proc_syms *ps;
	unsigned flags;
};

/* thread_dump_name_frames's namer: src/symbolize/. */
static int name_addr(void *arg, uint64_t addr, struct thread_frame_name *ret, unsigned max,
		     unsigned *ret_n)
{
	const struct namer *nm = arg;
	struct symbol_info si[SYM_MAX_FRAMES_PER_ADDR];
	unsigned got = 1;
	int err;

	memset(si, 0, sizeof(si));
	if (max > SYM_MAX_FRAMES_PER_ADDR)
		max = SYM_MAX_FRAMES_PER_ADDR;
	if (nm->flags & SYM_LINES)
		err = proc_syms_lookup_frames(nm->ps, addr, false, nm->flags, si, max, &got);
	else
		err = proc_syms_lookup(nm->ps, addr, false, nm->flags, &si[0]);
	if (err < 0)
		return err;
	for (unsigned k = 0; k < got && k < max; k++)
		ret[k] = (struct thread_frame_name){ si[k].name, si[k].module, si[k].file,
						     si[k].module_offset, si[k].kind, si[k].line };
	*ret_n = got < max ? got : max;
	return 0;
}

#define AHEAD_SPIN_NS 50000 /* the taker's wait for the reader, before it sleeps */

/* The /proc reads of a pass, on a thread of their own (ahead_start). */
struct proc_ahead {
	struct thread_dump *td;
	int task_dir;
	size_t from, end;
	atomic_size_t done;	/* threads [from, done) are read (release) */
	pthread_mutex_t lock;	/* guards waiting; with cond, wakes the taker */
	pthread_cond_t cond;
	bool waiting;		/* the taker waits for done */
	bool running;		/* th reads; else the taker does */
	pthread_t th;
};

struct take_ctx {
	pid_t pid;
	const struct thread_dump_options *o;
	int task_dir;			/* /proc/PID/task */
	struct maps maps;		/* for the end of each stack */
	struct unwind_modules mods;
	uint8_t *stack;			/* max_stack_bytes, reused */
	uint64_t *ips;			/* max_depth, reused */
	/* The threads asked to stop and not yet taken: their tids (for
	 * tracee_wait_next), their index in the dump (the array moves as
	 * threads are added) and when each was asked. */
	pid_t fly_tid[THREAD_DUMP_WINDOW];
	size_t fly_idx[THREAD_DUMP_WINDOW];
	uint64_t fly_t0[THREAD_DUMP_WINDOW];
	unsigned nfly;
	size_t ntaken;			/* taken or read live so far */
	struct proc_ahead ahead;
	bool no_children;		/* tracee_no_children() before the passes */
};

static const char *walk_end_name(enum unwind_stop s)
{
	switch (s) {
	case UNWIND_STOP_END: return NULL;
	case UNWIND_STOP_MAX: return "depth limit";
	case UNWIND_STOP_FAULT: return "stack copy ended or bad pointer";
	case UNWIND_STOP_BAD_SP: return "stack pointer did not grow";
	case UNWIND_STOP_NO_INFO: return "no unwind info and no frame pointer";
	}
	return "unknown";
}

/* Copies the stack from sp up to the end of its mapping (at most the
 * buffer): the bytes copied. */
static size_t copy_stack(struct take_ctx *x, pid_t tid, uint64_t sp)
{
	const struct map_entry *m = maps_find(&x->maps, sp);
	size_t len = x->o->max_stack_bytes;
	struct iovec local, remote;
	ssize_t n;

	if (m && m->end - sp < len)
		len = (size_t)(m->end - sp);
	local.iov_base = x->stack;
	local.iov_len = len;
	remote.iov_base = (void *)(uintptr_t)sp;
	remote.iov_len = len;
	/* A partial copy (the stack ends before len, in a mapping made after
	 * we read the maps) returns what was read. */
	n = process_vm_readv(tid, &local, 1, &remote, 1, 0);
	return n > 0 ? (size_t)n : 0;
}

static void walk(struct take_ctx *x, struct thread_info *t,
		 const struct user_regs_struct *regs, size_t copied)
{
	struct unwind_regs r = { regs->rip, regs->rsp, regs->rbp };
	struct unwind_stack_copy sc = { regs->rsp, x->stack, copied };
	struct unwind_info info;
	unsigned n;

	n = unwind_walk_ex(&r, &x->mods, unwind_read_stack_copy, &sc, x->ips,
			   x->o->max_depth, &info);
	t->frames = calloc(n ? n : 1, sizeof(*t->frames));
	if (!t->frames)
		return;
	for (unsigned i = 0; i < n; i++)
		t->frames[i].addr = x->ips[i];
	t->nframes = n;
	t->truncated = info.stop != UNWIND_STOP_END;
	if (walk_end_name(info.stop))
		snprintf(t->walk_end, sizeof(t->walk_end), "%s", walk_end_name(info.stop));
}

/* The system call of a stopped thread, from its registers: what its
 * syscall file said before the stop, as the stack copied with them
 * shows it. The interrupt stops a thread blocked in a call on its way
 * out of it, before the kernel rewinds it for a restart: orig_rax is
 * still the call's number (-1 outside any), the arguments are in place. */
static void syscall_from_regs(struct thread_info *t, const struct user_regs_struct *regs)
{
	if (t->state == 'R') {
		t->sc = THREAD_SC_ON_CPU;
	} else if ((long)regs->orig_rax >= 0) {
		t->sc = THREAD_SC_IN;
		t->syscall_nr = (long)regs->orig_rax;
		t->syscall_args[0] = regs->rdi;
		t->syscall_args[1] = regs->rsi;
		t->syscall_args[2] = regs->rdx;
		t->syscall_args[3] = regs->r10;
		t->syscall_args[4] = regs->r8;
		t->syscall_args[5] = regs->r9;
		t->syscall_sp = regs->rsp;
		t->syscall_pc = regs->rip;
	} else {
		t->sc = THREAD_SC_USER;
	}
}

/* --- /proc, read ahead ------------------------------------------------------ */

/* A thread's /proc files: name, state and CPU time, and for a thread in
 * disk wait (which is read, not stopped) its system call, sp and pc.
 * Its state stays '?' when it is gone. */
static void read_proc(int task_dir, struct thread_info *t)
{
	if (thread_info_read_stat_at(task_dir, t) < 0) {
		t->state = '?';
		return;
	}
	if (t->state == 'D')
		thread_info_read_syscall_at(task_dir, t);
}

static void *ahead_main(void *arg)
{
	struct proc_ahead *a = arg;

	for (size_t i = a->from; i < a->end; i++) {
		read_proc(a->task_dir, &a->td->threads[i]);
		pthread_mutex_lock(&a->lock);
		atomic_store_explicit(&a->done, i + 1, memory_order_release);
		if (a->waiting)
			pthread_cond_signal(&a->cond);
		pthread_mutex_unlock(&a->lock);
	}
	return NULL;
}

/* Starts reading the /proc files of td->threads[from..end) on a thread
 * of their own, ahead of the ptrace work on this one: each read costs
 * as much as taking the thread (two files, six system calls), and on a
 * host with a CPU to spare the two overlap. Without that thread (a small
 * pass, or it could not start), ahead_wait reads them itself. The
 * threads array must not move until ahead_stop. */
static void ahead_start(struct proc_ahead *a, struct thread_dump *td, int task_dir,
			size_t from, size_t end)
{
	a->td = td;
	a->task_dir = task_dir;
	a->from = from;
	a->end = end;
	a->waiting = false;
	atomic_store_explicit(&a->done, from, memory_order_relaxed);
	a->running = end - from >= THREAD_DUMP_AHEAD_MIN &&
		     pthread_create(&a->th, NULL, ahead_main, a) == 0;
}

/* Returns once thread idx's /proc files are read. */
static void ahead_wait(struct proc_ahead *a, size_t idx)
{
	if (!a->running) {
		read_proc(a->task_dir, &a->td->threads[idx]);
		return;
	}
	if (atomic_load_explicit(&a->done, memory_order_acquire) > idx)
		return;
	/* A thread's files take the reader some 10 us: a short spin
	 * usually sees them, where sleeping costs two context switches. */
	for (uint64_t until = clock_ns(CLOCK_MONOTONIC) + AHEAD_SPIN_NS;
	     clock_ns(CLOCK_MONOTONIC) < until;) {
		for (int k = 0; k < 64; k++) {
			if (atomic_load_explicit(&a->done, memory_order_acquire) > idx)
				return;
			__builtin_ia32_pause();
		}
	}
	pthread_mutex_lock(&a->lock);
	a->waiting = true;
	while (atomic_load_explicit(&a->done, memory_order_acquire) <= idx)
		pthread_cond_wait(&a->cond, &a->lock);
	a->waiting = false;
	pthread_mutex_unlock(&a->lock);
}

static void ahead_stop(struct proc_ahead *a)
{
	if (a->running)
		pthread_join(a->th, NULL);
	a->running = false;
}

/* --- taking threads ---------------------------------------------------------- */

/* The first step of a thread, once its /proc files are read: either done
 * (gone, or in disk wait and read live) or asked to stop (added to the
 * threads in flight, taken by finish_thread). 0, or -EPERM when ptrace is
 * refused (the caller explains it). */
static int start_thread(struct take_ctx *x, struct thread_dump *td, size_t idx)
{
	struct thread_info *t = &td->threads[idx];
	struct user_regs_struct regs;
	uint64_t t0;
	size_t copied;
	int err;

	if (t->state == '?' || t->state == 'Z' || t->state == 'X') {
		t->status = THREAD_GONE;
		return 0;
	}
	/* Interrupting a thread in uninterruptible sleep waits until the
	 * sleep ends. Its user stack does not change while the kernel holds
	 * it: read it live from the syscall's sp. */
	if (t->state == 'D' && t->sc == THREAD_SC_IN) {
		t->status = THREAD_LIVE;
		memset(&regs, 0, sizeof(regs));
		regs.rsp = t->syscall_sp;
		regs.rip = t->syscall_pc;
		copied = copy_stack(x, t->tid, regs.rsp);
		t->stack_bytes = copied;
		walk(x, t, &regs, copied);
		x->ntaken++;
		return 0;
	}
	t0 = clock_ns(CLOCK_MONOTONIC);
	err = tracee_interrupt(t->tid);
	if (err == -ESRCH) {
		t->status = THREAD_GONE;
		return 0;
	}
	if (err == -EPERM || err == -EACCES)
		return -EPERM;
	if (err < 0) {
		t->status = THREAD_FAILED;
		t->err = err;
		thread_info_read_syscall_at(x->task_dir, t);
		return 0;
	}
	x->fly_tid[x->nfly] = t->tid;
	x->fly_idx[x->nfly] = idx;
	x->fly_t0[x->nfly] = t0;
	x->nfly++;
	return 0;
}

/* Waits for the next thread in flight to stop, copies its registers and
 * stack, lets it go and walks the copy. */
static void finish_thread(struct take_ctx *x, struct thread_dump *td)
{
	struct user_regs_struct regs;
	struct iovec iov = { &regs, sizeof(regs) };
	struct thread_info *t;
	size_t i, copied;
	uint64_t t0;
	int err, sig = 0;

	err = tracee_wait_next(x->fly_tid, x->nfly, x->no_children, &i, &sig);
	t = &td->threads[x->fly_idx[i]];
	t0 = x->fly_t0[i];
	x->nfly--;
	x->fly_tid[i] = x->fly_tid[x->nfly];
	x->fly_idx[i] = x->fly_idx[x->nfly];
	x->fly_t0[i] = x->fly_t0[x->nfly];
	if (err == -ESRCH) {
		t->status = THREAD_GONE;
		return;
	}
	if (err < 0) {
		t->status = THREAD_FAILED;
		t->err = err;
		thread_info_read_syscall_at(x->task_dir, t);
		return;
	}
	memset(&regs, 0, sizeof(regs));
	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_PRSTATUS, &iov) < 0) {
		t->status = THREAD_FAILED;
		t->err = -errno;
		tracee_release(t->tid, sig);
		thread_info_read_syscall_at(x->task_dir, t);
		return;
	}
	copied = copy_stack(x, t->tid, regs.rsp);
	tracee_release(t->tid, sig);
	t->pause_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	t->stack_bytes = copied;
	t->status = THREAD_TAKEN;
	td->pause_sum_ns += t->pause_ns;
	if (t->pause_ns > td->pause_max_ns)
		td->pause_max_ns = t->pause_ns;
	x->ntaken++;
	syscall_from_regs(t, &regs);
	walk(x, t, &regs, copied);
}

/* Takes the threads td->threads[from..): up to THREAD_DUMP_WINDOW asked
 * to stop at a time, each taken as it stops. 0, or -EPERM when ptrace is
 * refused before any thread was taken (nothing then is in flight). */
static int take_threads(struct take_ctx *x, struct thread_dump *td, size_t from)
{
	size_t next = from;
	int err = 0;

	ahead_start(&x->ahead, td, x->task_dir, from, td->nthreads);
	while (next < td->nthreads || x->nfly) {
		while (next < td->nthreads && x->nfly < THREAD_DUMP_WINDOW) {
			struct thread_info *t = &td->threads[next];

			ahead_wait(&x->ahead, next);
			if (start_thread(x, td, next) == -EPERM) {
				if (!x->ntaken && !x->nfly) {
					err = -EPERM;
					goto out;
				}
				t->status = THREAD_FAILED;
				t->err = -EPERM;
				thread_info_read_syscall_at(x->task_dir, t);
			}
			next++;
		}
		if (x->nfly)
			finish_thread(x, td);
	}
out:
	ahead_stop(&x->ahead);
	return err;
}

/* --- the thread dump ------------------------------------------------------ */

static int cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Whether tid is in the sorted seen[0..n). */
static bool seen(const pid_t *v, size_t n, pid_t tid)
{
	return bsearch(&tid, v, n, sizeof(*v), cmp_tid) != NULL;
}

int thread_dump_take(pid_t pid, const struct thread_dump_options *opts,
		     struct thread_dump **ret, struct diag *d)
{
	struct thread_dump_options o = opts ? *opts : (struct thread_dump_options){ 0 };
	struct take_ctx x = {
		.pid = pid, .o = &o, .task_dir = -1,
		.ahead = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER },
	};
	struct symbolizer *sym = NULL;
	struct unwind_cache *cache = NULL;
	struct proc_syms *ps = NULL;
	struct thread_dump *td = NULL;
	char path[64], *buf = NULL;
	pid_t *tids = NULL, *seen_v = NULL;
	size_t ntids = 0, nseen = 0, len;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	int err;

	if (!o.max_depth)
		o.max_depth = THREAD_DUMP_DEPTH;
	if (o.max_depth > THREAD_DUMP_MAX_DEPTH)
		o.max_depth = THREAD_DUMP_MAX_DEPTH;
	if (!o.max_stack_bytes)
		o.max_stack_bytes = THREAD_DUMP_STACK_BYTES;
	maps_init(&x.maps);
	unwind_modules_init(&x.mods);

	err = -ENOMEM;
	td = thread_dump_new(pid, THREAD_DUMP_PTRACE);
	x.stack = malloc(o.max_stack_bytes);
	x.ips = malloc(o.max_depth * sizeof(*x.ips));
	if (!td || !x.stack || !x.ips)
		goto out;

	{
		struct proc_stat st;
		int r = proc_stat_read(pid, 0, &st);
		bool zombie = r == 0 && st.state == 'Z';

		if (r < 0 || (zombie && tracee_list_tids(pid, &tids, &ntids) < 0) ||
		    thread_dump_read_process(td) < 0) {
			err = diag_set(d, -ESRCH, "no process with PID %d", (int)pid);
			goto out;
		}
		free(tids);
		tids = NULL;
	}

	/* Everything read from /proc for the whole process comes first, while
	 * no thread is stopped; the maps once, for the stacks' ends, the
	 * unwind tables and the symbols. */
	err = proc_maps_read(pid, &buf, &len);
	if (err < 0) {
		err = proc_maps_explain(pid, err, d);
		goto out;
	}
	maps_parse(&x.maps, buf, len, 0);
	if (!o.cache) {
		/* A dump walks a few frames per thread: each function's rows
		 * are built when first needed, not every file's whole table
		 * (35,000 FDEs in mariadbd). */
		cache = unwind_cache_new();
		if (!cache) {
			err = -ENOMEM;
			goto out;
		}
		unwind_cache_set_lazy(cache);
		o.cache = cache;
	}
	err = unwind_modules_from_maps_text(&x.mods, o.cache, pid, buf, len);
	if (err < 0) {
		err = diag_set(d, err, "cannot read the modules of PID %d: %s",
			       (int)pid, strerror(-err));
		goto out;
	}
	if (!o.sym) {
		sym = symbolizer_new();
		if (!sym) {
			err = -ENOMEM;
			goto out;
		}
		o.sym = sym;
	}
	/* The maps are read: it fails only when memory runs out. */
	err = symbolizer_open_process_flags(o.sym, pid, SYM_OPEN_LAZY, buf, len, &ps, d);
	if (err < 0)
		goto out;

	x.task_dir = thread_dump_open_tasks(pid);
	if (x.task_dir < 0) {
		err = diag_set(d, -ESRCH, "no process with PID %d", (int)pid);
		goto out;
	}
	/* Nothing here makes a child from now on (the symbolizer's helper,
	 * if any, was made opening the process). */
	x.no_children = tracee_no_children();
	/* Passes: threads created during one are taken in the next. */
	for (unsigned pass = 0; pass < THREAD_DUMP_PASSES; pass++) {
		size_t before = td->nthreads;

		free(tids);
		tids = NULL;
		err = tracee_list_tids(pid, &tids, &ntids);
		if (err == -ESRCH) {
			if (!pass) {
				err = diag_set(d, -ESRCH, "no process with PID %d", (int)pid);
				goto out;
			}
			td->process_exited = true;
			break;
		}
		if (err < 0) {
			err = diag_set(d, err, "cannot list the threads of PID %d: %s",
				       (int)pid, strerror(-err));
			goto out;
		}
		for (size_t i = 0; i < ntids; i++) {
			if (seen(seen_v, nseen, tids[i]))
				continue;
			if (!thread_dump_add_thread(td, tids[i])) {
				err = -ENOMEM;
				goto out;
			}
		}
		if (td->nthreads == before)
			break;
		/* The threads seen so far, sorted, for the next pass. */
		{
			pid_t *v = realloc(seen_v, td->nthreads * sizeof(*v));

			if (!v) {
				err = -ENOMEM;
				goto out;
			}
			seen_v = v;
			for (size_t i = before; i < td->nthreads; i++)
				seen_v[nseen++] = td->threads[i].tid;
			qsort(seen_v, nseen, sizeof(*seen_v), cmp_tid);
		}
		if (take_threads(&x, td, before) == -EPERM) {
			err = proc_explain_access(pid, -EPERM, "ptrace (PTRACE_SEIZE)", PROC_ACCESS_ATTACH, d);
			goto out;
		}
		if (pass + 1 == THREAD_DUMP_PASSES) {
			/* What a last look finds was created too late. */
			free(tids);
			tids = NULL;
			if (tracee_list_tids(pid, &tids, &ntids) == 0)
				for (size_t i = 0; i < ntids; i++)
					if (!seen(seen_v, nseen, tids[i]))
						td->missed_new++;
		}
	}
	thread_dump_count(td);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (access(path, F_OK) < 0 || (td->nthreads && td->ngone == td->nthreads))
		td->process_exited = true;

	if (!o.addresses_only) {
		struct namer nm = { ps, o.sym_flags };

		err = thread_dump_name_frames(td, name_addr, &nm);
	}
	if (err < 0) {
		err = diag_set(d, err, "naming frames: %s", strerror(-err));
		goto out;
	}
	thread_dump_sort(td);
	td->total_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	*ret = td;
	td = NULL;
	err = 0;
out:
	thread_dump_free(td);
	proc_syms_free(ps);
	symbolizer_free(sym);
	unwind_modules_release(&x.mods);
	unwind_cache_free(cache);
	maps_release(&x.maps);
	free(x.stack);
	free(x.ips);
	if (x.task_dir >= 0)
		close(x.task_dir);
	free(seen_v);
	free(tids);
	free(buf);
	return err;
}


/* --- with the agent: the stacks come from inside the process ----------------- */

/* Moves what the agent took of thread a into t, which holds what /proc
 * said before the agent's signal: its status and its frames (capped at
 * max_depth); the /proc fields of t stay. */
static void merge_thread(struct thread_info *t, struct thread_info *a, unsigned max_depth)
{
	bool cut;

	thread_info_clear_frames(t);
	t->status = a->status;
	t->err = a->err;
	if (t->state == '?')
		t->state = a->state;
	if (!strcmp(t->name, "?"))
		memcpy(t->name, a->name, sizeof(t->name));
	if (t->sc == THREAD_SC_UNKNOWN && a->sc == THREAD_SC_IN) {
		t->sc = a->sc;
		t->syscall_nr = a->syscall_nr;
		memcpy(t->syscall_args, a->syscall_args, sizeof(t->syscall_args));
	}
	if (t->sc == THREAD_SC_IN && a->sc == THREAD_SC_IN && t->syscall_nr == a->syscall_nr)
		memcpy(t->restart_of, a->restart_of, sizeof(t->restart_of));
	if (!t->cpu_ns)
		t->cpu_ns = a->cpu_ns;
	t->pause_ns = 0;
	t->stack_bytes = a->stack_bytes;
	if (t->status != THREAD_TAKEN && t->status != THREAD_LIVE) {
		thread_info_clear_frames(a);
		return;
	}
	/* Frames past max_depth are dropped: ours are named again anyway. */
	cut = a->nframes > max_depth;
	while (a->nframes > max_depth) {
		struct thread_frame *f = &a->frames[--a->nframes];

		free(f->name);
		free(f->module);
		free(f->file);
	}
	t->frames = a->frames;
	t->nframes = a->nframes;
	a->frames = NULL;
	a->nframes = 0;
	t->truncated = a->truncated || cut;
	memcpy(t->walk_end, a->walk_end, sizeof(t->walk_end));
	if (t->truncated && !t->walk_end[0])
		snprintf(t->walk_end, sizeof(t->walk_end), "the agent's walk stopped");
}

int thread_dump_take_agent(pid_t pid, const struct thread_dump_options *opts,
			   thread_dump_capture_fn capture, void *arg,
			   struct thread_dump **ret, struct diag *d)
{
	struct thread_dump_options o = opts ? *opts : (struct thread_dump_options){ 0 };
	struct symbolizer *sym = NULL;
	struct proc_syms *ps = NULL;
	struct thread_dump *td = NULL, *at = NULL;
	size_t ntids = 0, jlen = 0;
	char path[64], *json = NULL;
	pid_t *tids = NULL;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	int err;

	if (!o.max_depth)
		o.max_depth = THREAD_DUMP_DEPTH;
	if (o.max_depth > THREAD_DUMP_MAX_DEPTH)
		o.max_depth = THREAD_DUMP_MAX_DEPTH;
	td = thread_dump_new(pid, THREAD_DUMP_AGENT);
	if (!td)
		return -ENOMEM;
	if (thread_dump_read_process(td) < 0) {
		err = diag_set(d, -ESRCH, "no process with PID %d", (int)pid);
		goto out;
	}
	/* State and system call first: the agent's signal interrupts the
	 * call (to be restarted) and would show the thread running. */
	err = tracee_list_tids(pid, &tids, &ntids);
	if (err < 0) {
		err = err == -ESRCH ? diag_set(d, err, "no process with PID %d", (int)pid)
				    : diag_set(d, err, "cannot list the threads of PID %d: %s",
					       (int)pid, strerror(-err));
		goto out;
	}
	for (size_t i = 0; i < ntids; i++) {
		struct thread_info *t = thread_dump_add_thread(td, tids[i]);

		if (!t) {
			err = -ENOMEM;
			goto out;
		}
		if (thread_info_read_proc(pid, t) < 0 || t->state == 'Z' || t->state == 'X')
			t->status = THREAD_GONE;
		else
			t->status = THREAD_FAILED, t->err = -ENODATA; /* until the agent says */
	}

	err = capture(pid, arg, &json, &jlen, d);
	if (err < 0)
		goto out;
	err = thread_dump_read_json(json, jlen, &at);
	if (err < 0) {
		err = diag_set(d, err, "PID %d's agent sent something that is not a thread dump",
			       (int)pid);
		goto out;
	}
	td->omitted = at->omitted;
	for (size_t i = 0; i < at->nthreads; i++) {
		struct thread_info *a = &at->threads[i];
		struct thread_info *t = thread_dump_find_thread(td, a->tid);

		if (!t) { /* created after our listing */
			t = thread_dump_add_thread(td, a->tid);
			if (!t) {
				err = -ENOMEM;
				goto out;
			}
			thread_info_read_proc(pid, t);
		}
		merge_thread(t, a, o.max_depth);
	}
	for (size_t i = 0; i < td->nthreads; i++) {
		struct thread_info *t = &td->threads[i];

		/* Listed by us, not by the agent: gone by then, if /proc agrees. */
		if (t->status == THREAD_FAILED && t->err == -ENODATA) {
			snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)t->tid);
			if (access(path, F_OK) < 0)
				t->status = THREAD_GONE;
		}
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (access(path, F_OK) < 0)
		td->process_exited = true;

	if (!o.sym) {
		sym = symbolizer_new();
		if (!sym) {
			err = -ENOMEM;
			goto out;
		}
		o.sym = sym;
	}
	{
		struct diag sd;

		diag_clear(&sd);
		err = symbolizer_open_process_flags(o.sym, pid, SYM_OPEN_LAZY, NULL, 0, &ps, &sd);
	}
	/* Else pid's maps are not ours to read: the agent's names stay. */
	if (err == 0) {
		struct namer nm = { ps, o.sym_flags };

		err = thread_dump_name_frames(td, name_addr, &nm);
	} else {
		err = 0;
	}
	if (err < 0) {
		err = diag_set(d, err, "naming frames: %s", strerror(-err));
		goto out;
	}
	thread_dump_sort(td);
	td->total_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	*ret = td;
	td = NULL;
	err = 0;
out:
	thread_dump_free(td);
	thread_dump_free(at);
	proc_syms_free(ps);
	symbolizer_free(sym);
	free(json);
	free(tids);
	return err;
}
