/* unwind modules: the sorted range list and a minimal /proc/PID/maps
 * reader (symbolize has the full one; unwind sits below it and needs only
 * executable mappings). */
#include "unwind/modules.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "base/hex.h"
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

/* One field of a maps line: [p, end) up to the next space. */
static const char *field_end(const char *p, const char *end)
{
	while (p < end && *p != ' ')
		p++;
	return p;
}

static const char *skip_spaces(const char *p, const char *end)
{
	while (p < end && *p == ' ')
		p++;
	return p;
}

/* Parses one line "start-end perms offset dev inode   path" of [p, end):
 * 0, or -EINVAL when it is not one. Only lines with 'x' in their perms
 * are wanted: the others are told apart before anything else is read. */
static int parse_line(const char *p, const char *end, bool *ret_exec, uint64_t *ret_start,
		      uint64_t *ret_end, uint64_t *ret_off, uint64_t *ret_ino,
		      const char **ret_name, size_t *ret_name_len)
{
	const char *q, *perms;
	uint64_t ino = 0;

	if (hex_parse(p, end, 0, ret_start, &q) || q >= end || *q != '-' ||
	    hex_parse(q + 1, end, 0, ret_end, &q) || q >= end || *q != ' ')
		return -EINVAL;
	perms = q + 1;
	q = field_end(perms, end);
	if (q - perms < 4 || q >= end)
		return -EINVAL;
	*ret_exec = memchr(perms, 'x', (size_t)(q - perms)) != NULL;
	if (!*ret_exec)
		return 0;
	if (hex_parse(q + 1, end, 0, ret_off, &q) || q >= end || *q != ' ')
		return -EINVAL;
	q = field_end(q + 1, end); /* dev */
	q = skip_spaces(q, end);
	if (q >= end || *q < '0' || *q > '9')
		return -EINVAL;
	for (; q < end && *q >= '0' && *q <= '9'; q++) {
		if (ino > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		ino = ino * 10 + (uint64_t)(*q - '0');
	}
	q = skip_spaces(q, end);
	*ret_ino = ino;
	*ret_name = q;
	*ret_name_len = (size_t)(end - q);
	return 0;
}

int unwind_modules_from_maps_text(struct unwind_modules *m, struct unwind_cache *c, pid_t pid,
				  const char *text, size_t len)
{
	struct target_files *tf = NULL;
	const char *p = text, *end = text + len;
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
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *line = p, *nm;
		uint64_t start, stop, off, ino;
		size_t nlen;
		bool exec;

		if (!nl)
			nl = end;
		p = nl + 1;
		if (parse_line(line, nl, &exec, &start, &stop, &off, &ino, &nm, &nlen) || !exec)
			continue;
		if (nlen >= sizeof(name))
			nlen = sizeof(name) - 1; /* a name the kernel cut: opened by its mapping */
		memcpy(name, nm, nlen);
		name[nlen] = '\0';
		err = add_mapping(m, c, tf, start, stop, off, ino, name);
		if (err)
			break;
	}
	target_files_free(tf);
	return err;
}

int unwind_modules_from_maps(struct unwind_modules *m, struct unwind_cache *c, pid_t pid)
{
	char path[64], *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, err;

	if (pid && pid == getpid())
		pid = 0;
	snprintf(path, sizeof(path), pid ? "/proc/%d/maps" : "/proc/self/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (len + 65536 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 65536 * 2);

			if (!nb) {
				err = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto out;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	err = unwind_modules_from_maps_text(m, c, pid, buf, len);
out:
	free(buf);
	close(fd);
	return err;
}
