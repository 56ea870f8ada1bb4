/* symbolize: ties maps, modules, the kernel and perf maps together.
 * Lookup order for an address (docs/symbolize.md):
 *   kernel (flag, or top bit set) -> /proc/kallsyms
 *   in an ELF mapping -> the module's symbols (own .symtab, else debug
 *                        file's, plus .dynsym); the vDSO from memory
 *   otherwise, or no symbol -> /tmp/perf-PID.map
 *   nothing -> "module+0xOFFSET"
 * and, with SYM_LINES, the module's DWARF adds file:line and inlined
 * frames (dwarf_lines.c). */
#include "symbolize/symbolize.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/array.h"
#include "base/clock.h"
#include "base/hex.h"
#include "base/proc.h"
#include "base/target_files.h"
#include "symbolize/demangle.h"
#include "symbolize/dwarf_lines.h"
#include "symbolize/kallsyms.h"
#include "symbolize/maps.h"
#include "symbolize/perfmap.h"
#include "symbolize/strpool.h"
#include "symbolize/symcache.h"
#include "symbolize/vdso.h"

#define KALLSYMS_MAX_BYTES (256u << 20)
#define PERFMAP_MAX_BYTES (1u << 30)
#define NO_MODULE UINT32_MAX
/* A JIT appends to its perf map; an unnamed address re-reads it, but not
 * more often than this. */
#define PERFMAP_RELOAD_NS (100 * 1000000ull)

struct symbolizer {
	struct symcache *cache;
	struct strpool strings;		/* every name and module handed out */
	/* /proc/kallsyms is read by a loader thread started when a process
	 * is opened with kernel symbols, so that the read (tens of ms of
	 * kernel time for >100k symbols) overlaps the recording instead of
	 * delaying its end. kernel and kernel_msg belong to the loader while
	 * kernel_loading; the first kernel lookup joins it. */
	struct kallsyms kernel;
	char kernel_msg[400];		/* why kernel frames stay unnamed */
	pthread_t kernel_loader;
	bool kernel_loading;
	bool kernel_loaded;
	const char *kernel_problem;	/* interned, or NULL */
};

/* A file (or the vDSO) mapped by the process; mappings of the same file
 * share one. */
struct pmod {
	char *path;		/* as mapped, without " (deleted)" */
	uint64_t inode;
	uint32_t maj, min;
	enum map_kind kind;
	int deleted;
	uint64_t start, end;	/* one mapping of it, for map_files and vdso */
	const char *name;	/* interned path, reported as the module */
	const char *base;	/* interned basename, for "base+0xOFF" */
	struct symmod *mod;	/* NULL until loaded, or when not ELF */
	const char *build_id;	/* interned hex, once loaded; or NULL */
	bool tried;
	bool dwarf_tried;	/* asked the cache for its DWARF */
	bool is_main;
	bool code;		/* one of its mappings is executable (or the vDSO) */
};

struct proc_syms {
	struct symbolizer *s;
	pid_t pid;
	bool kernel;
	struct target_files *tf; /* its files, read as its user may (NULL: gone) */
	bool loaded;		/* proc_syms_load ran: code is read as it is mapped */
	char *exe;		/* the main executable's path, or NULL */
	struct maps maps;	/* entries' user: index in mods, or NO_MODULE */
	struct pmod *mods;
	size_t nmods, mods_cap;
	struct perfmap perfmap;
	char perfmap_path[PATH_MAX];	/* the perf map found, ... */
	bool perfmap_in_world;		/* ... in its world (else on this host) */
	const char *perfmap_module;
	uint64_t perfmap_read_ns;	/* CLOCK_MONOTONIC of the last read */
};

struct symbolizer *symbolizer_new(void)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->cache = symcache_new();
	if (!s->cache || kallsyms_init(&s->kernel) < 0) {
		symcache_free(s->cache);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	strpool_init(&s->strings, 0);
	return s;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	if (s->kernel_loading)
		pthread_join(s->kernel_loader, NULL);
	symcache_free(s->cache);
	strpool_release(&s->strings);
	kallsyms_release(&s->kernel);
	free(s);
}

void symbolizer_get_stats(const struct symbolizer *s,
			  struct symbolizer_stats *ret)
{
	struct symcache_stats cs;

	symcache_get_stats(s->cache, &cs);
	ret->modules_parsed = cs.modules_parsed;
	ret->cache_hits = cs.cache_hits;
	ret->debug_files = cs.debug_files;
	ret->dwarf_modules = cs.dwarf_modules;
}

static int read_int_file(const char *path)
{
	char *buf;
	size_t len;
	int v = -1;

	if (proc_read_file(path, 64, &buf, &len) == 0) {
		v = atoi(buf);
		free(buf);
	}
	return v;
}

/* Reads and parses /proc/kallsyms into s->kernel, the reason it is of no
 * use (if any) into s->kernel_msg. Runs on the loader thread or, when that
 * could not start, on the caller's: touches nothing else of s. Modules
 * loaded later are not seen (documented). */
static void read_kernel(struct symbolizer *s)
{
	char *buf = NULL, *msg = s->kernel_msg;
	size_t len, cap = sizeof(s->kernel_msg);
	int err;

	msg[0] = '\0';
	err = proc_read_file("/proc/kallsyms", KALLSYMS_MAX_BYTES, &buf, &len);
	if (err < 0) {
		snprintf(msg, cap,
			 "cannot read /proc/kallsyms: %s; kernel frames stay unnamed",
			 strerror(-err));
		goto out;
	}
	err = kallsyms_parse(&s->kernel, buf, len);
	kallsyms_finish(&s->kernel);
	if (err < 0 && !s->kernel.n) {
		snprintf(msg, cap,
			 "cannot parse /proc/kallsyms: %s; kernel frames stay unnamed",
			 strerror(-err));
	} else if (kallsyms_all_zero(&s->kernel)) {
		snprintf(msg, cap,
			 "/proc/kallsyms shows zero addresses (kernel.kptr_restrict=%d, "
			 "kernel.perf_event_paranoid=%d): kernel frames stay unnamed; "
			 "run as root, or set kernel.kptr_restrict=0 and "
			 "kernel.perf_event_paranoid<=1",
			 read_int_file("/proc/sys/kernel/kptr_restrict"),
			 read_int_file("/proc/sys/kernel/perf_event_paranoid"));
	} else if (!s->kernel.n) {
		snprintf(msg, cap,
			 "/proc/kallsyms lists no symbols; kernel frames stay unnamed");
	}
out:
	free(buf);
}

static void *kernel_loader_main(void *arg)
{
	read_kernel(arg);
	return NULL;
}

/* Starts reading the kernel's symbols in the background, once. When no
 * thread can be started, the first kernel lookup reads them itself. */
static void prefetch_kernel(struct symbolizer *s)
{
	if (s->kernel_loaded || s->kernel_loading)
		return;
	s->kernel_loading =
		pthread_create(&s->kernel_loader, NULL, kernel_loader_main, s) == 0;
}

/* Makes the kernel's symbols ready: joins the loader, or reads them now. */
static void load_kernel(struct symbolizer *s)
{
	if (s->kernel_loaded)
		return;
	if (s->kernel_loading) {
		pthread_join(s->kernel_loader, NULL);
		s->kernel_loading = false;
	} else {
		read_kernel(s);
	}
	s->kernel_loaded = true;
	if (s->kernel_msg[0])
		s->kernel_problem = strpool_intern(&s->strings, s->kernel_msg);
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/* The module slot for a mapping, shared by mappings of the same file. */
static int pmod_for(struct proc_syms *ps, const struct map_entry *e,
		    uint32_t *ret_idx)
{
	struct pmod *pm;
	int err = -ENOMEM;

	if (e->kind != MAPK_FILE && e->kind != MAPK_MEMFD && e->kind != MAPK_VDSO) {
		*ret_idx = NO_MODULE;
		return 0;
	}
	for (size_t i = 0; i < ps->nmods; i++) {
		pm = &ps->mods[i];
		if (pm->kind == e->kind && pm->inode == e->inode &&
		    pm->maj == e->maj && pm->min == e->min &&
		    pm->deleted == e->deleted && !strcmp(pm->path, e->path)) {
			*ret_idx = (uint32_t)i;
			return 0;
		}
	}
	if (ps->nmods + 1 >= NO_MODULE)
		return -E2BIG;
	if (array_reserve(&ps->mods, &ps->mods_cap, ps->nmods + 1, sizeof(*ps->mods)) < 0)
		goto out;
	pm = &ps->mods[ps->nmods];
	memset(pm, 0, sizeof(*pm));
	pm->path = strdup(e->path);
	if (!pm->path)
		goto out;
	pm->name = strpool_intern(&ps->s->strings, e->path);
	pm->base = strpool_intern(&ps->s->strings, basename_of(e->path));
	if (!pm->name || !pm->base) {
		free(pm->path);
		goto out;
	}
	pm->inode = e->inode;
	pm->maj = e->maj;
	pm->min = e->min;
	pm->kind = e->kind;
	pm->deleted = e->deleted;
	pm->start = e->start;
	pm->end = e->end;
	pm->is_main = e->kind != MAPK_VDSO && ps->exe && !strcmp(ps->exe, e->path);
	*ret_idx = (uint32_t)ps->nmods++;
	err = 0;
out:
	return err;
}

/* Opens the mapped file: the file itself (map_files, when nprof may), else
 * by its path in the process's world checked to be the mapped inode
 * (base/target_files.h); for a process that has exited since, by its path
 * on this host -- only with the rights of its own user. */
static int pmod_open(const struct proc_syms *ps, const struct pmod *pm)
{
	bool pathless = pm->deleted || pm->kind == MAPK_MEMFD;
	const char *path = pathless || pm->path[0] != '/' ? NULL : pm->path;
	struct stat st;
	int fd = -ENOENT;

	if (ps->tf)
		fd = target_files_open_mapped(ps->tf, pm->start, pm->end, pm->inode, path);
	if (fd < 0 && path && pm->kind == MAPK_FILE &&
	    (!ps->tf || !target_files_privileged(ps->tf))) {
		fd = target_files_open_host(path, false);
		/* A path can now name a different file (a package upgrade
		 * replaced it): only the mapped inode will do. */
		if (fd >= 0 && pm->inode && (fstat(fd, &st) < 0 || (uint64_t)st.st_ino != pm->inode)) {
			close(fd);
			fd = -ESTALE;
		}
	}
	return fd;
}

static void set_build_id(struct proc_syms *ps, struct pmod *pm)
{
	char hex[2 * ELF_MAX_BUILD_ID + 1];
	const struct elf_info *info = pm->mod ? &pm->mod->info : NULL;

	if (!info || !info->build_id_len)
		return;
	hex_encode(info->build_id, info->build_id_len, hex);
	pm->build_id = strpool_intern(&ps->s->strings, hex);
}

/* Loads the module of a slot once; failure leaves it without symbols. */
static void pmod_load(struct proc_syms *ps, struct pmod *pm)
{
	struct symcache *c = ps->s->cache;
	char *image = NULL;
	int fd;

	if (pm->tried)
		return;
	pm->tried = true;
	if (pm->kind == MAPK_VDSO) {
		if (vdso_read(ps->pid, pm->start, pm->end - pm->start, &image) == 0)
			symcache_get_image(c, image, pm->end - pm->start, "[vdso]",
					   &pm->mod);
		free(image);
		set_build_id(ps, pm);
		return;
	}
	fd = pmod_open(ps, pm);
	if (fd < 0)
		return;
	symcache_get_file(c, fd, pm->path, ps->tf, &pm->mod);
	close(fd);
	set_build_id(ps, pm);
}

/* Whether module slot idx holds code (one of its mappings executable,
 * or the vDSO): what proc_syms_load reads at once. */
static bool is_code(const struct proc_syms *ps, uint32_t idx)
{
	return ps->mods[idx].code;
}

static int add_entry(struct proc_syms *ps, struct map_entry *e)
{
	uint32_t idx;
	int err;

	err = pmod_for(ps, e, &idx);
	if (err < 0)
		return err;
	e->user = idx;
	err = maps_insert(&ps->maps, e);
	if (err < 0)
		return err;
	if (idx != NO_MODULE && (e->prot & PROT_EXEC || e->kind == MAPK_VDSO))
		ps->mods[idx].code = true;
	/* Code is loaded now, while the process and its files are there to
	 * read; the data a process maps is left until an address asks. */
	if (ps->loaded && idx != NO_MODULE && is_code(ps, idx))
		pmod_load(ps, &ps->mods[idx]);
	return 0;
}

static char *read_exe(pid_t pid);

/* An exec replaces the executable: the engine opens a child before its
 * exec and learns the new image's mappings from records. */
static void refresh_exe(struct proc_syms *ps)
{
	char *exe = read_exe(ps->pid);

	if (!exe)
		return; /* gone: keep what we knew */
	if (ps->exe && !strcmp(exe, ps->exe)) {
		free(exe);
		return;
	}
	free(ps->exe);
	ps->exe = exe;
	for (size_t i = 0; i < ps->nmods; i++)
		ps->mods[i].is_main = ps->mods[i].kind != MAPK_VDSO &&
				      !strcmp(ps->mods[i].path, exe);
}

int proc_syms_add_mapping(struct proc_syms *ps, const struct mapping *m)
{
	struct map_entry e;
	char *clean;
	int err;

	memset(&e, 0, sizeof(e));
	e.start = m->start;
	e.end = m->end;
	e.pgoff = m->pgoff;
	e.maj = m->maj;
	e.min = m->min;
	e.inode = m->inode;
	e.prot = m->prot;
	err = maps_classify_path(m->path ? m->path : "", &e.kind, &e.deleted,
				 &clean);
	if (err < 0)
		return err;
	e.path = clean;
	if (e.kind == MAPK_FILE && e.prot & PROT_EXEC)
		refresh_exe(ps);
	err = add_entry(ps, &e);
	free(clean);
	return err;
}

/* The perf map at path, in the process's world (as its user may) or on
 * this host (a regular file, its final name not a symlink). /tmp is
 * writable by all: only a map written by the target's user (or root) may
 * name its code. */
static int open_perfmap_file(struct proc_syms *ps, const char *path, bool in_world)
{
	struct stat st, pst;
	char proc[64];
	int fd = in_world ? (ps->tf ? target_files_open(ps->tf, path) : -ENOENT)
			  : target_files_open_host(path, true);

	if (fd < 0)
		return fd;
	snprintf(proc, sizeof(proc), "/proc/%d", (int)ps->pid);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_uid != 0 && (stat(proc, &pst) < 0 || st.st_uid != pst.st_uid))) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int proc_syms_reload_perf_map(struct proc_syms *ps)
{
	char *buf = NULL;
	size_t len;
	int fd = -1, err;
	struct stat st;

	ps->perfmap_read_ns = clock_ns(CLOCK_MONOTONIC);
	if (!ps->perfmap_path[0]) {
		char cand[2][PATH_MAX];
		pid_t nspid = proc_ns_pid(ps->pid);

		/* In its world by the pid it knows itself by, then here. */
		snprintf(cand[0], sizeof(cand[0]), "/tmp/perf-%d.map", (int)nspid);
		snprintf(cand[1], sizeof(cand[1]), "/tmp/perf-%d.map", (int)ps->pid);
		for (int i = 0; i < 2 && fd < 0; i++) {
			fd = open_perfmap_file(ps, cand[i], i == 0);
			if (fd >= 0) {
				memcpy(ps->perfmap_path, cand[i], sizeof(cand[i]));
				ps->perfmap_in_world = i == 0;
			}
		}
		err = 0; /* most processes have no perf map */
		if (fd < 0)
			goto out;
	} else {
		err = fd = open_perfmap_file(ps, ps->perfmap_path, ps->perfmap_in_world);
		if (fd < 0)
			goto out;
	}
	/* A map shorter than what was read is a new one (the pid was
	 * reused, or the JIT restarted it): start over. */
	if (fstat(fd, &st) == 0 && (size_t)st.st_size < ps->perfmap.consumed)
		perfmap_release(&ps->perfmap);
	err = proc_read_fd_from(fd, ps->perfmap.consumed, PERFMAP_MAX_BYTES,
				  &buf, &len);
	if (err < 0)
		goto out;
	err = perfmap_parse(&ps->perfmap, buf, len);
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return err;
}

static char *read_exe(pid_t pid)
{
	char link[64], target[PATH_MAX];
	ssize_t n;
	size_t dl = strlen(" (deleted)");

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return NULL;
	target[n] = '\0';
	if ((size_t)n > dl && !strcmp(target + n - dl, " (deleted)"))
		target[n - dl] = '\0';
	return strdup(target);
}

int symbolizer_open_process_maps(struct symbolizer *s, pid_t pid, bool kernel,
				 struct proc_syms **ret, struct diag *d)
{
	return symbolizer_open_process_flags(s, pid, (kernel ? SYM_OPEN_KERNEL : 0) | SYM_OPEN_LAZY,
					     NULL, 0, ret, d);
}

int symbolizer_open_process_flags(struct symbolizer *s, pid_t pid, unsigned flags,
				  const char *maps, size_t maps_len,
				  struct proc_syms **ret, struct diag *d)
{
	bool kernel = flags & SYM_OPEN_KERNEL;
	struct proc_syms *ps = NULL;
	struct maps parsed;
	char path[64], *buf = NULL;
	size_t len;
	int err;

	maps_init(&parsed);
	if (maps) {
		err = 0;
		len = maps_len;
	} else {
		err = proc_maps_read(pid, &buf, &len);
	}
	if (err < 0) {
		err = proc_maps_explain(pid, err, d);
		goto out;
	}
	err = maps_parse(&parsed, maps ? maps : buf, len, NO_MODULE);
	if (err < 0 && err != -E2BIG) {
		err = diag_set(d, err, "cannot parse /proc/%d/maps: %s", (int)pid,
			       strerror(-err));
		goto out;
	}
	err = -ENOMEM;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		goto out;
	ps->s = s;
	ps->pid = pid;
	ps->kernel = kernel;
	maps_init(&ps->maps);
	perfmap_init(&ps->perfmap);
	ps->tf = target_files_new(pid); /* NULL: it has gone, and so have its files */
	ps->exe = read_exe(pid);
	/* Without /proc/PID/exe (another user's process), the lowest file
	 * mapping is the executable: it is mapped before any library. */
	if (!ps->exe) {
		for (size_t i = 0; i < parsed.n && !ps->exe; i++)
			if (parsed.v[i].kind == MAPK_FILE)
				ps->exe = strdup(parsed.v[i].path);
	}
	for (size_t i = 0; i < parsed.n; i++) {
		err = add_entry(ps, &parsed.v[i]);
		if (err < 0)
			goto out;
	}
	err = diag_set(d, -ENOMEM, "out of memory reading the perf map of %d", (int)pid);
	snprintf(path, sizeof(path), "[perf-%d.map]", (int)pid);
	ps->perfmap_module = strpool_intern(&s->strings, path);
	if (!ps->perfmap_module)
		goto out;
	diag_clear(d);
	proc_syms_reload_perf_map(ps); /* a broken perf map is not fatal */
	if (!(flags & SYM_OPEN_LAZY))
		proc_syms_load(ps);
	*ret = ps;
	ps = NULL;
	err = 0;
out:
	proc_syms_free(ps);
	maps_release(&parsed);
	free(buf);
	return err;
}

void proc_syms_load(struct proc_syms *ps)
{
	ps->loaded = true;
	for (size_t i = 0; i < ps->nmods; i++)
		if (ps->mods[i].code)
			pmod_load(ps, &ps->mods[i]);
	/* /proc/kallsyms (megabytes of text) is read in the background from
	 * now on, so neither attaching nor finishing waits for it. */
	if (ps->kernel)
		prefetch_kernel(ps->s);
}

int symbolizer_open_process(struct symbolizer *s, pid_t pid, bool kernel,
			    struct proc_syms **ret, struct diag *d)
{
	return symbolizer_open_process_flags(s, pid, kernel ? SYM_OPEN_KERNEL : 0, NULL, 0, ret, d);
}

void proc_syms_free(struct proc_syms *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < ps->nmods; i++) {
		symcache_put(ps->s->cache, ps->mods[i].mod);
		free(ps->mods[i].path);
	}
	free(ps->mods);
	maps_release(&ps->maps);
	perfmap_release(&ps->perfmap);
	free(ps->exe);
	target_files_free(ps->tf);
	free(ps);
}

const char *proc_syms_kernel_problem(const struct proc_syms *ps)
{
	/* Only known once a kernel address was looked up. */
	return ps->kernel && ps->s->kernel_loaded ? ps->s->kernel_problem : NULL;
}

/* The name to show for a raw symbol name: demangled, without a symbol
 * version ("memcpy@@GLIBC_2.14"), simple when asked; interned. */
static const char *display_name(struct symbolizer *s, const char *raw,
				bool simple)
{
	char *dem = demangle(raw), *simp = NULL;
	const char *name, *at;

	if (dem) {
		if (simple) {
			simp = demangle_simplify(dem);
			if (!simp) {
				free(dem);
				return NULL;
			}
		}
		name = strpool_intern(&s->strings, simp ? simp : dem);
		free(dem);
		free(simp);
		return name;
	}
	at = strchr(raw, '@');
	if (at && at != raw)
		return strpool_intern_len(&s->strings, raw, (size_t)(at - raw));
	return strpool_intern(&s->strings, raw);
}

static const char *module_sym_name(struct symbolizer *s, struct symmod *m,
				   const struct elf_sym *sym, bool simple)
{
	size_t idx = (size_t)(sym - m->symtab.syms);
	const char **names = m->names[simple];

	if (!names) {
		names = calloc(m->symtab.n, sizeof(*names));
		if (!names)
			return NULL;
		m->names[simple] = names;
	}
	if (!names[idx])
		names[idx] = display_name(s, elf_symtab_name(&m->symtab, sym), simple);
	return names[idx];
}

static const char *fmt_name(struct symbolizer *s, const char *base,
			    uint64_t off)
{
	char buf[PATH_MAX + 32];

	snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base, off);
	return strpool_intern(&s->strings, buf);
}

static int lookup_kernel(struct proc_syms *ps, uint64_t addr, bool simple,
			 struct symbol_info *ret)
{
	struct symbolizer *s = ps->s;
	const struct ksym *k = NULL;
	const char *kmod = strtab_get(&s->kernel.strs, s->kernel.kernel_module);
	uint64_t base = s->kernel.text;

	if (ps->kernel) {
		load_kernel(s);
		k = kallsyms_find(&s->kernel, addr);
	}
	if (k) {
		ret->name = display_name(s, kallsyms_name(&s->kernel, k), simple);
		ret->module = kallsyms_module(&s->kernel, k);
		ret->module_offset = k->module == s->kernel.kernel_module && base
					     ? addr - base : addr;
		ret->kind = FRAME_KERNEL;
	} else {
		/* Offsets from _text when known, so the same kernel gives the
		 * same names across boots with KASLR. */
		ret->module_offset = base && addr >= base ? addr - base : addr;
		ret->name = fmt_name(s, "[kernel]", ret->module_offset);
		ret->module = kmod;
		ret->kind = FRAME_UNKNOWN;
	}
	return ret->name ? 0 : -ENOMEM;
}

/* Where an address was found in an ELF module, for SYM_LINES. */
struct elf_hit {
	struct pmod *pm;	/* NULL when not in a loaded ELF module */
	uint64_t vaddr;		/* the address as the module's symbols use it */
};

/* Names addr into *ret (untouched on failure); 0 or -ENOMEM. hit, when
 * not NULL, says where in an ELF module addr is (named by its symbols,
 * or left unnamed there). */
static int resolve(struct proc_syms *ps, uint64_t addr, bool kernel,
		   unsigned flags, struct symbol_info *ret, struct elf_hit *hit)
{
	struct symbolizer *s = ps->s;
	bool simple = flags & SYM_SIMPLE;
	const struct map_entry *e;
	const struct perfmap_entry *pe;
	struct pmod *pm = NULL;
	uint64_t off = 0;
	struct symbol_info info = { 0 };

	/* Linux puts the kernel in the top half of the address space on
	 * every 64-bit architecture it profiles. */
	if (kernel || addr >> 63) {
		if (lookup_kernel(ps, addr, simple, &info) < 0)
			return -ENOMEM;
		*ret = info;
		return 0;
	}
	e = maps_find(&ps->maps, addr);
	if (e) {
		off = addr - e->start + e->pgoff;
		if (e->user != NO_MODULE)
			pm = &ps->mods[e->user];
	}
	if (pm) {
		uint64_t vaddr;
		const struct elf_sym *sym;

		pmod_load(ps, pm);
		if (pm->mod && elf_info_offset_to_vaddr(&pm->mod->info, off, &vaddr) == 0) {
			if (hit) {
				hit->pm = pm;
				hit->vaddr = vaddr;
			}
			sym = elf_symtab_find(&pm->mod->symtab, vaddr);
		} else {
			sym = NULL;
		}
		if (sym) {
			info.name = module_sym_name(s, pm->mod, sym, simple);
			if (!info.name)
				return -ENOMEM;
			info.module = pm->name;
			info.module_offset = off;
			info.build_id = pm->build_id;
			info.kind = pm->is_main ? FRAME_USER : FRAME_LIBRARY;
			*ret = info;
			return 0;
		}
	}
	/* JITs put code in anonymous memory (or a memfd); their perf map
	 * names it. */
	pe = perfmap_find(&ps->perfmap, addr);
	if (!pe && (!pm || !pm->mod) &&
	    clock_ns(CLOCK_MONOTONIC) - ps->perfmap_read_ns > PERFMAP_RELOAD_NS) {
		proc_syms_reload_perf_map(ps);
		pe = perfmap_find(&ps->perfmap, addr);
	}
	if (pe) {
		if (hit)
			hit->pm = NULL; /* a JIT's code: no DWARF of ours */
		info.name = display_name(s, perfmap_name(&ps->perfmap, pe), simple);
		if (!info.name)
			return -ENOMEM;
		info.module = ps->perfmap_module;
		info.module_offset = addr - pe->start;
		info.kind = FRAME_JIT;
		*ret = info;
		return 0;
	}
	info.kind = FRAME_UNKNOWN;
	if (pm) {
		info.module = pm->name;
		info.module_offset = off;
		info.build_id = pm->build_id;
		info.name = fmt_name(s, pm->base, off);
	} else if (e && e->kind == MAPK_SPECIAL) {
		info.module = strpool_intern(&s->strings, e->path);
		info.module_offset = off;
		info.name = fmt_name(s, e->path, off);
		if (!info.module)
			return -ENOMEM;
	} else if (e) {
		info.module_offset = off;
		info.name = fmt_name(s, "[anon]", off);
	} else {
		info.module_offset = addr;
		info.name = fmt_name(s, "[unknown]", addr);
	}
	if (!info.name)
		return -ENOMEM;
	*ret = info;
	return 0;
}

static void unknown_info(uint64_t addr, struct symbol_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->name = "[unknown]";
	ret->module_offset = addr;
	ret->kind = FRAME_UNKNOWN;
}

int proc_syms_lookup(struct proc_syms *ps, uint64_t addr, bool kernel,
		     unsigned flags, struct symbol_info *ret)
{
	struct symbol_info info = { 0 };
	int err = resolve(ps, addr, kernel, flags, &info, NULL);

	/* The contract: always fill ret, even out of memory. */
	if (err < 0)
		unknown_info(addr, &info);
	*ret = info;
	return err;
}

/* The module's DWARF, opened at the first lookup that wants lines. The
 * file is opened again for it (the symbols were read when it was
 * mapped): through the same paths, so a process that has exited since
 * still has its files found by path when they were not deleted. */
static struct dwarf_lines *pmod_dwarf(struct proc_syms *ps, struct pmod *pm)
{
	int fd;

	if (!pm->mod || pm->kind == MAPK_VDSO)
		return NULL;
	if (!pm->mod->dwarf_tried && !pm->dwarf_tried) {
		pm->dwarf_tried = true;
		fd = pmod_open(ps, pm);
		if (fd >= 0) {
			if (symcache_open_dwarf(ps->s->cache, pm->mod, fd, pm->path,
						ps->tf) < 0)
				pm->dwarf_tried = false; /* out of memory: retry */
			close(fd);
		}
	}
	return pm->mod->dwarf;
}

void proc_syms_prefetch(struct proc_syms *ps, uint64_t addr, bool lines)
{
	const struct map_entry *e = addr >> 63 ? NULL : maps_find(&ps->maps, addr);
	struct pmod *pm;

	if (!e || e->user == NO_MODULE)
		return;
	pm = &ps->mods[e->user];
	pmod_load(ps, pm);
	if (lines)
		pmod_dwarf(ps, pm);
}

/* The name of a DWARF frame: its linkage name demangled when it has one
 * (C++, Rust), else its DW_AT_name; simple when asked; interned. */
static const char *dwarf_frame_name(struct symbolizer *s,
				    const struct dwarf_loc *loc, bool simple)
{
	const char *name;
	char *simp;

	if (loc->linkage_name) {
		char *dem = demangle(loc->linkage_name);

		if (dem) {
			free(dem);
			return display_name(s, loc->linkage_name, simple);
		}
	}
	name = loc->name ? loc->name : loc->linkage_name;
	if (!name)
		return strpool_intern(&s->strings, "[inlined]");
	if (!simple)
		return strpool_intern(&s->strings, name);
	simp = demangle_simplify(name);
	if (!simp)
		return NULL;
	name = strpool_intern(&s->strings, simp);
	free(simp);
	return name;
}

/* Adds file:line and the inlined frames to ret[0], which resolve named
 * from the ELF module hit. Leaves ret[0] alone when there is no DWARF
 * for the address. */
static int add_dwarf_frames(struct proc_syms *ps, const struct elf_hit *hit,
			    unsigned flags, struct symbol_info *ret,
			    unsigned max, unsigned *ret_n)
{
	struct symbolizer *s = ps->s;
	struct dwarf_loc locs[SYM_MAX_FRAMES_PER_ADDR];
	struct dwarf_lines *dl = pmod_dwarf(ps, hit->pm);
	bool simple = flags & SYM_SIMPLE;
	unsigned n;

	if (!dl)
		return 0;
	if (max > SYM_MAX_FRAMES_PER_ADDR)
		max = SYM_MAX_FRAMES_PER_ADDR;
	if (dwarf_lines_find(dl, hit->vaddr, locs, max, &n) < 0)
		return 0;
	/* A module whose .symtab lacks the function (stripped, no debug
	 * file for symbols) but whose DWARF names it. */
	if (ret[0].kind == FRAME_UNKNOWN && (locs[0].name || locs[0].linkage_name)) {
		const char *name = dwarf_frame_name(s, &locs[0], simple);

		if (!name)
			return -ENOMEM;
		ret[0].name = name;
		ret[0].kind = hit->pm->is_main ? FRAME_USER : FRAME_LIBRARY;
	}
	for (unsigned i = 0; i < n; i++) {
		struct symbol_info *si = &ret[i];

		if (i) {
			*si = ret[0];
			si->kind = FRAME_INLINED;
			si->name = dwarf_frame_name(s, &locs[i], simple);
			if (!si->name)
				return -ENOMEM;
		}
		si->file = NULL;
		si->line = 0;
		if (locs[i].file && locs[i].line) {
			si->file = strpool_intern(&s->strings, locs[i].file);
			if (!si->file)
				return -ENOMEM;
			si->line = locs[i].line;
		}
		*ret_n = i + 1;
	}
	return 0;
}

int proc_syms_lookup_frames(struct proc_syms *ps, uint64_t addr, bool kernel,
			    unsigned flags, struct symbol_info *ret,
			    unsigned max, unsigned *ret_n)
{
	struct symbol_info info = { 0 };
	struct elf_hit hit = { 0 };
	int err;

	if (!max)
		return -EINVAL;
	err = resolve(ps, addr, kernel, flags, &info, &hit);
	if (err < 0)
		unknown_info(addr, &info);
	ret[0] = info;
	*ret_n = 1;
	if (err < 0 || !(flags & SYM_LINES) || !hit.pm)
		return err;
	err = add_dwarf_frames(ps, &hit, flags, ret, max, ret_n);
	if (err < 0) {
		/* Out of memory half way: the frames so far are whole, but a
		 * frame's line names a call into the next: keep only ret[0],
		 * and only its name. */
		ret[0].file = NULL;
		ret[0].line = 0;
		*ret_n = 1;
	}
	return err;
}
