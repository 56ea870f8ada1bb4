/* dwarf_lines_test: file:line and inlined frames (SYM_LINES).
 *
 * Builds, at test time, a library where two always_inline functions are
 * inlined into a noinline one (leaf into mid into outer), in C and in
 * C++, loads it into this process and steps through every byte of
 * outer: the inlined frames must appear outermost first, marked
 * FRAME_INLINED, with the lines marked in the source; the same through a
 * stripped copy and its .gnu_debuglink debug file; nothing but the name
 * without debug info; libc's lines through libc6-dbg; laziness, the
 * frame limit, and DWARF with bytes flipped at random. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/dwarf_lines.h"
#include "symbolize/symbolize.h"
#include "test.h"

static char dir[] = "/tmp/nprof-dwarf-lines-XXXXXX";

static const char c_src[] =
	"volatile int sink;\n"
	"static inline __attribute__((always_inline)) int leaf(int x)\n"
	"{\n"
	"\tint y = x * x + 3;\n"
	"\tsink += y; /* HOT */\n"
	"\treturn y;\n"
	"}\n"
	"\n"
	"static inline __attribute__((always_inline)) int mid(int x)\n"
	"{\n"
	"\treturn leaf(x + 1) * 2; /* CALL_LEAF */\n"
	"}\n"
	"\n"
	"__attribute__((noinline)) int outer(int x)\n"
	"{\n"
	"\tint r = mid(x); /* CALL_MID */\n"
	"\treturn r + sink;\n"
	"}\n"
	"int variant = VARIANT; /* a build-id of its own per variant */\n";

static const char cxx_src[] =
	"volatile int sinkpp;\n"
	"namespace ns {\n"
	"static inline __attribute__((always_inline)) int twice(int x)\n"
	"{\n"
	"\tsinkpp += x; /* HOTPP */\n"
	"\treturn x * 2;\n"
	"}\n"
	"template <typename T> struct Box {\n"
	"\tinline __attribute__((always_inline)) T thrice(T x) const\n"
	"\t{\n"
	"\t\tsinkpp -= (int)x; /* HOTBOX */\n"
	"\t\treturn x * 3;\n"
	"\t}\n"
	"};\n"
	"}\n"
	"extern \"C\" __attribute__((noinline)) int outerpp(int x)\n"
	"{\n"
	"\treturn ns::twice(x) + sinkpp; /* CALLPP */\n"
	"}\n"
	"extern \"C\" __attribute__((noinline)) long outerbox(long x)\n"
	"{\n"
	"\tns::Box<long> b;\n"
	"\treturn b.thrice(x) + sinkpp; /* CALLBOX */\n"
	"}\n";

static int sh(const char *command)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "cd %s && (%s) >/dev/null 2>&1", dir, command);
	return system(cmd);
}

static void write_file(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* The 1-based line of src holding marker. */
static uint32_t line_of(const char *src, const char *marker)
{
	const char *at = strstr(src, marker);
	uint32_t line = 1;

	if (!at)
		return 0;
	for (const char *p = src; p < at; p++)
		line += *p == '\n';
	return line;
}

/* The size of sym in the ELF file at path (from .symtab or .dynsym),
 * read with plain libelf. */
static uint64_t sym_size(const char *path, const char *sym)
{
	int fd = open(path, O_RDONLY);
	Elf *e;
	Elf_Scn *scn = NULL;
	uint64_t ret = 0;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && (scn = elf_nextscn(e, scn)) && !ret) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s))
				break;
			n = elf_strptr(e, sh.sh_link, s.st_name);
			if (n && !strcmp(n, sym) && s.st_size) {
				ret = s.st_size;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}

static const char *base_of(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

struct lib {
	void *handle;
	const unsigned char *fn; /* the noinline function */
	uint64_t size;
};

static int load_lib(const char *name, const char *fn, struct lib *ret)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	memset(ret, 0, sizeof(*ret));
	ret->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!ret->handle) {
		printf("# dlopen %s: %s\n", path, dlerror());
		return -1;
	}
	ret->fn = dlsym(ret->handle, fn);
	ret->size = sym_size(path, fn);
	return ret->fn && ret->size ? 0 : -1;
}

static struct proc_syms *open_self(struct symbolizer *s)
{
	struct proc_syms *ps = NULL;

	if (symbolizer_open_process(s, getpid(), false, &ps, NULL) < 0)
		return NULL;
	return ps;
}

/* What stepping through outer found. */
struct scan {
	unsigned addrs, three, two, one, bad_names, bad_kinds, bad_lines;
	unsigned hot;		/* three frames, innermost on the HOT line */
	unsigned files_ok;	/* every frame's file is c.c */
};

static void scan_c(struct proc_syms *ps, const struct lib *l, unsigned flags,
		   struct scan *sc)
{
	uint32_t hot = line_of(c_src, "/* HOT */");
	uint32_t call_leaf = line_of(c_src, "/* CALL_LEAF */");
	uint32_t call_mid = line_of(c_src, "/* CALL_MID */");
	uint32_t leaf_first = line_of(c_src, "leaf(int x)");
	uint32_t leaf_last = leaf_first + 5;

	memset(sc, 0, sizeof(*sc));
	for (uint64_t off = 0; off < l->size; off++) {
		struct symbol_info f[SYM_MAX_FRAMES_PER_ADDR];
		unsigned n = 0;
		bool files = true;

		memset(f, 0, sizeof(f));
		if (proc_syms_lookup_frames(ps, (uint64_t)(uintptr_t)(l->fn + off), false,
					    flags, f, SYM_MAX_FRAMES_PER_ADDR, &n) < 0)
			continue;
		sc->addrs++;
		if (!f[0].name || strcmp(f[0].name, "outer") || f[0].kind != FRAME_LIBRARY)
			sc->bad_names++;
		for (unsigned i = 0; i < n; i++) {
			if ((f[i].kind == FRAME_INLINED) != (i > 0))
				sc->bad_kinds++;
			if (f[i].module != f[0].module || f[i].module_offset != f[0].module_offset)
				sc->bad_kinds++;
			if (!f[i].file || strcmp(base_of(f[i].file), "c.c"))
				files = false;
		}
		sc->files_ok += files;
		if (n == 3) {
			sc->three++;
			if (!f[1].name || strcmp(f[1].name, "mid") || !f[2].name ||
			    strcmp(f[2].name, "leaf"))
				sc->bad_names++;
			/* The callers are at their calls, the innermost inside
			 * leaf's body. */
			if (f[0].line != call_mid || f[1].line != call_leaf ||
			    f[2].line < leaf_first || f[2].line > leaf_last)
				sc->bad_lines++;
			sc->hot += f[2].line == hot;
		} else if (n == 2) {
			sc->two++; /* mid's own code: "* 2", if any */
			if (!f[1].name || strcmp(f[1].name, "mid") || f[0].line != call_mid ||
			    f[1].line != call_leaf)
				sc->bad_lines++;
		} else if (n == 1) {
			sc->one++;
		}
	}
}

static void test_c(struct symbolizer *s, const struct lib *l, const char *what)
{
	struct proc_syms *ps = open_self(s);
	struct symbolizer_stats st0, st;
	struct scan sc;

	CHECK(ps != NULL, "%s: open self", what);
	if (!ps)
		return;
	symbolizer_get_stats(s, &st0);
	/* Without SYM_LINES: one frame, no file, and no DWARF opened. */
	scan_c(ps, l, 0, &sc);
	symbolizer_get_stats(s, &st);
	CHECK(sc.addrs == l->size && sc.one == sc.addrs && !sc.bad_names && !sc.files_ok,
	      "%s: without SYM_LINES, %u addresses give one frame named outer, no file",
	      what, sc.addrs);
	CHECK(st.dwarf_modules == st0.dwarf_modules,
	      "%s: no DWARF opened without SYM_LINES", what);

	scan_c(ps, l, SYM_LINES, &sc);
	symbolizer_get_stats(s, &st);
	printf("# %s: %u addresses: %u with 3 frames (%u on HOT), %u with 2, %u with 1\n",
	       what, sc.addrs, sc.three, sc.hot, sc.two, sc.one);
	CHECK(st.dwarf_modules == st0.dwarf_modules + 1, "%s: its DWARF opened once", what);
	CHECK(sc.three > 0 && sc.hot > 0,
	      "%s: outer;mid;leaf found, leaf on the HOT line", what);
	CHECK(!sc.bad_names, "%s: names outer, mid, leaf (%u wrong)", what, sc.bad_names);
	CHECK(!sc.bad_kinds, "%s: FRAME_INLINED exactly for the inlined frames, same "
	      "module and offset (%u wrong)", what, sc.bad_kinds);
	CHECK(!sc.bad_lines, "%s: callers on CALL_MID and CALL_LEAF (%u wrong)", what,
	      sc.bad_lines);
	CHECK(sc.files_ok * 10 >= sc.addrs * 9,
	      "%s: file c.c on every frame of most addresses (%u of %u)", what,
	      sc.files_ok, sc.addrs);
	proc_syms_free(ps);
}

/* The frame limit: with max 2 the outermost inlined level (mid) goes,
 * and outer's line with it (it would name the call of mid). */
static void test_max(struct symbolizer *s, const struct lib *l)
{
	struct proc_syms *ps = open_self(s);
	uint32_t hot = line_of(c_src, "/* HOT */");
	bool found = false;

	CHECK(ps != NULL, "max: open self");
	if (!ps)
		return;
	for (uint64_t off = 0; off < l->size && !found; off++) {
		struct symbol_info f[SYM_MAX_FRAMES_PER_ADDR];
		uint64_t addr = (uint64_t)(uintptr_t)(l->fn + off);
		unsigned n = 0;

		proc_syms_lookup_frames(ps, addr, false, SYM_LINES, f,
					SYM_MAX_FRAMES_PER_ADDR, &n);
		if (n != 3 || f[2].line != hot)
			continue;
		found = true;
		proc_syms_lookup_frames(ps, addr, false, SYM_LINES, f, 2, &n);
		CHECK(n == 2, "max 2: two frames (%u)", n);
		CHECK_STR(f[0].name, "outer", "max 2: outer first");
		CHECK(f[0].line == 0 && !f[0].file, "max 2: outer's line dropped (%u)",
		      f[0].line);
		CHECK_STR(f[1].name, "leaf", "max 2: the innermost kept");
		CHECK(f[1].line == hot && f[1].kind == FRAME_INLINED,
		      "max 2: leaf on HOT, inlined");
		proc_syms_lookup_frames(ps, addr, false, SYM_LINES, f, 1, &n);
		CHECK(n == 1 && !strcmp(f[0].name, "outer") && !f[0].line,
		      "max 1: outer only, no line");
		CHECK(proc_syms_lookup_frames(ps, addr, false, SYM_LINES, f, 0, &n) == -EINVAL,
		      "max 0: -EINVAL");
	}
	CHECK(found, "max: an address in leaf on HOT");
	proc_syms_free(ps);
}

/* Without any debug info: the name, nothing else. */
static void test_nodebug(struct symbolizer *s, const struct lib *l)
{
	struct proc_syms *ps = open_self(s);
	struct scan sc;

	CHECK(ps != NULL, "nodebug: open self");
	if (!ps)
		return;
	scan_c(ps, l, SYM_LINES, &sc);
	CHECK(sc.addrs == l->size && sc.one == sc.addrs && !sc.bad_names && !sc.files_ok,
	      "no debug info: %u addresses give one frame named outer, file NULL", sc.addrs);
	for (uint64_t off = 0; off < l->size; off += 7) {
		struct symbol_info f[4];
		unsigned n = 0;

		proc_syms_lookup_frames(ps, (uint64_t)(uintptr_t)(l->fn + off), false,
					SYM_LINES, f, 4, &n);
		if (n != 1 || f[0].line || f[0].file) {
			CHECK(0, "no debug info: line 0 at +%" PRIu64, off);
			break;
		}
	}
	proc_syms_free(ps);
}

/* C++: an inlined function is named by its DW_AT_linkage_name,
 * demangled, when it has one (ns::Box<long>::thrice), else by its
 * DW_AT_name (gcc gives a static function none: twice); SYM_SIMPLE
 * makes both the bare name. */
static void test_cxx(struct symbolizer *s, const struct lib *l, const char *outer,
		     const char *full, const char *alt, const char *simple,
		     const char *hot_mark, const char *call_mark)
{
	struct proc_syms *ps = open_self(s);
	uint32_t hot = line_of(cxx_src, hot_mark);
	uint32_t call = line_of(cxx_src, call_mark);
	unsigned two = 0, on_hot = 0, bad = 0, bad_simple = 0;

	CHECK(ps != NULL, "c++: open self");
	if (!ps)
		return;
	for (uint64_t off = 0; off < l->size; off++) {
		struct symbol_info f[SYM_MAX_FRAMES_PER_ADDR], g[SYM_MAX_FRAMES_PER_ADDR];
		uint64_t addr = (uint64_t)(uintptr_t)(l->fn + off);
		unsigned n = 0, m = 0;

		proc_syms_lookup_frames(ps, addr, false, SYM_LINES, f,
					SYM_MAX_FRAMES_PER_ADDR, &n);
		proc_syms_lookup_frames(ps, addr, false, SYM_LINES | SYM_SIMPLE, g,
					SYM_MAX_FRAMES_PER_ADDR, &m);
		if (n != 2)
			continue;
		two++;
		if (strcmp(f[0].name, outer) ||
		    (strcmp(f[1].name, full) && (!alt || strcmp(f[1].name, alt))) ||
		    f[0].line != call || f[1].kind != FRAME_INLINED) {
			if (!bad++)
				printf("# %s: %s:%u; %s:%u\n", outer, f[0].name, f[0].line,
				       f[1].name, f[1].line);
		}
		if (m != 2 || strcmp(g[1].name, simple))
			bad_simple++;
		on_hot += f[1].line == hot;
	}
	printf("# c++ %s: %u addresses with the inlined frame, %u on %s\n", outer, two,
	       on_hot, hot_mark);
	CHECK(two > 0 && on_hot > 0, "c++: %s inlined into %s, on its line", full, outer);
	CHECK(!bad, "c++ %s: inlined frame named %s, caller on its call line (%u wrong)",
	      outer, full, bad);
	CHECK(!bad_simple, "c++ %s: SYM_SIMPLE names it %s (%u wrong)", outer, simple,
	      bad_simple);
	proc_syms_free(ps);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* libc is stripped; its DWARF is libc6-dbg's, found by build-id. */
static void test_libc(struct symbolizer *s)
{
	static const char *const fns[] = { "qsort", "memcpy", "malloc" };
	struct proc_syms *ps;
	void *libc;

	if (access("/usr/lib/debug/.build-id", F_OK) < 0) {
		printf("# libc6-dbg is not installed; skipping libc\n");
		return;
	}
	ps = open_self(s);
	/* libc's own definitions, not a sanitizer's interceptors. */
	libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	CHECK(ps != NULL && libc != NULL, "libc: open self");
	if (!ps || !libc) {
		proc_syms_free(ps);
		return;
	}
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		/* memcpy is an IFUNC: dlsym gives the variant chosen here,
		 * written in assembly (.S). */
		const unsigned char *fn = dlsym(libc, fns[i]);
		struct symbol_info f[SYM_MAX_FRAMES_PER_ADDR], one;
		unsigned n = 0;
		uint64_t addr = (uint64_t)(uintptr_t)fn + 4;

		if (!fn) {
			CHECK(0, "libc: dlsym %s", fns[i]);
			continue;
		}
		proc_syms_lookup(ps, addr, false, 0, &one);
		proc_syms_lookup_frames(ps, addr, false, SYM_LINES, f,
					SYM_MAX_FRAMES_PER_ADDR, &n);
		printf("# %s: %s at %s:%u, %u frame(s), innermost %s at %s:%u\n", fns[i],
		       f[0].name, f[0].file ? f[0].file : "?", f[0].line, n,
		       f[n - 1].name, f[n - 1].file ? f[n - 1].file : "?", f[n - 1].line);
		CHECK(n >= 1 && one.name && !strcmp(f[0].name, one.name) &&
		      f[0].kind == FRAME_LIBRARY,
		      "libc %s: first frame as proc_syms_lookup names it (%s)", fns[i],
		      f[0].name);
		CHECK((ends_with(f[n - 1].file, ".c") || ends_with(f[n - 1].file, ".S")) &&
		      f[n - 1].line > 0,
		      "libc %s: innermost file is .c or .S with a line (%s:%u)", fns[i],
		      f[n - 1].file ? f[n - 1].file : "(null)", f[n - 1].line);
	}
	dlclose(libc);
	proc_syms_free(ps);
}

/* DWARF with bytes flipped: every lookup ends, with frames or -ENOENT. */
static void test_broken(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	char *orig = NULL;
	unsigned seed = 12345, opened = 0, found = 0;
	uint64_t lo = 0, hi = 0;

	if (fd < 0 || fstat(fd, &st) < 0 || !(orig = malloc((size_t)st.st_size)) ||
	    read(fd, orig, (size_t)st.st_size) != st.st_size) {
		CHECK(0, "broken: read %s", path);
		goto out;
	}
	/* The range of .text, where lookups go. */
	{
		Elf *e = elf_memory(orig, (size_t)st.st_size);
		Elf_Scn *scn = NULL;
		size_t shstrndx;

		if (e && elf_getshdrstrndx(e, &shstrndx) == 0)
			while ((scn = elf_nextscn(e, scn))) {
				GElf_Shdr sh;
				const char *name;

				if (gelf_getshdr(scn, &sh) &&
				    (name = elf_strptr(e, shstrndx, sh.sh_name)) &&
				    !strcmp(name, ".text")) {
					lo = sh.sh_addr;
					hi = sh.sh_addr + sh.sh_size;
				}
			}
		if (e)
			elf_end(e);
	}
	CHECK(hi > lo, "broken: .text found");
	for (int round = 0; round < 300; round++) {
		char *copy = malloc((size_t)st.st_size);
		struct dwarf_lines *dl = NULL;
		Elf *e;

		memcpy(copy, orig, (size_t)st.st_size);
		/* Flip a few bytes anywhere past the ELF header, more and
		 * more of them. */
		for (int k = 0; k <= round / 30; k++) {
			size_t at = 64 + (size_t)rand_r(&seed) % ((size_t)st.st_size - 64);

			copy[at] ^= (char)(1 + rand_r(&seed) % 255);
		}
		e = elf_memory(copy, (size_t)st.st_size);
		if (e && dwarf_lines_open_elf(e, &dl) == 0) {
			opened++;
			e = NULL;
			for (uint64_t a = lo; a < hi; a += 3) {
				struct dwarf_loc locs[DWARF_LINES_MAX_INLINES + 1];
				unsigned n = 0;

				if (dwarf_lines_find(dl, a, locs, DWARF_LINES_MAX_INLINES + 1,
						     &n) == 0)
					found += n >= 1 && n <= DWARF_LINES_MAX_INLINES + 1;
			}
			dwarf_lines_free(dl);
		}
		if (e)
			elf_end(e);
		free(copy);
	}
	printf("# broken: %u of 300 opened, %u lookups answered\n", opened, found);
	CHECK(opened > 0, "broken DWARF: opened, looked up and closed without a crash");
out:
	free(orig);
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	struct symbolizer *s = symbolizer_new();
	struct lib full, strip, nodbg, cxx, clang;
	bool have_clang;
	char path[512];
	int rc;

	if (!s || !mkdtemp(dir)) {
		CHECK(0, "setup");
		return test_done();
	}
	write_file("c.c", c_src);
	write_file("cxx.cc", cxx_src);

	rc = sh("cc -O2 -g -fPIC -shared -DVARIANT=1 -o libfull.so c.c");
	CHECK(rc == 0, "build libfull.so");
	rc = sh("cc -O2 -g -fPIC -shared -DVARIANT=2 -o libstrip.so c.c && "
		"objcopy --only-keep-debug libstrip.so libstrip.so.debug && "
		"strip --strip-all libstrip.so && "
		"objcopy --add-gnu-debuglink=libstrip.so.debug libstrip.so && "
		"! readelf -S libstrip.so | grep -q debug_info");
	CHECK(rc == 0, "build libstrip.so, stripped, with a debuglink");
	rc = sh("cc -O2 -g -fPIC -shared -DVARIANT=3 -o libnodbg.so c.c && "
		"strip --strip-debug libnodbg.so");
	CHECK(rc == 0, "build libnodbg.so, no debug info");
	/* clang emits no .debug_aranges: units are found by their ranges. */
	have_clang = sh("command -v clang") == 0;
	if (have_clang) {
		rc = sh("clang -O2 -g -fPIC -shared -DVARIANT=4 -o libclang.so c.c && "
			"! readelf -S libclang.so | grep -q debug_aranges");
		CHECK(rc == 0, "build libclang.so, without .debug_aranges");
	}
	rc = sh("c++ -O2 -g -fPIC -shared -o libcxx.so cxx.cc");
	CHECK(rc == 0, "build libcxx.so");

	if (load_lib("libfull.so", "outer", &full) == 0)
		test_c(s, &full, "unstripped");
	else
		CHECK(0, "load libfull.so");
	if (load_lib("libstrip.so", "outer", &strip) == 0)
		test_c(s, &strip, "stripped + debuglink");
	else
		CHECK(0, "load libstrip.so");
	if (have_clang) {
		if (load_lib("libclang.so", "outer", &clang) == 0)
			test_c(s, &clang, "clang");
		else
			CHECK(0, "load libclang.so");
	} else {
		printf("# clang not found; skipping the unit without .debug_aranges\n");
	}
	if (full.fn)
		test_max(s, &full);
	if (load_lib("libnodbg.so", "outer", &nodbg) == 0)
		test_nodebug(s, &nodbg);
	else
		CHECK(0, "load libnodbg.so");
	if (load_lib("libcxx.so", "outerpp", &cxx) == 0)
		test_cxx(s, &cxx, "outerpp", "ns::twice(int)", "twice", "twice",
			 "/* HOTPP */", "/* CALLPP */");
	else
		CHECK(0, "load libcxx.so");
	if (load_lib("libcxx.so", "outerbox", &cxx) == 0)
		test_cxx(s, &cxx, "outerbox", "ns::Box<long>::thrice(long) const", NULL,
			 "thrice", "/* HOTBOX */", "/* CALLBOX */");
	else
		CHECK(0, "load libcxx.so");
	test_libc(s);

	snprintf(path, sizeof(path), "%s/libfull.so", dir);
	test_broken(path);

	symbolizer_free(s);
	sh("rm -rf *");
	rmdir(dir);
	return test_done();
}
