/* unwind modules: the sorted range list, filled from the executable
 * lines of /proc/PID/maps (read and parsed by base/proc). */
#include "unwind/modules.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "base/proc.h"
#include "base/target_files.h"

/* The last generation given out; 64 bits never wrap. */
static atomic_uint_fast64_t last_generation;

static uint64_t next_generation(void)
{
	return atomic_fetch_add_explicit(&last_generation, 1, memory_order_relaxed) + 1;
}

void unwind_modules_init(struct unwind_modules *m)
{
	memset(m, 0, sizeof(*m));
	m->generation = next_generation();
}

void unwind_modules_release(struct unwind_modules *m)
{
	if (!m)
		return;
	free(m->v);
	memset(m, 0, sizeof(*m));
}

int unwind_modules_add(struct unwind_modules *m, uint64_t start, uint64_t end,
		       uint64_t bias, const struct unwind_table *table)
{
	unsigned lo = 0, hi = m->n;

	if (start >= end)
		return -EINVAL;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (m->v[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if ((lo < m->n && m->v[lo].start < end) || (lo && m->v[lo - 1].end > start))
		return -EEXIST;
	if (m->n == m->cap) {
		unsigned cap = m->cap ? m->cap * 2 : 64;
		struct unwind_module *n;

		if (m->n >= UNWIND_MAX_MODULES)
			return -E2BIG;
		n = realloc(m->v, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		m->v = n;
		m->cap = cap;
	}
	memmove(&m->v[lo + 1], &m->v[lo], (m->n - lo) * sizeof(*m->v));
	m->v[lo] = (struct unwind_module){ start, end, bias, table };
	m->n++;
	if (!table)
		m->no_table++;
	/* Rows cached for the list as it was may now belong to another
	 * module (or to none): the list is another one. */
	m->generation = next_generation();
	return 0;
}

/* One executable mapping: its table (or NULL) and bias. Another
 * process's file (tf) is the mapped file itself, read with no more
 * rights than its user's (base/target_files.h); our own, by its path. */
static int add_mapping(struct unwind_modules *m, struct unwind_cache *c,
		       struct target_files *tf, uint64_t start, uint64_t end, uint64_t off,
		       uint64_t ino, const char *name)
{
	const struct unwind_table *t = NULL;
	uint64_t bias = 0;
	int err;

	if (!strcmp(name, "[vdso]")) {
		const void *vdso = (const void *)getauxval(AT_SYSINFO_EHDR);

		/* Our own vDSO: the target's is the same kernel image. */
		if (vdso && !unwind_cache_get_memory(c, vdso, end - start, &t) &&
		    unwind_table_bias(t, start, off, &bias))
			t = NULL;
	} else if (name[0] == '/' && !strstr(name, " (deleted)")) {
		int fd = tf ? target_files_open_mapped(tf, start, end, ino, name) : -1;

		if (tf ? fd < 0 || unwind_cache_get_fd(c, fd, &t)
		       : unwind_cache_get(c, name, NULL, &t))
			t = NULL;
		if (t && unwind_table_bias(t, start, off, &bias))
			t = NULL;
		if (fd >= 0)
			close(fd);
	}
	err = unwind_modules_add(m, start, end, bias, t);
	return err == -EEXIST ? 0 : err;
}

int unwind_modules_from_maps_text(struct unwind_modules *m, struct unwind_cache *c, pid_t pid,
				  const char *text, size_t len)
{
	struct target_files *tf = NULL;
	const char *p = text, *end = text + len;
	struct proc_map_line l;
	char name[4096 + 1];
	int err = 0;

	if (pid && pid == getpid())
		pid = 0;
	if (unwind_cache_is_lazy(c))
		m->find_lazy = unwind_table_find_lazy;
	if (pid) {
		tf = target_files_new(pid);
		if (!tf)
			return -errno;
	}
	while (proc_maps_next(&p, end, &l)) {
		size_t nlen = l.path_len;

		if (l.perms[2] != 'x')
			continue;
		if (nlen >= sizeof(name))
			nlen = sizeof(name) - 1; /* a name the kernel cut: opened by its mapping */
		memcpy(name, l.path, nlen);
		name[nlen] = '\0';
		err = add_mapping(m, c, tf, l.start, l.end, l.offset, l.inode, name);
		if (err)
			break;
	}
	target_files_free(tf);
	return err;
}

int unwind_modules_from_maps(struct unwind_modules *m, struct unwind_cache *c, pid_t pid)
{
	char *buf;
	size_t len;
	int err;

	if (pid && pid == getpid())
		pid = 0;
	err = proc_maps_read(pid, &buf, &len);
	if (err < 0)
		return err;
	err = unwind_modules_from_maps_text(m, c, pid, buf, len);
	free(buf);
	return err;
}
