#include "symbolize/symcache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/array.h"
#include "symbolize/debugfile.h"

struct symcache {
	struct symmod **v;
	size_t n, cap;
	uint64_t tick;
	struct symcache_stats stats;
};

static void module_free(struct symmod *m)
{
	if (!m)
		return;
	elf_symtab_release(&m->symtab);
	dwarf_lines_free(m->dwarf);
	free(m->key_path);
	free(m->debug_path);
	free(m->names[0]);
	free(m->names[1]);
	free(m);
}

struct symcache *symcache_new(void)
{
	struct symcache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	/* libelf refuses to work until told which version we speak. */
	if (elf_version(EV_CURRENT) == EV_NONE) {
		free(c);
		errno = ENOTSUP;
		return NULL;
	}
	return c;
}

void symcache_free(struct symcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		module_free(c->v[i]);
	free(c->v);
	free(c);
}

void symcache_get_stats(const struct symcache *c, struct symcache_stats *ret)
{
	*ret = c->stats;
}

void symcache_put(struct symcache *c, struct symmod *m)
{
	if (!m)
		return;
	if (m->refs)
		m->refs--;
	m->last_use = ++c->tick;
}

int symcache_open_dwarf(struct symcache *c, struct symmod *m, int fd,
			const char *path, struct target_files *tf)
{
	int err;

	if (m->dwarf_tried)
		return 0;
	err = dwarf_lines_open_module(fd, path, tf, &m->info, &m->dwarf, NULL);
	if (err == -ENOMEM)
		return err;
	m->dwarf_tried = true;
	if (err == 0)
		c->stats.dwarf_modules++;
	return 0;
}

static bool key_equal(const struct symmod *m, const struct elf_info *info,
		      const char *path, const struct stat *st)
{
	if (info->build_id_len || m->info.build_id_len)
		return info->build_id_len == m->info.build_id_len &&
		       !memcmp(info->build_id, m->info.build_id,
			       info->build_id_len);
	return st && !strcmp(m->key_path, path) &&
	       m->key_size == (uint64_t)st->st_size &&
	       m->key_ino == (uint64_t)st->st_ino &&
	       m->key_mtime_ns == (uint64_t)st->st_mtim.tv_sec * 1000000000ull +
					  (uint64_t)st->st_mtim.tv_nsec;
}

static struct symmod *find(struct symcache *c, const struct elf_info *info,
			   const char *path, const struct stat *st)
{
	for (size_t i = 0; i < c->n; i++)
		if (key_equal(c->v[i], info, path, st))
			return c->v[i];
	return NULL;
}

/* Makes room for one more module, evicting the least recently used
 * unreferenced one when full. */
static int make_room(struct symcache *c)
{
	if (c->n >= SYMCACHE_MAX_MODULES) {
		size_t victim = c->n;

		for (size_t i = 0; i < c->n; i++)
			if (!c->v[i]->refs &&
			    (victim == c->n || c->v[i]->last_use < c->v[victim]->last_use))
				victim = i;
		if (victim == c->n)
			return -ENOBUFS;
		module_free(c->v[victim]);
		c->v[victim] = c->v[--c->n];
	}
	if (array_reserve(&c->v, &c->cap, c->n + 1, sizeof(*c->v)) < 0)
		return -ENOMEM;
	return 0;
}

/* Reads the symbols of e (the mapped file) into m, from a debug file when
 * e has no .symtab. */
static int load_symbols(struct symcache *c, struct symmod *m, Elf *e,
			const char *path, struct target_files *tf)
{
	struct debugfile df = { .fd = -1 };
	int err = 0;

	if (!m->info.has_symtab &&
	    debugfile_find(tf, path, &m->info, &df) == 0) {
		err = elf_symtab_add(&m->symtab, df.elf, SHT_SYMTAB);
		if (err < 0)
			goto out;
		m->debug_path = df.path;
		df.path = NULL;
		c->stats.debug_files++;
	} else if (m->info.has_symtab) {
		err = elf_symtab_add(&m->symtab, e, SHT_SYMTAB);
		if (err < 0)
			goto out;
	}
	/* .dynsym is all a stripped binary without debug file has, and a
	 * subset of a full .symtab, whose versioned names ("fclose@@GLIBC_2.2.5")
	 * it has without the version the names shown drop anyway: merged
	 * only when the .symtab read has fewer functions than .dynsym has
	 * entries (one left with a few labels). For libc and its debug file,
	 * 2,800 symbols fewer to read and sort in every thread dump. */
	if (m->symtab.n < elf_symtab_count(e, SHT_DYNSYM)) {
		err = elf_symtab_add(&m->symtab, e, SHT_DYNSYM);
		if (err < 0)
			goto out;
	}
	elf_symtab_finish(&m->symtab);
out:
	debugfile_close(&df);
	return err;
}

static int get(struct symcache *c, Elf *e, const char *path,
	       const struct stat *st, struct target_files *tf, struct symmod **ret)
{
	struct elf_info info;
	struct symmod *m = NULL;
	int err;

	err = elf_read_info(e, &info);
	if (err < 0)
		goto out;
	m = find(c, &info, path, st);
	if (m) {
		c->stats.cache_hits++;
		m->refs++;
		m->last_use = ++c->tick;
		*ret = m;
		m = NULL;
		goto out;
	}
	err = make_room(c);
	if (err < 0)
		goto out;
	err = -ENOMEM;
	m = calloc(1, sizeof(*m));
	if (!m)
		goto out;
	m->info = info;
	elf_symtab_init(&m->symtab);
	m->key_path = strdup(info.build_id_len || !path ? "" : path);
	if (!m->key_path)
		goto out;
	if (st) {
		m->key_size = (uint64_t)st->st_size;
		m->key_ino = (uint64_t)st->st_ino;
		m->key_mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000ull +
				  (uint64_t)st->st_mtim.tv_nsec;
	}
	err = load_symbols(c, m, e, path, tf);
	if (err < 0)
		goto out;
	c->stats.modules_parsed++;
	m->refs = 1;
	m->last_use = ++c->tick;
	c->v[c->n++] = m;
	*ret = m;
	m = NULL;
out:
	module_free(m);
	return err;
}

int symcache_get_file(struct symcache *c, int fd, const char *path,
		      struct target_files *tf, struct symmod **ret)
{
	struct stat st;
	Elf *e;
	int err;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -EINVAL;
	err = get(c, e, path, &st, tf, ret);
	elf_end(e);
	return err;
}

int symcache_get_image(struct symcache *c, char *image, size_t len,
		       const char *name, struct symmod **ret)
{
	Elf *e = elf_memory(image, len);
	int err;

	if (!e)
		return -EINVAL;
	/* An image without a build-id is keyed by its name alone (no stat):
	 * never equal to another, so it is parsed each time. */
	err = get(c, e, name, NULL, NULL, ret);
	elf_end(e);
	return err;
}
