#include "inject/inject.h"

#include <elf.h>
#include <pthread.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/proc.h"
#include "capture/tracee.h"
#include "symbolize/maps.h"

#define RED_ZONE 128
/* What a call may use of the thread's stack, at least (dlopen and the
 * constructors it runs). */
#define STACK_ROOM (128u << 10)
/* The frame nprof writes at most: red zone, FP state (11 KiB with
 * AVX-512 and AMX's), string, ucontext. */
#define FRAME_ROOM (32u << 10)
/* How many times a thread is stopped to find it at a safe point. */
#define SAFE_TRIES 200
#define XSTATE_MAX (64u << 10)
#ifndef FP_XSTATE_MAGIC1 /* <sys/user.h>'s, when it has them */
#define FP_XSTATE_MAGIC1 0x46505853u
#define FP_XSTATE_MAGIC2 0x46505845u
#endif
#define UC_FP_XSTATE 0x1
#define UC_SIGCONTEXT_SS 0x2
#define UC_STRICT_RESTORE_SS 0x4
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516
#define NR_RT_SIGRETURN 15
#define NR_RESTART_SYSCALL 219

/* System calls a thread waits in with no lock of the C library held:
 * such a thread can take the loader's and the allocator's locks. */
static const long idle_syscalls[] = {
	0 /* read */, 7 /* poll */, 23 /* select */, 34 /* pause */, 35 /* nanosleep */,
	43 /* accept */, 45 /* recvfrom */, 47 /* recvmsg */, 61 /* wait4 */,
	128 /* rt_sigtimedwait */, 130 /* rt_sigsuspend */, 208 /* io_getevents */,
	230 /* clock_nanosleep */, 232 /* epoll_wait */, 247 /* waitid */,
	270 /* pselect6 */, 271 /* ppoll */, 281 /* epoll_pwait */, 288 /* accept4 */,
	299 /* recvmmsg */, 441 /* epoll_pwait2 */,
};

/* The system call tid waits in (from /proc/PID/task/TID/syscall), -1 when
 * it runs or waits outside one. */
static long waiting_in(pid_t pid, pid_t tid)
{
	char path[96], buf[256];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	if (proc_read_small(path, buf, sizeof(buf)) <= 0 || !strncmp(buf, "running", 7))
		return -1;
	return strtol(buf, NULL, 10);
}

static int rank(long sc)
{
	if (sc == 202 /* futex: may hold another lock while waiting */)
		return 1;
	for (size_t i = 0; i < sizeof(idle_syscalls) / sizeof(idle_syscalls[0]); i++)
		if (sc == idle_syscalls[i])
			return 0;
	return 2;
}

/* The C library's and the dynamic loader's code in pid, where a thread
 * may hold their locks (malloc's arenas, the loader's): up to max ranges
 * into lo and hi, their number. */
static size_t locked_code(pid_t pid, uint64_t *lo, uint64_t *hi, size_t max)
{
	char *buf = NULL;
	size_t len = 0, n = 0;
	struct maps m;

	if (proc_maps_read(pid, &buf, &len) < 0)
		return 0;
	maps_init(&m);
	maps_parse(&m, buf, len, 0);
	free(buf);
	for (size_t i = 0; i < m.n && n < max; i++) {
		const char *file = strrchr(m.v[i].path, '/');

		if (!file || !(m.v[i].prot & PROT_EXEC))
			continue;
		if (!strncmp(file, "/libc.so.", 9) || !strncmp(file, "/libc-", 6) ||
		    !strncmp(file, "/ld-linux", 9)) {
			lo[n] = m.v[i].start;
			hi[n++] = m.v[i].end;
		}
	}
	maps_release(&m);
	return n;
}

/* The system calls malloc and free make while they hold an arena's lock
 * (growing, trimming, giving memory back). */
static bool allocator_syscall(long sc)
{
	return sc == 9 /* mmap */ || sc == 10 /* mprotect */ || sc == 11 /* munmap */ ||
	       sc == 12 /* brk */ || sc == 25 /* mremap */ || sc == 28 /* madvise */;
}

/* Whether a thread stopped with regs may run the call (dlopen, which
 * takes malloc's and the loader's locks): in a system call other than
 * the allocator's, or running outside the C library and the loader.
 * In those it may hold the very lock the call would wait for: seen in a
 * malloc-heavy program, its main thread stopped in brk inside malloc,
 * then blocked for ever on its own arena's lock. */
static bool safe_point(const struct user_regs_struct *regs, const uint64_t *lo,
		       const uint64_t *hi, size_t nranges)
{
	long sc = (long long)regs->orig_rax >= 0 ? (long)regs->orig_rax : -1;

	if (sc >= 0)
		return !allocator_syscall(sc);
	for (size_t i = 0; i < nranges; i++)
		if (regs->rip >= lo[i] && regs->rip < hi[i])
			return false;
	return true;
}

/* The threads to try, best first: waiting in an idle system call (the
 * main thread first among equals), then in futex, then the rest. */
static int candidates(pid_t pid, pid_t **ret, size_t *ret_n)
{
	pid_t *tids;
	size_t n;
	int r = proc_tasks(pid, 4096, &tids, &n);

	if (r < 0)
		return r;
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0; j--) {
			int a = rank(waiting_in(pid, tids[j - 1])) * 2 + (tids[j - 1] != pid);
			int b = rank(waiting_in(pid, tids[j])) * 2 + (tids[j] != pid);

			if (a <= b)
				break;
			pid_t t = tids[j];
			tids[j] = tids[j - 1];
			tids[j - 1] = t;
		}
	*ret = tids;
	*ret_n = n;
	return 0;
}

/* The thread's blocked signals (SigBlk of its status). */
static uint64_t blocked_signals(pid_t pid, pid_t tid)
{
	char path[96], buf[4096];
	const char *v;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (proc_read_small(path, buf, sizeof(buf)) <= 0 || !(v = strstr(buf, "\nSigBlk:")))
		return 0;
	return strtoull(v + 8, NULL, 16);
}

/* Whether the thread's stack has room for the call below sp: the frame
 * must land on pages already mapped (a write from outside does not grow a
 * stack), and the call needs STACK_ROOM in all — which the main thread's
 * [stack] gets by growing, and another thread's stack must have. */
static bool stack_fits(pid_t pid, uint64_t sp)
{
	struct proc_map_line l;
	const char *p;
	char *buf;
	size_t len;
	bool fits = false;

	if (proc_maps_read(pid, &buf, &len) < 0)
		return false;
	p = buf;
	while (proc_maps_next(&p, buf + len, &l)) {
		if (sp > l.start && sp <= l.end) {
			fits = sp - l.start >= FRAME_ROOM &&
			       (sp - l.start >= STACK_ROOM ||
				(l.path_len == 7 && !memcmp(l.path, "[stack]", 7)));
			break;
		}
	}
	free(buf);
	return fits;
}

/* Everything the thread had, to be restored by rt_sigreturn. */
struct saved {
	struct user_regs_struct regs;
	uint8_t *xstate; /* XSAVE layout, as ptrace gives it */
	size_t xstate_len, xstate_size;
	bool xsave;	 /* false: only the legacy 512-byte FXSAVE area */
};

static int save_fp(pid_t tid, struct saved *s)
{
	struct iovec io;

	s->xstate = calloc(1, XSTATE_MAX);
	if (!s->xstate)
		return -ENOMEM;
	io.iov_base = s->xstate;
	io.iov_len = XSTATE_MAX;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &io) == 0 && io.iov_len >= 576) {
		uint32_t magic1, size;

		memcpy(&magic1, s->xstate + 464, 4);
		memcpy(&size, s->xstate + 464 + 16, 4);
		s->xstate_len = io.iov_len;
		if (magic1 == FP_XSTATE_MAGIC1 && size >= 576 && size <= io.iov_len) {
			s->xstate_size = size;
			s->xsave = true;
			return 0;
		}
	}
	/* No XSAVE layout to be had: the FXSAVE area (x87 and SSE). */
	if (ptrace(PTRACE_GETFPREGS, tid, 0, s->xstate) < 0)
		return -errno;
	s->xstate_len = s->xstate_size = 512;
	s->xsave = false;
	return 0;
}

/* The block written below the thread's stack pointer, top down: the FP
 * state (64-byte aligned), the string, the ucontext of the signal frame,
 * and the call's return address (rt_sigreturn's). */
struct frame {
	uint8_t *buf;
	size_t len;
	uint64_t base;		     /* where buf goes: the new stack pointer */
	uint64_t uc, str;	     /* addresses of the ucontext and the string */
};

static int build_frame(pid_t pid, pid_t tid, const struct inject_call *c,
		       const struct saved *s, struct frame *f)
{
	const struct user_regs_struct *g = &s->regs;
	uint64_t top = g->rsp - RED_ZONE, fp, str, uc;
	size_t slen = strlen(c->string) + 1, fplen = s->xstate_size + (s->xsave ? 4 : 0);
	ucontext_t u;
	long long ax = (long long)g->rax;

	fp = (top - fplen) & ~(uint64_t)63;
	str = (fp - slen) & ~(uint64_t)15;
	uc = (str - sizeof(u)) & ~(uint64_t)15;
	f->base = uc - 8;
	f->uc = uc;
	f->str = str;
	f->len = top - f->base;
	if (f->len > FRAME_ROOM - RED_ZONE)
		return -E2BIG;
	f->buf = calloc(1, f->len);
	if (!f->buf)
		return -ENOMEM;

	memset(&u, 0, sizeof(u));
	u.uc_flags = UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS | (s->xsave ? UC_FP_XSTATE : 0);
	/* An invalid mode: rt_sigreturn then leaves the thread's alternate
	 * signal stack as it is (it ignores any error there but EFAULT). */
	u.uc_stack.ss_flags = 3;
	u.uc_mcontext.gregs[REG_R8] = (greg_t)g->r8;
	u.uc_mcontext.gregs[REG_R9] = (greg_t)g->r9;
	u.uc_mcontext.gregs[REG_R10] = (greg_t)g->r10;
	u.uc_mcontext.gregs[REG_R11] = (greg_t)g->r11;
	u.uc_mcontext.gregs[REG_R12] = (greg_t)g->r12;
	u.uc_mcontext.gregs[REG_R13] = (greg_t)g->r13;
	u.uc_mcontext.gregs[REG_R14] = (greg_t)g->r14;
	u.uc_mcontext.gregs[REG_R15] = (greg_t)g->r15;
	u.uc_mcontext.gregs[REG_RDI] = (greg_t)g->rdi;
	u.uc_mcontext.gregs[REG_RSI] = (greg_t)g->rsi;
	u.uc_mcontext.gregs[REG_RBP] = (greg_t)g->rbp;
	u.uc_mcontext.gregs[REG_RBX] = (greg_t)g->rbx;
	u.uc_mcontext.gregs[REG_RDX] = (greg_t)g->rdx;
	u.uc_mcontext.gregs[REG_RAX] = (greg_t)g->rax;
	u.uc_mcontext.gregs[REG_RCX] = (greg_t)g->rcx;
	u.uc_mcontext.gregs[REG_RSP] = (greg_t)g->rsp;
	u.uc_mcontext.gregs[REG_RIP] = (greg_t)g->rip;
	u.uc_mcontext.gregs[REG_EFL] = (greg_t)g->eflags;
	/* cs, gs, fs, ss: four 16-bit selectors in one word. */
	u.uc_mcontext.gregs[REG_CSGSFS] = (greg_t)((g->cs & 0xffff) | (g->gs & 0xffff) << 16 |
						  (g->fs & 0xffff) << 32 | (g->ss & 0xffff) << 48);
	/* Stopped in a system call that is to be restarted: what the kernel
	 * would have done on the way out, done by the frame instead. */
	if ((long long)g->orig_rax >= 0 &&
	    (ax == -ERESTARTSYS || ax == -ERESTARTNOINTR || ax == -ERESTARTNOHAND)) {
		u.uc_mcontext.gregs[REG_RAX] = (greg_t)g->orig_rax;
		u.uc_mcontext.gregs[REG_RIP] -= 2;
	} else if ((long long)g->orig_rax >= 0 && ax == -ERESTART_RESTARTBLOCK) {
		u.uc_mcontext.gregs[REG_RAX] = NR_RESTART_SYSCALL;
		u.uc_mcontext.gregs[REG_RIP] -= 2;
	}
	u.uc_mcontext.fpregs = (fpregset_t)(uintptr_t)fp;
	{
		uint64_t mask = blocked_signals(pid, tid);

		memcpy(&u.uc_sigmask, &mask, sizeof(mask));
	}
	memcpy(f->buf, &c->sigreturn, 8);
	memcpy(f->buf + (uc - f->base), &u, sizeof(u));
	memcpy(f->buf + (str - f->base), c->string, slen);
	memcpy(f->buf + (fp - f->base), s->xstate, s->xstate_size);
	if (s->xsave) {
		uint32_t magic2 = FP_XSTATE_MAGIC2, ext = (uint32_t)fplen;

		/* extended_size in the software bytes: the area with magic2. */
		memcpy(f->buf + (fp - f->base) + 464 + 4, &ext, 4);
		memcpy(f->buf + (fp - f->base) + s->xstate_size, &magic2, 4);
	}
	return 0;
}

static int write_memory(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = { (void *)buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_writev(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* Waits for tid with a deadline (CLOCK_MONOTONIC ns). 0 and *status, or
 * -ETIMEDOUT, or -ESRCH once it is gone. SIGCHLD is blocked meanwhile
 * (inject_call): each stop of the tracee raises it, and sigtimedwait
 * wakes up at once instead of sleeping through dozens of stops. */
static int wait_until(pid_t tid, uint64_t deadline, int *status)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		pid_t w = waitpid(tid, status, __WALL | WNOHANG);
		uint64_t now = clock_ns(CLOCK_MONOTONIC), left;

		if (w == tid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -ESRCH;
		if (now > deadline)
			return -ETIMEDOUT;
		left = deadline - now;
		sigtimedwait(&chld, NULL,
			     &(struct timespec){ (time_t)(left / 1000000000u), (long)(left % 1000000000u) });
	}
}

/* Puts everything back after a failed call and lets the thread go. */
static void undo(pid_t tid, const struct saved *s)
{
	struct iovec io = { s->xstate, s->xstate_len };

	ptrace(PTRACE_SETREGS, tid, 0, &s->regs);
	if (s->xsave)
		ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &io);
	else
		ptrace(PTRACE_SETFPREGS, tid, 0, s->xstate);
	ptrace(PTRACE_DETACH, tid, 0, 0);
}

/* Whether the thread, blocked in a system call, is back above the frame
 * (its stack pointer past the ucontext): the call has returned. From
 * /proc/PID/task/TID/syscall, which shows "running" otherwise. */
static bool returned_to_syscall(pid_t pid, pid_t tid, const struct frame *f)
{
	char path[96], buf[256];
	unsigned long long sp = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	if (proc_read_small(path, buf, sizeof(buf)) <= 0 || !strncmp(buf, "running", 7))
		return false;
	/* "NR a1 a2 a3 a4 a5 a6 SP PC", or "-1 SP PC". */
	{
		char *tok[9];
		int n = 0;

		for (char *p = strtok(buf, " \n"); p && n < 9; p = strtok(NULL, " \n"))
			tok[n++] = p;
		if (n >= 3)
			sp = strtoull(tok[n - 2], NULL, 16);
	}
	return sp > f->uc;
}

enum follow_state { RUNNING, STOPPED_ABOVE, STOPPED_INSIDE };

/* Stops the running tracee and tells whether it is past the frame. */
static int stop_and_look(pid_t tid, const struct frame *f, uint64_t deadline, int *ret_sig)
{
	struct user_regs_struct g;
	int status;

	*ret_sig = 0;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
		return -errno;
	for (;;) {
		int err = wait_until(tid, deadline, &status);

		if (err < 0)
			return err;
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return -ESRCH;
		if (!WIFSTOPPED(status))
			continue;
		if (status >> 16)
			break; /* the interrupt's stop */
		/* A signal arrived first: keep it for the thread. */
		*ret_sig = WSTOPSIG(status);
		break;
	}
	if (ptrace(PTRACE_GETREGS, tid, 0, &g) < 0)
		return -errno;
	return g.rsp > f->uc ? STOPPED_ABOVE : STOPPED_INSIDE;
}

/* A signal-delivery stop during the call: a crash is undone (-EFAULT),
 * anything else is for the thread (returned, to be delivered). */
static int on_signal(pid_t pid, pid_t tid, int sig, const struct saved *s, struct diag *d)
{
	struct user_regs_struct g;
	unsigned long long at = 0;

	if (sig != SIGSEGV && sig != SIGBUS && sig != SIGILL && sig != SIGFPE)
		return sig;
	if (ptrace(PTRACE_GETREGS, tid, 0, &g) == 0)
		at = g.rip;
	undo(tid, s);
	return diag_set(d, -EFAULT,
			"the call crashed in process %d (signal %d at 0x%llx); its thread %d was "
			"put back as it was",
			(int)pid, sig, at, (int)tid);
}

/* Lets the call run untraced but for signals, looking every millisecond
 * whether it returned; once it has (or c->done says its work is done),
 * stops the thread: past the frame, it is let go; still inside, its
 * system calls are followed until rt_sigreturn from the frame. */
static int follow(pid_t pid, pid_t tid, const struct inject_call *c, const struct frame *f,
		  const struct saved *s, struct inject_report *r, struct diag *d)
{
	uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + INJECT_CALL_TIMEOUT_NS;
	bool syscalls = false; /* following system calls to the end */
	int sig = 0, status, err;

	for (;;) {
		if (ptrace(syscalls ? PTRACE_SYSCALL : PTRACE_CONT, tid, 0, (void *)(long)sig) < 0)
			return diag_set(d, -errno, "process %d: its thread %d vanished during the call",
					(int)pid, (int)tid);
		sig = 0;
		for (;;) {
			uint64_t now = clock_ns(CLOCK_MONOTONIC);

			err = wait_until(tid, syscalls || now + 1000000 > deadline ? deadline
										   : now + 1000000,
					 &status);
			if (err != -ETIMEDOUT || syscalls || clock_ns(CLOCK_MONOTONIC) > deadline)
				break;
			if (returned_to_syscall(pid, tid, f) || (c->done && c->done(c->done_ctx, pid) > 0)) {
				int look = stop_and_look(tid, f, deadline, &sig);

				if (look == STOPPED_ABOVE) {
					ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig);
					r->finished = 1;
					return 0;
				}
				if (look < 0) {
					err = look;
					break;
				}
				syscalls = true; /* the tail of the call, followed */
				err = 1;
				break;
			}
		}
		if (err == 1)
			continue;
		if (err == -ETIMEDOUT) {
			/* Still in the call: it finishes and restores itself
			 * without us. */
			if (stop_and_look(tid, f, clock_ns(CLOCK_MONOTONIC) + 1000000000ull, &sig) >= 0)
				ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig);
			r->finished = 0;
			return 0;
		}
		if (err < 0 || WIFEXITED(status) || WIFSIGNALED(status))
			return diag_set(d, -ESRCH, "process %d exited during the call", (int)pid);
		if (!WIFSTOPPED(status))
			continue;
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			struct user_regs_struct g;

			if (ptrace(PTRACE_GETREGS, tid, 0, &g) == 0 &&
			    g.orig_rax == NR_RT_SIGRETURN && g.rsp == f->uc) {
				ptrace(PTRACE_DETACH, tid, 0, 0);
				r->finished = 1;
				return 0;
			}
			continue;
		}
		if (status >> 16)
			continue; /* a group stop or another event: go on */
		sig = on_signal(pid, tid, WSTOPSIG(status), s, d);
		if (sig < 0)
			return sig;
	}
}

static int inject_on_a_thread(pid_t pid, const struct inject_call *c, struct inject_report *r,
			      struct diag *d);

int inject_call(pid_t pid, const struct inject_call *c, struct inject_report *r,
		struct diag *d)
{
	sigset_t chld, old_mask;
	int err;

	memset(r, 0, sizeof(*r));
	r->syscall = -1;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old_mask);
	err = inject_on_a_thread(pid, c, r, d);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	return err;
}

static int inject_on_a_thread(pid_t pid, const struct inject_call *c, struct inject_report *r,
			      struct diag *d)
{
	struct saved s = { 0 };
	struct frame f = { 0 };
	pid_t *tids = NULL;
	size_t n = 0;
	int err, sig = 0;
	uint64_t t0 = 0;
	pid_t tid = 0; /* the thread chosen and stopped */

	uint64_t lo[8], hi[8];
	size_t nranges = locked_code(pid, lo, hi, 8);
	bool busy = false; /* a thread was stopped inside the C library */

	err = candidates(pid, &tids, &n);
	if (err < 0)
		return diag_set(d, err == -ENOENT ? -ESRCH : err, "process %d: %s", (int)pid,
				err == -ENOENT || err == -ESRCH ? "no such process" : strerror(-err));
	/* Each thread, best first, stopped up to SAFE_TRIES times, a
	 * millisecond apart, until it is stopped at a safe point. */
	for (size_t i = 0; i < n && !tid; i++) {
		for (int try = 0; try < SAFE_TRIES && !tid; try++) {
			t0 = clock_ns(CLOCK_MONOTONIC);
			err = tracee_stop(tids[i], &sig);
			if (err == -ESRCH)
				break;
			if (err < 0) {
				free(tids);
				return proc_explain_access(pid, err, "an attach", PROC_ACCESS_ATTACH, d);
			}
			if (sig) {
				/* Stopped with a signal to deliver: the next one. */
				tracee_release(tids[i], sig);
				break;
			}
			if (ptrace(PTRACE_GETREGS, tids[i], 0, &s.regs) < 0 ||
			    !stack_fits(pid, s.regs.rsp)) {
				tracee_release(tids[i], 0);
				break;
			}
			if (!safe_point(&s.regs, lo, hi, nranges)) {
				tracee_release(tids[i], 0);
				busy = true;
				nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
				continue;
			}
			tid = tids[i];
		}
	}
	free(tids);
	if (!tid && busy)
		return diag_set(d, -EAGAIN,
				"process %d: each thread was inside the C library (its locks may be "
				"held there, which loading the agent takes) every time it was "
				"stopped; try again", (int)pid);
	if (!tid)
		return diag_set(d, -EAGAIN,
				"process %d: no thread could make the call (none with %u KiB of stack "
				"left, or each was busy with a signal); try again",
				(int)pid, STACK_ROOM >> 10);
	r->tid = tid;
	r->syscall = (long long)s.regs.orig_rax >= 0 ? (long)s.regs.orig_rax : -1;
	err = save_fp(tid, &s);
	if (err == 0)
		err = build_frame(pid, tid, c, &s, &f);
	if (err == 0)
		err = write_memory(pid, f.base, f.buf, f.len);
	if (err == 0) {
		struct user_regs_struct g = s.regs;

		g.rip = c->func;
		g.rsp = f.base;
		g.rdi = f.str;
		g.rsi = c->arg1;
		g.rax = 0;
		g.orig_rax = (unsigned long long)-1; /* no system call to restart now */
		g.eflags &= ~0x500ull;		      /* DF and TF clear, as the ABI wants */
		if (ptrace(PTRACE_SETOPTIONS, tid, 0, (void *)PTRACE_O_TRACESYSGOOD) < 0 ||
		    ptrace(PTRACE_SETREGS, tid, 0, &g) < 0)
			err = -errno;
	}
	if (err < 0) {
		undo(tid, &s);
		err = diag_set(d, err, "process %d: preparing the call on thread %d failed: %s",
			       (int)pid, (int)tid, strerror(-err));
		goto out;
	}
	r->setup_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	t0 = clock_ns(CLOCK_MONOTONIC);
	err = follow(pid, tid, c, &f, &s, r, d);
	r->call_ns = clock_ns(CLOCK_MONOTONIC) - t0;
out:
	free(s.xstate);
	free(f.buf);
	return err;
}
