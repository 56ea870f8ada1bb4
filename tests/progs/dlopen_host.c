/* dlopen_host: sleeps, then dlopens libhot.so and burns CPU in it.
 *
 *   dlopen_host [--delay S] [--seconds N] [--lib PATH]
 *
 * Prints "ready" on stdout at start (before the library is loaded) and
 * "loaded" once it is. Recording by PID with a delay of a second or so
 * therefore sees the library mapped during the recording. The library is
 * found next to this executable unless --lib says otherwise. The hot chain
 * is main -> call_library -> hot_in_library -> hot_mix. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE static void call_library(uint64_t (*hot)(uint64_t), double end)
{
	uint64_t n = work_chunk(2000000);

	while (now() < end)
		sink += hot(n);
}

int main(int argc, char **argv)
{
	double delay = 1, seconds = 5;
	char lib[PATH_MAX] = "";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--delay") && i + 1 < argc)
			delay = atof(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--lib") && i + 1 < argc)
			snprintf(lib, sizeof lib, "%s", argv[++i]);
		else {
			fprintf(stderr, "usage: dlopen_host [--delay S] [--seconds N] [--lib PATH]\n");
			return 2;
		}
	}
	if (!lib[0]) {
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (n < 0) {
			perror("readlink /proc/self/exe");
			return 1;
		}
		exe[n] = '\0';
		snprintf(lib, sizeof lib, "%s/libhot.so", dirname(exe));
	}

	double start = now();
	printf("ready\n");
	fflush(stdout);
	usleep((useconds_t)(delay * 1e6));

	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen_host: %s\n", dlerror());
		return 1;
	}
	uint64_t (*hot)(uint64_t) = (uint64_t (*)(uint64_t))dlsym(h, "hot_in_library");
	if (!hot) {
		fprintf(stderr, "dlopen_host: %s\n", dlerror());
		return 1;
	}
	printf("loaded\n");
	fflush(stdout);
	call_library(hot, start + seconds);
	return 0;
}
