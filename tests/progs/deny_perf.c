/* deny_perf: runs a command in which perf_event_open(2) fails with EACCES,
 * the way it does on a host with kernel.perf_event_paranoid=3 (Debian's
 * and Android's meaning: no perf events for unprivileged users). Upstream
 * kernels ignore values above 2, so the tests simulate such a host: this
 * seccomp filter for the syscall, plus a bind-mounted
 * /proc/sys/kernel/perf_event_paranoid that reads 3.
 *
 *   deny_perf [--eperm] COMMAND [ARGS...]
 *
 * --eperm: EPERM instead, as a container runtime's default seccomp
 * profile answers (Docker's, for one). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

int main(int argc, char **argv)
{
	int err = EACCES;

	if (argc > 1 && !strcmp(argv[1], "--eperm")) {
		err = EPERM;
		argv++;
		argc--;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: deny_perf [--eperm] COMMAND [ARGS...]\n");
		return 2;
	}
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof filter / sizeof filter[0],
		.filter = filter,
	};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("deny_perf: seccomp");
		return 1;
	}
	execvp(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
