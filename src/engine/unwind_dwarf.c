/* dwarf: user stacks unwound with DWARF CFI (src/unwind/) from the copy
 * of the user stack and registers each sample carries
 * (PERF_SAMPLE_STACK_USER + PERF_SAMPLE_REGS_USER); kernel frames still
 * come from the kernel's callchain, asked for without its user part.
 *
 * Per target: the executable mappings and their unwind tables, read from
 * /proc/PID/maps at start and kept current from MMAP2 records (a new
 * mapping replaces whatever overlapped it), emptied on exec. Tables come
 * from one process-wide cache keyed by build-id, so a library is parsed
 * once however many recordings use it.
 *
 * The walk happens as each sample is read, so what is kept is only the
 * resulting address chain (aggregated like fp's), never the stack copy:
 * memory stays flat however long the recording. Cost per sample: the
 * kernel copies UNWIND_DWARF_STACK_BYTES in the target's context; we read
 * it in place from the ring and walk it (a binary search per frame). */
#include "engine/unwinder.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/proc.h"
#include "base/target_files.h"

#include "unwind/modules.h"
#include "unwind/unwind_table.h"
#include "unwind/walker.h"

/* Registers: all general-purpose ones cost 136 bytes a sample more than
 * the three the walker uses; ask for those only. */
#define DWARF_REGS UNWIND_PERF_REGS_MASK

/* 1 MiB per CPU holds ~60 samples of 16 KiB: 0.6 s of one CPU at the
 * default 100 Hz before the reader (woken at a quarter full, or every
 * 100 ms) must have drained it. */
#define DWARF_RING_BYTES (1u << 20)

struct dwarf_state {
	pid_t pid;
	struct target_files *tf;    /* its files, read as its user may */
	struct unwind_modules mods; /* changed only between walks */
};

/* One cache for the whole process: tables are immutable and keyed by
 * build-id, so every recording (and later the daemon's) shares them. */
static struct unwind_cache *cache;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void cache_init(void)
{
	cache = unwind_cache_new();
}

static struct unwind_cache *shared_cache(void)
{
	pthread_once(&cache_once, cache_init);
	return cache;
}

static void dwarf_prepare_attr(struct perf_event_attr *a, unsigned max_stack)
{
	a->sample_type |= PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
			  PERF_SAMPLE_STACK_USER;
	/* The callchain brings the kernel frames only; ours are better. */
	a->exclude_callchain_user = 1;
	a->sample_max_stack = (uint16_t)max_stack;
	a->sample_regs_user = DWARF_REGS;
	a->sample_stack_user = UNWIND_DWARF_STACK_BYTES;
}

static void dwarf_state_free(void *state)
{
	struct dwarf_state *st = state;

	if (!st)
		return;
	unwind_modules_release(&st->mods);
	target_files_free(st->tf);
	free(st);
}

/* Whether one executable file mapping of pid has CFI: a quick look at
 * section headers, in maps order (the executable, usually, answers). */
static bool some_module_has_cfi(struct dwarf_state *st)
{
	struct proc_map_line l;
	const char *p;
	char *buf;
	size_t len;
	bool found = false;

	if (proc_maps_read(st->pid, &buf, &len) < 0)
		return false;
	p = buf;
	while (!found && proc_maps_next(&p, buf + len, &l)) {
		char *path = buf + (l.path - buf);
		int fd;

		if (l.perms[2] != 'x' || !l.path_len || *path != '/')
			continue;
		path[l.path_len] = '\0'; /* its newline, or the text's NUL */
		fd = target_files_open_mapped(st->tf, l.start, l.end, l.inode, path);
		if (fd < 0)
			continue;
		found = unwind_table_probe_fd(fd) == 0;
		close(fd);
	}
	free(buf);
	return found;
}

static int dwarf_state_new(pid_t pid, void **ret_state, struct diag *d)
{
	struct unwind_cache *c = shared_cache();
	struct dwarf_state *st;
	int err;

	if (!c)
		return -ENOMEM;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->pid = pid;
	unwind_modules_init(&st->mods);
	st->tf = target_files_new(pid);
	if (!st->tf) {
		err = diag_set(d, -errno, "cannot read /proc/%d/status: %s", (int)pid,
			       strerror(errno));
		goto out;
	}
	/* "The tables build": a module has CFI (a foreign-architecture
	 * binary, or one without .eh_frame, has none, and frame pointers
	 * do as well there). The tables are built in dwarf_state_load. */
	if (!some_module_has_cfi(st)) {
		err = diag_set(d, -ENOEXEC,
			       "no executable mapping of PID %d has x86-64 DWARF CFI",
			       (int)pid);
		goto out;
	}
	*ret_state = st;
	st = NULL;
	err = 0;
out:
	dwarf_state_free(st);
	return err;
}

/* The tables of every executable mapping, now that the events run. A
 * failure leaves the modules without tables: their samples end early,
 * and say so (UNWOUND_NO_INFO). */
static void dwarf_state_load(void *state)
{
	struct dwarf_state *st = state;
	struct unwind_cache *c = shared_cache();

	if (c)
		unwind_modules_from_maps(&st->mods, c, st->pid);
}

/* The table and bias of one mapping, or NULL (frame pointers there). */
static const struct unwind_table *mapping_table(struct dwarf_state *st,
						const struct mapping *m,
						uint64_t *ret_bias)
{
	const struct unwind_table *t = NULL;
	struct unwind_cache *c = shared_cache();
	int fd, err;

	if (!c || !m->path)
		return NULL;
	if (!strcmp(m->path, "[vdso]")) {
		const void *vdso = (const void *)getauxval(AT_SYSINFO_EHDR);

		/* Ours: the same kernel maps the same image everywhere. */
		if (!vdso || unwind_cache_get_memory(c, vdso, m->end - m->start, &t))
			return NULL;
	} else if (m->path[0] == '/' && !strstr(m->path, " (deleted)")) {
		/* The mapped file itself (containers, and a world its user
		 * arranged: base/target_files.h). */
		fd = target_files_open_mapped(st->tf, m->start, m->end, m->inode, m->path);
		if (fd < 0)
			return NULL;
		err = unwind_cache_get_fd(c, fd, &t);
		close(fd);
		if (err)
			return NULL;
	} else {
		return NULL;
	}
	return unwind_table_bias(t, m->start, m->pgoff, ret_bias) ? NULL : t;
}

/* Adds [start, end) after cutting it out of every module it overlaps:
 * a new mapping replaces what was there (munmap sends no record). */
static int modules_replace(struct unwind_modules *mods, uint64_t start,
			   uint64_t end, uint64_t bias,
			   const struct unwind_table *t)
{
	struct unwind_modules next;
	int err = unwind_modules_add(mods, start, end, bias, t);

	if (err != -EEXIST)
		return err;
	err = 0;
	unwind_modules_init(&next);
	for (unsigned i = 0; i < mods->n && !err; i++) {
		const struct unwind_module *o = &mods->v[i];

		if (o->end <= start || o->start >= end) {
			err = unwind_modules_add(&next, o->start, o->end, o->bias, o->table);
			continue;
		}
		if (o->start < start)
			err = unwind_modules_add(&next, o->start, start, o->bias, o->table);
		if (!err && o->end > end)
			err = unwind_modules_add(&next, end, o->end, o->bias, o->table);
	}
	if (!err)
		err = unwind_modules_add(&next, start, end, bias, t);
	if (err) {
		unwind_modules_release(&next);
		return err;
	}
	unwind_modules_release(mods);
	*mods = next;
	return 0;
}

static void dwarf_on_mapping(void *state, const struct mapping *m)
{
	struct dwarf_state *st = state;
	const struct unwind_table *t;
	uint64_t bias = 0;

	if (!(m->prot & PROT_EXEC) || m->start >= m->end)
		return;
	t = mapping_table(st, m, &bias);
	/* On failure the old module stays: its table may still be right,
	 * and the walker checks every step anyway. */
	(void)modules_replace(&st->mods, m->start, m->end, t ? bias : 0, t);
}

static void dwarf_on_exec(void *state)
{
	struct dwarf_state *st = state;

	/* The old image is gone; the new one's mappings follow as records. */
	unwind_modules_release(&st->mods);
	unwind_modules_init(&st->mods);
}

/* unwind_read_stack_copy, noting reads that ran past the copy's end:
 * those mean the copy was too small, not that the stack was bad. */
struct copy_reader {
	struct unwind_stack_copy sc;
	bool beyond;
};

static int read_copy(void *ctx, uint64_t addr, void *dst, size_t len)
{
	struct copy_reader *r = ctx;

	if (!unwind_read_stack_copy(&r->sc, addr, dst, len))
		return 0;
	if (addr >= r->sc.base && addr + len > r->sc.base + r->sc.len)
		r->beyond = true;
	return -1;
}

static int dwarf_unwind(void *state, const struct raw_sample *s, uint64_t *ips,
			unsigned max, struct unwound *ret)
{
	struct dwarf_state *st = state;
	struct unwound u = { .end = UNWOUND_COMPLETE };
	struct unwind_regs regs;
	bool in_kernel = false;

	/* The callchain holds [PERF_CONTEXT_KERNEL k0 k1 ...] only. */
	for (uint64_t i = 0; i < s->nr && u.n < max; i++) {
		uint64_t a = s->callchain[i];

		if (a >= PERF_CONTEXT_MAX) {
			in_kernel = a == PERF_CONTEXT_KERNEL;
			continue;
		}
		if (in_kernel)
			ips[u.n++] = a;
	}
	u.nkernel = u.n;
	if (u.n == max && max) {
		u.end = UNWOUND_DEPTH;
	} else if (s->regs_abi == PERF_SAMPLE_REGS_ABI_64 &&
		   !unwind_regs_from_perf(s->regs, s->nregs, DWARF_REGS, &regs)) {
		struct copy_reader r = {
			{ regs.rsp, s->stack, s->stack ? s->stack_dyn_size : 0 },
			false,
		};
		struct unwind_info info;

		u.n += unwind_walk_ex(&regs, &st->mods, read_copy, &r, ips + u.n,
				      max - u.n, &info);
		switch (info.stop) {
		case UNWIND_STOP_END:
			break;
		case UNWIND_STOP_MAX:
			u.end = UNWOUND_DEPTH;
			break;
		case UNWIND_STOP_FAULT:
			/* Past the end of a full copy: the stack goes on,
			 * the copy was too short. Past a short copy: the
			 * kernel stopped at the stack's top, a bad pointer. */
			u.end = r.beyond && s->stack_dyn_size >= s->stack_size
					? UNWOUND_COPY_END
					: UNWOUND_FAULT;
			break;
		case UNWIND_STOP_BAD_SP:
			u.end = UNWOUND_BAD_SP;
			break;
		default:
			u.end = UNWOUND_NO_INFO;
			break;
		}
	} else if (!u.nkernel) {
		/* No user registers (a thread exiting, a 32-bit task): keep
		 * the pc, as the kernel gave it. */
		if (s->ip && max)
			ips[u.n++] = s->ip;
		u.end = UNWOUND_NO_REGS;
	}
	/* else: kernel frames of a task without user state; that is all. */
	u.truncated = u.end != UNWOUND_COMPLETE;
	*ret = u;
	return u.n ? 0 : -ENODATA;
}

const struct unwind_modules *unwinder_dwarf_modules(const void *state)
{
	return state ? &((const struct dwarf_state *)state)->mods : NULL;
}

const struct unwinder unwinder_dwarf = {
	.name = "dwarf",
	.own_user_walk = true,
	.ring_bytes = DWARF_RING_BYTES,
	.prepare_attr = dwarf_prepare_attr,
	.state_new = dwarf_state_new,
	.state_load = dwarf_state_load,
	.state_free = dwarf_state_free,
	.on_mapping = dwarf_on_mapping,
	.on_exec = dwarf_on_exec,
	.unwind = dwarf_unwind,
};
