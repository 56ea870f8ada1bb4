/* target_files_test: another process's files, opened with no more rights
 * than its user's. As root, on a child that runs as user nobody: a file
 * only root may read is refused, a FIFO and a device are refused without
 * blocking or being opened, a copy into a directory only root may write
 * fails and leaves nothing, one into the user's own directory is the
 * user's file, a mapped file is found by its mapping after its path was
 * replaced, and a helper its user stopped is given up on at the timeout.
 * On our own child (not privileged): the same refusals, through
 * /proc/PID/root. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/target_files.h"
#include "test.h"

#define NOBODY 65534

static char dir[] = "/tmp/nprof-target-files-XXXXXX";

static void path_in(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror("write");
		fchmod(fd, mode);
		close(fd);
	}
}

static int read_back(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	return n > 0 ? 0 : -1;
}

/* A child that maps path (when not NULL), becomes uid (when not 0), says
 * so on a pipe, and sleeps; *ret_map its mapping. */
static pid_t start_child(uid_t uid, const char *path, uint64_t ret_map[2])
{
	int p[2];
	pid_t child;
	uint64_t map[2] = { 0, 0 };

	if (pipe(p) < 0)
		return -1;
	child = fork();
	if (child == 0) {
		if (path) {
			int fd = open(path, O_RDONLY);
			void *m = fd >= 0 ? mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;

			if (m != MAP_FAILED) {
				map[0] = (uint64_t)(uintptr_t)m;
				map[1] = map[0] + 4096;
			}
		}
		if (uid && (setgid(uid) < 0 || setuid(uid) < 0))
			_exit(1);
		if (write(p[1], map, sizeof(map)) < 0)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (child < 0 || read(p[0], map, sizeof(map)) != sizeof(map)) {
		close(p[0]);
		return -1;
	}
	close(p[0]);
	if (ret_map)
		memcpy(ret_map, map, sizeof(map));
	return child;
}

static void end_child(pid_t child)
{
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

/* SIGSTOP to every child of ours but one: the helper (its user may). */
static void stop_children_but(pid_t keep)
{
	char path[64];
	FILE *f;
	int pid;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	f = fopen(path, "r");
	if (!f)
		return;
	while (fscanf(f, "%d", &pid) == 1)
		if (pid != keep)
			kill(pid, SIGSTOP);
	fclose(f);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The refusals every mode shares. */
static void refusals(struct target_files *t, const char *mode)
{
	char fifo[256], sub[256];
	double t0 = now_s();
	int fd;

	path_in(fifo, sizeof(fifo), "fifo");
	path_in(sub, sizeof(sub), "sub");
	fd = target_files_open(t, fifo);
	CHECK_INT(fd, ==, -EINVAL, "%s: a FIFO is refused (-EINVAL)", mode);
	CHECK(now_s() - t0 < 2, "%s: ... without waiting for a writer", mode);
	if (fd >= 0)
		close(fd);
	fd = target_files_open(t, "/dev/null");
	CHECK_INT(fd, ==, -EINVAL, "%s: a device is refused (-EINVAL)", mode);
	if (fd >= 0)
		close(fd);
	fd = target_files_open(t, sub);
	CHECK_INT(fd, ==, -EINVAL, "%s: a directory is refused (-EINVAL)", mode);
	if (fd >= 0)
		close(fd);
	fd = target_files_open(t, "relative/path");
	CHECK_INT(fd, ==, -EINVAL, "%s: a relative path is refused", mode);
}

static void not_privileged(void)
{
	char path[256], buf[64];
	pid_t child = start_child(0, NULL, NULL);
	struct target_files *t = child > 0 ? target_files_new(child) : NULL;
	int fd;

	CHECK(t != NULL, "own child: target_files_new");
	if (!t) {
		if (child > 0)
			end_child(child);
		return;
	}
	CHECK(!target_files_privileged(t), "own child (root's): not privileged");
	path_in(path, sizeof(path), "readable");
	fd = target_files_open(t, path);
	CHECK(fd >= 0 && read_back(fd, buf, sizeof(buf)) == 0 && !strcmp(buf, "hello"),
	      "own child: a file through its root reads back");
	if (fd >= 0)
		close(fd);
	refusals(t, "own child");
	target_files_free(t);
	end_child(child);
}

static void privileged(void)
{
	char secret[256], readable[256], ro[256], mine[256], dest[300], buf[64];
	pid_t child = start_child(NOBODY, NULL, NULL);
	struct target_files *t = child > 0 ? target_files_new(child) : NULL;
	struct stat st;
	int fd, src, err;

	CHECK(t != NULL, "nobody's child: target_files_new");
	if (!t) {
		if (child > 0)
			end_child(child);
		return;
	}
	CHECK(target_files_privileged(t), "nobody's child, as root: privileged");
	CHECK_UINT(target_files_uid(t), ==, NOBODY, "its files are opened as uid 65534");
	path_in(secret, sizeof(secret), "secret");
	path_in(readable, sizeof(readable), "readable");
	fd = target_files_open(t, secret);
	CHECK_INT(fd, ==, -EACCES, "a file only root may read is refused to it");
	if (fd >= 0)
		close(fd);
	fd = target_files_open(t, readable);
	CHECK(fd >= 0 && read_back(fd, buf, sizeof(buf)) == 0 && !strcmp(buf, "hello"),
	      "a file it may read reads back");
	if (fd >= 0)
		close(fd);
	refusals(t, "nobody's child");

	/* Installing: not into a directory only root may write. */
	path_in(ro, sizeof(ro), "ro/copy.so");
	src = open(readable, O_RDONLY | O_CLOEXEC);
	err = target_files_install(t, src, ro);
	CHECK_INT(err, ==, -EACCES, "a copy into a directory only root may write fails");
	CHECK(stat(ro, &st) < 0, "... and leaves nothing there");
	path_in(mine, sizeof(mine), "mine");
	snprintf(dest, sizeof(dest), "%s/copy.so", mine);
	err = target_files_install(t, src, dest);
	CHECK_INT(err, ==, 0, "a copy into its user's own directory");
	CHECK(stat(dest, &st) == 0 && st.st_uid == NOBODY && (st.st_mode & 0777) == 0644,
	      "... is its user's file, mode 0644");
	fd = open(dest, O_RDONLY);
	CHECK(fd >= 0 && read_back(fd, buf, sizeof(buf)) == 0 && !strcmp(buf, "hello"),
	      "... with the bytes of the source");
	if (fd >= 0)
		close(fd);
	if (src >= 0)
		close(src);

	/* Its user stops the helper: the call gives up at the timeout. */
	{
		double t0;

		fd = target_files_open(t, readable); /* the helper runs */
		if (fd >= 0)
			close(fd);
		stop_children_but(child);
		t0 = now_s();
		fd = target_files_open(t, readable);
		CHECK_INT(fd, ==, -ETIMEDOUT, "a helper its user stopped: -ETIMEDOUT");
		CHECK(now_s() - t0 < TARGET_FILES_TIMEOUT_MS / 1000.0 + 3,
		      "... after the timeout, not for ever (%.1f s)", now_s() - t0);
		if (fd >= 0)
			close(fd);
	}
	target_files_free(t);
	end_child(child);
}

/* The mapped file, after its path was made to name another file. */
static void mapped(void)
{
	char lib[256], moved[256], buf[64];
	uint64_t map[2];
	struct stat st;
	pid_t child;
	struct target_files *t;
	int fd;

	path_in(lib, sizeof(lib), "lib.so");
	path_in(moved, sizeof(moved), "lib.so.old");
	write_file(lib, "mapped", 0644);
	stat(lib, &st);
	child = start_child(NOBODY, lib, map);
	t = child > 0 ? target_files_new(child) : NULL;
	CHECK(t && map[0], "nobody's child maps a file");
	if (!t || !map[0]) {
		target_files_free(t);
		if (child > 0)
			end_child(child);
		return;
	}
	rename(lib, moved);
	mkfifo(lib, 0644);
	fd = target_files_open_mapped(t, map[0], map[1], (uint64_t)st.st_ino, lib);
	CHECK(fd >= 0 && read_back(fd, buf, sizeof(buf)) == 0 && !strcmp(buf, "mapped"),
	      "its path is now a FIFO: the mapped file is read all the same");
	if (fd >= 0)
		close(fd);
	fd = target_files_open_mapped(t, map[0] + 8192, map[1] + 8192, (uint64_t)st.st_ino, lib);
	CHECK(fd < 0, "a range it does not map, whose path is a FIFO: refused (%d)", fd);
	if (fd >= 0)
		close(fd);
	target_files_free(t);
	end_child(child);
}

int main(void)
{
	char path[256];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	chmod(dir, 0755);
	path_in(path, sizeof(path), "readable");
	write_file(path, "hello", 0644);
	path_in(path, sizeof(path), "secret");
	write_file(path, "secret", 0600);
	path_in(path, sizeof(path), "fifo");
	mkfifo(path, 0666);
	path_in(path, sizeof(path), "sub");
	mkdir(path, 0755);
	path_in(path, sizeof(path), "ro");
	mkdir(path, 0755);
	path_in(path, sizeof(path), "mine");
	mkdir(path, 0755);
	if (chown(path, NOBODY, NOBODY) < 0 && geteuid() == 0)
		perror("chown");

	not_privileged();
	if (geteuid() == 0) {
		privileged();
		mapped();
	} else {
		printf("ok %d - as root: privileged cases # SKIP needs root\n", ++test_count);
	}
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			perror("rm");
	}
	return test_done();
}
