/* deny_ptrace: runs a command under a seccomp filter that makes ptrace(2)
 * fail with EPERM, as a container runtime's or systemd's policy may, so
 * the tests can check that nprof names that cause.
 *
 *   deny_ptrace COMMAND [ARGS...] */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: deny_ptrace COMMAND [ARGS...]\n");
		return 2;
	}
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ptrace, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof filter / sizeof filter[0],
		.filter = filter,
	};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("deny_ptrace: seccomp");
		return 1;
	}
	execvp(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
