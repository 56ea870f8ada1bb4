#include "symbolize/maps.h"
#include "base/array.h"
#include "base/proc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void maps_init(struct maps *m)
{
	memset(m, 0, sizeof(*m));
}

void maps_release(struct maps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	maps_init(m);
}

static int ends_with(const char *s, size_t len, const char *suffix)
{
	size_t sl = strlen(suffix);

	return len >= sl && !memcmp(s + len - sl, suffix, sl);
}

int maps_classify_path(const char *path, enum map_kind *ret_kind,
		       int *ret_deleted, char **ret_clean)
{
	size_t len = strlen(path);
	enum map_kind kind;
	int deleted = 0;
	char *clean;

	/* The kernel appends " (deleted)" to the name of an unlinked file; a
	 * file really named so is indistinguishable, and rare enough. */
	if (path[0] == '/' && ends_with(path, len, " (deleted)")) {
		deleted = 1;
		len -= strlen(" (deleted)");
	}
	if (len == 0 || !strcmp(path, "//anon") ||
	    !strncmp(path, "[anon:", 6) || !strncmp(path, "[anon_shmem:", 12))
		kind = MAPK_ANON;
	else if (!strcmp(path, "[vdso]"))
		kind = MAPK_VDSO;
	else if (path[0] == '[')
		kind = MAPK_SPECIAL;
	else if (!strncmp(path, "/memfd:", 7))
		kind = MAPK_MEMFD;
	else
		kind = MAPK_FILE;
	clean = strndup(path, len);
	if (!clean)
		return -ENOMEM;
	*ret_kind = kind;
	*ret_deleted = deleted;
	*ret_clean = clean;
	return 0;
}

static int reserve(struct maps *m, size_t extra)
{
	if (m->n + extra > MAPS_MAX_ENTRIES)
		return -E2BIG;
	return array_reserve(&m->v, &m->cap, m->n + extra, sizeof(*m->v));
}

/* Index of the first entry whose end is above addr. */
static size_t first_ending_after(const struct maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int maps_insert(struct maps *m, const struct map_entry *e)
{
	struct map_entry left, right, ne;
	int has_left = 0, has_right = 0, err;
	size_t i, j, nnew;
	char *lpath = NULL, *rpath = NULL, *path = NULL;

	if (e->start >= e->end)
		return -EINVAL;
	i = first_ending_after(m, e->start);
	for (j = i; j < m->n && m->v[j].start < e->end; j++)
		;
	/* Entries i..j-1 overlap e. Only the first can stick out on the left
	 * and only the last on the right (they are disjoint and sorted). */
	if (i < j && m->v[i].start < e->start) {
		left = m->v[i];
		left.end = e->start;
		has_left = 1;
	}
	if (i < j && m->v[j - 1].end > e->end) {
		right = m->v[j - 1];
		right.pgoff += e->end - right.start;
		right.start = e->end;
		has_right = 1;
	}
	nnew = 1 + has_left + has_right;
	err = -ENOMEM;
	path = strdup(e->path ? e->path : "");
	if (!path)
		goto out;
	if (has_left && !(lpath = strdup(left.path)))
		goto out;
	if (has_right && !(rpath = strdup(right.path)))
		goto out;
	if (nnew > j - i) {
		err = reserve(m, nnew - (j - i));
		if (err < 0)
			goto out;
	}
	for (size_t k = i; k < j; k++)
		free(m->v[k].path);
	memmove(m->v + i + nnew, m->v + j, (m->n - j) * sizeof(*m->v));
	m->n = m->n - (j - i) + nnew;
	ne = *e;
	ne.path = path;
	/* Memory that is not a file has no meaningful offset: /proc shows 0,
	 * perf records show the address. Offsets then count from the
	 * mapping's start (and a split keeps counting from the original). */
	if (ne.kind != MAPK_FILE && ne.kind != MAPK_MEMFD)
		ne.pgoff = 0;
	if (has_left) {
		left.path = lpath;
		m->v[i++] = left;
	}
	m->v[i++] = ne;
	if (has_right) {
		right.path = rpath;
		m->v[i] = right;
	}
	return 0;
out:
	free(path);
	free(lpath);
	free(rpath);
	return err;
}

const struct map_entry *maps_find(const struct maps *m, uint64_t addr)
{
	size_t i = first_ending_after(m, addr);

	if (i < m->n && m->v[i].start <= addr)
		return &m->v[i];
	return NULL;
}

int maps_parse(struct maps *m, const char *buf, size_t len, uint32_t user)
{
	const char *p = buf, *end = buf + len;
	char path[MAPS_MAX_LINE + 1];
	int err = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		struct proc_map_line l;
		struct map_entry e;
		char *clean;

		if (eol - p > MAPS_MAX_LINE || proc_maps_line_parse(p, eol, &l) < 0 ||
		    memchr(l.path, '\0', l.path_len)) {
			if (eol > p)
				m->skipped_lines++;
			goto next;
		}
		e = (struct map_entry){
			.start = l.start, .end = l.end, .pgoff = l.offset,
			.maj = l.maj, .min = l.min, .inode = l.inode,
			.prot = (l.perms[0] == 'r' ? PROT_READ : 0) |
				(l.perms[1] == 'w' ? PROT_WRITE : 0) |
				(l.perms[2] == 'x' ? PROT_EXEC : 0),
		};
		memcpy(path, l.path, l.path_len);
		path[l.path_len] = '\0';
		err = maps_classify_path(path, &e.kind, &e.deleted, &clean);
		if (err < 0)
			goto out;
		e.path = clean;
		e.user = user;
		err = maps_insert(m, &e);
		free(clean);
		if (err == -EINVAL) {
			m->skipped_lines++;
			err = 0;
		} else if (err < 0) {
			goto out;
		}
next:
		p = nl ? nl + 1 : end;
	}
out:
	return err;
}
