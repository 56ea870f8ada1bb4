/* proc_maps: the one reader of a process's /proc/PID/maps and the one
 * parser of its lines (symbolize's table, the unwinder's modules, inject's
 * and the engine's scans, a core file's mappings all take their lines
 * from it). A line as Linux writes it gives every field, its path padded
 * and " (deleted)" kept; an anonymous one has no path; what is not a line
 * (a field missing, a number out of range, an empty range, smaps' detail
 * lines) is refused, and proc_maps_next passes over it. This process's
 * own maps read whole and hold the code of this function. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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
	return test_done();
}
