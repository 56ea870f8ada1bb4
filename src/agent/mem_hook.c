/* mem_hook: when an allocator is preloaded before libnprof.so
 * (LD_PRELOAD=libjemalloc.so.2:libnprof.so), or the program defines
 * malloc itself (a sanitizer's runtime does), every module binds malloc &
 * co. to that definition and the agent's interposers never run. This file
 * makes that definition the one the agent forwards to (mem_real) and
 * points the callers at the agent: in each loaded module's GOT, the slots
 * of JUMP_SLOT and GLOB_DAT relocations naming a function of the malloc
 * family are rewritten from that definition (or from a lazy-binding stub
 * not resolved yet) to the agent's own. heaptrack's inject mode works the
 * same way.
 *
 * Not when the definition ahead is a wrapper that forwards to the next
 * one with RTLD_NEXT, as the agent itself does (another malloc profiler
 * preloaded first): that next one is the agent, already called, and
 * forwarding to the wrapper would go round for ever. A probe tells them
 * apart: the first malloc and free are called once, with MEM_GATE_PROBE
 * set and this thread marked; the agent's slow path notes whether it was
 * reached. The lock functions are never redirected: what comes before
 * the agent there (a sanitizer's interceptors) wraps.
 *
 * Left alone: the agent's own module (its calls must reach the real
 * functions), the module that defines the function (an allocator calls
 * itself), and slots bound to any other definition (a module that chose
 * another, with RTLD_DEEPBIND or a symbol version). Calls the dynamic
 * linker makes through pointers of its own, and direct calls inside the
 * module that defines the function (a program's own malloc), are not
 * redirected. Cold code: runs when an engine is turned on, under heap.c's
 * lock.
 *
 * The other way round, when the agent's definitions come first (the usual
 * LD_PRELOAD=libnprof.so), mem_hook_route points the program's PLT slots
 * past the agent, at the real functions, while no engine needs to see
 * their calls (below). */
#include "agent/mem_hook.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "agent/hot/alloc.h"

#define MAX_TARGETS 32
#define PAGE 4096ul
/* Slots remembered for mem_hook_uninstall; past this many, the rest stay
 * pointed at the agent (which forwards: correct, a little slower). */
#define MAX_PATCHED 8192

struct target {
	const struct mem_hook *h;
	void *first; /* the definition callers are bound to */
};

struct walk {
	struct target t[MAX_TARGETS];
	unsigned n;
	struct mem_hook_result *r;
};

struct hooked_module {
	struct dl_phdr_info *info;
	uintptr_t relro_lo, relro_hi;
};

static bool in_module(const struct dl_phdr_info *info, const void *p)
{
	uintptr_t a = (uintptr_t)p;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz)
			return true;
	}
	return false;
}

/* glibc relocates most d_ptr values of a loaded module in place, not all
 * of them in every module (the vDSO's, read-only ones): an address below
 * the load bias is still relative. */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) v)
{
	return v < info->dlpi_addr ? info->dlpi_addr + v : v;
}

/* Every slot pointed at the agent, with what it held, for undoing. */
static struct patched {
	void **slot;
	void *old, *own;
	bool ro;
} patched[MAX_PATCHED];
static unsigned npatched;

/* An aligned 8-byte store, its page made writable for it when in RELRO
 * (and read-only again): a thread calling through the slot meanwhile sees
 * the old or the new. */
static bool store_slot(void **slot, void *v, bool ro)
{
	uintptr_t page = (uintptr_t)slot & ~(PAGE - 1);

	if (ro && mprotect((void *)page, PAGE, PROT_READ | PROT_WRITE) < 0)
		return false;
	__atomic_store_n(slot, v, __ATOMIC_RELEASE);
	if (ro)
		mprotect((void *)page, PAGE, PROT_READ);
	return true;
}

/* One slot of module m pointed at v, remembered for mem_hook_uninstall. */
static bool write_slot(const struct hooked_module *m, void **slot, void *v)
{
	uintptr_t a = (uintptr_t)slot;
	bool ro = a >= m->relro_lo && a < m->relro_hi;
	void *old = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!store_slot(slot, v, ro))
		return false;
	if (npatched < MAX_PATCHED)
		patched[npatched++] = (struct patched){ slot, old, v, ro };
	return true;
}

static const struct target *find(const struct walk *w, const char *name)
{
	for (unsigned i = 0; i < w->n; i++)
		if (!strcmp(w->t[i].h->name, name))
			return &w->t[i];
	return NULL;
}

static void patch_relocs(struct walk *w, const struct hooked_module *m, const ElfW(Rela) *r, size_t n,
			 const ElfW(Sym) *symtab, const char *strtab)
{
	for (size_t i = 0; i < n; i++) {
		unsigned type = (unsigned)ELF64_R_TYPE(r[i].r_info);
		const struct target *t;
		void **slot, *cur;

		if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
			continue;
		t = find(w, strtab + symtab[ELF64_R_SYM(r[i].r_info)].st_name);
		if (!t || in_module(m->info, t->first))
			continue;
		slot = (void **)(m->info->dlpi_addr + r[i].r_offset);
		cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
		if (cur == t->h->own || (cur != t->first && !in_module(m->info, cur)))
			continue;
		if (write_slot(m, slot, t->h->own))
			w->r->slots++;
		else
			w->r->failed++;
	}
}

/* The dynamic relocations of one loaded module, and what they name. */
struct module_relocs {
	struct hooked_module m;
	const ElfW(Rela) *plt, *rela;	/* DT_JMPREL (JUMP_SLOT), DT_RELA (GLOB_DAT) */
	size_t nplt, nrela;
	const ElfW(Sym) *symtab;
	const char *strtab;
};

static bool module_relocs(struct dl_phdr_info *info, struct module_relocs *ret)
{
	struct module_relocs r = { .m.info = info };
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t jmprel = 0, rela = 0;
	size_t pltrelsz = 0, relasz = 0;
	ElfW(Sxword) pltrel = DT_RELA;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		if (ph->p_type == PT_GNU_RELRO) {
			r.m.relro_lo = (info->dlpi_addr + ph->p_vaddr) & ~(PAGE - 1);
			r.m.relro_hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + PAGE - 1) &
				       ~(PAGE - 1);
		}
	}
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB: r.symtab = (const ElfW(Sym) *)dyn_addr(info, dyn->d_un.d_ptr); break;
		case DT_STRTAB: r.strtab = (const char *)dyn_addr(info, dyn->d_un.d_ptr); break;
		case DT_JMPREL: jmprel = dyn_addr(info, dyn->d_un.d_ptr); break;
		case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
		case DT_PLTREL: pltrel = dyn->d_un.d_val; break;
		case DT_RELA: rela = dyn_addr(info, dyn->d_un.d_ptr); break;
		case DT_RELASZ: relasz = dyn->d_un.d_val; break;
		}
	}
	if (!r.symtab || !r.strtab)
		return false;
	if (jmprel && pltrel == DT_RELA) {
		r.plt = (const ElfW(Rela) *)jmprel;
		r.nplt = pltrelsz / sizeof(ElfW(Rela));
	}
	if (rela) {
		r.rela = (const ElfW(Rela) *)rela;
		r.nrela = relasz / sizeof(ElfW(Rela));
	}
	*ret = r;
	return true;
}

static int patch_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	struct module_relocs r;

	(void)size;
	if (in_module(info, w->t[0].h->own))
		return 0; /* the agent itself */
	if (!module_relocs(info, &r))
		return 0;
	patch_relocs(w, &r.m, r.plt, r.nplt, r.symtab, r.strtab);
	patch_relocs(w, &r.m, r.rela, r.nrela, r.symtab, r.strtab);
	return 0;
}

struct find_module {
	const void *p;
	int i, found;
};

static int find_module_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find_module *f = arg;

	(void)size;
	if (in_module(info, f->p)) {
		f->found = f->i;
		return 1;
	}
	f->i++;
	return 0;
}

/* Where p's module is in the search order (the initial modules are, in
 * dl_iterate_phdr's order); INT_MAX when in none. */
static int module_rank(const void *p)
{
	struct find_module f = { .p = p, .found = INT_MAX };

	dl_iterate_phdr(find_module_cb, &f);
	return f.found;
}

/* The definition of name that modules bind to. They reference the malloc
 * family at glibc's base version, which an unversioned definition (the
 * agent's, jemalloc's: dlsym finds those) and one of that version
 * (glibc's libc_malloc_debug.so defines only malloc@GLIBC_2.2.5: dlvsym
 * finds it, dlsym does not) both satisfy: the first of the two in the
 * search order. */
static void *first_of(const char *name)
{
	void *d = dlsym(RTLD_DEFAULT, name);
	void *v = dlvsym(RTLD_DEFAULT, name, "GLIBC_2.2.5");

	if (!d || !v || d == v)
		return d ? d : v;
	return module_rank(v) < module_rank(d) ? v : d;
}

/* Does the first malloc, or the first free, come round to the agent's? */
static bool wraps(void *(*first_malloc)(size_t), void (*first_free)(void *))
{
	struct mem_thread *t = &mem_self;
	void *p;

	t->probing = 1;
	t->probe_hit = 0;
	atomic_fetch_or(&mem.gate, MEM_GATE_PROBE);
	p = first_malloc(1);
	first_free(p);
	atomic_fetch_and(&mem.gate, ~(unsigned)MEM_GATE_PROBE);
	t->probing = 0;
	return t->probe_hit;
}

/* Once: is there a malloc family ahead of the agent's to forward to? If
 * so, mem_real's slots of the family are set to it. Later calls only
 * patch (modules loaded since). */
static int decided; /* 0 not yet, 1 redirect, -1 nothing to redirect */

static void decide(void)
{
	void *(*first_malloc)(size_t) = (void *(*)(size_t))first_of("malloc");
	void (*first_free)(void *) = (void (*)(void *))first_of("free");

	decided = -1;
	if (!first_malloc || !first_free || (void *)first_malloc == mem_hooks[0].own ||
	    !mem_hooks[0].own || wraps(first_malloc, first_free))
		return;
	for (unsigned i = 0; i < mem_nhooks; i++) {
		const struct mem_hook *h = &mem_hooks[i];
		void *first = h->alloc ? first_of(h->name) : NULL;

		/* A name the allocator ahead lacks is the agent's own first:
		 * its next (mem_boot's) stays, as without the agent. */
		if (first && first != h->own)
			__atomic_store_n(h->real, first, __ATOMIC_RELEASE);
	}
	decided = 1;
}

/* A lock function is pointed at the agent only when the C library's own
 * definition comes first, as after `nprof attach` (the agent loaded after
 * it): anything else ahead (a sanitizer's interceptor) wraps the function
 * and calls the agent's. */
static void *lock_first(const struct mem_hook *h)
{
	void *first;
	const char *base;
	Dl_info dl;

	if (!h->own)
		return NULL; /* the try-locks: nothing to time */
	first = first_of(h->name);
	if (!first || first == h->own || !dladdr(first, &dl) || !dl.dli_fname)
		return NULL;
	base = strrchr(dl.dli_fname, '/');
	return !strncmp(base ? base + 1 : dl.dli_fname, "libc.so", 7) ? first : NULL;
}

int mem_hook_install(struct mem_hook_result *ret)
{
	struct walk w = { .r = ret };
	Dl_info dl;

	memset(ret, 0, sizeof(*ret));
#if !defined(__x86_64__)
	return -ENOTSUP;
#endif
	mem_boot();
	if (!decided)
		decide();
	if (decided < 0)
		return 0;
	for (unsigned i = 0; i < mem_nhooks && w.n < MAX_TARGETS; i++) {
		const struct mem_hook *h = &mem_hooks[i];
		void *first = h->alloc ? first_of(h->name) : lock_first(h);

		if (!first || first == h->own || first != __atomic_load_n(h->real, __ATOMIC_ACQUIRE))
			continue;
		w.t[w.n].h = h;
		w.t[w.n].first = first;
		if (!ret->first[0] && dladdr(first, &dl) && dl.dli_fname) {
			const char *base = strrchr(dl.dli_fname, '/');

			strncpy(ret->first, base ? base + 1 : dl.dli_fname, sizeof(ret->first) - 1);
			if (!ret->first[0])
				strncpy(ret->first, "the program", sizeof(ret->first) - 1);
		}
		w.n++;
	}
	if (w.n)
		dl_iterate_phdr(patch_module, &w);
	return 0;
}

/* --- routing, when the agent's definitions come first ---------------------------
 * Every module then binds the interposed functions to the agent, which,
 * with no engine on, only forwards: a few instructions a call, a few
 * percent of a malloc-bound program (docs/performance.md). mem_hook_route
 * points each PLT slot (JUMP_SLOT) of a function at the real definition
 * while the gate has none of the bits that function's interposer tests
 * (hot/alloc.h, MEM_NEEDS_*), and at the agent's (mem_hook.on) while it has one: with
 * nothing on, the program calls the C library directly; with alloc on but
 * not heap, its frees do.
 *
 * Only PLT slots: one is read afresh at each call, so a switch holds from
 * the next call on. A GLOB_DAT slot also gives the function's address
 * (&free kept as a callback; calls compiled with -fno-plt, as the C
 * library's own are): an address taken while routed past the agent would
 * still call the C library once heap is on, and the blocks freed through
 * it would stay in the live set. Those slots keep the agent's definition,
 * which forwards. So do modules loaded since the last route (they bind to
 * the agent), slots bound to another definition, and the slots of a
 * module that defines the function itself. */

struct route {
	const struct mem_hook *h;
	void *to;	/* where the slots should point: h->on or *h->real */
	void *real;
};

struct routing {
	struct route r[MAX_TARGETS];
	unsigned n;
	unsigned failed;
};

static const struct route *find_route(const struct routing *w, const char *name)
{
	for (unsigned i = 0; i < w->n; i++)
		if (!strcmp(w->r[i].h->name, name))
			return &w->r[i];
	return NULL;
}

static int route_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct routing *w = arg;
	struct module_relocs m;

	(void)size;
	if (in_module(info, w->r[0].h->own) || !module_relocs(info, &m))
		return 0; /* the agent's own calls must reach it */
	for (size_t i = 0; i < m.nplt; i++) {
		const ElfW(Sym) *sym = &m.symtab[ELF64_R_SYM(m.plt[i].r_info)];
		const struct route *r;
		void **slot, *cur;

		if (ELF64_R_TYPE(m.plt[i].r_info) != R_X86_64_JUMP_SLOT ||
		    sym->st_shndx != SHN_UNDEF || !(r = find_route(w, m.strtab + sym->st_name)))
			continue;
		slot = (void **)(info->dlpi_addr + m.plt[i].r_offset);
		cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
		/* The agent's definition (exported or routed) or the real
		 * one, or a lazy-binding stub (in the module: the name is
		 * not defined there); any other was chosen. */
		if (cur == r->to || !(cur == r->h->own || cur == r->h->on || cur == r->real ||
				      in_module(info, cur)))
			continue;
		if (!store_slot(slot, r->to, (uintptr_t)slot >= m.m.relro_lo &&
						 (uintptr_t)slot < m.m.relro_hi))
			w->failed++;
	}
	return 0;
}

int mem_hook_route(unsigned g)
{
	struct routing w = { .n = 0 };

#if !defined(__x86_64__)
	return -ENOTSUP;
#endif
	for (unsigned i = 0; i < mem_nhooks && w.n < MAX_TARGETS; i++) {
		const struct mem_hook *h = &mem_hooks[i];
		void *real = __atomic_load_n(h->real, __ATOMIC_ACQUIRE);

		if (!h->own || !h->needs || !real || first_of(h->name) != h->own)
			continue;
		w.r[w.n].h = h;
		w.r[w.n].to = g & h->needs ? h->on : real;
		w.r[w.n].real = real;
		w.n++;
	}
	if (w.n)
		dl_iterate_phdr(route_module, &w);
	return w.failed ? -EPERM : 0;
}

/* Restores the slots of one still-loaded module. */
static int unpatch_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned *restored = arg;

	(void)size;
	for (unsigned i = 0; i < npatched; i++) {
		struct patched *p = &patched[i];

		if (!p->slot || !in_module(info, p->slot))
			continue;
		/* Only a slot that still holds what was written: the program
		 * (or the loader) may have rebound it since. */
		if (__atomic_load_n(p->slot, __ATOMIC_ACQUIRE) == p->own &&
		    store_slot(p->slot, p->old, p->ro))
			(*restored)++;
		p->slot = NULL;
	}
	return 0;
}

unsigned mem_hook_uninstall(void)
{
	unsigned restored = 0;

	/* Modules unloaded since are skipped: their slots are gone. */
	dl_iterate_phdr(unpatch_module, &restored);
	npatched = 0;
	return restored;
}
