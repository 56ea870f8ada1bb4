/* syscalls: spends its time in the kernel, writing to /dev/null in a loop
 * from write_loop (x86-64), so a recording that may include kernel frames shows the
 * write path (entry_SYSCALL_64, do_syscall_64, ksys_write, ...) below it.
 *
 *   syscalls [--seconds N | --user-cpu-seconds N]
 *
 * --user-cpu-seconds N: until it has spent N s of CPU in user mode, what
 * a recording that leaves the kernel out samples, however busy the host.
 *
 * "ready" is printed on stdout once it loops. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "progs.h"

static char buf[64 * 1024];

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The syscall instruction is issued right here rather than through libc's
 * write(), whose wrapper has no frame pointer: this way the user part of
 * every sample is main -> write_loop, with the kernel frames on top. */
static long raw_write(int fd, const void *p, unsigned long n)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_write), "D"((long)fd), "S"(p), "d"(n)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The CPU time this process has spent in user mode, in seconds. */
static double user_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
}

/* Writes until the wall clock reaches until, or (until_user > 0) the user
 * CPU time until_user. */
NOINLINE static void write_loop(int fd, double until, double until_user)
{
	uint64_t n = work_chunk(1000);

	KEEP_FRAME();
	while (until_user > 0 ? user_cpu() < until_user : now() < until)
		for (uint64_t i = 0; i < n; i++)
			if (raw_write(fd, buf, sizeof buf) < 0)
				return;
}

int main(int argc, char **argv)
{
	double seconds = 5, user_seconds = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--user-cpu-seconds") && i + 1 < argc)
			user_seconds = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: syscalls [--seconds N | --user-cpu-seconds N]\n");
			return 2;
		}
	}
	int fd = open("/dev/null", O_WRONLY);
	if (fd < 0) {
		perror("/dev/null");
		return 1;
	}
	memset(buf, 'x', sizeof buf);
	printf("ready\n");
	fflush(stdout);
	write_loop(fd, now() + seconds, user_seconds > 0 ? user_cpu() + user_seconds : 0);
	return 0;
}
