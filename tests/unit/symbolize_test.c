/* symbolize_test: the symbolizer names addresses of this very process --
 * its own functions, libc's (internal ones through libc6-dbg's debug
 * file), the vDSO, anonymous memory, a perf map, a dlopen'ed library --
 * and a second open of the same process is served from the cache. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolize/symbolize.h"
#include "test.h"

__attribute__((noinline)) int symbolize_test_target(int x);
__attribute__((noinline)) int symbolize_test_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

__attribute__((noinline)) static int static_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 7 + 2;
}

/* A C function under a C++ mangled name: its symbol is what a C++
 * compiler would emit for ns::Klass<int>::method(int) const. */
__attribute__((noinline)) int mangled_target(int x) __asm__("_ZNK2ns5KlassIiE6methodEi");
__attribute__((noinline)) int mangled_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 5;
}

static int (*volatile keep[])(int) = { symbolize_test_target, static_target,
				       mangled_target };

static struct symbol_info look(struct proc_syms *ps, const void *addr,
			       unsigned flags)
{
	struct symbol_info si;

	memset(&si, 0, sizeof(si));
	if (proc_syms_lookup(ps, (uint64_t)(uintptr_t)addr, false, flags, &si) < 0)
		printf("# lookup of %p failed\n", addr);
	return si;
}

/* The runtime address of sym in the ELF file at path whose load base is
 * base, read with plain libelf (independently of the code under test). */
static void *sym_addr(const char *path, const char *sym, uintptr_t base)
{
	int fd = open(path, O_RDONLY);
	Elf *e;
	Elf_Scn *scn = NULL;
	void *ret = NULL;

	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && (scn = elf_nextscn(e, scn)) && !ret) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s))
				break;
			n = elf_strptr(e, sh.sh_link, s.st_name);
			if (n && !strcmp(n, sym) && s.st_value) {
				ret = (void *)(base + s.st_value);
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}

static void *vdso_sym(const char *name)
{
	const unsigned char *base = (const void *)getauxval(AT_SYSINFO_EHDR);
	size_t len = 16384;
	char *copy;
	Elf *e;
	Elf_Scn *scn = NULL;
	void *ret = NULL;

	if (!base)
		return NULL;
	copy = malloc(len);
	memcpy(copy, base, 8192); /* the vDSO is at least two pages */
	memset(copy + 8192, 0, len - 8192);
	elf_version(EV_CURRENT);
	e = elf_memory(copy, 8192);
	while (e && (scn = elf_nextscn(e, scn)) && !ret) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s))
				break;
			n = elf_strptr(e, sh.sh_link, s.st_name);
			if (n && !strcmp(n, name))
				ret = (void *)(base + s.st_value);
		}
	}
	if (e)
		elf_end(e);
	free(copy);
	return ret;
}

/* The /proc/self/maps line of the mapping holding addr, as a mapping. */
static int self_mapping(const void *addr, struct mapping *m, char *path,
			size_t plen)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long s, e, off, ino;
		unsigned maj, min;
		char perms[8];
		int n = 0;

		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &s, &e, perms, &off,
			   &maj, &min, &ino, &n) < 7)
			continue;
		if ((uintptr_t)addr < s || (uintptr_t)addr >= e)
			continue;
		m->start = s;
		m->end = e;
		m->pgoff = off;
		m->maj = maj;
		m->min = min;
		m->inode = ino;
		m->prot = (perms[0] == 'r' ? PROT_READ : 0) |
			  (perms[1] == 'w' ? PROT_WRITE : 0) |
			  (perms[2] == 'x' ? PROT_EXEC : 0);
		snprintf(path, plen, "%s", line + n);
		path[strcspn(path, "\n")] = '\0';
		m->path = path;
		found = 1;
		break;
	}
	if (f)
		fclose(f);
	return found;
}

static void *kernel_symbol(const char *name)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], n[256], t;
	unsigned long a;
	void *ret = NULL;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx %c %255s", &a, &t, n) == 3 && !strcmp(n, name) &&
		    !strchr(line, '[')) {
			ret = (void *)a;
			break;
		}
	if (f)
		fclose(f);
	return ret;
}

int main(void)
{
	int rc;
	struct symbolizer *s = symbolizer_new();
	struct symbolizer_stats st1, st2;
	struct proc_syms *ps = NULL, *ps2 = NULL;
	struct symbol_info si;
	struct diag d;
	char exe[4096], path[4096], pm_path[64], line[256];
	ssize_t n;
	Dl_info dli;
	int err;
	void *anon, *jit, *fn;
	const char *saved_name;
	void *libc_qsort;

	CHECK(s != NULL, "symbolizer_new");
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';

	/* Anonymous memory and a perf map naming part of it, set up before
	 * the process is opened, as a JIT would have. */
	anon = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	jit = (char *)anon + 0x8000;
	snprintf(pm_path, sizeof(pm_path), "/tmp/perf-%d.map", (int)getpid());
	{
		FILE *f = fopen(pm_path, "w");

		fprintf(f, "%" PRIxPTR " 100 LazyCompile:*jitted_one /app/x.js:1\n",
			(uintptr_t)jit);
		fprintf(f, "0x%" PRIxPTR " 0x40 _ZN3jit3fooEv\n", (uintptr_t)jit + 0x200);
		fclose(f);
	}

	diag_clear(&d);
	err = symbolizer_open_process(s, getpid(), true, &ps, &d);
	CHECK(err == 0, "open own process (%s)", d.msg);
	if (err)
		return test_done();

	si = look(ps, (const char *)symbolize_test_target + 2, 0);
	CHECK_STR(si.name, "symbolize_test_target", "own global function");
	CHECK(si.kind == FRAME_USER, "own function is FRAME_USER (%d)", si.kind);
	CHECK_STR(si.module, exe, "module is the executable");
	si = look(ps, (const void *)static_target, 0);
	CHECK_STR(si.name, "static_target", "own static function");
	si = look(ps, (const void *)mangled_target, 0);
	CHECK_STR(si.name, "ns::Klass<int>::method(int) const", "C++ name demangled");
	si = look(ps, (const void *)mangled_target, SYM_SIMPLE);
	CHECK_STR(si.name, "method", "C++ name simple");

	/* libc's own qsort, not a sanitizer's interposer of it. */
	{
		void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

		libc_qsort = libc ? dlsym(libc, "qsort") : NULL;
		if (!libc_qsort)
			libc_qsort = (void *)qsort;
	}
	si = look(ps, libc_qsort, 0);
	CHECK_STR(si.name, "qsort", "libc qsort");
	CHECK(si.kind == FRAME_LIBRARY, "libc is FRAME_LIBRARY");
	CHECK(si.module && strstr(si.module, "libc.so"), "module is libc (%s)",
	      si.module ? si.module : "-");
	/* _int_malloc is static in libc: only libc6-dbg's .symtab has it. */
	if (dladdr(libc_qsort, &dli) && dli.dli_fbase) {
		char dbg[512];
		struct symbolizer_stats st;

		symbolizer_get_stats(s, &st);
		snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id");
		fn = NULL;
		{
			/* find libc's debug file through its build-id, the way
			 * a user would: readelf -n */
			FILE *p = popen("readelf -n /lib/x86_64-linux-gnu/libc.so.6 | "
					"sed -n 's/.*Build ID: //p'", "r");
			char id[128] = "";

			if (p && fgets(id, sizeof(id), p)) {
				id[strcspn(id, "\n")] = '\0';
				snprintf(dbg, sizeof(dbg),
					 "/usr/lib/debug/.build-id/%.2s/%s.debug", id, id + 2);
				fn = sym_addr(dbg, "_int_malloc", (uintptr_t)dli.dli_fbase);
			}
			if (p)
				pclose(p);
		}
		if (fn && access(dbg, R_OK) == 0) {
			si = look(ps, (char *)fn + 16, 0);
			CHECK_STR(si.name, "_int_malloc",
				  "libc internal function named from its debug file");
			CHECK(st.debug_files >= 1, "a debug file was used (%" PRIu64 ")",
			      st.debug_files);
		} else {
			printf("# libc6-dbg not found (%s); skipping\n", dbg);
		}
	}

	fn = vdso_sym("__vdso_clock_gettime");
	if (fn) {
		si = look(ps, (char *)fn + 1, 0);
		CHECK(si.name && strstr(si.name, "clock_gettime"),
		      "vdso clock_gettime (%s)", si.name ? si.name : "-");
		CHECK_STR(si.module, "[vdso]", "vdso module");
	} else {
		printf("# no vdso; skipping\n");
	}

	si = look(ps, (char *)anon + 0x10, 0);
	CHECK_STR(si.name, "[anon]+0x10", "anonymous memory: [anon]+offset");
	CHECK(si.kind == FRAME_UNKNOWN, "anonymous memory is FRAME_UNKNOWN");
	si = look(ps, (void *)0x1000, 0);
	CHECK_STR(si.name, "[unknown]+0x1000", "unmapped address");

	si = look(ps, (char *)jit + 10, 0);
	CHECK_STR(si.name, "LazyCompile:*jitted_one /app/x.js:1", "perf map entry");
	CHECK(si.kind == FRAME_JIT, "perf map entry is FRAME_JIT");
	si = look(ps, (char *)jit + 0x210, SYM_SIMPLE);
	CHECK_STR(si.name, "foo", "mangled perf map name, simple");
	si = look(ps, (char *)jit + 0x300, 0);
	CHECK_STR(si.name, "[anon]+0x8300", "past perf map entries: anon");
	{
		FILE *f = fopen(pm_path, "a");

		fprintf(f, "%" PRIxPTR " 100 appended_later\n", (uintptr_t)jit + 0x300);
		fclose(f);
	}
	rc = proc_syms_reload_perf_map(ps);
	CHECK(rc == 0, "reload perf map");
	si = look(ps, (char *)jit + 0x300, 0);
	CHECK_STR(si.name, "appended_later", "appended perf map entry");
	unlink(pm_path);

	/* Kernel symbols. */
	if (!proc_syms_kernel_problem(ps)) {
		void *ka = kernel_symbol("schedule");

		CHECK(ka != NULL, "schedule in kallsyms");
		if (proc_syms_lookup(ps, (uint64_t)(uintptr_t)ka + 4, true, 0, &si) == 0) {
			CHECK_STR(si.name, "schedule", "kernel symbol");
			CHECK_STR(si.module, "[kernel]", "kernel module");
			CHECK(si.kind == FRAME_KERNEL, "FRAME_KERNEL");
		}
	} else {
		printf("# kernel symbols unavailable: %s\n", proc_syms_kernel_problem(ps));
		CHECK(strstr(proc_syms_kernel_problem(ps), "kallsyms") != NULL,
		      "kernel problem names kallsyms");
	}

	/* dlopen after open: unknown until the engine reports the mapping.
	 * The library must not be loaded yet: libdw (linked for
	 * dwarf_lines) brings libbz2 in, so take the first one that is not. */
	{
		static const struct { const char *lib, *sym; } late[] = {
			{ "libbz2.so.1.0", "BZ2_bzCompress" },
			{ "libexpat.so.1", "XML_ParserCreate" },
			{ "libgmp.so.10", "__gmpz_init" },
			{ "libuuid.so.1", "uuid_generate" },
		};
		const char *sym = NULL;
		void *h = NULL, *f = NULL;
		struct mapping m;

		for (size_t i = 0; i < sizeof(late) / sizeof(late[0]) && !h; i++) {
			void *loaded = dlopen(late[i].lib, RTLD_NOW | RTLD_NOLOAD);

			if (loaded) {
				dlclose(loaded);
				continue;
			}
			h = dlopen(late[i].lib, RTLD_NOW);
			sym = late[i].sym;
		}
		f = h ? dlsym(h, sym) : NULL;
		CHECK(f != NULL, "dlopen a library not loaded yet (%s)", sym ? sym : "none");
		if (f) {
			si = look(ps, f, 0);
			CHECK(strcmp(si.name, sym) != 0,
			      "not named before its mapping is added (%s)", si.name);
			CHECK(self_mapping(f, &m, path, sizeof(path)), "find mapping");
			rc = proc_syms_add_mapping(ps, &m);
			CHECK(rc == 0, "add mapping");
			si = look(ps, (char *)f + 8, 0);
			CHECK_STR(si.name, sym, "dlopen'ed library symbol");
			CHECK(si.kind == FRAME_LIBRARY, "dlopen'ed is FRAME_LIBRARY");
		}
	}

	/* A mapping over part of another replaces it there. */
	{
		struct mapping m = { .start = (uintptr_t)anon + 0x1000,
				     .end = (uintptr_t)anon + 0x2000,
				     .prot = PROT_READ, .path = "[heap]" };

		rc = proc_syms_add_mapping(ps, &m);
		CHECK(rc == 0, "add overlapping mapping");
		si = look(ps, (char *)anon + 0x1010, 0);
		CHECK_STR(si.name, "[heap]+0x10", "new mapping wins");
		si = look(ps, (char *)anon + 0x2010, 0);
		CHECK_STR(si.name, "[anon]+0x2010", "old mapping's tail kept, offsets from its start");
	}

	/* Opening the same process again reads no ELF file again. */
	saved_name = look(ps, (const void *)static_target, 0).name;
	symbolizer_get_stats(s, &st1);
	CHECK(st1.modules_parsed >= 3, "modules parsed (%" PRIu64 ")",
	      st1.modules_parsed);
	err = symbolizer_open_process(s, getpid(), false, &ps2, NULL);
	CHECK(err == 0, "open again");
	proc_syms_free(ps);
	if (!err) {
		si = look(ps2, libc_qsort, 0);
		CHECK_STR(si.name, "qsort", "qsort after reopen");
		symbolizer_get_stats(s, &st2);
		CHECK(st2.modules_parsed == st1.modules_parsed,
		      "no module parsed twice (%" PRIu64 " then %" PRIu64 ")",
		      st1.modules_parsed, st2.modules_parsed);
		CHECK(st2.cache_hits >= st1.cache_hits + 3, "cache hits (%" PRIu64
		      " then %" PRIu64 ")", st1.cache_hits, st2.cache_hits);
		CHECK(proc_syms_kernel_problem(ps2) == NULL,
		      "no kernel problem when kernel symbols were not asked for");
		proc_syms_free(ps2);
	}
	CHECK_STR(saved_name, "static_target", "names outlive their proc_syms");

	/* Lazily (a thread dump's): no module read at open, one per module
	 * an address is looked up in. */
	{
		struct symbolizer *ls = symbolizer_new();
		struct symbolizer_stats l0 = { 0 }, l1 = { 0 }, l2 = { 0 };
		struct proc_syms *lp = NULL;

		char maps[1 << 16];
		FILE *mf = fopen("/proc/self/maps", "r");
		size_t ml = mf ? fread(maps, 1, sizeof(maps), mf) : 0;

		if (mf)
			fclose(mf);
		/* With the maps read by the caller, as a thread dump does. */
		err = ls && ml ? symbolizer_open_process_flags(ls, getpid(), SYM_OPEN_LAZY, maps, ml,
							      &lp, NULL)
			       : -ENOMEM;
		CHECK(err == 0, "open lazily, with maps read by the caller");
		if (!err) {
			symbolizer_get_stats(ls, &l0);
			si = look(lp, libc_qsort, 0);
			symbolizer_get_stats(ls, &l1);
			CHECK_STR(si.name, "qsort", "qsort, lazily");
			si = look(lp, (const char *)libc_qsort + 1, 0);
			symbolizer_get_stats(ls, &l2);
			CHECK(l0.modules_parsed == 0 && l1.modules_parsed == 1 &&
			      l2.modules_parsed == 1,
			      "lazily: modules read at open, then per module asked: %" PRIu64
			      ", %" PRIu64 ", %" PRIu64, l0.modules_parsed, l1.modules_parsed,
			      l2.modules_parsed);
		}
		proc_syms_free(lp);
		symbolizer_free(ls);
	}

	/* Errors. */
	diag_clear(&d);
	err = symbolizer_open_process(s, 0x3ffffff0, false, &ps, &d);
	CHECK(err == -ESRCH, "missing process: -ESRCH (%d)", err);
	CHECK(strstr(d.msg, "no process with PID") != NULL, "diag: %s", d.msg);
	if (geteuid() == 0) {
		/* As nobody, init's maps are another user's. */
		int fds[2];
		pid_t child = -1;

		if (pipe(fds) == 0 && (child = fork()) == 0) {
			struct proc_syms *p = NULL;
			struct diag cd;
			int e;

			diag_clear(&cd);
			if (setgid(65534) || setuid(65534))
				_exit(2);
			e = symbolizer_open_process(s, 1, false, &p, &cd);
			dprintf(fds[1], "%d %s\n", e, cd.msg);
			_exit(0);
		}
		close(fds[1]);
		n = read(fds[0], line, sizeof(line) - 1);
		line[n > 0 ? n : 0] = '\0';
		line[strcspn(line, "\n")] = '\0';
		waitpid(child, NULL, 0);
		CHECK(atoi(line) == -EACCES, "another user's process: -EACCES (%s)", line);
		CHECK(strstr(line, "another user") != NULL, "diag names the cause");
	}

	(void)keep;
	munmap(anon, 65536);
	symbolizer_free(s);
	symbolizer_free(NULL);
	proc_syms_free(NULL);
	return test_done();
}
