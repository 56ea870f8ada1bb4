/* unwind: tables from real ELF files (this test, libc), and real walks of
 * this test's own stack: a noinline chain, a chain built without frame
 * pointers, and a comparator called through libc's qsort (Debian's libc
 * has no frame pointers, so only CFI gets from the comparator to main).
 * Then garbage registers and stacks, which must end cleanly. */
#include "unwind/cfi.h"
#include "unwind/modules.h"
#include "unwind/unwind_table.h"
#include "unwind/walker.h"
#include "test.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define MAX_FRAMES 128
#define COPY_MAX (64u << 10)

int main(void);

/* ---- a tiny symbolizer for this executable (.symtab) and libc (dladdr) ---- */

struct sym {
	uint64_t start, size;
	char name[48];
};

static struct sym syms[8192];
static unsigned nsyms;
static uint64_t exe_bias;

static void load_exe_symbols(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize && nsyms < 8192; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    !s.st_value)
				continue;
			n = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!n)
				continue;
			syms[nsyms].start = s.st_value;
			syms[nsyms].size = s.st_size;
			snprintf(syms[nsyms].name, sizeof(syms[nsyms].name), "%s", n);
			if (!strcmp(n, "main"))
				exe_bias = (uint64_t)(uintptr_t)&main - s.st_value;
			nsyms++;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
}

/* The function holding addr: ours by .symtab, else "libc:name" by dladdr. */
static const char *name_of(uint64_t addr, char *buf, size_t len)
{
	Dl_info di;

	for (unsigned i = 0; i < nsyms; i++)
		if (addr - exe_bias >= syms[i].start &&
		    addr - exe_bias < syms[i].start + syms[i].size)
			return syms[i].name;
	if (dladdr((void *)(uintptr_t)addr, &di) && di.dli_fname) {
		snprintf(buf, len, "%s:%s", strstr(di.dli_fname, "libc.so") ? "libc" : "lib",
			 di.dli_sname ? di.dli_sname : "?");
		return buf;
	}
	return "?";
}

/* Names of ips (return addresses named at addr - 1). */
static void name_stack(const uint64_t *ips, unsigned n, char names[][64])
{
	for (unsigned i = 0; i < n; i++) {
		char buf[64];
		const char *s = name_of(i ? ips[i] - 1 : ips[i], buf, sizeof(buf));

		snprintf(names[i], 64, "%s", s);
	}
}

static void print_stack(const char *what, char names[][64], unsigned n)
{
	printf("# %s:", what);
	for (unsigned i = 0; i < n; i++)
		printf(" %s", names[i]);
	printf("\n");
}

/* The index of the first frame at or after from named name, or -1. */
static int find_frame(char names[][64], unsigned n, unsigned from, const char *name)
{
	for (unsigned i = from; i < n; i++)
		if (!strcmp(names[i], name))
			return (int)i;
	return -1;
}

/* ---- capturing this thread's registers and stack ---- */

static uint64_t stack_end; /* end of the mapping holding the main stack */

struct snap {
	struct unwind_regs regs;
	uint8_t stack[COPY_MAX];
	size_t len;
	int taken;
};

static struct snap snap_a, snap_b, snap_c;

static void find_stack_end(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t sp = (uint64_t)(uintptr_t)__builtin_frame_address(0);

	while (f && fgets(line, sizeof(line), f)) {
		uint64_t lo, hi;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) == 2 && sp >= lo && sp < hi)
			stack_end = hi;
	}
	if (f)
		fclose(f);
}

/* rip, rsp and rbp as they are here, then the live stack from rsp up:
 * everything the callers' frames hold stays put while we copy. */
static __attribute__((noinline)) void capture(struct snap *s)
{
	uint64_t rip, rsp, rbp;
	size_t len;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(rip), "=r"(rsp), "=r"(rbp)::"memory");
	len = stack_end - rsp < COPY_MAX ? stack_end - rsp : COPY_MAX;
	memcpy(s->stack, (const void *)(uintptr_t)rsp, len);
	s->regs = (struct unwind_regs){ rip, rsp, rbp };
	s->len = len;
	s->taken = 1;
}

/* The asm after each call keeps it from becoming a tail call. */
#define NOTAIL() __asm__ volatile("" ::: "memory")

__attribute__((noinline)) void level1(struct snap *s);
__attribute__((noinline)) void level2(struct snap *s);
__attribute__((noinline)) void level3(struct snap *s);
__attribute__((noinline)) void level1(struct snap *s) { capture(s); NOTAIL(); }
__attribute__((noinline)) void level2(struct snap *s) { level1(s); NOTAIL(); }
__attribute__((noinline)) void level3(struct snap *s) { level2(s); NOTAIL(); }

/* The same chain without frame pointers: rbp is a plain register here. */
#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))
NOFP void nofp1(struct snap *s);
NOFP void nofp2(struct snap *s);
NOFP void nofp3(struct snap *s);
NOFP void nofp1(struct snap *s)
{
	/* Clobber rbp so a frame-pointer walk cannot pass through. */
	__asm__ volatile("xor %%ebp, %%ebp" ::: "rbp", "memory");
	capture(s);
	NOTAIL();
}
NOFP void nofp2(struct snap *s) { char pad[40]; __asm__ volatile("" :: "r"(pad) : "memory"); nofp1(s); NOTAIL(); }
NOFP void nofp3(struct snap *s) { nofp2(s); NOTAIL(); }

static int cmp_calls;

__attribute__((noinline)) int by_value(const void *a, const void *b);
__attribute__((noinline)) int by_value(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (!cmp_calls++)
		capture(&snap_c);
	return (x > y) - (x < y);
}

__attribute__((noinline)) void sort_caller(void);
__attribute__((noinline)) void sort_caller(void)
{
	int v[64];

	for (int i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	qsort(v, 64, sizeof(v[0]), by_value);
	NOTAIL();
}

/* ---- tests ---- */

static struct unwind_cache *cache;
static struct unwind_modules mods;

static void test_tables(void)
{
	const struct unwind_table *libc = NULL, *again = NULL, *self = NULL;
	const struct unwind_module *m;
	const char *fns[] = { "qsort_r", "malloc", "free", "printf", "getpid", "strlen" };
	int ok = 0, err;

	/* CHECK evaluates its condition twice: calls with effects go first. */
	err = unwind_cache_get(cache, LIBC, NULL, &libc);
	CHECK(err == 0 && libc && libc->cfi,
	      "libc's table builds");
	if (!libc || !libc->cfi)
		return;
	printf("# libc: %u CIEs, %u FDEs (%u used, %u unsupported, %u dropped), %u rows of %zu bytes, "
	       "%u plt, %u sigframe, %u drap\n",
	       libc->cfi->stats.cies, libc->cfi->stats.fdes, libc->cfi->stats.fdes_used,
	       libc->cfi->stats.fdes_unsupported, libc->cfi->stats.fdes_dropped, libc->cfi->n,
	       sizeof(struct cfi_row), libc->cfi->stats.plt_rows,
	       libc->cfi->stats.sigframe_rows, libc->cfi->stats.drap_rows);
	CHECK(sizeof(struct cfi_row) == 12, "rows are 12 bytes");
	CHECK(libc->build_id_len == 20, "libc's build-id read");
	CHECK(libc->cfi->stats.fdes > 1000 && libc->cfi->stats.fdes_used > 1000,
	      "libc has thousands of FDEs, all but a few used");
	CHECK(libc->cfi->stats.plt_rows > 0, "libc's PLT expression recognised");
	CHECK(libc->cfi->stats.sigframe_rows > 0, "libc's __restore_rt recognised");
	err = unwind_cache_get(cache, LIBC, NULL, &again);
	CHECK(err == 0 && again == libc &&
	      unwind_cache_builds(cache) >= 1, "the cache shares one table per build-id");

	/* At a function's first instruction the return address is at the
	 * CFA - 8 and the CFA is rsp + 8: true of every x86-64 function. */
	for (unsigned i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		void *p = dlsym(RTLD_DEFAULT, fns[i]);
		const struct cfi_row *r;

		m = p ? unwind_modules_find(&mods, (uint64_t)(uintptr_t)p) : NULL;
		r = m && m->table ? unwind_table_find(m->table, (uint64_t)(uintptr_t)p - m->bias) : NULL;
		if (r && cfi_row_cfa(r) == CFI_CFA_RSP && r->cfa_off == 8 && r->rip_off == -8 &&
		    cfi_row_rbp(r) == CFI_RBP_SAME)
			ok++;
		else
			printf("# %s: row %p\n", fns[i], (const void *)r);
	}
	CHECK(ok == 6, "libc entry rows: CFA = rsp+8, rip at CFA-8 (%d of 6)", ok);

	m = unwind_modules_find(&mods, (uint64_t)(uintptr_t)&level2);
	CHECK(m && m->table && m->table->cfi, "this test's module has a table");
	if (m && m->table && m->table->cfi) {
		uint64_t v = (uint64_t)(uintptr_t)&level2 - m->bias;
		const struct cfi_row *r = unwind_table_find(m->table, v);
		const struct cfi_row *r4 = unwind_table_find(m->table, v + 4);

		self = m->table;
		CHECK(r && cfi_row_cfa(r) == CFI_CFA_RSP && r->cfa_off == 8, "level2 entry: rsp+8");
		/* push %rbp; mov %rsp,%rbp: from +4 on, CFA = rbp + 16. */
		CHECK(r4 && cfi_row_cfa(r4) == CFI_CFA_RBP && r4->cfa_off == 16 &&
		      cfi_row_rbp(r4) == CFI_RBP_AT_CFA && r4->rbp_off == -16,
		      "level2 body: CFA = rbp+16, rbp at CFA-16");
		CHECK(unwind_table_find(self, self->cfi->base - 1) == NULL &&
		      unwind_table_find(self, UINT64_MAX) == NULL, "lookups outside the table: NULL");
	}
	{
		/* _start marks the outermost frame. */
		const struct cfi_row *r = NULL;
		for (unsigned i = 0; i < nsyms; i++)
			if (!strcmp(syms[i].name, "_start") && self)
				r = unwind_table_find(self, syms[i].start + 1);
		CHECK(r && cfi_row_rip(r) == CFI_RIP_UNDEFINED, "_start: return address undefined");
	}
	CHECK(mods.n >= 2, "modules from /proc/self/maps (%u, %u without a table)", mods.n,
	      mods.no_table);
	{
		struct unwind_table *t = NULL;
		err = unwind_table_from_elf("/nonexistent", NULL, &t);
		CHECK(err == -ENOENT && !t,
		      "missing file: -ENOENT, out-param untouched");
		err = unwind_table_from_elf("/proc/self/maps", NULL, &t);
		CHECK(err < 0 && !t,
		      "not an ELF: error");
	}
	{
		const void *vdso = (const void *)getauxval(AT_SYSINFO_EHDR);
		const struct unwind_module *vm = NULL;
		for (unsigned i = 0; i < mods.n; i++)
			if (vdso && mods.v[i].start == (uint64_t)(uintptr_t)vdso)
				vm = &mods.v[i];
		CHECK(!vdso || (vm && vm->table && vm->table->cfi), "the vDSO has a table");
	}
}


/* ---- a hand-made module, table and stack: each row kind, exactly ---- */

static struct cfi_row mkrow(uint32_t start, enum cfi_cfa_kind cfa, int32_t off, int rip,
			    enum cfi_rbp_kind rbp, int16_t rbp_off)
{
	return (struct cfi_row){ start, off, rbp_off, -8,
				 (uint8_t)(cfa | rip << 3 | rbp << 5) };
}

static void put64(uint8_t *stk, uint64_t base, uint64_t addr, uint64_t v)
{
	memcpy(stk + (addr - base), &v, 8);
}

static void test_synthetic(void)
{
	static uint8_t stk[4096];
	const uint64_t B = 0x70000000, S = B + 0x100;
	struct cfi_row rows[] = {
		/* A: an epilogue after `pop %rbp`; the rule still says CFA-24 */
		mkrow(0x000, CFI_CFA_RSP, 16, CFI_RIP_AT_CFA, CFI_RBP_AT_CFA, -24),
		mkrow(0x100, CFI_CFA_NONE, 0, 0, 0, 0),	/* B: no CFI */
		mkrow(0x200, CFI_CFA_RSP, 8, CFI_RIP_UNDEFINED, 0, 0), /* C: _start */
		mkrow(0x300, CFI_CFA_NONE, 0, 0, 0, 0),
		mkrow(0x400, CFI_CFA_PLT, 8, CFI_RIP_AT_CFA, CFI_RBP_SAME, 11),
		mkrow(0x500, CFI_CFA_SIGFRAME, 0, 0, 0, 0),
		mkrow(0x510, CFI_CFA_RBP, 16, CFI_RIP_AT_CFA, CFI_RBP_AT_CFA, -16),
		mkrow(0x600, CFI_CFA_NONE, 0, 0, 0, 0),
	};
	struct cfi_table ct = { .base = 0x10000, .n = 8, .rows = rows };
	struct unwind_table ut = { .cfi = &ct };
	struct unwind_modules m;
	struct unwind_stack_copy sc = { B, stk, sizeof(stk) };
	struct unwind_regs regs;
	struct unwind_info info;
	uint64_t ips[16];
	unsigned n;
	int e1, e2;

	unwind_modules_init(&m);
	e1 = unwind_modules_add(&m, 0x10000, 0x10600, 0, &ut);
	e2 = unwind_modules_add(&m, 0x10500, 0x20000, 0, NULL);
	CHECK(e1 == 0 && e2 == -EEXIST,
	      "modules: overlap refused");

	/* A (cfi, rbp already popped) -> B (frame pointer) -> C (outermost) */
	memset(stk, 0, sizeof(stk));
	put64(stk, B, S - 8, 0xdeadbeef); /* the stale slot below sp */
	put64(stk, B, S + 8, 0x10150);
	put64(stk, B, S + 0x40, 0);
	put64(stk, B, S + 0x48, 0x10250);
	regs = (struct unwind_regs){ 0x10010, S, S + 0x40 };
	n = unwind_walk_ex(&regs, &m, unwind_read_stack_copy, &sc, ips, 16, &info);
	CHECK(n == 3 && ips[1] == 0x10150 && ips[2] == 0x10250 && info.stop == UNWIND_STOP_END &&
	      info.cfi_frames == 1 && info.fp_frames == 1,
	      "epilogue (slot below sp = popped), fp fallback, outermost (n %u stop %d)", n,
	      info.stop);
	sc.base = S; /* a perf copy starts at sp: the same walk must not fault */
	sc.data = stk + (S - B);
	sc.len = sizeof(stk) - (S - B);
	n = unwind_walk_ex(&regs, &m, unwind_read_stack_copy, &sc, ips, 16, &info);
	CHECK(n == 3 && info.stop == UNWIND_STOP_END, "... also with the copy starting at sp");
	sc = (struct unwind_stack_copy){ B, stk, sizeof(stk) };

	/* PLT: pc&15 >= 11 means the stub pushed: CFA = rsp + 16. */
	memset(stk, 0, sizeof(stk));
	put64(stk, B, S + 8, 0x10250);
	regs = (struct unwind_regs){ 0x1040c, S, 0 };
	n = unwind_walk_ex(&regs, &m, unwind_read_stack_copy, &sc, ips, 16, &info);
	CHECK(n == 2 && ips[1] == 0x10250 && info.stop == UNWIND_STOP_END, "PLT after the push");
	put64(stk, B, S, 0x10250);
	put64(stk, B, S + 8, 0);
	regs.rip = 0x10406;
	n = unwind_walk_ex(&regs, &m, unwind_read_stack_copy, &sc, ips, 16, &info);
	CHECK(n == 2 && ips[1] == 0x10250, "PLT before the push");

	/* A signal frame: the interrupted rip is exact (no -1 lookup). */
	memset(stk, 0, sizeof(stk));
	put64(stk, B, S + 168, 0x10510); /* interrupted at the first byte of D */
	put64(stk, B, S + 160, S + 0x200);
	put64(stk, B, S + 120, S + 0x300);
	put64(stk, B, S + 0x300, 0);	  /* D: CFA = rbp + 16 */
	put64(stk, B, S + 0x308, 0x10250);
	regs = (struct unwind_regs){ 0x10501, S, 0 };
	n = unwind_walk_ex(&regs, &m, unwind_read_stack_copy, &sc, ips, 16, &info);
	CHECK(n == 3 && ips[1] == 0x10510 && ips[2] == 0x10250 && info.sig_frames == 1 &&
	      info.stop == UNWIND_STOP_END, "through a signal frame (n %u stop %d)", n, info.stop);

	/* A loop (rbp pointing at itself) ends: sp must grow. */
	memset(stk, 0, sizeof(stk));
	put64(stk, B, S, S);
	put64(stk, B, S + 8, 0x10150);
	regs = (struct unwind_regs){ 0x10150, S, S };
	n = unwind_walk_ex(&regs, &m, unwind_read_stack_copy, &sc, ips, 16, &info);
	CHECK(n < 16 && info.stop != UNWIND_STOP_END, "rbp loop: ends, truncated (n %u)", n);
	n = unwind_walk_ex(&regs, &m, unwind_read_stack_copy, &sc, ips, 1, &info);
	CHECK(n == 1 && info.stop == UNWIND_STOP_MAX, "max 1: one frame, truncated");
	unwind_modules_release(&m);
	unwind_modules_release(NULL);
}

static unsigned walk_snap(const struct snap *s, const struct unwind_modules *m,
			  uint64_t *ips, struct unwind_info *info)
{
	struct unwind_stack_copy sc = { s->regs.rsp, s->stack, s->len };

	return unwind_walk_ex(&s->regs, m, unwind_read_stack_copy, &sc, ips, MAX_FRAMES, info);
}

static __attribute__((noinline)) void test_chain(void)
{
	uint64_t ips[MAX_FRAMES];
	char names[MAX_FRAMES][64];
	struct unwind_info info;
	struct unwind_modules none;
	unsigned n;
	int a, b, c, d, e;

	level3(&snap_a);
	n = walk_snap(&snap_a, &mods, ips, &info);
	name_stack(ips, n, names);
	print_stack("fp chain, cfi walk", names, n);
	a = find_frame(names, n, 0, "capture");
	b = find_frame(names, n, 0, "level1");
	c = find_frame(names, n, 0, "level2");
	d = find_frame(names, n, 0, "level3");
	e = find_frame(names, n, 0, "main");
	CHECK(a == 0 && b == 1 && c == 2 && d == 3, "capture, level1, level2, level3 in order");
	CHECK(e > d && find_frame(names, n, 0, "test_chain") > d, "test_chain and main above");
	CHECK(info.stop == UNWIND_STOP_END, "walk ends at _start (stop %d)", info.stop);
	CHECK(n >= 2 && !strcmp(names[n - 1], "_start"), "last frame is _start");

	/* Frame pointers only (no tables): this test has them. */
	unwind_modules_init(&none);
	n = walk_snap(&snap_a, &none, ips, &info);
	name_stack(ips, n, names);
	print_stack("fp chain, fp walk", names, n);
	CHECK(find_frame(names, n, 0, "level1") == 1 && find_frame(names, n, 0, "level3") == 3 &&
	      find_frame(names, n, 0, "main") > 3 && info.fp_frames >= 4 && !info.cfi_frames,
	      "frame-pointer fallback walks the chain to main");

	nofp3(&snap_b);
	n = walk_snap(&snap_b, &mods, ips, &info);
	name_stack(ips, n, names);
	print_stack("no-fp chain, cfi walk", names, n);
	CHECK(find_frame(names, n, 0, "nofp1") == 1 && find_frame(names, n, 0, "nofp2") == 2 &&
	      find_frame(names, n, 0, "nofp3") == 3 && find_frame(names, n, 0, "main") > 3 &&
	      info.stop == UNWIND_STOP_END, "CFI walks a chain without frame pointers to main");
	n = walk_snap(&snap_b, &none, ips, &info);
	name_stack(ips, n, names);
	print_stack("no-fp chain, fp walk", names, n);
	CHECK(find_frame(names, n, 0, "nofp2") < 0, "frame pointers alone lose it (as expected)");
	NOTAIL();
}

static __attribute__((noinline)) void test_qsort(void)
{
	uint64_t ips[MAX_FRAMES];
	char names[MAX_FRAMES][64];
	struct unwind_info info;
	unsigned n;
	int cmp, lib = -1, q, caller, m;

	sort_caller();
	CHECK(snap_c.taken, "the comparator ran");
	n = walk_snap(&snap_c, &mods, ips, &info);
	name_stack(ips, n, names);
	print_stack("qsort, cfi walk", names, n);
	cmp = find_frame(names, n, 0, "by_value");
	for (unsigned i = cmp >= 0 ? (unsigned)cmp + 1 : n; i < n; i++)
		if (!strncmp(names[i], "libc:", 5)) {
			lib = (int)i;
			break;
		}
	q = find_frame(names, n, 0, "libc:qsort_r");
	caller = find_frame(names, n, 0, "sort_caller");
	m = find_frame(names, n, 0, "main");
	CHECK(cmp == 1, "comparator under capture");
	CHECK(lib > cmp && q >= lib, "libc frames (qsort_r) above the comparator");
	CHECK(caller > q && q > 0, "sort_caller above qsort");
	CHECK(m > caller && caller > 0, "main above sort_caller");
	CHECK(info.stop == UNWIND_STOP_END, "qsort walk complete (stop %d, %u cfi, %u fp)",
	      info.stop, info.cfi_frames, info.fp_frames);
	NOTAIL();
}

/* This process's open descriptors. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}

static bool same_rule(const struct cfi_row *a, const struct cfi_row *b)
{
	if (!a || !b)
		return a == b;
	return a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off &&
	       a->rip_off == b->rip_off && a->kinds == b->kinds;
}

/* Lazy tables (a thread dump's): libc's rows, built FDE by FDE through
 * .eh_frame_hdr as lookups ask, are the whole table's rows, and a walk
 * with them is the walk with the whole tables. */
static __attribute__((noinline)) void test_lazy(void)
{
	struct unwind_cache *lc = unwind_cache_new();
	const struct unwind_table *full = NULL, *lazy = NULL;
	const char *fns[] = { "qsort_r", "malloc", "free", "printf", "getpid", "strlen" };
	struct unwind_modules lmods;
	uint64_t ips[MAX_FRAMES], lips[MAX_FRAMES];
	struct unwind_info info, linfo;
	unsigned n, ln, differ = 0, fdes;
	int err, fds;

	unwind_cache_set_lazy(lc);
	err = unwind_cache_get(cache, LIBC, NULL, &full);
	fds = count_fds();
	err = err ? err : unwind_cache_get(lc, LIBC, NULL, &lazy);
	CHECK(fds > 0 && count_fds() == fds, "a lazy table keeps its file mapped, not open "
	      "(%d descriptors before, %d after)", fds, count_fds());
	CHECK(err == 0 && full && full->cfi && lazy && lazy->lazy && !lazy->cfi &&
	      unwind_table_lazy_fdes(lazy) == 0,
	      "a lazy cache's libc table: no rows until asked");
	if (err || !full || !full->cfi || !lazy || !lazy->lazy) {
		unwind_cache_free(lc);
		return;
	}
	CHECK(unwind_table_find(lazy, full->cfi->base + full->cfi->rows[0].start) == NULL,
	      "a lazy table gives the signal-safe lookup no rows (frame pointers)");
	for (unsigned i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		void *p = dlsym(RTLD_DEFAULT, fns[i]);
		const struct unwind_module *m = p ? unwind_modules_find(&mods, (uint64_t)(uintptr_t)p)
						  : NULL;
		uint64_t v = m ? (uint64_t)(uintptr_t)p - m->bias : 0;

		if (!m || m->table != full || !same_rule(unwind_table_find_lazy(lazy, v),
							 unwind_table_find(full, v)))
			differ++;
	}
	fdes = unwind_table_lazy_fdes(lazy);
	CHECK(differ == 0 && fdes >= 1 && fdes <= 6,
	      "six functions' entry rows, as the whole table's, from %u FDEs of %u", fdes,
	      full->cfi->stats.fdes);
	/* Every row of the whole table, its first byte and its last. */
	differ = 0;
	for (uint32_t i = 0; i + 1 < full->cfi->n; i++) {
		uint64_t a = full->cfi->base + full->cfi->rows[i].start;
		uint64_t z = full->cfi->base + full->cfi->rows[i + 1].start - 1;

		if (!same_rule(unwind_table_find_lazy(lazy, a), unwind_table_find(full, a)) ||
		    !same_rule(unwind_table_find_lazy(lazy, z), unwind_table_find(full, z))) {
			if (differ++ < 3)
				printf("# row %u at 0x%" PRIx64 ": lazy and whole differ\n", i, a);
		}
	}
	CHECK(differ == 0, "all %u rows of libc: the lazy table's rule is the whole table's "
	      "(%u FDEs built)", full->cfi->n, unwind_table_lazy_fdes(lazy));

	/* The qsort walk of test_qsort, with lazy tables everywhere. */
	unwind_modules_init(&lmods);
	err = unwind_modules_from_maps(&lmods, lc, 0);
	CHECK(err == 0 && lmods.find_lazy, "modules from a lazy cache look rows up lazily");
	n = walk_snap(&snap_c, &mods, ips, &info);
	ln = walk_snap(&snap_c, &lmods, lips, &linfo);
	CHECK(n > 4 && ln == n && !memcmp(ips, lips, n * sizeof(*ips)) &&
	      linfo.stop == info.stop && linfo.cfi_frames == info.cfi_frames,
	      "the qsort walk with lazy tables is the walk with whole ones (%u frames, %u cfi)",
	      ln, linfo.cfi_frames);
	unwind_modules_release(&lmods);
	unwind_cache_free(lc);
	NOTAIL();
}

/* Walking the live stack in place, as the agent will. */
static __attribute__((noinline)) void test_self_reader(void)
{
	uint64_t ips[MAX_FRAMES], rip, rsp, rbp, v = 0, syscalls;
	char names[MAX_FRAMES][64];
	struct unwind_self_reader r;
	struct unwind_info info;
	struct unwind_regs regs;
	unsigned n;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(rip), "=r"(rsp), "=r"(rbp)::"memory");
	regs = (struct unwind_regs){ rip, rsp, rbp };
	unwind_self_reader_init(&r, rsp, stack_end);
	n = unwind_walk_ex(&regs, &mods, unwind_read_self, &r, ips, MAX_FRAMES, &info);
	name_stack(ips, n, names);
	print_stack("self reader", names, n);
	CHECK(find_frame(names, n, 0, "main") == 1 && info.stop == UNWIND_STOP_END,
	      "in-process walk reaches main and _start");
	CHECK(unwind_read_self(&r, 0, &v, 8) == -1 && unwind_read_self(&r, 8, &v, 8) == -1,
	      "self reader: unmapped address is -1, not a crash");
	errno = 1234;
	CHECK(unwind_read_self(&r, (uint64_t)(uintptr_t)&cmp_calls, &v, 4) == 0 && errno == 1234,
	      "self reader: heap/data via syscall, errno preserved");
	errno = 4321;
	CHECK(unwind_read_self(&r, 8, &v, 8) == -1 && errno == 4321,
	      "self reader: a failed read (EFAULT) leaves errno as it was");
	v = 0;
	syscalls = r.syscalls;
	CHECK(unwind_read_self(&r, rsp, &v, 8) == 0 && v == *(const uint64_t *)(uintptr_t)rsp &&
	      r.syscalls == syscalls,
	      "self reader: a read on the stack is a plain load (no system call)");
	NOTAIL();
}

static uint64_t rng = 88172645463325252ull;
static uint64_t xrand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Random registers and stack words, biased towards plausible values
 * (addresses in the buffer, real code addresses) so deep paths run. */
static void test_garbage(void)
{
	static uint8_t buf[16384];
	uint64_t ips[64], text = (uint64_t)(uintptr_t)&level2;
	uint64_t libc_text = (uint64_t)(uintptr_t)&qsort;
	const uint64_t base = 0x7ffd00000000ull;
	unsigned bad = 0, deep = 0, iters = 200000;
	struct unwind_self_reader self;

	for (unsigned it = 0; it < iters; it++) {
		struct unwind_stack_copy sc = { base, buf, sizeof(buf) };
		struct unwind_regs regs;
		bool trunc = false;
		unsigned n;

		for (size_t i = 0; i < sizeof(buf); i += 8) {
			uint64_t r = xrand(), w;
			switch (r & 7) {
			case 0: case 1: w = base + (xrand() % sizeof(buf)); break;
			case 2: w = text + (xrand() % 4096) - 2048; break;
			case 3: w = libc_text + (xrand() % 65536) - 32768; break;
			case 4: w = 0; break;
			default: w = xrand(); break;
			}
			memcpy(buf + i, &w, 8);
			if (it % 16 && i > 512)
				break; /* refresh only the top most of the time */
		}
		regs.rip = (it & 1) ? text + (xrand() % 8192) - 4096 : libc_text + (xrand() % 65536);
		regs.rsp = base + (xrand() % sizeof(buf)) - (it % 5 == 0 ? 64 : 0);
		regs.rbp = (it & 2) ? base + (xrand() % sizeof(buf)) : xrand();
		n = unwind_walk(&regs, &mods, unwind_read_stack_copy, &sc, ips, 64, &trunc);
		if (n > 64 || n == 0)
			bad++;
		if (n > 3)
			deep++;
	}
	CHECK(!bad, "%u random walks over a copied stack end cleanly (%u went > 3 deep)",
	      iters, deep);

	/* The in-process reader on random addresses: EFAULT, not SIGSEGV. */
	unwind_self_reader_init(&self, 0, 0);
	bad = 0;
	for (unsigned it = 0; it < 20000; it++) {
		struct unwind_regs regs = { xrand(), xrand() & ~7ull, xrand() };
		bool trunc = false;
		unsigned n;

		if (it & 1)
			regs.rip = text + (xrand() % 4096);
		n = unwind_walk(&regs, &mods, unwind_read_self, &self, ips, 64, &trunc);
		if (n == 0 || n > 64 || (n < 64 && !trunc && n > 1 && 0))
			bad++;
	}
	CHECK(!bad, "20000 random in-process walks end cleanly");
	{
		/* AX..R15 as perf sends them: IP is the 9th value. */
		uint64_t pr[24], mask = 0xff0fffull; /* AX..IP, R8..R15: no segs */
		struct unwind_regs got = { 0, 0, 0 };
		unsigned k = 0;

		for (unsigned bit = 0; bit < 24; bit++)
			if (mask & (1ull << bit))
				pr[k++] = 1000 + bit;
		CHECK(unwind_regs_from_perf(pr, k, mask, &got) == 0 && got.rip == 1008 &&
		      got.rsp == 1007 && got.rbp == 1006, "perf regs: ip, sp, bp picked by mask");
		CHECK(unwind_regs_from_perf(pr, k, mask & ~(1ull << 6), &got) == -EINVAL &&
		      unwind_regs_from_perf(pr, 2, mask, &got) == -EINVAL,
		      "perf regs: missing bp or short block refused");
	}
	{
		bool trunc = false;
		struct unwind_regs regs = { 0, 0, 0 };
		unsigned n = unwind_walk(&regs, &mods, unwind_read_self, &self, ips, 0, &trunc);
		CHECK(n == 0 && trunc, "max 0: nothing written, truncated");
	}
}


/* ---- sampling this process with SIGPROF, walking in the handler ---- */

static uint64_t main_lo, main_hi;
static volatile unsigned prof_samples, prof_main, prof_trunc;

static void on_prof(int sig, siginfo_t *si, void *ucv)
{
	const ucontext_t *uc = ucv;
	int saved = errno;
	struct unwind_regs regs = {
		(uint64_t)uc->uc_mcontext.gregs[REG_RIP],
		(uint64_t)uc->uc_mcontext.gregs[REG_RSP],
		(uint64_t)uc->uc_mcontext.gregs[REG_RBP],
	};
	struct unwind_self_reader r;
	uint64_t ips[MAX_FRAMES];
	bool trunc = true;
	unsigned n;

	(void)sig;
	(void)si;
	unwind_self_reader_init(&r, regs.rsp, stack_end);
	n = unwind_walk(&regs, &mods, unwind_read_self, &r, ips, MAX_FRAMES, &trunc);
	prof_samples++;
	for (unsigned i = 0; i < n; i++) {
		uint64_t pc = i ? ips[i] - 1 : ips[i];
		if (pc >= main_lo && pc < main_hi) {
			prof_main++;
			break;
		}
	}
	if (trunc)
		prof_trunc++;
	errno = saved;
}

static volatile uint64_t sink;

NOFP int cmp_nofp(const void *a, const void *b);
NOFP int cmp_nofp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	for (int i = 0; i < 20; i++) /* a costly comparator */
		x = x * 6364136223846793005ull + 1, y = y * 6364136223846793005ull + 1;
	return (x > y) - (x < y);
}

NOFP uint64_t fib_nofp(unsigned k);
NOFP uint64_t fib_nofp(unsigned k)
{
	return k < 2 ? k : fib_nofp(k - 1) + fib_nofp(k - 2);
}

NOFP void work_nofp(void);
NOFP void work_nofp(void)
{
	static uint64_t v[2048];
	static char a[8192], b[8192];

	for (unsigned i = 0; i < 2048; i++)
		v[i] = xrand();
	qsort(v, 2048, sizeof(v[0]), cmp_nofp);
	for (int i = 0; i < 50; i++) {
		memset(a, 'a' + i % 26, sizeof(a) - 1);
		memcpy(b, a, sizeof(a));
		sink += strlen(b);
	}
	sink += fib_nofp(20);
	NOTAIL();
}

static __attribute__((noinline)) void test_sigprof(void)
{
	struct sigaction sa = { .sa_sigaction = on_prof, .sa_flags = SA_SIGINFO | SA_RESTART };
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } }, off = { { 0, 0 }, { 0, 0 } };
	struct timespec t0, t1;

	for (unsigned i = 0; i < nsyms; i++)
		if (!strcmp(syms[i].name, "main"))
			main_lo = syms[i].start + exe_bias, main_hi = main_lo + syms[i].size;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		work_nofp();
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while (prof_samples < 400 && t1.tv_sec - t0.tv_sec < 10);
	setitimer(ITIMER_PROF, &off, NULL);
	signal(SIGPROF, SIG_IGN);
	printf("# SIGPROF: %u samples, %u reach main, %u truncated\n", prof_samples, prof_main,
	       prof_trunc);
	CHECK(prof_samples >= 100 && prof_main * 100 >= prof_samples * 95,
	      "in a signal handler, >= 95%% of samples of -fomit-frame-pointer code reach main "
	      "(%u of %u)", prof_main, prof_samples);
	NOTAIL();
}

int main(void)
{
	int err;

	load_exe_symbols();
	find_stack_end();
	CHECK(nsyms > 0 && exe_bias && stack_end, "test setup: symbols and stack found");
	cache = unwind_cache_new();
	unwind_modules_init(&mods);
	err = unwind_modules_from_maps(&mods, cache, 0);
	CHECK(err == 0, "modules from /proc/self/maps (%d)", err);
	test_tables();
	test_synthetic();
	test_chain();
	test_qsort();
	test_lazy();
	test_self_reader();
	test_garbage();
	test_sigprof();
	unwind_modules_release(&mods);
	unwind_cache_free(cache);
	unwind_cache_free(NULL);
	return test_done();
}
