/* proc_maps: the one reader of a process's /proc/PID/maps and the one
 * parser of its lines (symbolize's table, the unwinder's modules, inject's
 * and the engine's scans, a core file's mappings all take their lines
 * from it). A line as Linux writes it gives every field, its path padded
 * and " (deleted)" kept; an anonymous one has no path; what is not a line
 * (a field missing, a number out of range, an empty range, smaps' detail
 * lines) is refused, and proc_maps_next passes over it. This process's
 * own maps read whole and hold the code of this function. A failed read
 * is one line naming the cause and the fix: a process gone, another
 * user's (as nobody, init's), one that is not dumpable (as nobody, a
 * child of its own that said so), any other error. */
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/proc.h"
#include "test.h"

static int parse(const char *text, struct proc_map_line *l)
{
	return proc_maps_line_parse(text, text + strlen(text), l);
}

/* What is not a line, and why. */
static const struct {
	const char *text, *why;
} refused[] = {
	{ "", "an empty line" },
	{ "Size:                  4 kB", "smaps' detail line" },
	{ "AnonHugePages:         0 kB", "one that starts with hex letters" },
	{ "1000-2000 r-xp 0 0:0", "no inode" },
	{ "1000-2000 r-xp 0 00 0", "a device without ':'" },
	{ "1000-2000 r-x", "perms cut short" },
	{ "2000-1000 r-xp 0 0:0 0", "an empty range" },
	{ "1-2 r-xp 0 0:0 18446744073709551616", "an inode past 64 bits" },
	{ "10000000000000000-20000000000000000 r-xp 0 0:0 0", "an address past 64 bits" },
	{ "1-2 r-xp 0 100000000:0 0", "a device past 32 bits" },
};

static int path_is(const struct proc_map_line *l, const char *path)
{
	return l->path_len == strlen(path) && !memcmp(l->path, path, l->path_len);
}

/* As nobody (when root: else not at all), in a child: reads the maps of
 * pid (0: of a child of its own that is not dumpable) and explains the
 * error into line ("ERR SENTENCE"). false when it could not be run. */
static bool explain_as_nobody(pid_t pid, char *line, size_t len)
{
	int fds[2];
	pid_t child;
	ssize_t n;

	if (geteuid() != 0 || pipe(fds) < 0)
		return false;
	child = fork();
	if (child == 0) {
		pid_t kept = 0;
		struct diag d;
		char *buf = NULL;
		size_t blen;
		int err;

		diag_clear(&d);
		if (setgid(65534) || setuid(65534))
			_exit(2);
		if (!pid) {
			int ready[2];

			if (pipe(ready) < 0 || (kept = fork()) < 0)
				_exit(2);
			if (kept == 0) {
				prctl(PR_SET_DUMPABLE, 0);
				close(ready[1]);
				pause();
				_exit(0);
			}
			close(ready[1]);
			(void)!read(ready[0], &blen, 1); /* its end closed: it is not dumpable */
			pid = kept;
		}
		err = proc_maps_read(pid, &buf, &blen);
		if (err == 0)
			free(buf);
		else
			err = proc_maps_explain(pid, err, &d);
		dprintf(fds[1], "%d %s\n", err, d.msg);
		if (kept > 0) {
			kill(kept, SIGKILL);
			waitpid(kept, NULL, 0);
		}
		_exit(0);
	}
	close(fds[1]);
	n = child < 0 ? -1 : read(fds[0], line, len - 1);
	close(fds[0]);
	line[n > 0 ? n : 0] = '\0';
	line[strcspn(line, "\n")] = '\0';
	if (child > 0)
		waitpid(child, NULL, 0);
	return n > 0;
}

int main(void)
{
	static const char text[] =
		"55d0c0a00000-55d0c0a21000 r-xp 00002000 fd:01 1048602                    /usr/bin/x y\n"
		"7f0000000000-7f0000001000 rw-s 00000000 00:05 77 /memfd:jit (deleted)\n"
		"not a line\n"
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
		"7ffd00100000-7ffd00102000 ---p 00000000 00:00 0";
	struct proc_map_line l;
	const char *p = text;
	char *buf = NULL;
	size_t len = 0;
	uint64_t here = (uint64_t)(uintptr_t)&main;
	struct diag d;
	char line[1024];
	int n = 0, found = 0;

	CHECK(parse("55d0c0a00000-55d0c0a21000 r-xp 00002000 fd:01 1048602    /usr/bin/x y", &l) == 0,
	      "a file's line parses");
	CHECK(l.start == 0x55d0c0a00000 && l.end == 0x55d0c0a21000 && l.offset == 0x2000 &&
	      l.maj == 0xfd && l.min == 1 && l.inode == 1048602 && !memcmp(l.perms, "r-xp", 4),
	      "range, offset, device, inode and perms");
	CHECK(path_is(&l, "/usr/bin/x y"), "the path past its padding, spaces in it kept");
	CHECK(parse("1000-2000 rw-s 0 0:5 77 /memfd:jit (deleted)", &l) == 0 &&
	      l.perms[3] == 's' && path_is(&l, "/memfd:jit (deleted)"),
	      "a shared mapping, \" (deleted)\" left to the caller");
	CHECK(parse("1000-2000 rw-p 00000000 00:00 0", &l) == 0 && l.path_len == 0,
	      "anonymous memory: no path");
	CHECK(parse("1000-2000 rw-p 00000000 00:00 0   ", &l) == 0 && l.path_len == 0,
	      "padding alone is no path");

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		CHECK(parse(refused[i].text, &l) == -EINVAL, "refused: %s", refused[i].why);

	while (proc_maps_next(&p, text + sizeof(text) - 1, &l)) {
		n++;
		if (n == 3)
			CHECK(path_is(&l, "[stack]") && l.start == 0x7ffd00000000,
			      "the line after one that is not follows it");
	}
	CHECK(n == 4 && p == text + sizeof(text) - 1,
	      "proc_maps_next: 4 lines of 5, the last without a newline (%d)", n);

	CHECK(proc_maps_read(0, &buf, &len) == 0 && len == strlen(buf) && len > 0,
	      "this process's maps read whole (%zu bytes)", len);
	for (p = buf; buf && proc_maps_next(&p, buf + len, &l);)
		found |= l.perms[2] == 'x' && here >= l.start && here < l.end;
	CHECK(found, "and map this function's code, executable");
	free(buf);
	buf = NULL;
	CHECK(proc_maps_read((pid_t)getpid(), &buf, &len) == 0, "by its pid too");
	free(buf);
	CHECK(proc_maps_read(1073741808, &buf, &len) == -ESRCH, "a pid that is none: -ESRCH");

	diag_clear(&d);
	CHECK(proc_maps_explain(1073741808, -ESRCH, &d) == -ESRCH, "gone: -ESRCH");
	CHECK_STR(d.msg, "no process with PID 1073741808", "gone: the sentence");
	diag_clear(&d);
	CHECK(proc_maps_explain(1, -EIO, &d) == -EIO, "another error: itself");
	CHECK_STR(d.msg, "cannot read the memory map of PID 1: Input/output error",
		  "another error: named");
	if (explain_as_nobody(1, line, sizeof(line))) {
		CHECK(atoi(line) == -EACCES, "another user's process: -EACCES (%s)", line);
		CHECK(strstr(line, "reading the memory map of PID 1: not permitted, it is another "
				   "user's process (it belongs to uid 0 and nprof runs as uid 65534); "
				   "run nprof as that user or as root"),
		      "another user's process: the cause and the fix");
	} else {
		printf("ok %d - another user's process # SKIP needs root to become nobody\n",
		       ++test_count);
	}
	if (explain_as_nobody(0, line, sizeof(line))) {
		CHECK(atoi(line) == -EACCES && strstr(line, "the process is not dumpable") &&
			      strstr(line, "run nprof as root"),
		      "a process that is not dumpable: the cause and the fix (%s)", line);
	} else {
		printf("ok %d - a process that is not dumpable # SKIP needs root to become nobody\n",
		       ++test_count);
	}
	return test_done();
}
