/* debugfile_test: real programs, built here, symbolized from outside:
 * PIE and non-PIE executables, stripped with their symbols in a separate
 * file found through .gnu_debuglink (next to the binary and in .debug/),
 * a debug file whose CRC does not match (rejected), a deleted executable,
 * one run from a memfd, and a C++ program's demangled names. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolize/debugfile.h"
#include "symbolize/symbolize.h"
#include "test.h"

static char dir[] = "/tmp/nprof-debugfile-XXXXXX";

static const char c_prog[] =
	"#include <stdio.h>\n"
	"#include <unistd.h>\n"
	"__attribute__((noinline)) static int hidden_worker(int x)\n"
	"{ __asm__ volatile(\"\" ::: \"memory\"); return x * 2; }\n"
	"int (*volatile p)(int) = hidden_worker;\n"
	"int main(void) { char c; printf(\"%p\\n\", (void *)p); fflush(stdout);\n"
	"  if (read(0, &c, 1) < 0) return 1; return p(1) == 0; }\n";

static const char cxx_prog[] =
	"#include <cstdio>\n"
	"#include <unistd.h>\n"
	"namespace ns {\n"
	"template <typename T> struct Worker {\n"
	"  __attribute__((noinline)) T run(T x) {\n"
	"    here: std::printf(\"%p\\n\", &&here); std::fflush(stdout); return x + 1; }\n"
	"};\n"
	"}\n"
	"int main() {\n"
	"  auto lam = [](int v) { here: std::printf(\"%p\\n\", &&here);\n"
	"    std::fflush(stdout); return v * 3; };\n"
	"  ns::Worker<int> w; w.run(1); lam(2); char c;\n"
	"  return read(0, &c, 1) < 0;\n"
	"}\n";

/* Runs a shell command in the scratch directory. */
static int sh(const char *command)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "cd %s && %s", dir, command);
	return system(cmd);
}

static void write_file(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

struct child {
	pid_t pid;
	int in, out;
	uint64_t addrs[2];
};

/* Starts argv0 (or fd, with fexecve, when fd >= 0) and reads naddrs hex
 * addresses it prints; it then waits for us. */
static int spawn(const char *path, int fd, int naddrs, struct child *c)
{
	int to[2], from[2];
	FILE *f;
	char line[128];

	if (pipe(to) || pipe(from))
		return -1;
	c->pid = fork();
	if (c->pid == 0) {
		char *argv[] = { (char *)"prog", NULL };
		extern char **environ;

		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		if (fd >= 0)
			fexecve(fd, argv, environ);
		else
			execv(path, argv);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = to[1];
	f = fdopen(from[0], "r");
	for (int i = 0; i < naddrs; i++) {
		if (!fgets(line, sizeof(line), f)) {
			fclose(f);
			return -1;
		}
		c->addrs[i] = strtoull(line, NULL, 16);
	}
	fclose(f);
	return 0;
}

static void finish(struct child *c)
{
	if (write(c->in, "x", 1) < 0)
		kill(c->pid, SIGKILL);
	close(c->in);
	waitpid(c->pid, NULL, 0);
}

/* Names the address the program at path prints. */
static void check_prog(struct symbolizer *s, const char *path, int fd,
		       const char *want, enum frame_kind kind, const char *what)
{
	struct child c;
	struct proc_syms *ps = NULL;
	struct symbol_info si;
	struct diag d;

	diag_clear(&d);
	if (spawn(path, fd, 1, &c) < 0) {
		CHECK(0, "%s: program ran", what);
		return;
	}
	if (symbolizer_open_process(s, c.pid, false, &ps, &d) == 0 &&
	    proc_syms_lookup(ps, c.addrs[0], false, 0, &si) == 0) {
		if (want[0] == '~') /* a prefix */
			CHECK(!strncmp(si.name, want + 1, strlen(want + 1)),
			      "%s: %s", what, si.name);
		else
			CHECK_STR(si.name, want, "%s", what);
		CHECK(si.kind == kind, "%s: kind %d", what, si.kind);
	} else {
		CHECK(0, "%s: open (%s)", what, d.msg);
	}
	proc_syms_free(ps);
	finish(&c);
}

int main(void)
{
	int rc;
	struct symbolizer *s = symbolizer_new();
	struct symbolizer_stats st0, st;
	char path[512];
	int fd;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return test_done();
	}
	write_file("p.c", c_prog);
	write_file("p.cc", cxx_prog);

	/* PIE, stripped, debug file next to it. */
	rc = sh("cc -O2 -g -o pie p.c && objcopy --only-keep-debug pie pie.debug && "
		 "strip --strip-all pie && objcopy --add-gnu-debuglink=pie.debug pie");
	CHECK(rc == 0, "build stripped PIE");
	snprintf(path, sizeof(path), "%s/pie", dir);
	/* libc and ld.so bring their own debug files (libc6-dbg); count
	 * only the program's. */
	{
		struct proc_syms *self = NULL;

		rc = symbolizer_open_process(s, getpid(), false, &self, NULL);
		CHECK(rc == 0,
		      "open self");
		proc_syms_free(self);
	}
	symbolizer_get_stats(s, &st0);
	check_prog(s, path, -1, "hidden_worker", FRAME_USER,
		   "stripped PIE through .gnu_debuglink");
	symbolizer_get_stats(s, &st);
	CHECK(st.debug_files == st0.debug_files + 1, "one more debug file used (%" PRIu64
	      " then %" PRIu64 ")", st0.debug_files, st.debug_files);

	/* Non-PIE, debug file in .debug/. */
	rc = sh("cc -O2 -g -no-pie -fno-pie -o nopie p.c && mkdir -p .debug && "
		 "objcopy --only-keep-debug nopie .debug/nopie.dbg && strip --strip-all nopie && "
		 "objcopy --add-gnu-debuglink=.debug/nopie.dbg nopie");
	CHECK(rc == 0,
	      "build stripped non-PIE");
	snprintf(path, sizeof(path), "%s/nopie", dir);
	check_prog(s, path, -1, "hidden_worker", FRAME_USER,
		   "stripped non-PIE through .debug/ debuglink");

	/* A debug file that is not the one linked (CRC differs): not used;
	 * the frame still gets a module+offset name. */
	rc = sh("cc -O2 -g -o badcrc p.c -Wl,--build-id=none && "
		 "objcopy --only-keep-debug badcrc badcrc.debug && strip --strip-all badcrc && "
		 "objcopy --add-gnu-debuglink=badcrc.debug badcrc && echo >> badcrc.debug");
	CHECK(rc == 0, "build binary with a mismatching debug file");
	snprintf(path, sizeof(path), "%s/badcrc", dir);
	check_prog(s, path, -1, "~badcrc+0x", FRAME_UNKNOWN,
		   "debug file with a wrong CRC is rejected");

	/* Not stripped, then deleted while running: read via map_files. */
	rc = sh("cc -O2 -g -o deleted p.c && cp deleted memfd.bin");
	CHECK(rc == 0,
	      "build plain binary");
	{
		struct child c;
		struct proc_syms *ps = NULL;
		struct symbol_info si = { 0 };

		snprintf(path, sizeof(path), "%s/deleted", dir);
		if (spawn(path, -1, 1, &c) == 0) {
			unlink(path);
			if (symbolizer_open_process(s, c.pid, false, &ps, NULL) == 0)
				proc_syms_lookup(ps, c.addrs[0], false, 0, &si);
			CHECK_STR(si.name, "hidden_worker", "deleted executable");
			CHECK(si.kind == FRAME_USER, "deleted executable is FRAME_USER");
			CHECK_STR(si.module, path, "module path without (deleted)");
			proc_syms_free(ps);
			finish(&c);
		}
	}

	/* Run from a memfd: no path at all. */
	fd = memfd_create("jitprog", MFD_CLOEXEC);
	{
		char buf[65536];
		FILE *f;
		size_t n;

		snprintf(path, sizeof(path), "%s/memfd.bin", dir);
		f = fopen(path, "r");
		while (f && (n = fread(buf, 1, sizeof(buf), f)) > 0)
			if (write(fd, buf, n) != (ssize_t)n)
				break;
		if (f)
			fclose(f);
	}
	/* fexecve of a close-on-exec memfd needs /proc/self/fd; the exec'd
	 * image stays mapped from the memfd. */
	fcntl(fd, F_SETFD, 0);
	check_prog(s, NULL, fd, "hidden_worker", FRAME_USER, "executable in a memfd");
	close(fd);

	/* Opened before its exec, as the engine opens a held child: the new
	 * image arrives as mappings, and its executable is FRAME_USER. */
	{
		int go[2], out[2];
		pid_t pid = -1;
		struct proc_syms *ps = NULL;
		struct symbol_info si = { 0 };
		char line[4096];
		uint64_t addr = 0;
		FILE *f;

		snprintf(path, sizeof(path), "%s/pie", dir);
		if (pipe(go) == 0 && pipe(out) == 0 && (pid = fork()) == 0) {
			char c, *argv[] = { (char *)"pie", NULL };

			dup2(out[1], 1);
			dup2(go[0], 0); /* the program waits on stdin: held open by us */
			close(go[1]);
			if (read(go[0], &c, 1) == 1)
				execv(path, argv);
			_exit(127);
		}
		close(out[1]);
		rc = symbolizer_open_process(s, pid, false, &ps, NULL);
		CHECK(rc == 0, "open a child before its exec");
		if (write(go[1], "x", 1) != 1)
			kill(pid, SIGKILL);
		f = fdopen(out[0], "r");
		if (f && fgets(line, sizeof(line), f))
			addr = strtoull(line, NULL, 16);
		snprintf(line, sizeof(line), "/proc/%d/maps", (int)pid);
		{
			FILE *maps = fopen(line, "r");

			while (ps && maps && fgets(line, sizeof(line), maps)) {
				unsigned long ms, en, off, ino;
				unsigned maj, min;
				char perms[8];
				int n = 0;
				struct mapping m = { 0 };

				if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &ms, &en,
					   perms, &off, &maj, &min, &ino, &n) < 7)
					continue;
				line[strcspn(line, "\n")] = '\0';
				m.start = ms;
				m.end = en;
				m.pgoff = off;
				m.maj = maj;
				m.min = min;
				m.inode = ino;
				m.prot = (perms[0] == 'r' ? PROT_READ : 0) |
					 (perms[2] == 'x' ? PROT_EXEC : 0);
				m.path = line + n;
				proc_syms_add_mapping(ps, &m);
			}
			if (maps)
				fclose(maps);
		}
		if (ps && addr)
			proc_syms_lookup(ps, addr, false, 0, &si);
		CHECK_STR(si.name, "hidden_worker", "exec'd image named from its mappings");
		CHECK(si.kind == FRAME_USER, "exec'd executable is FRAME_USER (%d)", si.kind);
		CHECK(si.build_id && strlen(si.build_id) == 40, "build-id reported (%s)",
		      si.build_id ? si.build_id : "-");
		proc_syms_free(ps);
		close(go[1]);
		if (f)
			fclose(f);
		waitpid(pid, NULL, 0);
	}

	/* C++: demangled names, full and simple, through a debuglink. */
	rc = sh("c++ -O0 -g -o cxx p.cc && objcopy --only-keep-debug cxx cxx.debug && "
	       "strip --strip-all cxx && objcopy --add-gnu-debuglink=cxx.debug cxx");
	if (rc == 0) {
		struct child c;
		struct proc_syms *ps = NULL;
		struct symbol_info si = { 0 };

		snprintf(path, sizeof(path), "%s/cxx", dir);
		if (spawn(path, -1, 2, &c) == 0 &&
		    symbolizer_open_process(s, c.pid, false, &ps, NULL) == 0) {
			proc_syms_lookup(ps, c.addrs[0], false, 0, &si);
			CHECK_STR(si.name, "ns::Worker<int>::run(int)", "C++ method");
			proc_syms_lookup(ps, c.addrs[0], false, SYM_SIMPLE, &si);
			CHECK_STR(si.name, "run", "C++ method, simple");
			proc_syms_lookup(ps, c.addrs[1], false, 0, &si);
			CHECK_STR(si.name, "main::{lambda(int)#1}::operator()(int) const",
				  "C++ lambda");
			proc_syms_lookup(ps, c.addrs[1], false, SYM_SIMPLE, &si);
			CHECK_STR(si.name, "main::{lambda(int)#1}::operator()",
				  "C++ lambda, simple");
			proc_syms_free(ps);
			finish(&c);
		} else {
			CHECK(0, "C++ program ran");
		}
	} else {
		printf("# no C++ compiler; skipping\n");
	}

	/* debugfile_crc32 agrees with zlib's crc32 of a known string. */
	write_file("crc.txt", "123456789");
	snprintf(path, sizeof(path), "%s/crc.txt", dir);
	fd = open(path, O_RDONLY);
	{
		uint32_t crc = 0;

		rc = debugfile_crc32(fd, &crc);
		CHECK(rc == 0 && crc == 0xcbf43926,
		      "CRC32 check value (%08x)", crc);
	}
	close(fd);

	sh("rm -rf \"$PWD\"");
	symbolizer_free(s);
	return test_done();
}
