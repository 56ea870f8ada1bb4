/* threads_dump: see threads_dump.h. The ptrace sequence and its races are
 * described in docs/nprof-stacks.1.md ("How it works"). */
#include "engine/threads_dump.h"

#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/units.h"
#include "symbolize/maps.h"
#include "symbolize/procfs.h"
#include "symbolize/symbolize.h"
#include "unwind/modules.h"
#include "unwind/unwind_table.h"
#include "unwind/walker.h"

#define MAPS_MAX_BYTES (256u << 20)

/* x86-64 system call names, from <asm/unistd_64.h> (Linux 6.1 headers). */
static const char *const syscall_names[] = {
	[0] = "read",
	[1] = "write",
	[2] = "open",
	[3] = "close",
	[4] = "stat",
	[5] = "fstat",
	[6] = "lstat",
	[7] = "poll",
	[8] = "lseek",
	[9] = "mmap",
	[10] = "mprotect",
	[11] = "munmap",
	[12] = "brk",
	[13] = "rt_sigaction",
	[14] = "rt_sigprocmask",
	[15] = "rt_sigreturn",
	[16] = "ioctl",
	[17] = "pread64",
	[18] = "pwrite64",
	[19] = "readv",
	[20] = "writev",
	[21] = "access",
	[22] = "pipe",
	[23] = "select",
	[24] = "sched_yield",
	[25] = "mremap",
	[26] = "msync",
	[27] = "mincore",
	[28] = "madvise",
	[29] = "shmget",
	[30] = "shmat",
	[31] = "shmctl",
	[32] = "dup",
	[33] = "dup2",
	[34] = "pause",
	[35] = "nanosleep",
	[36] = "getitimer",
	[37] = "alarm",
	[38] = "setitimer",
	[39] = "getpid",
	[40] = "sendfile",
	[41] = "socket",
	[42] = "connect",
	[43] = "accept",
	[44] = "sendto",
	[45] = "recvfrom",
	[46] = "sendmsg",
	[47] = "recvmsg",
	[48] = "shutdown",
	[49] = "bind",
	[50] = "listen",
	[51] = "getsockname",
	[52] = "getpeername",
	[53] = "socketpair",
	[54] = "setsockopt",
	[55] = "getsockopt",
	[56] = "clone",
	[57] = "fork",
	[58] = "vfork",
	[59] = "execve",
	[60] = "exit",
	[61] = "wait4",
	[62] = "kill",
	[63] = "uname",
	[64] = "semget",
	[65] = "semop",
	[66] = "semctl",
	[67] = "shmdt",
	[68] = "msgget",
	[69] = "msgsnd",
	[70] = "msgrcv",
	[71] = "msgctl",
	[72] = "fcntl",
	[73] = "flock",
	[74] = "fsync",
	[75] = "fdatasync",
	[76] = "truncate",
	[77] = "ftruncate",
	[78] = "getdents",
	[79] = "getcwd",
	[80] = "chdir",
	[81] = "fchdir",
	[82] = "rename",
	[83] = "mkdir",
	[84] = "rmdir",
	[85] = "creat",
	[86] = "link",
	[87] = "unlink",
	[88] = "symlink",
	[89] = "readlink",
	[90] = "chmod",
	[91] = "fchmod",
	[92] = "chown",
	[93] = "fchown",
	[94] = "lchown",
	[95] = "umask",
	[96] = "gettimeofday",
	[97] = "getrlimit",
	[98] = "getrusage",
	[99] = "sysinfo",
	[100] = "times",
	[101] = "ptrace",
	[102] = "getuid",
	[103] = "syslog",
	[104] = "getgid",
	[105] = "setuid",
	[106] = "setgid",
	[107] = "geteuid",
	[108] = "getegid",
	[109] = "setpgid",
	[110] = "getppid",
	[111] = "getpgrp",
	[112] = "setsid",
	[113] = "setreuid",
	[114] = "setregid",
	[115] = "getgroups",
	[116] = "setgroups",
	[117] = "setresuid",
	[118] = "getresuid",
	[119] = "setresgid",
	[120] = "getresgid",
	[121] = "getpgid",
	[122] = "setfsuid",
	[123] = "setfsgid",
	[124] = "getsid",
	[125] = "capget",
	[126] = "capset",
	[127] = "rt_sigpending",
	[128] = "rt_sigtimedwait",
	[129] = "rt_sigqueueinfo",
	[130] = "rt_sigsuspend",
	[131] = "sigaltstack",
	[132] = "utime",
	[133] = "mknod",
	[134] = "uselib",
	[135] = "personality",
	[136] = "ustat",
	[137] = "statfs",
	[138] = "fstatfs",
	[139] = "sysfs",
	[140] = "getpriority",
	[141] = "setpriority",
	[142] = "sched_setparam",
	[143] = "sched_getparam",
	[144] = "sched_setscheduler",
	[145] = "sched_getscheduler",
	[146] = "sched_get_priority_max",
	[147] = "sched_get_priority_min",
	[148] = "sched_rr_get_interval",
	[149] = "mlock",
	[150] = "munlock",
	[151] = "mlockall",
	[152] = "munlockall",
	[153] = "vhangup",
	[154] = "modify_ldt",
	[155] = "pivot_root",
	[156] = "_sysctl",
	[157] = "prctl",
	[158] = "arch_prctl",
	[159] = "adjtimex",
	[160] = "setrlimit",
	[161] = "chroot",
	[162] = "sync",
	[163] = "acct",
	[164] = "settimeofday",
	[165] = "mount",
	[166] = "umount2",
	[167] = "swapon",
	[168] = "swapoff",
	[169] = "reboot",
	[170] = "sethostname",
	[171] = "setdomainname",
	[172] = "iopl",
	[173] = "ioperm",
	[174] = "create_module",
	[175] = "init_module",
	[176] = "delete_module",
	[177] = "get_kernel_syms",
	[178] = "query_module",
	[179] = "quotactl",
	[180] = "nfsservctl",
	[181] = "getpmsg",
	[182] = "putpmsg",
	[183] = "afs_syscall",
	[184] = "tuxcall",
	[185] = "security",
	[186] = "gettid",
	[187] = "readahead",
	[188] = "setxattr",
	[189] = "lsetxattr",
	[190] = "fsetxattr",
	[191] = "getxattr",
	[192] = "lgetxattr",
	[193] = "fgetxattr",
	[194] = "listxattr",
	[195] = "llistxattr",
	[196] = "flistxattr",
	[197] = "removexattr",
	[198] = "lremovexattr",
	[199] = "fremovexattr",
	[200] = "tkill",
	[201] = "time",
	[202] = "futex",
	[203] = "sched_setaffinity",
	[204] = "sched_getaffinity",
	[205] = "set_thread_area",
	[206] = "io_setup",
	[207] = "io_destroy",
	[208] = "io_getevents",
	[209] = "io_submit",
	[210] = "io_cancel",
	[211] = "get_thread_area",
	[212] = "lookup_dcookie",
	[213] = "epoll_create",
	[214] = "epoll_ctl_old",
	[215] = "epoll_wait_old",
	[216] = "remap_file_pages",
	[217] = "getdents64",
	[218] = "set_tid_address",
	[219] = "restart_syscall",
	[220] = "semtimedop",
	[221] = "fadvise64",
	[222] = "timer_create",
	[223] = "timer_settime",
	[224] = "timer_gettime",
	[225] = "timer_getoverrun",
	[226] = "timer_delete",
	[227] = "clock_settime",
	[228] = "clock_gettime",
	[229] = "clock_getres",
	[230] = "clock_nanosleep",
	[231] = "exit_group",
	[232] = "epoll_wait",
	[233] = "epoll_ctl",
	[234] = "tgkill",
	[235] = "utimes",
	[236] = "vserver",
	[237] = "mbind",
	[238] = "set_mempolicy",
	[239] = "get_mempolicy",
	[240] = "mq_open",
	[241] = "mq_unlink",
	[242] = "mq_timedsend",
	[243] = "mq_timedreceive",
	[244] = "mq_notify",
	[245] = "mq_getsetattr",
	[246] = "kexec_load",
	[247] = "waitid",
	[248] = "add_key",
	[249] = "request_key",
	[250] = "keyctl",
	[251] = "ioprio_set",
	[252] = "ioprio_get",
	[253] = "inotify_init",
	[254] = "inotify_add_watch",
	[255] = "inotify_rm_watch",
	[256] = "migrate_pages",
	[257] = "openat",
	[258] = "mkdirat",
	[259] = "mknodat",
	[260] = "fchownat",
	[261] = "futimesat",
	[262] = "newfstatat",
	[263] = "unlinkat",
	[264] = "renameat",
	[265] = "linkat",
	[266] = "symlinkat",
	[267] = "readlinkat",
	[268] = "fchmodat",
	[269] = "faccessat",
	[270] = "pselect6",
	[271] = "ppoll",
	[272] = "unshare",
	[273] = "set_robust_list",
	[274] = "get_robust_list",
	[275] = "splice",
	[276] = "tee",
	[277] = "sync_file_range",
	[278] = "vmsplice",
	[279] = "move_pages",
	[280] = "utimensat",
	[281] = "epoll_pwait",
	[282] = "signalfd",
	[283] = "timerfd_create",
	[284] = "eventfd",
	[285] = "fallocate",
	[286] = "timerfd_settime",
	[287] = "timerfd_gettime",
	[288] = "accept4",
	[289] = "signalfd4",
	[290] = "eventfd2",
	[291] = "epoll_create1",
	[292] = "dup3",
	[293] = "pipe2",
	[294] = "inotify_init1",
	[295] = "preadv",
	[296] = "pwritev",
	[297] = "rt_tgsigqueueinfo",
	[298] = "perf_event_open",
	[299] = "recvmmsg",
	[300] = "fanotify_init",
	[301] = "fanotify_mark",
	[302] = "prlimit64",
	[303] = "name_to_handle_at",
	[304] = "open_by_handle_at",
	[305] = "clock_adjtime",
	[306] = "syncfs",
	[307] = "sendmmsg",
	[308] = "setns",
	[309] = "getcpu",
	[310] = "process_vm_readv",
	[311] = "process_vm_writev",
	[312] = "kcmp",
	[313] = "finit_module",
	[314] = "sched_setattr",
	[315] = "sched_getattr",
	[316] = "renameat2",
	[317] = "seccomp",
	[318] = "getrandom",
	[319] = "memfd_create",
	[320] = "kexec_file_load",
	[321] = "bpf",
	[322] = "execveat",
	[323] = "userfaultfd",
	[324] = "membarrier",
	[325] = "mlock2",
	[326] = "copy_file_range",
	[327] = "preadv2",
	[328] = "pwritev2",
	[329] = "pkey_mprotect",
	[330] = "pkey_alloc",
	[331] = "pkey_free",
	[332] = "statx",
	[333] = "io_pgetevents",
	[334] = "rseq",
	[424] = "pidfd_send_signal",
	[425] = "io_uring_setup",
	[426] = "io_uring_enter",
	[427] = "io_uring_register",
	[428] = "open_tree",
	[429] = "move_mount",
	[430] = "fsopen",
	[431] = "fsconfig",
	[432] = "fsmount",
	[433] = "fspick",
	[434] = "pidfd_open",
	[435] = "clone3",
	[436] = "close_range",
	[437] = "openat2",
	[438] = "pidfd_getfd",
	[439] = "faccessat2",
	[440] = "process_madvise",
	[441] = "epoll_pwait2",
	[442] = "mount_setattr",
	[443] = "quotactl_fd",
	[444] = "landlock_create_ruleset",
	[445] = "landlock_add_rule",
	[446] = "landlock_restrict_self",
	[447] = "memfd_secret",
	[448] = "process_mrelease",
	[449] = "futex_waitv",
	[450] = "set_mempolicy_home_node",
};

const char *thread_syscall_name(long nr)
{
	if (nr < 0 || (size_t)nr >= sizeof(syscall_names) / sizeof(syscall_names[0]))
		return NULL;
	return syscall_names[nr];
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

uint64_t thread_dump_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Reads a small /proc file into buf (NUL-terminated): its length or
 * -errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	ssize_t n, got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((size_t)got < len - 1) {
		n = read(fd, buf + got, len - 1 - (size_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		got += n;
	}
	close(fd);
	buf[got] = '\0';
	return got;
}

/* The value of a "Key:\tvalue" line of a status file, or NULL. */
static const char *status_field(const char *status, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = status; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == ':') {
			p += kl + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			return p;
		}
	return NULL;
}

static long status_long(const char *status, const char *key, long dflt)
{
	const char *v = status_field(status, key);

	return v ? strtol(v, NULL, 10) : dflt;
}

/* --- why access was refused ------------------------------------------------ */

static long read_sysctl_long(const char *path, long dflt)
{
	char buf[32];

	if (read_small(path, buf, sizeof(buf)) <= 0)
		return dflt;
	return strtol(buf, NULL, 10);
}

static bool have_cap_sys_ptrace(void)
{
	char status[4096];
	const char *v;

	if (read_small("/proc/self/status", status, sizeof(status)) <= 0)
		return false;
	v = status_field(status, "CapEff");
	return v && (strtoull(v, NULL, 16) >> 19) & 1; /* CAP_SYS_PTRACE */
}

static bool is_descendant(pid_t pid)
{
	pid_t self = getpid();
	char path[64], status[4096];

	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		if (read_small(path, status, sizeof(status)) <= 0)
			return false;
		pid = (pid_t)status_long(status, "PPid", 0);
		if (pid == self)
			return true;
	}
	return false;
}

int thread_dump_explain_access(pid_t pid, int err, const char *what,
			       struct diag *d)
{
	char path[64], status[4096], self[4096];
	long seccomp = 0, tracer = 0, uid = -1, scope;
	uid_t me = geteuid();
	struct stat st;

	if (read_small("/proc/self/status", self, sizeof(self)) > 0)
		seccomp = status_long(self, "Seccomp", 0);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_small(path, status, sizeof(status)) < 0)
		return diag_set(d, -ESRCH, "no process with PID %d", (int)pid);
	tracer = status_long(status, "TracerPid", 0);
	{
		const char *v = status_field(status, "Uid");

		if (v)
			uid = strtol(v, NULL, 10);
	}
	if (seccomp && (err == -EPERM || err == -ENOSYS || err == -EACCES))
		return diag_set(d, -EPERM,
			"%s of PID %d: ptrace denied by a seccomp policy on nprof "
			"(Seccomp: %ld in /proc/self/status); run nprof outside that "
			"sandbox, or allow ptrace and process_vm_readv in its profile "
			"(docker: --cap-add SYS_PTRACE --security-opt seccomp=unconfined)",
			what, (int)pid, seccomp);
	if (tracer && tracer != getpid()) {
		char comm[64] = "?";

		snprintf(path, sizeof(path), "/proc/%ld/comm", tracer);
		if (read_small(path, comm, sizeof(comm)) > 0)
			comm[strcspn(comm, "\n")] = '\0';
		return diag_set(d, -EBUSY,
			"%s of PID %d: it is already traced by PID %ld (%s); "
			"detach that debugger first", what, (int)pid, tracer, comm);
	}
	if (me != 0 && uid >= 0 && (uid_t)uid != me && !have_cap_sys_ptrace())
		return diag_set(d, -EPERM,
			"%s of PID %d: not permitted, the process belongs to uid %ld "
			"and nprof runs as uid %ld; run nprof as that user or as root",
			what, (int)pid, uid, (long)me);
	scope = read_sysctl_long("/proc/sys/kernel/yama/ptrace_scope", -1);
	if (scope == 3)
		return diag_set(d, -EPERM,
			"%s of PID %d: ptrace is disabled on this host "
			"(kernel.yama.ptrace_scope=3, which only a reboot undoes)",
			what, (int)pid);
	if (scope == 2 && !have_cap_sys_ptrace())
		return diag_set(d, -EPERM,
			"%s of PID %d: kernel.yama.ptrace_scope=2 allows ptrace only "
			"with CAP_SYS_PTRACE; run nprof as root (or setcap "
			"cap_sys_ptrace+ep on it)", what, (int)pid);
	if (scope == 1 && !have_cap_sys_ptrace() && !is_descendant(pid))
		return diag_set(d, -EPERM,
			"%s of PID %d: kernel.yama.ptrace_scope=1 lets a process trace "
			"only its own descendants; run nprof as root, give it "
			"CAP_SYS_PTRACE, or set sysctl kernel.yama.ptrace_scope=0",
			what, (int)pid);
	if (me == 0 && !have_cap_sys_ptrace())
		return diag_set(d, -EPERM,
			"%s of PID %d: nprof runs as root but without CAP_SYS_PTRACE "
			"(a container?); grant it (docker: --cap-add SYS_PTRACE)",
			what, (int)pid);
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (!stat(path, &st) && st.st_uid == 0 && uid > 0 && me != 0)
		return diag_set(d, -EPERM,
			"%s of PID %d: the process is not dumpable (setuid, file "
			"capabilities or prctl(PR_SET_DUMPABLE, 0)); run nprof as root",
			what, (int)pid);
	return diag_set(d, err, "%s of PID %d: %s", what, (int)pid, strerror(-err));
}

/* --- threads -------------------------------------------------------------- */

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int thread_dump_list_tids(pid_t pid, pid_t **ret_tids, size_t *ret_n)
{
	char path[64];
	struct dirent *e;
	pid_t *v = NULL, *nv;
	size_t n = 0, cap = 0;
	DIR *dir;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((e = readdir(dir))) {
		char *end;
		long t = strtol(e->d_name, &end, 10);

		if (end == e->d_name || *end || t <= 0)
			continue;
		if (n == THREAD_DUMP_MAX_THREADS)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				err = -ENOMEM;
				goto out;
			}
			v = nv;
		}
		v[n++] = (pid_t)t;
	}
	if (!n) {
		err = -ESRCH; /* the process exited: its task list is empty */
		goto out;
	}
	qsort(v, n, sizeof(*v), cmp_pid);
	*ret_tids = v;
	*ret_n = n;
	v = NULL;
out:
	closedir(dir);
	free(v);
	return err;
}

int thread_dump_stop(pid_t tid, int *ret_sig)
{
	int status, sig = 0;
	pid_t w;

	if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0)
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0) {
		int err = -errno;
		/* Seized but not stoppable: it is exiting. Reap its exit
		 * notification if it comes; the kernel drops the tracee
		 * otherwise when it is gone. */
		waitpid(tid, &status, __WALL | WNOHANG);
		return err == -ESRCH ? -ESRCH : err;
	}
	for (;;) {
		w = waitpid(tid, &status, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno == ECHILD ? -ESRCH : -errno;
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return -ESRCH;
		if (WIFSTOPPED(status))
			break;
	}
	/* A signal-delivery stop (event 0, not a SIGTRAP from our
	 * interrupt) caught a real signal first: it must be given back. A
	 * PTRACE_EVENT_STOP is our interrupt or a group stop, neither of
	 * which is a signal to deliver. */
	if ((status >> 16) == 0)
		sig = WSTOPSIG(status);
	*ret_sig = sig;
	return 0;
}

int thread_dump_release(pid_t tid, int sig)
{
	if (ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig) < 0)
		return -errno;
	return 0;
}

/* --- one thread ----------------------------------------------------------- */

struct take_ctx {
	pid_t pid;
	const struct thread_dump_options *o;
	struct maps maps;		/* for the end of each stack */
	struct unwind_modules mods;
	uint8_t *stack;			/* max_stack_bytes, reused */
	uint64_t *ips;			/* max_depth, reused */
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

/* Fills the /proc part of t: name, state, CPU time, syscall. -ESRCH when
 * the thread is gone. */
static int read_thread_proc(pid_t pid, struct thread_info *t)
{
	char path[96], buf[1024];
	const char *p;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)t->tid);
	n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	p = strrchr(buf, ')');
	if (!p || !p[1] || !p[2])
		return -ESRCH;
	t->state = p[2];
	{
		/* utime and stime: fields 14 and 15; field 3 is the state. */
		unsigned long long ut = 0, st = 0;
		int field = 3;
		const char *q = p + 2;

		while (*q && field < 14) {
			if (*q++ == ' ')
				field++;
		}
		if (sscanf(q, "%llu %llu", &ut, &st) == 2) {
			long hz = sysconf(_SC_CLK_TCK);

			t->cpu_ns = (ut + st) * (1000000000ull / (unsigned long long)(hz > 0 ? hz : 100));
		}
	}
	/* schedstat's first field is the exact time on CPU, in ns. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)t->tid);
	if (read_small(path, buf, sizeof(buf)) > 0) {
		unsigned long long ns;

		if (sscanf(buf, "%llu", &ns) == 1 && ns)
			t->cpu_ns = ns;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)t->tid);
	if (read_small(path, buf, sizeof(buf)) > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(t->name, sizeof(t->name), "%.63s", buf);
	}
	t->sc = THREAD_SC_UNKNOWN;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)t->tid);
	if (read_small(path, buf, sizeof(buf)) > 0) {
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
			 * we do not stop (disk wait). */
			t->regs.rsp = a[6];
			t->regs.rip = a[7];
		}
	}
	return 0;
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

static void walk(struct take_ctx *x, struct thread_info *t, size_t copied)
{
	struct unwind_regs r = { t->regs.rip, t->regs.rsp, t->regs.rbp };
	struct unwind_stack_copy sc = { t->regs.rsp, x->stack, copied };
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
	t->walk_end = walk_end_name(info.stop);
}

/* Takes one thread: 0, or -EPERM when ptrace is refused (the caller
 * explains it). Every other outcome is in t->status. */
static int take_thread(struct take_ctx *x, struct thread_dump *td,
		       struct thread_info *t)
{
	struct iovec iov = { &t->regs, sizeof(t->regs) };
	uint64_t t0, t1;
	size_t copied;
	int err, sig = 0;

	err = read_thread_proc(x->pid, t);
	if (err < 0) {
		t->status = THREAD_GONE;
		return 0;
	}
	if (t->state == 'Z' || t->state == 'X') {
		t->status = THREAD_GONE;
		return 0;
	}
	if (t->state == 'D' && t->sc == THREAD_SC_IN) {
		/* Interrupting a thread in uninterruptible sleep waits until
		 * the sleep ends. Its user stack does not change while the
		 * kernel holds it: read it live from the syscall's sp. */
		t->status = THREAD_LIVE;
		t->regs.rbp = 0;
		copied = copy_stack(x, t->tid, t->regs.rsp);
		t->stack_bytes = copied;
		walk(x, t, copied);
		return 0;
	}
	t0 = thread_dump_now_ns();
	err = thread_dump_stop(t->tid, &sig);
	if (err == -ESRCH) {
		t->status = THREAD_GONE;
		return 0;
	}
	if (err == -EPERM || err == -EACCES)
		return -EPERM;
	if (err < 0) {
		t->status = THREAD_FAILED;
		t->err = err;
		return 0;
	}
	memset(&t->regs, 0, sizeof(t->regs));
	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_PRSTATUS, &iov) < 0) {
		t->status = THREAD_FAILED;
		t->err = -errno;
		thread_dump_release(t->tid, sig);
		return 0;
	}
	copied = copy_stack(x, t->tid, t->regs.rsp);
	thread_dump_release(t->tid, sig);
	t1 = thread_dump_now_ns();
	t->pause_ns = t1 - t0;
	t->stack_bytes = copied;
	t->status = THREAD_TAKEN;
	td->pause_sum_ns += t->pause_ns;
	if (t->pause_ns > td->pause_max_ns)
		td->pause_max_ns = t->pause_ns;
	walk(x, t, copied);
	return 0;
}

/* --- the thread dump ------------------------------------------------------ */

static int cmp_thread(const void *a, const void *b)
{
	const struct thread_info *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static bool seen(const struct thread_dump *td, pid_t tid)
{
	for (size_t i = 0; i < td->nthreads; i++)
		if (td->threads[i].tid == tid)
			return true;
	return false;
}

/* Appends one named frame to t->frames (grown as needed). */
static int push_frame(struct thread_info *t, unsigned *cap, uint64_t addr,
		      const struct symbol_info *si)
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

/* A thread that a ptrace stop (ours, an earlier thread dump's or core
 * file's, a debugger's) took out of poll, nanosleep, clock_nanosleep,
 * epoll_wait... waits on in restart_syscall: the kernel rewound it to call
 * that instead. Which call it restarts is the function it sits in (the
 * leaf: __poll, __GI___clock_nanosleep), when that is a system call's
 * name. */
static void name_restarts(struct thread_dump *td)
{
	for (size_t i = 0; i < td->nthreads; i++) {
		struct thread_info *t = &td->threads[i];
		const char *n;

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
		for (long nr = 0; nr < (long)(sizeof(syscall_names) / sizeof(syscall_names[0])); nr++)
			if (syscall_names[nr] && nr != NR_RESTART_SYSCALL &&
			    !strcmp(syscall_names[nr], n)) {
				t->restart_of = syscall_names[nr];
				break;
			}
	}
}

/* Names every thread's addresses (walk() left them in frames[].addr).
 * With SYM_LINES an address may give several frames (inlined calls):
 * they are listed innermost first, like the rest of the stack. */
static int name_frames(struct thread_dump *td, struct proc_syms *ps, unsigned flags)
{
	struct symbol_info si[SYM_MAX_FRAMES_PER_ADDR];

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
		free(t->frames);
		t->frames = NULL;
		t->nframes = 0;
		for (unsigned j = 0; j < n; j++) {
			/* Return addresses are named at addr - 1: the call,
			 * not what follows it (which may be another function
			 * or another line). */
			uint64_t a = j ? addrs[j] - 1 : addrs[j];
			unsigned got = 1;
			int err;

			memset(si, 0, sizeof(si));
			if (flags & SYM_LINES)
				err = proc_syms_lookup_frames(ps, a, false, flags, si,
							      SYM_MAX_FRAMES_PER_ADDR, &got);
			else
				err = proc_syms_lookup(ps, a, false, flags, &si[0]);
			for (unsigned k = got; !err && k-- > 0;)
				err = push_frame(t, &cap, addrs[j], &si[k]);
			if (err < 0) {
				free(addrs);
				return err;
			}
		}
		free(addrs);
	}
	return 0;
}

int thread_dump_take(pid_t pid, const struct thread_dump_options *opts,
		     struct thread_dump **ret, struct diag *d)
{
	struct thread_dump_options o = opts ? *opts : (struct thread_dump_options){ 0 };
	struct take_ctx x = { .pid = pid, .o = &o };
	struct symbolizer *sym = NULL;
	struct unwind_cache *cache = NULL;
	struct proc_syms *ps = NULL;
	struct thread_dump *td = NULL;
	char path[64], *buf = NULL;
	pid_t *tids = NULL;
	size_t ntids = 0, len, cap = 0;
	uint64_t t0 = thread_dump_now_ns();
	struct timespec now;
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
	td = calloc(1, sizeof(*td));
	x.stack = malloc(o.max_stack_bytes);
	x.ips = malloc(o.max_depth * sizeof(*x.ips));
	if (!td || !x.stack || !x.ips)
		goto out;
	td->pid = pid;
	clock_gettime(CLOCK_REALTIME, &now);
	td->time_ns = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	{
		char sbuf[1024];
		ssize_t n = read_small(path, sbuf, sizeof(sbuf));
		const char *p = n > 0 ? strrchr(sbuf, ')') : NULL;

		if (n < 0 || (p && p[2] == 'Z' && thread_dump_list_tids(pid, &tids, &ntids) < 0)) {
			err = diag_set(d, -ESRCH, "no process with PID %d", (int)pid);
			goto out;
		}
		free(tids);
		tids = NULL;
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (read_small(path, td->comm, sizeof(td->comm)) > 0)
		td->comm[strcspn(td->comm, "\n")] = '\0';
	{
		char exe[4096];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
		n = readlink(path, exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = '\0';
			td->exe = strdup(exe);
		}
	}

	/* Everything read from /proc for the whole process comes first, while
	 * no thread is stopped. */
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	err = procfs_read_file(path, MAPS_MAX_BYTES, &buf, &len);
	if (err == -ENOENT || err == -ESRCH) {
		err = diag_set(d, -ESRCH, "no process with PID %d", (int)pid);
		goto out;
	}
	if (err == -EACCES || err == -EPERM) {
		err = thread_dump_explain_access(pid, -EPERM, "reading the memory map", d);
		goto out;
	}
	if (err < 0) {
		err = diag_set(d, err, "cannot read %s: %s", path, strerror(-err));
		goto out;
	}
	maps_parse(&x.maps, buf, len, 0);
	if (!o.cache) {
		cache = unwind_cache_new();
		if (!cache) {
			err = -ENOMEM;
			goto out;
		}
		o.cache = cache;
	}
	err = unwind_modules_from_maps(&x.mods, o.cache, pid);
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
	err = symbolizer_open_process(o.sym, pid, false, &ps, d);
	if (err == -EACCES || err == -EPERM) {
		diag_clear(d);
		err = thread_dump_explain_access(pid, -EPERM, "reading the memory map", d);
	}
	if (err < 0)
		goto out;

	/* Passes: threads created during one are taken in the next. */
	for (unsigned pass = 0; pass < THREAD_DUMP_PASSES; pass++) {
		size_t before = td->nthreads;

		free(tids);
		tids = NULL;
		err = thread_dump_list_tids(pid, &tids, &ntids);
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
			struct thread_info *t;

			if (seen(td, tids[i]))
				continue;
			if (td->nthreads == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				struct thread_info *nv = realloc(td->threads, ncap * sizeof(*nv));

				if (!nv) {
					err = -ENOMEM;
					goto out;
				}
				td->threads = nv;
				cap = ncap;
			}
			t = &td->threads[td->nthreads++];
			memset(t, 0, sizeof(*t));
			t->tid = tids[i];
			snprintf(t->name, sizeof(t->name), "?");
			if (take_thread(&x, td, t) == -EPERM) {
				if (!td->ntaken) {
					err = thread_dump_explain_access(pid, -EPERM,
						"ptrace (PTRACE_SEIZE)", d);
					goto out;
				}
				t->status = THREAD_FAILED;
				t->err = -EPERM;
			}
			if (t->status == THREAD_TAKEN || t->status == THREAD_LIVE)
				td->ntaken++;
		}
		if (td->nthreads == before)
			break;
		if (pass + 1 == THREAD_DUMP_PASSES) {
			/* What a last look finds was created too late. */
			free(tids);
			tids = NULL;
			if (thread_dump_list_tids(pid, &tids, &ntids) == 0)
				for (size_t i = 0; i < ntids; i++)
					if (!seen(td, tids[i]))
						td->missed_new++;
		}
	}
	for (size_t i = 0; i < td->nthreads; i++) {
		if (td->threads[i].status == THREAD_GONE)
			td->ngone++;
		else if (td->threads[i].status == THREAD_FAILED)
			td->nfailed++;
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (access(path, F_OK) < 0 || (td->nthreads && td->ngone == td->nthreads))
		td->process_exited = true;

	err = name_frames(td, ps, o.sym_flags);
	name_restarts(td);
	if (err < 0) {
		err = diag_set(d, err, "naming frames: %s", strerror(-err));
		goto out;
	}
	if (td->nthreads)
		qsort(td->threads, td->nthreads, sizeof(*td->threads), cmp_thread);
	td->total_ns = thread_dump_now_ns() - t0;
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
	free(tids);
	free(buf);
	return err;
}

void thread_dump_free(struct thread_dump *td)
{
	if (!td)
		return;
	for (size_t i = 0; i < td->nthreads; i++) {
		struct thread_info *t = &td->threads[i];

		for (unsigned j = 0; j < t->nframes; j++) {
			free(t->frames[j].name);
			free(t->frames[j].module);
			free(t->frames[j].file);
		}
		free(t->frames);
	}
	free(td->threads);
	free(td->exe);
	free(td);
}

/* --- with the agent: the stacks come from inside the process ----------------- */

/* A reader for the agent's JSON thread dump (src/agent/stacks.c): only
 * what a thread dump needs; anything else is skipped whatever its type.
 * The bytes come from another process: every read is bounded by end,
 * never by a NUL. */
struct jcur {
	const char *p, *end;
};

static void j_ws(struct jcur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static bool j_char(struct jcur *c, char ch)
{
	j_ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

static bool j_peek(struct jcur *c, char ch)
{
	j_ws(c);
	return c->p < c->end && *c->p == ch;
}

/* A string into out (cut at cap - 1; \u escapes outside ASCII become '?'). */
static int j_string(struct jcur *c, char *out, size_t cap)
{
	size_t n = 0;

	if (!j_char(c, '"'))
		return -EPROTO;
	while (c->p < c->end && *c->p != '"') {
		char ch = *c->p++;

		if (ch == '\\') {
			if (c->p >= c->end)
				return -EPROTO;
			ch = *c->p++;
			switch (ch) {
			case 'n': ch = '\n'; break;
			case 't': ch = '\t'; break;
			case 'r': ch = '\r'; break;
			case 'b': ch = '\b'; break;
			case 'f': ch = '\f'; break;
			case 'u': {
				unsigned v = 0;

				for (int k = 0; k < 4; k++) {
					int x = c->p < c->end ? (unsigned char)*c->p++ : 0;

					if (!isxdigit(x))
						return -EPROTO;
					v = v * 16 + (unsigned)(isdigit(x) ? x - '0' : (x | 0x20) - 'a' + 10);
				}
				ch = v && v < 0x80 ? (char)v : '?';
				break;
			}
			default: break; /* " \ / */
			}
		}
		if (n + 1 < cap)
			out[n++] = ch;
	}
	if (!j_char(c, '"'))
		return -EPROTO;
	if (cap)
		out[n] = '\0';
	return 0;
}

static int j_skip(struct jcur *c, int depth)
{
	char tmp[2];

	if (depth > 32)
		return -EPROTO;
	j_ws(c);
	if (c->p >= c->end)
		return -EPROTO;
	if (*c->p == '"')
		return j_string(c, tmp, sizeof(tmp));
	if (*c->p == '{' || *c->p == '[') {
		char close = *c->p == '{' ? '}' : ']';
		bool obj = *c->p == '{';

		c->p++;
		if (j_char(c, close))
			return 0;
		do {
			if (obj && (j_string(c, tmp, sizeof(tmp)) < 0 || !j_char(c, ':')))
				return -EPROTO;
			if (j_skip(c, depth + 1) < 0)
				return -EPROTO;
		} while (j_char(c, ','));
		return j_char(c, close) ? 0 : -EPROTO;
	}
	/* number, true, false, null */
	if (!*c->p || !strchr("-0123456789tfn", *c->p))
		return -EPROTO;
	while (c->p < c->end && !strchr(",]} \t\r\n", *c->p))
		c->p++;
	return 0;
}

/* A non-negative decimal integer (a tid), at most max. */
static int j_uint(struct jcur *c, long max, long *ret)
{
	long v = 0;
	const char *p0;

	j_ws(c);
	p0 = c->p;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		v = v * 10 + (*c->p++ - '0');
		if (v > max)
			return -EPROTO;
	}
	if (c->p == p0)
		return -EPROTO;
	*ret = v;
	return 0;
}

static void agent_frame_free(struct thread_dump_agent_frame *f)
{
	free(f->function);
	free(f->module);
}

static int j_frame(struct jcur *c, struct thread_dump_agent_thread *t)
{
	char key[32], val[1024];
	struct thread_dump_agent_frame f = { 0 };
	int err = -EPROTO;

	if (!j_char(c, '{'))
		return -EPROTO;
	if (!j_char(c, '}')) {
		do {
			if (j_string(c, key, sizeof(key)) < 0 || !j_char(c, ':'))
				goto out;
			if (!strcmp(key, "addr") || !strcmp(key, "function") ||
			    (!strcmp(key, "module") && j_peek(c, '"'))) {
				if (j_string(c, val, sizeof(val)) < 0)
					goto out;
				if (key[0] == 'a') {
					f.addr = strtoull(val, NULL, 16);
				} else {
					char **dst = key[0] == 'f' ? &f.function : &f.module;

					free(*dst);
					*dst = strdup(val);
					if (!*dst) {
						err = -ENOMEM;
						goto out;
					}
				}
			} else if (j_skip(c, 0) < 0) {
				goto out;
			}
		} while (j_char(c, ','));
		if (!j_char(c, '}'))
			goto out;
	}
	if (t->n == THREAD_DUMP_MAX_DEPTH) {
		/* deeper than any thread dump keeps: read, dropped */
		t->truncated = true;
		err = 0;
		goto out;
	}
	if (t->n == t->cap) {
		unsigned ncap = t->cap ? t->cap * 2 : 32;
		struct thread_dump_agent_frame *nv = realloc(t->frames, ncap * sizeof(*nv));

		if (!nv) {
			err = -ENOMEM;
			goto out;
		}
		t->frames = nv;
		t->cap = ncap;
	}
	t->frames[t->n++] = f;
	return 0;
out:
	agent_frame_free(&f);
	return err;
}

static int j_thread(struct jcur *c, struct thread_dump_agent_thread *t)
{
	char key[32];

	memset(t, 0, sizeof(*t));
	if (!j_char(c, '{'))
		return -EPROTO;
	if (j_char(c, '}'))
		return -EPROTO; /* no tid */
	do {
		if (j_string(c, key, sizeof(key)) < 0 || !j_char(c, ':'))
			return -EPROTO;
		if (!strcmp(key, "tid")) {
			long v;

			if (j_uint(c, INT_MAX, &v) < 0 || v <= 0)
				return -EPROTO;
			t->tid = (pid_t)v;
		} else if (!strcmp(key, "status")) {
			if (j_string(c, t->status, sizeof(t->status)) < 0)
				return -EPROTO;
		} else if (!strcmp(key, "truncated")) {
			j_ws(c);
			t->truncated = c->end - c->p >= 4 && !strncmp(c->p, "true", 4);
			if (j_skip(c, 0) < 0)
				return -EPROTO;
		} else if (!strcmp(key, "frames")) {
			if (!j_char(c, '['))
				return -EPROTO;
			if (!j_char(c, ']')) {
				do {
					int err = j_frame(c, t);

					if (err < 0)
						return err;
				} while (j_char(c, ','));
				if (!j_char(c, ']'))
					return -EPROTO;
			}
		} else if (j_skip(c, 0) < 0) {
			return -EPROTO;
		}
	} while (j_char(c, ','));
	return j_char(c, '}') && t->tid > 0 ? 0 : -EPROTO;
}

void thread_dump_agent_free(struct thread_dump_agent_thread *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		for (unsigned j = 0; j < v[i].n; j++)
			agent_frame_free(&v[i].frames[j]);
		free(v[i].frames);
	}
	free(v);
}

static int cmp_agent_tid(const void *a, const void *b)
{
	pid_t x = ((const struct thread_dump_agent_thread *)a)->tid;
	pid_t y = ((const struct thread_dump_agent_thread *)b)->tid;

	return (x > y) - (x < y);
}

/* The "threads" of the agent's thread dump, sorted by tid. */
int thread_dump_agent_parse(const char *json, size_t len,
			    struct thread_dump_agent_thread **ret, size_t *ret_n)
{
	struct jcur c = { json, json + len };
	struct thread_dump_agent_thread *v = NULL;
	size_t n = 0, cap = 0;
	bool have = false;
	char key[32];
	int err = -EPROTO;

	if (!json || !j_char(&c, '{'))
		goto out;
	if (!j_char(&c, '}')) {
		do {
			if (j_string(&c, key, sizeof(key)) < 0 || !j_char(&c, ':'))
				goto out;
			if (strcmp(key, "threads") || have) {
				if (j_skip(&c, 0) < 0)
					goto out;
				continue;
			}
			have = true;
			if (!j_char(&c, '['))
				goto out;
			if (j_char(&c, ']'))
				continue;
			do {
				if (n == THREAD_DUMP_MAX_THREADS)
					goto out;
				if (n == cap) {
					size_t ncap = cap ? cap * 2 : 64;
					struct thread_dump_agent_thread *nv = realloc(v, ncap * sizeof(*nv));

					if (!nv) {
						err = -ENOMEM;
						goto out;
					}
					v = nv;
					cap = ncap;
				}
				/* counted before it is read: its frames are freed either way */
				err = j_thread(&c, &v[n++]);
				if (err < 0)
					goto out;
				err = -EPROTO;
			} while (j_char(&c, ','));
			if (!j_char(&c, ']'))
				goto out;
		} while (j_char(&c, ','));
		if (!j_char(&c, '}'))
			goto out;
	}
	if (!have)
		goto out;
	/* One entry per thread: a tid twice would be merged twice. */
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_agent_tid);
	for (size_t i = 1; i < n; i++)
		if (v[i].tid == v[i - 1].tid)
			goto out;
	*ret = v;
	*ret_n = n;
	return 0;
out:
	thread_dump_agent_free(v, n);
	return err;
}

static struct thread_info *add_thread(struct thread_dump *td, size_t *cap, pid_t tid)
{
	struct thread_info *t;

	if (td->nthreads == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct thread_info *nv = realloc(td->threads, ncap * sizeof(*nv));

		if (!nv)
			return NULL;
		td->threads = nv;
		*cap = ncap;
	}
	t = &td->threads[td->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	snprintf(t->name, sizeof(t->name), "?");
	return t;
}

static struct thread_info *find_thread(struct thread_dump *td, pid_t tid)
{
	for (size_t i = 0; i < td->nthreads; i++)
		if (td->threads[i].tid == tid)
			return &td->threads[i];
	return NULL;
}

int thread_dump_take_agent(pid_t pid, const struct thread_dump_options *opts,
			   thread_dump_capture_fn capture, void *arg,
			   struct thread_dump **ret, struct diag *d)
{
	struct thread_dump_options o = opts ? *opts : (struct thread_dump_options){ 0 };
	struct symbolizer *sym = NULL;
	struct proc_syms *ps = NULL;
	struct thread_dump *td = NULL;
	struct thread_dump_agent_thread *at = NULL;
	size_t nat = 0, cap = 0, ntids = 0, jlen = 0;
	char path[64], *json = NULL;
	pid_t *tids = NULL;
	uint64_t t0 = thread_dump_now_ns();
	struct timespec now;
	int err;

	if (!o.max_depth)
		o.max_depth = THREAD_DUMP_DEPTH;
	td = calloc(1, sizeof(*td));
	if (!td)
		return -ENOMEM;
	td->pid = pid;
	td->method = THREAD_DUMP_AGENT;
	clock_gettime(CLOCK_REALTIME, &now);
	td->time_ns = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (read_small(path, td->comm, sizeof(td->comm)) < 0) {
		err = diag_set(d, -ESRCH, "no process with PID %d", (int)pid);
		goto out;
	}
	td->comm[strcspn(td->comm, "\n")] = '\0';
	{
		char exe[4096];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
		n = readlink(path, exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = '\0';
			td->exe = strdup(exe);
		}
	}
	/* State and system call first: the agent's signal interrupts the
	 * call (to be restarted) and would show the thread running. */
	err = thread_dump_list_tids(pid, &tids, &ntids);
	if (err < 0) {
		err = err == -ESRCH ? diag_set(d, err, "no process with PID %d", (int)pid)
				    : diag_set(d, err, "cannot list the threads of PID %d: %s",
					       (int)pid, strerror(-err));
		goto out;
	}
	for (size_t i = 0; i < ntids; i++) {
		struct thread_info *t = add_thread(td, &cap, tids[i]);

		if (!t) {
			err = -ENOMEM;
			goto out;
		}
		if (read_thread_proc(pid, t) < 0 || t->state == 'Z' || t->state == 'X')
			t->status = THREAD_GONE;
		else
			t->status = THREAD_FAILED, t->err = -ENODATA; /* until the agent says */
	}

	err = capture(pid, arg, &json, &jlen, d);
	if (err < 0)
		goto out;
	err = thread_dump_agent_parse(json, jlen, &at, &nat);
	if (err < 0) {
		err = diag_set(d, err, "PID %d's agent sent something that is not a thread dump",
			       (int)pid);
		goto out;
	}
	for (size_t i = 0; i < nat; i++) {
		struct thread_dump_agent_thread *a = &at[i];
		struct thread_info *t = find_thread(td, a->tid);

		if (!t) { /* created after our listing */
			t = add_thread(td, &cap, a->tid);
			if (!t) {
				err = -ENOMEM;
				goto out;
			}
			if (read_thread_proc(pid, t) < 0)
				t->status = THREAD_GONE;
		}
		t->err = 0;
		if (!strcmp(a->status, "taken")) {
			t->status = THREAD_TAKEN;
			t->frames = calloc(a->n ? a->n : 1, sizeof(*t->frames));
			if (!t->frames) {
				err = -ENOMEM;
				goto out;
			}
			t->nframes = a->n < o.max_depth ? a->n : o.max_depth;
			for (unsigned j = 0; j < t->nframes; j++)
				t->frames[j].addr = a->frames[j].addr;
			t->truncated = a->truncated || a->n > o.max_depth;
			if (t->truncated)
				t->walk_end = a->n > o.max_depth ? "depth limit"
								 : "the agent's walk stopped";
		} else if (!strcmp(a->status, "gone")) {
			t->status = THREAD_GONE;
		} else if (!strcmp(a->status, "agent") || !strcmp(a->status, "self")) {
			t->status = THREAD_AGENT;
		} else if (!strcmp(a->status, "no-answer")) {
			t->status = THREAD_FAILED;
			t->err = -ETIMEDOUT;
		} else {
			t->status = THREAD_FAILED;
			t->err = -EPROTO;
		}
	}
	for (size_t i = 0; i < td->nthreads; i++) {
		struct thread_info *t = &td->threads[i];

		/* Listed by us, not by the agent: gone by then, if /proc agrees. */
		if (t->status == THREAD_FAILED && t->err == -ENODATA) {
			snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)t->tid);
			if (access(path, F_OK) < 0)
				t->status = THREAD_GONE;
		}
		if (t->status == THREAD_TAKEN)
			td->ntaken++;
		else if (t->status == THREAD_GONE)
			td->ngone++;
		else if (t->status == THREAD_FAILED)
			td->nfailed++;
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
		err = symbolizer_open_process(o.sym, pid, false, &ps, &sd);
	}
	if (err == 0) {
		err = name_frames(td, ps, o.sym_flags);
	} else {
		/* pid's maps are not ours to read: the agent's names. */
		err = 0;
		for (size_t i = 0; i < td->nthreads && !err; i++) {
			struct thread_info *t = &td->threads[i];
			struct thread_dump_agent_thread *a = NULL;

			for (size_t k = 0; k < nat && !a; k++)
				if (at[k].tid == t->tid)
					a = &at[k];
			for (unsigned j = 0; a && j < t->nframes && !err; j++) {
				struct thread_frame *f = &t->frames[j];

				f->name = strdup(a->frames[j].function ? a->frames[j].function : "??");
				f->module = a->frames[j].module ? strdup(a->frames[j].module) : NULL;
				f->kind = f->module ? FRAME_USER : FRAME_UNKNOWN;
				if (!f->name || (a->frames[j].module && !f->module))
					err = -ENOMEM;
			}
		}
	}
	if (err < 0) {
		err = diag_set(d, err, "naming frames: %s", strerror(-err));
		goto out;
	}
	name_restarts(td);
	if (td->nthreads)
		qsort(td->threads, td->nthreads, sizeof(*td->threads), cmp_thread);
	td->total_ns = thread_dump_now_ns() - t0;
	*ret = td;
	td = NULL;
	err = 0;
out:
	thread_dump_free(td);
	thread_dump_agent_free(at, nat);
	proc_syms_free(ps);
	symbolizer_free(sym);
	free(json);
	free(tids);
	return err;
}

/* --- writers -------------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

static void write_state(const struct thread_info *t, FILE *f)
{
	fprintf(f, " state=%s", thread_state_name(t->state));
	if (t->sc == THREAD_SC_IN) {
		const char *name = thread_syscall_name(t->syscall_nr);

		if (t->restart_of)
			fprintf(f, " syscall=%s (restarted)", t->restart_of);
		else if (name)
			fprintf(f, " syscall=%s", name);
		else
			fprintf(f, " syscall=%ld", t->syscall_nr);
	} else if (t->sc == THREAD_SC_ON_CPU && t->state == 'R') {
		fputs(" on-cpu", f);
	}
}

static const char *failure_text(const struct thread_dump *td, const struct thread_info *t)
{
	if (td->method == THREAD_DUMP_AGENT && t->err == -ETIMEDOUT)
		return "did not answer the agent's signal in time (the signal blocked, "
		       "or an uninterruptible sleep)";
	return strerror(-t->err);
}

static void write_frames(const struct thread_dump *td, const struct thread_info *t,
			 unsigned flags, FILE *f)
{
	switch (t->status) {
	case THREAD_GONE:
		fputs("\t(exited before its stack was taken)\n", f);
		return;
	case THREAD_FAILED:
		fprintf(f, "\t(stack not taken: %s)\n", failure_text(td, t));
		return;
	case THREAD_AGENT:
		fputs("\t(one of the nprof agent's own threads: its stack is not taken)\n", f);
		return;
	case THREAD_LIVE:
		fputs("\t(not stopped: in disk wait, stack read while the kernel held it)\n", f);
		break;
	case THREAD_TAKEN:
		break;
	}
	for (unsigned j = 0; j < t->nframes; j++) {
		const struct thread_frame *fr = &t->frames[j];

		fprintf(f, "\tat %s", fr->name);
		if (fr->file && fr->line)
			fprintf(f, " (%s:%u)", base_name(fr->file), fr->line);
		else if (fr->module && fr->kind != FRAME_UNKNOWN)
			fprintf(f, " (%s)", base_name(fr->module));
		if (fr->kind == FRAME_INLINED)
			fputs(" [inlined]", f);
		if (flags & THREAD_DUMP_ADDRS)
			fprintf(f, " [0x%llx]", (unsigned long long)fr->addr);
		fputc('\n', f);
	}
	if (t->truncated)
		fprintf(f, "\t... (stack ends here: %s)\n", t->walk_end);
}

/* Same stack, state and system call: one group under -g. */
static bool same_group(const struct thread_info *a, const struct thread_info *b)
{
	if (a->status != b->status || a->state != b->state || a->sc != b->sc ||
	    a->restart_of != b->restart_of ||
	    (a->sc == THREAD_SC_IN && a->syscall_nr != b->syscall_nr) ||
	    a->nframes != b->nframes || a->truncated != b->truncated)
		return false;
	for (unsigned j = 0; j < a->nframes; j++) {
		const struct thread_frame *x = &a->frames[j], *y = &b->frames[j];

		if (strcmp(x->name, y->name) || x->line != y->line ||
		    (x->module == NULL) != (y->module == NULL) ||
		    (x->module && strcmp(x->module, y->module)))
			return false;
	}
	return true;
}

static void write_header(const struct thread_dump *td, FILE *f)
{
	char when[64], total[32], pmax[32], pmean[32];
	time_t sec = (time_t)(td->time_ns / 1000000000ll);
	struct tm tm;
	unsigned stopped = 0;

	for (size_t i = 0; i < td->nthreads; i++)
		stopped += td->threads[i].pause_ns > 0;
	localtime_r(&sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(f, "Thread dump of PID %d (%s)%s%s at %s\n", (int)td->pid, td->comm,
		td->exe ? " " : "", td->exe ? td->exe : "", when);
	if (td->method == THREAD_DUMP_AGENT) {
		fprintf(f, "%zu threads, taken in %s by the in-process agent (each thread "
			   "walked its own stack in a signal handler; no ptrace, nothing stopped)\n",
			td->nthreads, units_format_ns(td->total_ns, total, sizeof(total)));
		return;
	}
	fprintf(f, "%zu threads, taken in %s; each thread paused %s on average, %s at most (ptrace)\n",
		td->nthreads, units_format_ns(td->total_ns, total, sizeof(total)),
		units_format_ns(stopped ? td->pause_sum_ns / stopped : 0, pmean, sizeof(pmean)),
		units_format_ns(td->pause_max_ns, pmax, sizeof(pmax)));
}

static void write_footer(const struct thread_dump *td, FILE *f)
{
	if (td->ngone)
		fprintf(f, "\nnote: %u thread%s exited during the dump\n", td->ngone,
			td->ngone == 1 ? "" : "s");
	if (td->nfailed)
		fprintf(f, "\nnote: %u thread%s could not be taken\n", td->nfailed,
			td->nfailed == 1 ? "" : "s");
	if (td->missed_new)
		fprintf(f, "\nnote: %u thread%s created during the dump %s not taken\n",
			td->missed_new, td->missed_new == 1 ? "" : "s",
			td->missed_new == 1 ? "was" : "were");
	if (td->process_exited)
		fputs("\nnote: the process exited during the dump\n", f);
}

int thread_dump_write_text(const struct thread_dump *td, unsigned flags, FILE *f)
{
	bool *done = calloc(td->nthreads ? td->nthreads : 1, sizeof(*done));
	char cpu[32];

	if (!done)
		return -ENOMEM;
	write_header(td, f);
	for (size_t i = 0; i < td->nthreads; i++) {
		const struct thread_info *t = &td->threads[i];
		size_t count = 1;
		uint64_t cpu_ns = t->cpu_ns;

		if (done[i])
			continue;
		done[i] = true;
		fputc('\n', f);
		if (!(flags & THREAD_DUMP_GROUP)) {
			fprintf(f, "\"%s\" tid=%d", t->name, (int)t->tid);
			write_state(t, f);
			fprintf(f, " cpu=%s", units_format_ns(cpu_ns, cpu, sizeof(cpu)));
			if (t->pause_ns)
				fprintf(f, " paused=%s", units_format_ns(t->pause_ns, cpu, sizeof(cpu)));
			fputc('\n', f);
			write_frames(td, t, flags, f);
			continue;
		}
		for (size_t j = i + 1; j < td->nthreads; j++)
			if (!done[j] && same_group(t, &td->threads[j])) {
				count++;
				cpu_ns += td->threads[j].cpu_ns;
			}
		if (count > 1)
			fprintf(f, "%zu threads ", count);
		/* The names (each once) and the tids of the group. */
		fprintf(f, "\"%s\"", t->name);
		for (size_t j = i + 1; j < td->nthreads; j++)
			if (!done[j] && same_group(t, &td->threads[j])) {
				size_t k;

				for (k = i; k < j; k++)
					if ((k == i || same_group(t, &td->threads[k])) &&
					    !strcmp(td->threads[k].name, td->threads[j].name))
						break;
				if (k == j)
					fprintf(f, ", \"%s\"", td->threads[j].name);
			}
		fprintf(f, " tid%s=%d", count > 1 ? "s" : "", (int)t->tid);
		for (size_t j = i + 1; j < td->nthreads; j++)
			if (!done[j] && same_group(t, &td->threads[j])) {
				fprintf(f, ",%d", (int)td->threads[j].tid);
				done[j] = true;
			}
		write_state(t, f);
		fprintf(f, " cpu=%s\n", units_format_ns(cpu_ns, cpu, sizeof(cpu)));
		write_frames(td, t, flags, f);
	}
	write_footer(td, f);
	free(done);
	return ferror(f) ? -EIO : 0;
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

static const char *status_name(enum thread_status s)
{
	switch (s) {
	case THREAD_TAKEN: return "taken";
	case THREAD_LIVE: return "live";
	case THREAD_GONE: return "gone";
	case THREAD_FAILED: return "failed";
	case THREAD_AGENT: return "agent";
	}
	return "unknown";
}

static const char *kind_name(enum frame_kind k)
{
	switch (k) {
	case FRAME_USER: return "user";
	case FRAME_LIBRARY: return "library";
	case FRAME_KERNEL: return "kernel";
	case FRAME_INLINED: return "inlined";
	case FRAME_JIT: return "jit";
	case FRAME_THREAD: return "thread";
	case FRAME_UNKNOWN: return "unknown";
	}
	return "unknown";
}

int thread_dump_write_json(const struct thread_dump *td, FILE *f)
{
	fprintf(f, "{\"pid\":%d,\"comm\":", (int)td->pid);
	json_str(f, td->comm);
	fputs(",\"exe\":", f);
	if (td->exe)
		json_str(f, td->exe);
	else
		fputs("null", f);
	fprintf(f, ",\"time_ns\":%lld,\"method\":\"%s\",\"total_ns\":%llu,"
		   "\"pause_max_ns\":%llu,\"pause_sum_ns\":%llu,",
		(long long)td->time_ns, td->method == THREAD_DUMP_AGENT ? "agent" : "ptrace",
		(unsigned long long)td->total_ns,
		(unsigned long long)td->pause_max_ns, (unsigned long long)td->pause_sum_ns);
	fprintf(f, "\"threads_gone\":%u,\"threads_failed\":%u,\"threads_missed_new\":%u,"
		   "\"process_exited\":%s,\"threads\":[",
		td->ngone, td->nfailed, td->missed_new, td->process_exited ? "true" : "false");
	for (size_t i = 0; i < td->nthreads; i++) {
		const struct thread_info *t = &td->threads[i];
		char st[2] = { t->state, 0 };

		fprintf(f, "%s\n{\"tid\":%d,\"name\":", i ? "," : "", (int)t->tid);
		json_str(f, t->name);
		fputs(",\"state\":", f);
		json_str(f, st);
		fputs(",\"state_name\":", f);
		json_str(f, thread_state_name(t->state));
		fprintf(f, ",\"status\":\"%s\",\"on_cpu\":%s,\"syscall\":", status_name(t->status),
			t->sc == THREAD_SC_ON_CPU ? "true" : "false");
		if (t->sc == THREAD_SC_IN) {
			fprintf(f, "{\"nr\":%ld,\"name\":", t->syscall_nr);
			json_str(f, thread_syscall_name(t->syscall_nr));
			if (t->restart_of) {
				fputs(",\"restart_of\":", f);
				json_str(f, t->restart_of);
			}
			fputs(",\"args\":[", f);
			for (int k = 0; k < 6; k++)
				fprintf(f, "%s\"0x%llx\"", k ? "," : "",
					(unsigned long long)t->syscall_args[k]);
			fputs("]}", f);
		} else {
			fputs("null", f);
		}
		fprintf(f, ",\"cpu_ns\":%llu,\"pause_ns\":%llu,\"stack_bytes\":%zu,",
			(unsigned long long)t->cpu_ns, (unsigned long long)t->pause_ns,
			t->stack_bytes);
		if (t->status == THREAD_FAILED) {
			fputs("\"error\":", f);
			json_str(f, failure_text(td, t));
			fputc(',', f);
		}
		fprintf(f, "\"truncated\":%s,", t->truncated ? "true" : "false");
		if (t->truncated) {
			fputs("\"walk_end\":", f);
			json_str(f, t->walk_end);
			fputc(',', f);
		}
		fputs("\"frames\":[", f);
		for (unsigned j = 0; j < t->nframes; j++) {
			const struct thread_frame *fr = &t->frames[j];

			fprintf(f, "%s{\"addr\":\"0x%llx\",\"function\":", j ? "," : "",
				(unsigned long long)fr->addr);
			json_str(f, fr->name);
			fputs(",\"module\":", f);
			if (fr->module)
				json_str(f, fr->module);
			else
				fputs("null", f);
			fprintf(f, ",\"offset\":\"0x%llx\",\"kind\":\"%s\"",
				(unsigned long long)fr->module_offset, kind_name(fr->kind));
			if (fr->file) {
				fputs(",\"file\":", f);
				json_str(f, fr->file);
				fprintf(f, ",\"line\":%u", fr->line);
			}
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("\n]}\n", f);
	return ferror(f) ? -EIO : 0;
}
