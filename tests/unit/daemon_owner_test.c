/* owner: who can change a path (the file and every directory above it,
 * a sticky directory's entry, links resolved), which file a process
 * runs (by device and inode, not by the path it shows), what a pid file
 * holds (and what it must not be). The cases with other owners need
 * root (chown); run by a user, they are skipped. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/auth/owner.h"
#include "test.h"

static char dir[] = "/tmp/nprof-owner-test.XXXXXX";

static void put(const char *name, const char *text, mode_t mode)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	chmod(path, mode);
}

static int held(const char *name, uid_t uid, char *why, size_t len)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	why[0] = '\0';
	return owner_path_held(path, uid, NULL, &st, why, len);
}

static int pid_of(const char *name, pid_t *pid)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return owner_pid_file(path, pid);
}

static void test_path_held(void)
{
	char why[512], path[256], real[4096];
	struct stat st;
	int r;

	put("f", "x", 0644);
	CHECK_INT(held("f", 3999123, why, sizeof(why)), ==, 0,
		  "a file of ours in a directory of ours, under /tmp, is held by root and anyone");
	put("w", "x", 0664);
	r = held("w", 0, why, sizeof(why));
	CHECK(r == -EPERM && strstr(why, "/w is writable by its group"), "a file its group may "
	      "write is not: %s", why);
	snprintf(path, sizeof(path), "%s/l", dir);
	symlink("f", path);
	CHECK(owner_path_held(path, 0, real, &st, why, sizeof(why)) == 0 && strstr(real, "/f") &&
	      S_ISREG(st.st_mode), "a link is followed, the file it names checked: %s", real);
	snprintf(path, sizeof(path), "%s/none", dir);
	CHECK_INT(owner_path_held(path, 0, NULL, NULL, why, sizeof(why)), ==, -ENOENT,
		  "a missing file: -ENOENT");
	CHECK_INT(owner_path_held(dir, 0, NULL, NULL, why, sizeof(why)), ==, -EPERM,
		  "a directory is not a program or pid file: %s", why);
	if (getuid() != 0) {
		printf("ok - # SKIP the cases with other owners need root\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/f", dir);
	chown(path, 3999123, 3999123);
	CHECK_INT(held("f", 3999123, why, sizeof(why)), ==, 0, "uid 3999123's file: held for uid 3999123");
	r = held("f", 3999321, why, sizeof(why));
	CHECK(r == -EPERM && strstr(why, "/f is uid 3999123's"),
	      "but not for uid 3999321, naming the owner: %s", why);
	chmod(dir, 0777);
	r = held("f", 3999123, why, sizeof(why));
	CHECK(r == -EPERM && strstr(why, "can be replaced by other users") &&
	      strstr(why, "writable by all"), "in a directory all may write, not even for its "
	      "owner: %s", why);
	chmod(dir, 01777);
	CHECK(held("f", 3999123, why, sizeof(why)) == -EPERM && strstr(why, "anyone could have made it"),
	      "in a sticky one (/tmp), a user's entry could be anyone's: %s", why);
	chown(path, 0, 0);
	CHECK_INT(held("f", 3999123, why, sizeof(why)), ==, 0, "a root entry of a sticky directory is "
		  "held (as /tmp's entries are)");
	chmod(dir, 0755);
	snprintf(path, sizeof(path), "%s/d", dir);
	mkdir(path, 0755);
	put("d/g", "x", 0644);
	chown(path, 3999123, 3999123);
	CHECK_INT(held("d/g", 3999123, why, sizeof(why)), ==, 0,
		  "root's file in uid 3999123's directory: held for 3999123");
	r = held("d/g", 3999321, why, sizeof(why));
	CHECK(r == -EPERM && strstr(why, path), "but not for 3999321, naming the directory: %s", why);
	chown(dir, 3999123, 3999123);
	CHECK(held("d/g", 3999123, why, sizeof(why)) == -EPERM && strstr(why, "anyone could have made it"),
	      "a user's directory right in /tmp is not held even for them (whoever came first "
	      "could have made it): %s", why);
	chown(dir, 0, 0);
}

static void test_pid_file(void)
{
	char path[256];
	pid_t pid = 0;

	put("p1", "4242\n", 0644);
	CHECK(pid_of("p1", &pid) == 0 && pid == 4242, "4242 and a newline: %d", (int)pid);
	put("p2", "77", 0644);
	CHECK(pid_of("p2", &pid) == 0 && pid == 77, "77 alone");
	put("p3", "12a\n", 0644);
	CHECK_INT(pid_of("p3", &pid), ==, -EBADMSG, "12a: not a pid");
	put("p4", "", 0644);
	CHECK_INT(pid_of("p4", &pid), ==, -EBADMSG, "empty: not a pid");
	put("p5", "0\n", 0644);
	CHECK_INT(pid_of("p5", &pid), ==, -EBADMSG, "0: not a pid");
	put("p6", "99999999999\n", 0644);
	CHECK_INT(pid_of("p6", &pid), ==, -EBADMSG, "past INT_MAX: not a pid");
	put("p7", "12\n13\n", 0644);
	CHECK_INT(pid_of("p7", &pid), ==, -EBADMSG, "two lines: not a pid");
	put("p8", "000000000000000000000000000000000000000001\n", 0644);
	CHECK_INT(pid_of("p8", &pid), ==, -EBADMSG, "longer than a pid file is");
	snprintf(path, sizeof(path), "%s/pl", dir);
	symlink("p1", path);
	CHECK_INT(pid_of("pl", &pid), ==, -ELOOP, "a link as the last component: not followed");
	snprintf(path, sizeof(path), "%s/pf", dir);
	mkfifo(path, 0644);
	CHECK_INT(pid_of("pf", &pid), ==, -EINVAL, "a FIFO is not read (nor waited on)");
	CHECK_INT(owner_pid_file(dir, &pid), ==, -EINVAL, "nor a directory");
}

static void test_runs_file(void)
{
	struct stat self, sh;

	CHECK(stat("/proc/self/exe", &self) == 0 &&
	      owner_runs_file("/proc", getpid(), &self) == 1, "this process runs its own file");
	CHECK(stat("/bin/sh", &sh) == 0 && owner_runs_file("/proc", getpid(), &sh) == 0,
	      "and not /bin/sh");
	CHECK_INT(owner_runs_file("/proc", 0x7ffffff0, &self), ==, -ESRCH, "a pid that does not run");
}

int main(void)
{
	char cmd[128];
	int r;

	if (!mkdtemp(dir))
		return 1;
	chmod(dir, 0755);
	test_path_held();
	test_pid_file();
	test_runs_file();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	r = system(cmd);
	return r == 0 ? test_done() : 1;
}
